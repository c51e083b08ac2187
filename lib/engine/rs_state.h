/*
 * rs_state.h - the mutable state of one sequence (qwen35-model.md §5, §6.3,
 * §6.5): everything a forward pass reads besides the weights.
 *
 *   attention KV cache   per attention block: K and V, f32,
 *                        (n_ctx, n_head_kv, head_dim) each, K after
 *                        k-norm and RoPE
 *   conv state           per GDN block: (channels, conv_kernel − 1), the
 *                        last raw projection values
 *   recurrent state      per GDN block: (n_v_heads, d_state, d_state), f32
 *   MTP KV cache         the MTP block's own K/V, same layout, filled by
 *                        rs_engine_mtp*() (mtp_pos positions valid)
 *   position, token history, rollback snapshots and one checkpoint
 *
 * Lifecycle: rs_state_new() allocates everything once for N_CTX positions
 * (the token loop never allocates); rs_state_free() releases it.  A state
 * belongs to one model and one sequence; it is not thread-safe, and one
 * forward pass at a time may use it.
 *
 * Undoing tokens (speculative verification, §6.5).  The KV caches need no
 * copy to undo: entries past the position are simply ignored and later
 * overwritten.  The GDN state cannot be un-applied, so there are two
 * mechanisms:
 *
 * - Snapshots (rs_state_truncate): with opts.n_snap = S > 0, every forward
 *   call records its last S tokens into a ring of S slots: for each, the
 *   conv state after it (small) and a replay record, the delta rule's
 *   inputs of that token (k, v, β and the decay of every head: 27B 1.5
 *   MiB a position); and once a call, the full recurrent state before its
 *   first recorded token (the base: 149.6 MiB on the 27B).  Truncating to
 *   a recorded position is then the conv copy plus the base state with the
 *   records after it replayed by the backend's own delta rule (the same
 *   arithmetic, so the same bits), and exact.  A call of k tokens so
 *   writes one full state instead of k: a 16-token verification pass on
 *   the 27B 0.15 GB where it wrote 2.4.  What the ring can restore is the
 *   recorded positions whose base is still there: a slot's full state is
 *   overwritten by a later base S positions on (rs_state_snap_floor says
 *   how far back truncation reaches).  Cost: memory S × (gdn_bytes +
 *   record) (27B: 151 MiB per slot; tiny: 600 KiB).  For a verification
 *   batch of k drafts use S >= k + 1.
 * - A checkpoint (rs_state_checkpoint / rs_state_rollback): one copy of the
 *   GDN state (gdn_bytes, allocated at rs_state_new when opts.checkpoint is
 *   set) plus the position.  Rolling back to it is exact; reaching a later
 *   position than the checkpoint then needs a replay of the tokens in
 *   between (rs_engine_truncate() does this from the token history: the
 *   cost of a forward pass over them).
 *
 * A state's numbers do not depend on how tokens were batched: the CPU
 * engine computes every token with the same operation order, so a state
 * that saw the same tokens holds the same bits.
 */
#ifndef RS_STATE_H
#define RS_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "rs_err.h"
#include "rs_model.h"

struct rs_state;

struct rs_state_opts {
	int32_t	n_ctx;		/* positions; 0: the model's context_length */
	int32_t	n_snap;		/* GDN snapshot slots for rs_state_truncate */
	int	checkpoint;	/* nonzero: room for one checkpoint */
};

/*
 * A fresh state (position 0) for model M; OPTS may be NULL (defaults).
 * Fails with RS_ERR_INVALID_ARG (negative counts, n_ctx above 2^24),
 * RS_ERR_NOMEM.  The model must outlive the state.
 */
enum rs_status	rs_state_new(struct rs_state **out, const struct rs_model *m,
		    const struct rs_state_opts *opts, struct rs_err *err);

void		rs_state_free(struct rs_state *st);

/* Back to an empty sequence: position 0, zero GDN state, no MTP entries,
 * no snapshots, no checkpoint. */
void		rs_state_reset(struct rs_state *st);

