/*
 * rs_state_impl.h - the layout of struct rs_state, for the engine backends
 * only (callers use rs_state.h).
 */
#ifndef RS_STATE_IMPL_H
#define RS_STATE_IMPL_H

#include "rs_split.h"
#include "rs_state.h"

/*
 * Where a state's large buffers (KV caches, GDN state, snapshots,
 * checkpoint) live: host memory for the CPU backend, a GPU's for the CUDA
 * backend.  alloc returns zeroed memory or NULL; copy and zero complete
 * before they return (for a device: ordered after all earlier work on the
 * backend's stream, which is a blocking stream).  to_host and from_host
 * move bytes between this memory and plain host memory (malloc'd): the
 * checkpoint cache (rs_ckcache.h) spills states to host RAM through them;
 * NULL in a backend that has none, and then nothing spills.  The spill
 * path's optional fast forms: HOST_ALLOC / HOST_FREE give page-locked host
 * memory (NULL: malloc / free), and TO_HOST_ASYNC / FROM_HOST_ASYNC copy
 * between this memory and such host memory ordered after all earlier
 * work on the backend's stream and before all later work, without the
 * host waiting (NULL: to_host / from_host); the host must not touch or
 * free those host bytes before SYNC (NULL: nothing is ever pending)
 * returns.  KV values take KV_ELEM
 * bytes: 4 (f32) on the host, 2 (f16) on the device, where st->k and
 * friends then point to binary16 values despite their float type.
 * SET_DEVICE (NULL on the host) makes device DEV the one that alloc, copy,
 * zero and the rest work on next; a state calls it before touching a
 * part's buffers (a layer split, rs_split.h), never with DEV < 0 (one
 * part on the current device: today's engine).  Copies between two
 * devices' buffers are ordered after and before both devices' work.
 * GDN_REPLAY rebuilds part Q's recurrent state after position LAST from
 * the full snapshot of position BASE (−1: the zero state) and the replay
 * records of positions BASE + 1 .. LAST (rs_state.h: snapshots), with the
 * backend's own delta rule, so that the result is bit for bit what its
 * forward pass computed; ordered like copy.
 */
struct rs_state_part;

struct rs_state_mem {
	const char	*name;
	void		*(*alloc)(size_t bytes);
	void		 (*free)(void *p);
	void		 (*copy)(void *dst, const void *src, size_t bytes);
	void		 (*zero)(void *p, size_t bytes);
	size_t		 kv_elem;
	void		 (*to_host)(void *host, const void *src, size_t bytes);
	void		 (*from_host)(void *dst, const void *host, size_t bytes);
	void		*(*host_alloc)(size_t bytes);
	void		 (*host_free)(void *p);
	void		 (*to_host_async)(void *host, const void *src,
			    size_t bytes);
	void		 (*from_host_async)(void *dst, const void *host,
			    size_t bytes);
	void		 (*sync)(void);
	void		 (*set_device)(int dev);
	enum rs_status	 (*gdn_replay)(struct rs_state *st,
			    struct rs_state_part *q, int32_t base,
			    int32_t last, struct rs_err *err);
};

extern const struct rs_state_mem rs_state_host_mem;

/* rs_state_new() with the buffers in MEM. */
enum rs_status	rs_state_new_in(struct rs_state **out, const struct rs_model *m,
		    const struct rs_state_opts *opts,
		    const struct rs_state_mem *mem, struct rs_err *err);

/*
 * rs_state_new_in() with the buffers of each block on its slot of SP (NULL:
 * one part on the current device): part j of the state holds the KV caches,
 * conv and recurrent state, snapshots and checkpoint of slot j's blocks,
 * the last part the MTP KV cache too.
 */
enum rs_status	rs_state_new_split(struct rs_state **out,
		    const struct rs_model *m, const struct rs_state_opts *opts,
		    const struct rs_state_mem *mem, const struct rs_split *sp,
		    struct rs_err *err);

/*
 * A part of a state: the buffers of one device slot's blocks, laid out as
 * the whole state's below but over its own slots only (a GDN block of slot
 * s is entry s − gdn0 of conv, ssm, the ring and the checkpoint).
 */
