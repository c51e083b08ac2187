/*
 * rs_engine.h - the qwen35 forward pass (qwen35-model.md §4, §6) behind a
 * backend-neutral interface.
 *
 * An engine binds a model (rs_model.h) to a backend and owns what a pass
 * needs besides the sequence state: worker threads and scratch buffers
 * sized once for opts.max_batch tokens.  Each call runs tokens of one
 * sequence whose caches live in a struct rs_state (rs_state.h):
 *
 *   rs_engine_forward()    T tokens at the state's position: prefill,
 *                          verification of drafts, or a decode step (T = 1);
 *                          logits and/or the post-output_norm hidden state
 *   rs_engine_forward_top() the same, returning only the K best tokens of
 *                          each row (selected on the GPU with cuda): what
 *                          greedy decoding and top-k sampling need
 *   rs_engine_mtp_batch()  the MTP block (§6.1) over N tokens with their
 *                          input hidden states: the catch-up pass that
 *                          fills the MTP KV cache, or (N = 1, rs_engine_mtp)
 *                          a draft step
 *   rs_engine_truncate()   undo tokens exactly (snapshot, or checkpoint +
 *                          replay)
 *
 * Calls longer than max_batch are processed in chunks.  Calls of at most
 * RS_ENGINE_EXACT_MAX tokens (every verification pass: 16 drafts and the
 * token before them) give bit for bit the results of the same tokens one
 * at a time, on every backend, so speculative output equals plain decoding
 * and rollback is exact.  Longer calls are prompts: the CPU backend still
 * computes them exactly so, the CUDA backend takes its prefill path
 * (products on tensor cores in f16), whose results match within the
 * tolerance of the CPU reference but not bit for bit.  No call allocates.  Numerics of the CPU backend:
 * activations, KV cache and recurrent state in f32 (llama.cpp keeps an f16
 * KV cache, §4.10; we do not round it), weights of every type dequantized
 * on the fly one row at a time, sums of squares in double.
 *
 * Several GPUs (opts.n_devices, rs_split.h, docs/multi-gpu.md): a layer
 * split, each GPU running a contiguous range of blocks with their part of
 * every state; results are bit for bit the one-GPU engine's.
 *
 * Lifecycle: rs_engine_new() / rs_engine_free().  The model must outlive
 * the engine.  An engine runs one call at a time (not thread-safe); use one
 * engine per thread, they can share the model.
 */
#ifndef RS_ENGINE_H
#define RS_ENGINE_H

#include <stdint.h>

#include "rs_err.h"
#include "rs_model.h"
#include "rs_split.h"
#include "rs_state.h"
#include "rs_top.h"

enum rs_backend {
	RS_BACKEND_AUTO = 0,	/* cuda when built with it and a GPU is present */
	RS_BACKEND_CPU,
	RS_BACKEND_CUDA
};

/* "cpu" ... for a backend; RS_BACKEND_* for "auto"/"cpu"/"cuda", or −1. */
const char	*rs_backend_name(enum rs_backend b);
int		 rs_backend_from_name(const char *name);

/* The longest call that is bit-identical to single steps (see above). */
#define RS_ENGINE_EXACT_MAX	32

struct rs_engine_opts {
	enum rs_backend	backend;
	int		n_threads;	/* 0: online CPUs */
	int		max_batch;	/* tokens per chunk; 0: 64 on the CPU,
					   RS_ENGINE_CUDA_CHUNK on the GPU */
	/*
	 * The layer split over GPUs (rs_split.h, docs/multi-gpu.md): 0
	 * devices is one GPU, the current one, exactly the engine without a
	 * split; else N_DEVICES CUDA ordinals (one may repeat: "0,0" runs
	 * the split on one GPU) and SPLIT, their block counts, or all 0 for
	 * the split that balances memory for SPLIT_STATES states (0: 1) of
	 * SPLIT_CTX positions (0: the model's context length, as for a
	 * state).  The CPU backend takes no devices.
	 */
	int		n_devices;
	int		devices[RS_SPLIT_MAX];
	int		split[RS_SPLIT_MAX];
	int32_t		split_ctx;
	int		split_states;
};