/* Tokens in the trunk caches (the position of the next token). */
int32_t		rs_state_pos(const struct rs_state *st);

/* Positions 0 .. mtp_pos − 1 of the MTP KV cache are valid. */
int32_t		rs_state_mtp_pos(const struct rs_state *st);

int32_t		rs_state_n_ctx(const struct rs_state *st);

/* Recurrent-state snapshot slots (opts.n_snap). */
int32_t		rs_state_n_snap(const struct rs_state *st);

const struct rs_model *rs_state_model(const struct rs_state *st);

/* Token at position P < rs_state_pos() (the history kept for replay). */
int32_t		rs_state_token(const struct rs_state *st, int32_t p);

/* The memory a state would take (qwen35-model.md §5), before making it. */
struct rs_state_plan {
	uint64_t	kv;		/* trunk K and V caches, all layers */
	uint64_t	mtp_kv;		/* the MTP block's own cache */
	uint64_t	gdn;		/* conv + recurrent state, one copy */
	uint64_t	snapshots;	/* n_snap more copies of gdn, with
					   their replay records */
	uint64_t	checkpoint;	/* one more copy, if asked for */
	uint64_t	tokens;		/* the token history (host) */
	uint64_t	total;		/* all of the above but tokens */
};

/*
 * Plan a state of model M with OPTS (NULL: defaults) whose KV values take
 * KV_ELEM bytes (4: f32 on the CPU, 2: f16 on the GPU).  Positions default
 * to the model's context length, as in rs_state_new().
 */
void		rs_state_plan(const struct rs_model *m,
		    const struct rs_state_opts *opts, size_t kv_elem,
		    struct rs_state_plan *out);

/* Bytes of every buffer of ST (rs_state_plan()'s total for it). */
uint64_t	rs_state_bytes(const struct rs_state *st);

/*
 * Bytes of one copy of all GDN state (conv + recurrent): what a snapshot
 * or a checkpoint costs.
 */
size_t		rs_state_gdn_bytes(const struct rs_state *st);

/*
 * Forget every token from position POS on, exactly: the state becomes what
 * it was after the first POS tokens.  Uses, in order: nothing (POS equal to
 * the position), a reset (POS 0), a snapshot of position POS − 1, the
 * checkpoint if it was taken at POS.  The MTP cache is cut to POS too.
 * Fails with RS_ERR_INVALID_ARG (POS negative or past the position) or
 * RS_ERR_LIMIT when none applies (the message gives the snapshot range);
 * then the state is unchanged and rs_engine_truncate() can replay instead.
 */
enum rs_status	rs_state_truncate(struct rs_state *st, int32_t pos,
		    struct rs_err *err);

/*
 * Lowest position P such that truncating to any position in [P, pos]
 * succeeds through the snapshot ring or a reset (pos itself when no
 * earlier position does).
 */
int32_t		rs_state_snap_floor(const struct rs_state *st);

/*
 * Remember the current GDN state and position (copies gdn_bytes).
 * RS_ERR_UNSUPPORTED when the state was made without opts.checkpoint.
 */
enum rs_status	rs_state_checkpoint(struct rs_state *st, struct rs_err *err);

/*
 * Return exactly to the checkpoint: position, GDN state, MTP cache cut to
 * that position.  The checkpoint stays usable.  RS_ERR_INVALID_ARG when
 * there is none, or when the state was truncated below it since (its KV
 * entries may have been overwritten), which discards it.
 */
enum rs_status	rs_state_rollback(struct rs_state *st, struct rs_err *err);

/* Position of the checkpoint, or −1 when there is none. */
int32_t		rs_state_checkpoint_pos(const struct rs_state *st);

/*
 * Make DST an exact copy of SRC's sequence (positions, KV entries below the
 * positions, GDN state, token history; not the snapshots or the
 * checkpoint).  Both must be for the same model and DST's n_ctx must hold
 * SRC's positions; RS_ERR_INVALID_ARG otherwise.
 */
enum rs_status	rs_state_copy(struct rs_state *dst, const struct rs_state *src,
		    struct rs_err *err);

#endif /* RS_STATE_H */