struct rs_state_part {
	int	 dev;			/* device (set_device); −1: current */
	int32_t	 gdn0, n_gdn;		/* GDN slots gdn0 .. gdn0 + n_gdn − 1 */
	int32_t	 attn0, n_attn;		/* attention slots, likewise */
	float	*k;			/* (n_attn, n_ctx, kv_row) */
	float	*v;			/* (n_attn, n_ctx, kv_row_v) */
	float	*conv;			/* (n_gdn, conv_len) */
	float	*ssm;			/* (n_gdn, ssm_len) */
	float	*snap_conv;		/* (n_snap, n_gdn, conv_len) */
	float	*snap_ssm;		/* (n_snap, n_gdn, ssm_len) */
	float	*snap_rec;		/* (n_snap, n_gdn, rec_len) */
	float	*ck_conv;		/* (n_gdn, conv_len); NULL: no room */
	float	*ck_ssm;		/* (n_gdn, ssm_len) */
};

struct rs_state {
	const struct rs_model *model;		/* borrowed */
	const struct rs_state_mem *mem;		/* where the buffers live */
	uint64_t serial;	/* unique in the process: what caches of a
				   state's buffers (a captured graph) key on,
				   since a new state can reuse a freed one's
				   addresses */
	int32_t	 n_ctx;
	int32_t	 pos;			/* tokens in the trunk caches */
	int32_t	 mtp_pos;		/* valid MTP cache positions */
	int32_t	*tokens;		/* (n_ctx) history */

	/* index of block il among the blocks of its kind, or −1 */
	int32_t	*slot;			/* (n_layer_all) */
	int32_t	 n_attn, n_gdn;

	int64_t	 kv_row;		/* n_head_kv·head_dim: floats/position */
	int64_t	 kv_row_v;		/* n_head_kv·head_dim_v */
	float	*k;			/* (n_attn, n_ctx, kv_row) */
	float	*v;			/* (n_attn, n_ctx, kv_row_v) */
	float	*mtp_k;			/* (n_ctx, kv_row); NULL without MTP */
	float	*mtp_v;			/* (n_ctx, kv_row_v) */

	int64_t	 conv_len;		/* floats per block: channels·(K−1) */
	int64_t	 ssm_len;		/* floats per block: n_vh·d²  */
	float	*conv;			/* (n_gdn, conv_len) */
	float	*ssm;			/* (n_gdn, ssm_len) */

	/*
	 * Snapshot ring (rs_state.h): slot i's conv entry holds the conv
	 * state after the recorded position p ≡ i (mod n_snap), snap_lo <=
	 * p < pos; its recurrent entry the full state after position
	 * snap_full[i] (−1: none), its replay record position snap_rec[i]'s
	 * inputs to the delta rule (−1: none), to be replayed on the full
	 * state of position snap_rbase[i].  snap_base: the position whose
	 * full state the current forward call writes (−1: none), set by
	 * rs_state_snap_begin().
	 */
	int32_t	 n_snap;
	int32_t	 snap_lo;
	int32_t	 snap_base;
	int32_t	*snap_full;		/* (n_snap) */
	int32_t	*snap_rec;		/* (n_snap) */
	int32_t	*snap_rbase;		/* (n_snap) */
	int64_t	 rec_len;		/* floats of a replay record */
	float	*snap_conv;		/* (n_snap, n_gdn, conv_len) */
	float	*snap_ssm;		/* (n_snap, n_gdn, ssm_len) */

	float	*ck_conv;		/* (n_gdn, conv_len); NULL: no room */
	float	*ck_ssm;		/* (n_gdn, ssm_len) */
	int32_t	 ck_pos;		/* −1: no checkpoint */
	int	 ck_room;		/* made with room for a checkpoint */

	/*
	 * The layer split (rs_split.h) and its parts, one per slot.  The
	 * whole-state pointers above (k .. ck_ssm) are part 0's, which is
	 * the whole state when n_part is 1 (the CPU backend, a one-GPU
	 * engine); code that may see several parts goes through the parts
	 * and the helpers below.
	 */
	struct rs_split	split;
	int		n_part;
	struct rs_state_part part[RS_SPLIT_MAX];
};