/* The GPU's default chunk: prefill products are worth tensor cores. */
#define RS_ENGINE_CUDA_CHUNK	2048

enum rs_logits_mode {
	RS_LOGITS_NONE = 0,	/* no LM head */
	RS_LOGITS_LAST,		/* the last token's row only */
	RS_LOGITS_ALL		/* every token's row */
};

struct rs_engine;

/*
 * An engine for model M; OPTS may be NULL (defaults).  Fails with
 * RS_ERR_INVALID_ARG (thread count outside [1, 256], max_batch outside
 * [1, 65536], a bad split: rs_split_make(), a device ordinal the machine
 * lacks), RS_ERR_UNSUPPORTED (a backend this build lacks, devices for the
 * CPU backend), RS_ERR_NOMEM, RS_ERR_IO (threads), RS_ERR_CUDA.
 */
enum rs_status	rs_engine_new(struct rs_engine **out, const struct rs_model *m,
		    const struct rs_engine_opts *opts, struct rs_err *err);

void		rs_engine_free(struct rs_engine *e);

/*
 * A fresh sequence state for E's model, in the memory E's backend computes
 * in (host for cpu, the GPU for cuda: f16 KV cache there, §4.10); OPTS as
 * for rs_state_new(), which makes host states for the CPU backend only.
 * Free with rs_state_free().  The state works with every engine of the
 * same model and backend.
 */
enum rs_status	rs_engine_state_new(const struct rs_engine *e,
		    const struct rs_state_opts *opts, struct rs_state **out,
		    struct rs_err *err);

/*
 * Measure the streaming-read bandwidth of the memory E computes from (the
 * GPU's for cuda, host memory for cpu) in GB/s: the ceiling that rs-bench
 * divides achieved bandwidth by.  Takes a second or so.
 */
enum rs_status	rs_engine_probe_bandwidth(struct rs_engine *e, double *gb_s,
		    struct rs_err *err);

/*
 * Memory plan of E: bytes of weights as E holds them and of its scratch
 * (activations for max_batch tokens); a state's bytes come from
 * rs_state_bytes().
 */
void		rs_engine_memory(const struct rs_engine *e, uint64_t *weights,
		    uint64_t *scratch);

/*
 * The scratch a CUDA engine of model M would allocate with MAX_BATCH
 * (0: the default chunk), without a GPU: activations of the chunk, the
 * exact path's attention partials and logits, the prefill products'
 * copies; the CUDA context and cuBLAS's workspace come on top.  0 in a
 * build without the CUDA backend.
 */
uint64_t	rs_engine_cuda_scratch(const struct rs_model *m, int max_batch);

/*
 * The memory a state of E's model with OPTS (NULL: defaults) would take in
 * E's backend (rs_state_plan() with the backend's KV element size): what
 * rs_engine_state_new() will allocate and rs_state_bytes() report.
 */
void		rs_engine_state_plan(const struct rs_engine *e,
		    const struct rs_state_opts *opts,
		    struct rs_state_plan *out);

/*
 * Free and total bytes of the device E computes on, now (with E's
 * weights and scratch already allocated there).  Fails with
 * RS_ERR_UNSUPPORTED for the CPU backend (host memory is not tracked) or
 * RS_ERR_CUDA.  Outputs are set only on RS_OK.
 */
enum rs_status	rs_engine_device_memory(const struct rs_engine *e,
		    uint64_t *free_bytes, uint64_t *total_bytes,
		    struct rs_err *err);

/*
 * Free and total bytes now of the GPU of E's device slot J (0 ..
 * rs_engine_split(E)->n − 1).  Fails as rs_engine_device_memory, and with
 * RS_ERR_INVALID_ARG for a J outside the split.
 */
enum rs_status	rs_engine_slot_memory(const struct rs_engine *e, int j,
		    uint64_t *free_bytes, uint64_t *total_bytes,
		    struct rs_err *err);

/* E's layer split: one slot on device −1 (current) without devices. */
const struct rs_split *rs_engine_split(const struct rs_engine *e);

