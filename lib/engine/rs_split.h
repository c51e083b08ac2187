/*
 * rs_split.h - an engine's layer split over several GPUs (issue #19): which
 * device slot holds which trunk blocks, tensors and state, and the memory
 * each slot needs.
 *
 * A split is a list of N device slots, each a CUDA ordinal (one device may
 * be listed twice: "0,0" runs the split code path on one GPU, with separate
 * allocations per slot), and per slot a contiguous range of trunk blocks.
 * Slot 0 also holds the token embedding; the last slot the output norm,
 * the output head and the MTP block (§6) with its KV cache (and the token
 * embedding again when the MTP block or a tied head reads it).  A state's
 * KV caches, conv and recurrent state, snapshots and checkpoint of a block
 * live on that block's slot.  Per token, only the residual stream (n_embd
 * floats, 20 KB for the 27B) and the call's two parameters cross a
 * boundary.
 *
 * The default split balances memory: it minimises the largest slot's
 * weights + state + scratch (a slot's fixed share: scratch, plus the
 * embedding on the first and the head and MTP block on the last).
 *
 * Pure functions on the model's tables: no allocation, thread-safe.
 */
#ifndef RS_SPLIT_H
#define RS_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "rs_err.h"
#include "rs_model.h"
#include "rs_state.h"

#define RS_SPLIT_MAX	8	/* device slots */
#define RS_SPLIT_MAX_DEV 1023	/* the largest CUDA ordinal accepted */

struct rs_split {
	int		n;			/* slots, 1 .. RS_SPLIT_MAX */
	int		dev[RS_SPLIT_MAX];	/* CUDA ordinal of each slot */
	/* slot j runs trunk blocks first[j] .. first[j + 1] − 1;
	   first[0] = 0, first[n] = n_layer */
	uint32_t	first[RS_SPLIT_MAX + 1];
};

/* Bytes one slot holds (rs_split_make). */
struct rs_split_mem {
	uint64_t	weights;	/* its tensors, 256-byte aligned */
	uint64_t	state;		/* STATES states of its blocks */
	uint64_t	scratch;	/* the engine's, the same on each slot */
	uint64_t	total;
};

/*
 * Parse S, a comma-separated list of 1 .. RS_SPLIT_MAX decimal integers in
 * [MIN, MAX] ("0,1"), into OUT; *N gets the count.  Fails with
 * RS_ERR_INVALID_ARG naming the bad item (empty item, junk, out of range,
 * too many); WHAT names the option in the message ("--devices").
 */
enum rs_status	rs_split_parse(const char *what, const char *s, int min,
		    int max, int out[RS_SPLIT_MAX], int *n, struct rs_err *err);

/*
 * A split of M's trunk over the N devices DEV: COUNTS (N block counts, each
 * >= 1, summing to n_layer) or, COUNTS NULL, the balanced split for STATES
 * states (>= 0) with OPTS (rs_state_plan; NULL: defaults) whose KV values
 * take KV_ELEM bytes, with SCRATCH bytes of engine scratch on each slot.
 * MEM, when not NULL, receives N entries: what each slot holds.  Fails with
 * RS_ERR_INVALID_ARG (N outside [1, RS_SPLIT_MAX], more devices than
 * blocks, a count of 0, counts that do not sum to n_layer, a count list of
 * another length).
 */
enum rs_status	rs_split_make(struct rs_split *out, const struct rs_model *m,
		    const int *dev, int n, const int *counts, size_t kv_elem,
		    const struct rs_state_opts *opts, int states,
		    uint64_t scratch, struct rs_split_mem *mem,
		    struct rs_err *err);

/* The one-slot split of M on device DEV (today's engine). */
void		rs_split_single(struct rs_split *out, const struct rs_model *m,
		    int dev);

/* The slot of block IL (a trunk block, or the MTP block: the last). */
int		rs_split_slot_of(const struct rs_split *sp, uint32_t il);

/*
 * The slots that need tensor I of M's GGUF, as a bit mask (bit j: slot j):
 * a block's tensors on its slot, token_embd on the first (and the last
 * when the MTP block or a tied output head reads it), output_norm and
 * output on the last, anything else everywhere.
 */
unsigned	rs_split_tensor_slots(const struct rs_split *sp,
		    const struct rs_model *m, int64_t i);

/* 1 when A and B are the same split. */
int		rs_split_equal(const struct rs_split *a,
		    const struct rs_split *b);

#endif /* RS_SPLIT_H */