/* The part holding GDN slot SLOT. */
static inline struct rs_state_part *
rs_state_gdn_part(struct rs_state *st, int32_t slot)
{
	int	j = 0;

	while (j + 1 < st->n_part && slot >= st->part[j + 1].gdn0)
		j++;
	return (&st->part[j]);
}

/* The part holding attention slot SLOT. */
static inline struct rs_state_part *
rs_state_attn_part(struct rs_state *st, int32_t slot)
{
	int	j = 0;

	while (j + 1 < st->n_part && slot >= st->part[j + 1].attn0)
		j++;
	return (&st->part[j]);
}

/* Attention slot SLOT's K (or V) cache: KV_ELEM-byte values. */
static inline void *
rs_state_kv_k(struct rs_state *st, int32_t slot)
{
	struct rs_state_part *p = rs_state_attn_part(st, slot);

	return ((char *)p->k + (size_t)((int64_t)(slot - p->attn0) *
	    st->n_ctx * st->kv_row) * st->mem->kv_elem);
}

static inline void *
rs_state_kv_v(struct rs_state *st, int32_t slot)
{
	struct rs_state_part *p = rs_state_attn_part(st, slot);

	return ((char *)p->v + (size_t)((int64_t)(slot - p->attn0) *
	    st->n_ctx * st->kv_row_v) * st->mem->kv_elem);
}

/* The slot-th GDN block's live conv / recurrent state. */
static inline float *
rs_state_conv(struct rs_state *st, int32_t slot)
{
	struct rs_state_part *q = rs_state_gdn_part(st, slot);

	return (q->conv + (int64_t)(slot - q->gdn0) * st->conv_len);
}

static inline float *
rs_state_ssm(struct rs_state *st, int32_t slot)
{
	struct rs_state_part *q = rs_state_gdn_part(st, slot);

	return (q->ssm + (int64_t)(slot - q->gdn0) * st->ssm_len);
}

/* Snapshot ring entries of GDN block SLOT for position P. */
static inline float *
rs_state_snap_conv(struct rs_state *st, int32_t p, int32_t slot)
{
	struct rs_state_part *q = rs_state_gdn_part(st, slot);

	return (q->snap_conv + ((int64_t)(p % st->n_snap) * q->n_gdn +
	    slot - q->gdn0) * st->conv_len);
}

static inline float *
rs_state_snap_ssm(struct rs_state *st, int32_t p, int32_t slot)
{
	struct rs_state_part *q = rs_state_gdn_part(st, slot);

	return (q->snap_ssm + ((int64_t)(p % st->n_snap) * q->n_gdn +
	    slot - q->gdn0) * st->ssm_len);
}

/* The replay record of GDN block SLOT for position P (rs_state.h). */
static inline float *
rs_state_snap_rec(struct rs_state *st, int32_t p, int32_t slot)
{
	struct rs_state_part *q = rs_state_gdn_part(st, slot);

	return (q->snap_rec + ((int64_t)(p % st->n_snap) * q->n_gdn +
	    slot - q->gdn0) * st->rec_len);
}

/* Make part Q's device current for ST's memory operations. */
static inline void
rs_state_on(const struct rs_state *st, const struct rs_state_part *q)
{
	if (st->mem->set_device != NULL && q->dev >= 0)
		st->mem->set_device(q->dev);
}

/*
 * Called before a forward pass over positions P0 .. END − 1: the backend
 * will record positions >= the returned value F (INT32_MAX: none) into
 * the ring (conv snapshot and replay record), and write the full
 * recurrent state after position st->snap_base (F − 1 or P0 − 1,
 * whichever is larger; −1: none) into that position's slot; the ring
 * keeps only what the pass leaves valid from now on.
 */
int32_t		rs_state_snap_begin(struct rs_state *st, int32_t p0,
		    int32_t end);

/*
 * Floats of a replay record of one GDN block (the delta rule's inputs of
 * one token, rs_state.h): k of every key head, v of every value head, β
 * and the decay of every value head.
 */
int64_t		rs_state_rec_len(const struct rs_hparams *hp);

/* The ring holds nothing from now on (the state's sequence was replaced). */
void		rs_state_snap_drop(struct rs_state *st);

#endif /* RS_STATE_IMPL_H */
