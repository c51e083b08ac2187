/*
 * rs_bench_spec.h - speculative decoding benchmarks (rs-bench --spec):
 * greedy generation end to end with each drafter, and an oracle table of
 * speedup against the acceptance rate alpha and the draft count k.
 *
 *   spec     rs_spec_greedy() of gen_tokens after a seeded random prompt
 *            with each drafter (none first: the baseline; MTP kinds only
 *            on a model with an MTP block), adaptive K up to k_max.  On
 *            random weights (a synthetic model) the drafts are rarely
 *            right: these rows give the drafters' cost, the oracle their
 *            worth.  Each row's tokens must equal the none row's (greedy
 *            speculative decoding is exact), else the run fails.
 *   oracle   the same generation with the ORACLE drafter running for its
 *            cost (MTP steps, lookups) and its drafts then replaced by the
 *            known continuation (the none row's own output), each right
 *            with probability alpha (rs_drafter_set_oracle), K fixed at k,
 *            for every alpha and k = 1..oracle_k_max.
 *
 * Each oracle row carries the speedup over plain decoding and what a cost
 * model predicts from costs measured apart from alpha: with t the plain
 * step, V(k) the mean time of a verification pass of k + 1 tokens and its
 * rollback (over the k column), D the time per drafted token and C the
 * MTP catch-up per kept token (over the whole table),
 *
 *   speedup(alpha, k) = E · t / (V(k) + k·D + E·C),
 *   E = 1 + alpha + ... + alpha^k   (tokens per round).
 *
 * The prediction is filled in after the table (rows come twice: once when
 * measured, with predicted 0, and once more at the end with it).
 */
#ifndef RS_BENCH_SPEC_H
#define RS_BENCH_SPEC_H

#include <stdint.h>

#include "rs_drafter.h"
#include "rs_engine.h"

#define RS_BENCH_SPEC_MAX_ALPHA	12
#define RS_BENCH_SPEC_MAX_K	RS_DRAFTER_K_MAX

struct rs_bench_spec_opts {
	int32_t		 prompt_tokens;	/* random prompt (128) */
	int32_t		 gen_tokens;	/* generated per run (128) */
	int		 k_max;		/* spec rows' draft_max (4) */
	int		 only;		/* -1: a spec row for every drafter;
					   else for none and this
					   enum rs_drafter_kind only */
	enum rs_drafter_kind oracle;	/* whose cost the oracle pays (mtp,
					   ngram on a model without MTP);
					   NONE: no oracle rows */
	int		 oracle_k_max;	/* k = 1 .. this (8) */
	double		 alphas[RS_BENCH_SPEC_MAX_ALPHA];
	int		 n_alphas;	/* (0.5 0.6 0.7 0.8 0.9 1.0) */
	int32_t		 vocab;		/* MTP drafts over the first VOCAB
					   ids (rs_drafter_opts.vocab); 0:
					   the full head */
	int		 reps;		/* runs per row, the fastest kept (1):
					   for a machine shared with others */
	uint64_t	 seed;
};

struct rs_bench_spec_row {
	const char	*test;		/* "spec" or "oracle" */
	const char	*drafter;	/* rs_drafter_kind_name() */
	int		 k;		/* draft_max (spec), k (oracle); 0:
					   the oracle's adaptive row */
	int		 adaptive;	/* K chosen per round (rs_drafter.h)
					   up to draft_max, or up to
					   oracle_k_max in the oracle's
					   adaptive row */
	double		 alpha;		/* oracle; -1 for spec rows */
	int64_t		 tokens;	/* generated */
	int64_t		 rounds;	/* verification passes */
	int64_t		 drafted, accepted;
	double		 ms;		/* decoding wall time */
	double		 tok_s;
	double		 speedup;	/* tok_s / the none row's */
	double		 verify_ms, draft_ms, catchup_ms;	/* of ms */
	double		 predicted;	/* oracle: the cost model's speedup,
					   0 until the table is done; −1 in
					   the adaptive rows (none) */
};

typedef int	(*rs_bench_spec_cb)(const struct rs_bench_spec_row *row,
		    void *ctx);

void		rs_bench_spec_defaults(struct rs_bench_spec_opts *o);

/*
 * Run the spec rows, then the oracle table, on E; CB gets each row (a
 * non-zero return stops the run): for each alpha the fixed k = 1 ..
 * oracle_k_max, then one run whose drafter adapts K up to oracle_k_max
 * (what a server's adaptive rule makes of that acceptance); every oracle
 * row once measured (predicted 0), then again with the cost model's
 * prediction (fixed k) or −1 (adaptive).  The runs reuse two states of E
 * (plain, and with snapshots for the drafters), reset in between, and
 * every spec row and each fixed k (at the first alpha) runs once untimed
 * first (graph captures).  Fails with RS_ERR_INVALID_ARG (sizes below 1, k outside
 * [1, 16], alpha outside [0, 1], more than RS_BENCH_SPEC_MAX_ALPHA
 * alphas, reps outside [1, 100]), RS_ERR_LIMIT (prompt and generation
 * beyond the model's context), RS_ERR_UNSUPPORTED (ONLY an MTP drafter on
 * a model without an MTP block), RS_ERR_FORMAT (a drafter's output
 * differs from plain decoding's: verification is not exact), RS_ERR_NOMEM
 * or the engine's statuses.
 */
enum rs_status	rs_bench_spec(struct rs_engine *e,
		    const struct rs_bench_spec_opts *o, rs_bench_spec_cb cb,
		    void *ctx, struct rs_err *err);

#endif /* RS_BENCH_SPEC_H */
