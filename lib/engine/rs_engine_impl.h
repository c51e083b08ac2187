/*
 * rs_engine_impl.h - what an engine backend implements (rs_engine.c checks
 * the arguments, splits calls into chunks and dispatches here).
 */
#ifndef RS_ENGINE_IMPL_H
#define RS_ENGINE_IMPL_H

#include "rs_engine.h"
#include "rs_state_impl.h"

struct rs_engine;

struct rs_backend_ops {
	const char	*name;
	/* Where this backend keeps sequence states (rs_state_impl.h). */
	const struct rs_state_mem *mem;
	/* Allocate the backend's threads and scratch into e->be. */
	enum rs_status	(*init)(struct rs_engine *e, struct rs_err *err);
	/* Release e->be (may be half built). */
	void		(*free)(struct rs_engine *e);
	/*
	 * N <= max_batch validated tokens at positions st->pos ..; store them
	 * in the history and the caches, record GDN snapshots for positions
	 * >= SNAP_FROM, advance st->pos.  LOGITS (stride n_vocab) receives the
	 * rows of tokens LOGITS_FROM .. N − 1, starting with LOGITS_FROM's
	 * (none when NULL); HIDDEN, when not NULL, the (N, n_embd)
	 * post-output_norm rows.
	 */
	enum rs_status	(*forward)(struct rs_engine *e, struct rs_state *st,
			    const int32_t *tokens, int32_t n, int32_t snap_from,
			    float *logits, int32_t logits_from, float *hidden,
			    struct rs_err *err);
	/* Streaming-read bandwidth of the memory the weights live in, GB/s. */
	enum rs_status	(*probe)(struct rs_engine *e, double *gb_s,
			    struct rs_err *err);
	/* Bytes of weights and scratch this engine holds in its memory. */
	void		(*memory)(const struct rs_engine *e, uint64_t *weights,
			    uint64_t *scratch);
	/* The MTP block on N <= max_batch validated tokens (rs_engine.h). */
	enum rs_status	(*mtp)(struct rs_engine *e, struct rs_state *st,
			    const int32_t *tokens, int32_t n, int32_t pos,
			    const float *h_in, float *logits, float *h_out,
			    struct rs_err *err);
	/*
	 * Optional (NULL: rs_engine.c runs forward into e->top_rows and
	 * selects with rs_top_select).  As forward, but the rows of tokens
	 * LOGITS_FROM .. N − 1 (at most RS_ENGINE_EXACT_MAX) stay on the
	 * backend and only their K best (rs_top.h; less set_top_skip's
	 * tokens when SKIP) come back into TOP, K per row; *BAD =
	 * (row − LOGITS_FROM)·n_vocab + token of the first non-finite logit,
	 * its value in *BAD_VAL, or *BAD = −1.
	 */
	enum rs_status	(*forward_top)(struct rs_engine *e, struct rs_state *st,
			    const int32_t *tokens, int32_t n, int32_t snap_from,
			    int32_t logits_from, int32_t k, int skip,
			    struct rs_top *top, int64_t *bad, float *bad_val,
			    float *hidden, struct rs_err *err);
	/* With forward_top: take MASK (n_vocab flags) as the skip mask. */
	enum rs_status	(*set_top_skip)(struct rs_engine *e,
			    const unsigned char *mask, struct rs_err *err);
	/*
	 * Optional, with forward_top (NULL: mtp into e->top_rows, then
	 * rs_top_select): mtp on N <= RS_ENGINE_EXACT_MAX tokens with each
	 * row's K best into TOP, *BAD and *BAD_VAL as forward_top's.
	 */
	enum rs_status	(*mtp_top)(struct rs_engine *e, struct rs_state *st,
			    const int32_t *tokens, int32_t n, int32_t pos,
			    const float *h_in, int32_t k, struct rs_top *top,
			    int64_t *bad, float *bad_val, float *h_out,
			    struct rs_err *err);
	/* Wait until every call and state copy issued so far is done;
	   optional (NULL: the backend never returns before its work is) */
	enum rs_status	(*sync)(struct rs_engine *e, struct rs_err *err);
};

struct rs_engine {
	const struct rs_model	*model;		/* borrowed */
	enum rs_backend		 backend;
	const struct rs_backend_ops *ops;
	int			 n_threads;
	int			 max_batch;
	void			*be;		/* backend private */
	struct rs_split		 split;		/* the CPU's: one slot, −1 */
	/* (min(max_batch, RS_ENGINE_EXACT_MAX), n_vocab) logits rows for
	   rs_engine_forward_top and rs_engine_mtp_top on a backend without
	   forward_top or mtp_top; else NULL */
	float			*top_rows;
	unsigned char		*top_skip;	/* (n_vocab) or NULL: none */
	/* rs_engine_pass_costs' measurement, kept: passes of 1 ..
	   n_pass_cost tokens (0: none yet) and an MTP step, relative to a
	   one-token pass */
	double			 pass_cost[RS_ENGINE_EXACT_MAX];
	double			 mtp_cost;
	int			 n_pass_cost;
};

/* rs_cpu_forward.c, the oracle of its twin, kernels/cuda_forward.cu */
extern const struct rs_backend_ops rs_cpu_backend;
#ifdef RS_CUDA
/* kernels/cuda_forward.cu; rs_cuda_device_count() > 0 before using it. */
extern const struct rs_backend_ops rs_cuda_backend;
int		rs_cuda_device_count(void);
/* Why the last rs_cuda_device_count() was 0 (the driver's word). */
const char	*rs_cuda_no_device_why(void);
/* RS_OK if this build has code that GPU DEV (−1: the current one) runs,
   else an error that says how to build for it. */
enum rs_status	rs_cuda_check_device(int dev, struct rs_err *err);
/* Scratch bytes of a CUDA engine of batch B (needs no GPU). */
uint64_t	rs_cuda_scratch_plan(const struct rs_hparams *hp, int64_t b);
/* cudaMemGetInfo() of device DEV (−1: the current one), which becomes
   current (rs_engine_device_memory()). */
enum rs_status	rs_cuda_mem_info(int dev, uint64_t *free_bytes,
		    uint64_t *total_bytes, struct rs_err *err);
#endif

#endif /* RS_ENGINE_IMPL_H */
