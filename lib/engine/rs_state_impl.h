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
 */
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

	/* snapshot ring: slot p mod n_snap holds the state after position p
	 * for snap_lo <= p < pos */
	int32_t	 n_snap;
	int32_t	 snap_lo;
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

/* Make part Q's device current for ST's memory operations. */
static inline void
rs_state_on(const struct rs_state *st, const struct rs_state_part *q)
{
	if (st->mem->set_device != NULL && q->dev >= 0)
		st->mem->set_device(q->dev);
}

/*
 * Called by a backend before a forward pass that will end at position END:
 * it will record snapshots for positions >= the returned value (INT32_MAX:
 * none), and the ring keeps only those from now on, because their slots
 * overwrite older ones.
 */
int32_t		rs_state_snap_begin(struct rs_state *st, int32_t end);

#endif /* RS_STATE_IMPL_H */
