/*
 * rs_fit.h - does a serving configuration fit in a device's memory?
 *
 * A server holds the engine (weights and scratch, rs_engine_memory()) and
 * SLOTS sequence states of N_CTX positions each (rs_engine_state_plan():
 * KV cache, MTP KV cache, recurrent state, snapshots, checkpoint).  Per
 * slot, the KV caches grow linearly with the positions and the rest does
 * not, so
 *
 *   need = weights + scratch + slots × (n_ctx × kv_per_pos + fixed)
 *          + RS_FIT_RESERVE
 *
 * against the bytes the device had for all of it.  rs_fit_check() is the
 * decision alone, on numbers the caller measured (cudaMemGetInfo through
 * rs_engine_device_memory()), so it is tested without a GPU; when the
 * configuration does not fit, it writes the explanation a user can act
 * on: every term, and the largest --ctx and --slots that would fit.
 *
 * Pure functions: no allocation but MSG's, thread-safe.
 */
#ifndef RS_FIT_H
#define RS_FIT_H

#include <stdint.h>

#include "rs_buf.h"
#include "rs_split.h"
#include "rs_state.h"

/*
 * Kept free beyond the plan: the allocator rounds each buffer up (2 MiB
 * pages for cudaMalloc, a few dozen buffers per state) and the runtime
 * allocates a little more on first use (CUDA graphs, kernel modules).
 */
#define RS_FIT_RESERVE	((uint64_t)256 << 20)

struct rs_fit {
	uint64_t		weights;	/* bytes, the engine's */
	uint64_t		scratch;	/* bytes, the engine's */
	struct rs_state_plan	slot;		/* one state at N_CTX */
	int32_t			n_ctx;		/* positions per slot, >= 1 */
	int			slots;		/* states, >= 1 */
	uint64_t		avail;		/* bytes the device had for
						   weights, scratch and states */
};

struct rs_fit_result {
	uint64_t	need;		/* bytes, the formula above */
	int64_t		max_slots;	/* states of N_CTX that fit; 0: none */
	int32_t		max_ctx;	/* positions per slot that fit SLOTS
					   states, rounded down to a multiple
					   of 1024 above it; 0: none */
};

/*
 * Whether F fits: 1 or 0.  RES (may be NULL) gets the numbers.  When it
 * does not fit and MSG is not NULL, appends lines (each ending in '\n',
 * no program name) saying what was needed and what was free, term by
 * term in GiB, and the largest --slots at this --ctx and --ctx at these
 * --slots.  DEVICE names the memory in the first line ("GPU").
 */
int		rs_fit_check(const struct rs_fit *f, const char *device,
		    struct rs_fit_result *res, struct rs_buf *msg);

/*
 * The same decision per GPU for a layer split SP (rs_split.h) of several
 * slots: MEM (SP->n entries, rs_split_make() for SLOTS states of N_CTX
 * positions: what each slot will hold) against FREE (SP->n entries: the
 * free bytes of each slot's GPU measured once the engine's weights and
 * scratch are there; slots of one GPU repeat its number).  A GPU fits
 * when its slots' totals plus RS_FIT_RESERVE are at most its free bytes
 * plus its slots' weights and scratch.  1 when every GPU fits; else 0,
 * and MSG (may be NULL) gets a line per GPU that does not, with its
 * blocks and terms in GiB, and a last line on what to change.
 */
int		rs_fit_split_check(const struct rs_split *sp,
		    const struct rs_split_mem *mem, const uint64_t *free_b,
		    int32_t n_ctx, int slots, struct rs_buf *msg);

/*
 * How many drafts a pass the default drafter keeps where memory is short
 * (rs-serve: its snapshots give way to --ctx and --slots): the first of
 * K, K / 2, K / 4, ..., 0 whose state snapshots (drafts + 1 a slot, none
 * at 0 drafts) FITS accepts; -1 when not even 0 does.  FITS(N_SNAP, CTX)
 * is the caller's check: 1 when it fits.
 */
int		rs_fit_drafts(int k, int (*fits)(int n_snap, void *ctx),
		    void *ctx);

#endif /* RS_FIT_H */
