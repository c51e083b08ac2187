/*
 * rs_bench.h - end-to-end engine benchmarks (what rs-bench -m prints).
 *
 * One run measures, on one engine and one state: the streaming-read
 * bandwidth probe, decode tokens/s at a short depth (the engine alone, then
 * with the host sampler choosing each token, greedy and with the model's
 * default chain), verification of groups
 * of drafts at a short prefix (tokens supplied per second and cost relative
 * to a group of 1), prefill tokens/s, decode at long depths, and the memory
 * plan.  Every timed row reports the bytes the engine must read per token
 * (weights of rs_model_decode_bytes plus the KV cache at that depth; for a
 * verification group the weights count once for the group), achieved GB/s
 * and the efficiency against the probe of the same run.  Prefill is
 * compute-bound and gets tokens/s only.
 * Tokens are random (seeded); what is timed is rs_engine_forward() from the
 * call to its return, logits copied to the host included.
 */
#ifndef RS_BENCH_H
#define RS_BENCH_H

#include <stdint.h>

#include "rs_engine.h"

#define RS_BENCH_MAX_LIST	8

struct rs_bench_opts {
	int		decode_tokens;		/* timed decode steps (128; 0:
					   no decode rows) */
	int		decode_depth;		/* context before them (16) */
	int		groups[RS_BENCH_MAX_LIST];	/* verify sizes, at
					   the decode depth when there are
					   decode steps, at each long depth
					   with depth_verify */
	int		n_groups;
	int		verify_reps;		/* calls per group (8) */
	int		prefills[RS_BENCH_MAX_LIST];	/* prefill lengths */
	int		n_prefills;
	int		depths[RS_BENCH_MAX_LIST];	/* long-depth decode */
	int		n_depths;
	int		depth_tokens;		/* steps timed there (32) */
	int		depth_verify;		/* the verify groups at each
						   long depth too (0) */
	int		ttft_tokens;		/* a prompt timed to its first
						   token (30000; 0: none) */
	uint64_t	seed;
};

struct rs_bench_row {
	const char	*test;		/* probe, decode, greedy, sampled,
					   verify, prefill, ttft, memory */
	int64_t		 n;		/* tokens per call (group, prefill) */
	int64_t		 depth;		/* context length before the call */
	double		 ms;		/* wall time per call */
	double		 tok_s;		/* tokens per second */
	double		 bytes_per_tok;	/* bytes read per token (model) */
	double		 gb_s;		/* achieved bandwidth */
	double		 eff;		/* gb_s / probe gb_s */
	double		 rel_cost;	/* verify: ms / ms of group 1 */
	uint64_t	 mem_weights, mem_state, mem_scratch; /* memory row */
};

/* Called once per row, in order; a non-zero return stops the run. */
typedef int	(*rs_bench_cb)(const struct rs_bench_row *row, void *ctx);

/*
 * The defaults: decode 128 @16, groups 1 2 4 8 16, prefill 512 4096 32768,
 * depths 4096 32768, the first token of a 30000-token prompt.
 */
void		rs_bench_defaults(struct rs_bench_opts *o);

/*
 * Make O fit a context of N_CTX positions (the model's, or rs-bench -c):
 * a prefill, depth, verify group or time-to-first-token prompt that does
 * not fit becomes the largest that does (dropped when that size is already
 * in its list or nothing fits); decode steps are cut the same way.  Rows
 * that fit are left alone, so a model that holds 32768 positions keeps the
 * defaults.  NOTE (CAP bytes) receives what changed ("prefill 32768 ->
 * 4096; depth 32768 dropped"), "" when nothing did.  Returns the number of
 * sizes changed.
 */
int		rs_bench_fit(struct rs_bench_opts *o, int32_t n_ctx,
		    char *note, size_t cap);

/*
 * Run every measurement on E.  Fails with the engine's statuses, or
 * RS_ERR_LIMIT when a depth or prefill does not fit the model's context.
 */
enum rs_status	rs_bench_run(struct rs_engine *e, const struct rs_bench_opts *o,
		    rs_bench_cb cb, void *ctx, struct rs_err *err);

#endif /* RS_BENCH_H */