const struct rs_model *rs_engine_model(const struct rs_engine *e);
enum rs_backend	rs_engine_backend(const struct rs_engine *e);
int		rs_engine_n_threads(const struct rs_engine *e);
int		rs_engine_max_batch(const struct rs_engine *e);

/*
 * Run the N tokens TOKENS at positions pos .. pos + N − 1 of ST (pos =
 * rs_state_pos(ST)) and advance ST by N.
 *
 * LOGITS: NULL, or room for the rows MODE asks for, n_vocab floats each
 * (RS_LOGITS_ALL: N rows, row t = distribution of the token after
 * tokens[t]; RS_LOGITS_LAST: one row).  HIDDEN: NULL or (N, n_embd), the
 * trunk output after output_norm (the MTP input, §6.2).
 *
 * Fails, leaving ST unchanged, with RS_ERR_INVALID_ARG (N < 1, a token
 * outside [0, n_vocab), a state of another model, LOGITS NULL with a MODE
 * other than NONE) or RS_ERR_LIMIT (pos + N beyond the state's n_ctx).
 * Fails with RS_ERR_FORMAT when a logit asked for is NaN or ±Inf (weights
 * holding NaN, rs_scan.h; ST has then advanced and is of no further use).
 */
enum rs_status	rs_engine_forward(struct rs_engine *e, struct rs_state *st,
		    const int32_t *tokens, int32_t n, float *logits,
		    enum rs_logits_mode mode, float *hidden,
		    struct rs_err *err);

/*
 * rs_engine_forward, but instead of the logits rows MODE asks for, the K
 * best tokens of each (rs_top.h: best first, the lower id on ties): TOP
 * receives K entries per row, exactly rs_top_select() of the row
 * rs_engine_forward would have returned, with the mask of
 * rs_engine_set_top_skip() when SKIP is not 0 (else none).  This is all that greedy decoding
 * (K = 1) and rs_sample_next_top() need: the CUDA backend selects on the
 * GPU and copies back K·8 bytes a row instead of n_vocab floats (1 MB for
 * the 27B); the CPU backend computes the rows and selects on the host, the
 * reference.  Every logit of a row asked for is still checked.
 *
 * Fails as rs_engine_forward (RS_ERR_FORMAT: a NaN or ±Inf anywhere in a
 * row asked for), and with RS_ERR_INVALID_ARG for MODE NONE, TOP NULL, K
 * outside [1, RS_TOP_MAX], or RS_LOGITS_ALL over more than
 * RS_ENGINE_EXACT_MAX tokens (verification passes are never longer).
 */
enum rs_status	rs_engine_forward_top(struct rs_engine *e, struct rs_state *st,
		    const int32_t *tokens, int32_t n, enum rs_logits_mode mode,
		    int32_t k, int skip, struct rs_top *top, float *hidden,
		    struct rs_err *err);

/*
 * The tokens rs_engine_forward_top leaves out of its candidates when
 * asked to skip: MASK[i] != 0 for token i (n_vocab flags, copied; NULL:
 * none), e.g. the control tokens a chat never samples (rs_gen's bans).
 * The mask stays until the next call; it is uploaded once, not per call.
 * Fails with RS_ERR_NOMEM or RS_ERR_CUDA.
 */
enum rs_status	rs_engine_set_top_skip(struct rs_engine *e,
		    const unsigned char *mask, struct rs_err *err);

/*
 * What calls cost on E, measured once per engine and then remembered:
 * COST[n − 1] = the time of a verification pass of n tokens
 * (rs_engine_forward_top: every row, one candidate each, hidden rows) over
 * that of one token, for n = 1 .. N_MAX; *MTP (MTP NULL: not asked) an
 * MTP draft step's (rs_engine_mtp_top) over the one-token pass's, 0 on a
 * model without an MTP block.  The drafters' adaptive K rests on them
 * (rs_drafter.h).  Runs 4·N_MAX + 4 calls on a scratch state of its own
 * (RS_ENGINE_EXACT_MAX + 1 positions, no snapshots): 0.5 s for N_MAX 9
 * on the 27B on an H200, graph captures included.  Fails with RS_ERR_INVALID_ARG (N_MAX outside
 * [1, RS_ENGINE_EXACT_MAX]), RS_ERR_LIMIT (a clock too coarse to time a
 * one-token pass), RS_ERR_NOMEM and the engine's statuses.
 */
enum rs_status	rs_engine_pass_costs(struct rs_engine *e, int n_max,
		    double *cost, double *mtp, struct rs_err *err);

/*
 * Wait until everything issued on E so far (forward calls without logits
 * return before the device has run them; state copies of the checkpoint
 * cache) is done: for timing a step (rs_gen's time-to-first-token
 * breakdown).  A no-op on the CPU.  Fails with RS_ERR_CUDA.
 */
enum rs_status	rs_engine_sync(struct rs_engine *e, struct rs_err *err);

/*
 * The MTP block (§6.1) on N tokens at positions POS .. POS + N − 1 of the
 * MTP cache: row t combines TOKENS[t] with H_IN row t, the trunk hidden
 * state (post-output_norm) of position POS + t − 1 — zeros at position 0 —
 * or, when drafting, the previous step's H_OUT.  Writes the MTP K/V of those
 * positions; entries from POS + N on are dropped (mtp_pos = POS + N), so a
 * draft step's scratch entries are simply overwritten by the next catch-up.
 *
 * LOGITS: NULL or (N, n_vocab).  H_OUT: NULL or (N, n_embd), the MTP
 * output after shared_head_norm.
 *
 * Fails, leaving ST unchanged, with RS_ERR_UNSUPPORTED (a model without an
 * MTP block), RS_ERR_INVALID_ARG (N < 1, POS < 0, POS past mtp_pos (a gap in
 * the MTP cache), a token outside the vocabulary, H_IN NULL) or RS_ERR_LIMIT
 * (POS + N beyond n_ctx).  RS_ERR_FORMAT: a non-finite logit, as
 * rs_engine_forward.
 */
enum rs_status	rs_engine_mtp_batch(struct rs_engine *e, struct rs_state *st,
		    const int32_t *tokens, int32_t n, int32_t pos,
		    const float *h_in, float *logits, float *h_out,
		    struct rs_err *err);

/* One MTP step: rs_engine_mtp_batch with N = 1. */
enum rs_status	rs_engine_mtp(struct rs_engine *e, struct rs_state *st,
		    int32_t token, int32_t pos, const float *h_in,
		    float *logits, float *h_out, struct rs_err *err);

/*
 * rs_engine_mtp with the K best tokens of the row into TOP (K entries, as
 * rs_engine_forward_top gives them, no skip mask) instead of the row: a
 * greedy draft step needs only TOP[0].  Fails as rs_engine_mtp, and with
 * RS_ERR_INVALID_ARG for K outside [1, RS_TOP_MAX] or TOP NULL.
 */
enum rs_status	rs_engine_mtp_top(struct rs_engine *e, struct rs_state *st,
		    int32_t token, int32_t pos, const float *h_in, int32_t k,
		    struct rs_top *top, float *h_out, struct rs_err *err);

/*
 * Truncate ST to POS tokens exactly, whatever it takes: rs_state_truncate()
 * when a snapshot, the checkpoint or a reset covers it; otherwise roll back
 * to the checkpoint (if at or below POS) or reset, and replay the token
 * history up to POS through rs_engine_forward (cost: a forward pass over
 * the replayed tokens; a replay of more than RS_ENGINE_EXACT_MAX tokens is
 * a prompt to the CUDA backend, so there the state matches the one it
 * replaces within the prefill path's tolerance, not bit for bit).  The MTP
 * cache is cut to POS.
 * Fails with RS_ERR_INVALID_ARG (POS outside [0, pos]).
 */
enum rs_status	rs_engine_truncate(struct rs_engine *e, struct rs_state *st,
		    int32_t pos, struct rs_err *err);

#endif /* RS_ENGINE_H */
