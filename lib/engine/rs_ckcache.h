/*
 * rs_ckcache.h - a cache of recurrent-state checkpoints keyed by token
 * prefix, shared by the sequence states of one engine (rs-serve's slots).
 *
 * Why.  A KV cache can be cut back to any prefix; the GDN state of the 48
 * DeltaNet layers cannot (qwen35-model.md §6.5): it is the sum of every
 * token so far.  An agent client resends the whole conversation every
 * turn, and the chat template drops the earlier turns' reasoning, so the
 * new prompt diverges from the state's history inside the previous prompt
 * (serving.md §2.8).  Without a GDN state saved at or before that point
 * the whole prompt is prefilled again.  The generator (rs_gen.h) saves
 * checkpoints at the start of each assistant turn of the prompt, every
 * N tokens of a long prefill and at the end of each prompt; on the next
 * request it restores the longest one that is a prefix of the new prompt.
 *
 * What a checkpoint holds: the position P, the tokens 0 .. P − 1 (the key,
 * host memory), the conv and recurrent state of every GDN block (gdn_bytes,
 * rs_state_gdn_bytes(): 27B 149.6 MiB, tiny 590 KiB), and the state it was
 * taken in (its owner).  It does not hold KV rows: those are 64 KiB per
 * position on the 27B (16 attention layers × 4 KV heads × 256 × K and V ×
 * f16), 1.9 GiB for a 30,000-token prefix, against 150 MiB for the GDN
 * state, and the owner holds them already.  So a checkpoint is valid only
 * while its owner's KV rows 0 .. P − 1 still hold its tokens: the
 * generator calls rs_ckcache_prune() before each prefill, which drops the
 * owner's entries that the prefill would overwrite.  Restored into its
 * owner, a checkpoint costs one GDN copy.  Restored into another state (a
 * new conversation in rs-serve's least recently used slot that shares a
 * system prompt, tools and files with a conversation in another slot), it
 * also copies the owner's KV rows 0 .. P − 1: a device copy (30,000
 * positions of the 27B: 1.9 GiB, ~1.5 ms on an H200), cheap next to a
 * prefill, and no memory held for it.  The alternative, running such a
 * request in the owner's slot, would overwrite the owner's conversation
 * and its checkpoints.
 *
 * Memory.  Checkpoints live in the states' memory (rs_state_mem: the GPU's
 * for the CUDA backend) up to dev_bytes; the least recently used one is
 * spilled to host RAM (rs_state_mem.to_host) when a new one needs room,
 * up to host_bytes, where the least recently used ones are dropped.  A
 * restore from host RAM copies it back into the state directly (27B: 150
 * MiB over PCIe, ~3 ms from page-locked memory).  Buffers are pooled and
 * reused rather than freed (no allocation on a request's path once the
 * budgets are reached), and copies to and from host RAM are queued on the
 * device without the host waiting when the memory allows it
 * (rs_state_impl.h).  Both budgets count state bytes, held or pooled;
 * the keys (4 bytes a position) are host memory beside them.  Saving and
 * restoring touch an entry (LRU).
 *
 * Lifecycle and threads.  rs_ckcache_new() / rs_ckcache_free(); every
 * state used with a cache must be of the same engine and outlive the
 * entries taken in it (rs_ckcache_forget() drops them): a restore reads
 * the owner's KV rows.  Not thread-safe:
 * rs-serve's one engine thread calls it.
 */
#ifndef RS_CKCACHE_H
#define RS_CKCACHE_H

#include <stdint.h>

#include "rs_err.h"
#include "rs_state.h"

struct rs_ckcache;

struct rs_ckcache_opts {
	uint64_t	dev_bytes;	/* budget in the states' memory */
	uint64_t	host_bytes;	/* spill budget in host RAM; 0: none */
};

/* Counters since rs_ckcache_new(), and what is held now. */
struct rs_ckcache_stats {
	uint64_t	hits;		/* lookups that restored a checkpoint */
	uint64_t	misses;		/* lookups that found none */
	uint64_t	tokens_reused;	/* positions restored, summed */
	uint64_t	cross;		/* hits restored into another state
					   than their owner (KV rows copied) */
	uint64_t	saves;		/* checkpoints stored */
	uint64_t	spills;		/* moved from the device to host RAM */
	uint64_t	evictions;	/* dropped for room (not by pruning) */
	uint64_t	host_restores;	/* hits restored from host RAM */
	uint64_t	dev_bytes;	/* held in the states' memory */
	uint64_t	host_bytes;	/* held in host RAM */
	uint64_t	dev_pool_bytes;	/* free buffers kept for reuse there;
					   dev_bytes + dev_pool_bytes stays
					   within the budget */
	uint64_t	host_pool_bytes;	/* the same in host RAM */
	uint32_t	n_dev, n_host;	/* checkpoints held */
};

/*
 * An empty cache with budgets O.  Fails with RS_ERR_NOMEM only; budgets
 * smaller than one checkpoint make a cache that stores nothing there.
 */
enum rs_status	rs_ckcache_new(struct rs_ckcache **out,
		    const struct rs_ckcache_opts *o, struct rs_err *err);

/* Free every checkpoint, every pooled buffer and the cache; NULL is fine. */
void		rs_ckcache_free(struct rs_ckcache *c);

/*
 * Allocate the host budget now, as buffers for checkpoints of ST's size,
 * when ST's memory has page-locked host memory (the CUDA backend): pinning
 * 150 MiB costs ~30 ms, which would otherwise fall on the first requests
 * that spill.  Stops quietly where the allocator says no; a no-op for the
 * CPU backend (its spills are plain memcpy).
 */
void		rs_ckcache_reserve(struct rs_ckcache *c,
		    const struct rs_state *st);

/*
 * Save ST's GDN state at its position P > 0 under the key of its tokens
 * 0 .. P − 1.  When ST already has a checkpoint at P it is only touched.
 * When neither budget holds one checkpoint, or the device is out of
 * memory and nothing can spill, nothing is stored and RS_OK is returned
 * (a checkpoint is an optimisation).  Fails with RS_ERR_NOMEM for the key.
 */
enum rs_status	rs_ckcache_save(struct rs_ckcache *c, struct rs_state *st,
		    struct rs_err *err);

/*
 * Before ST runs prompt P (N tokens) from its common prefix L with ST's
 * history: drop ST's checkpoints that will not hold, those past L (their
 * KV rows are about to be overwritten by other tokens).
 */
void		rs_ckcache_prune(struct rs_ckcache *c, const struct rs_state *st,
		    int32_t l);

/*
 * Restore into ST the longest checkpoint that prompt P starts with: one of
 * ST's at a position Q <= L (L: the common prefix of P and ST's history,
 * as for prune), or another state's at Q <= MAX (the positions of P that
 * may be restored, P's length − 1) while that state still holds it; ST's
 * own wins a tie.  ST's GDN state becomes the checkpoint's and its
 * position Q (the MTP cache, the snapshots and ST's own checkpoint past Q
 * are dropped, as in rs_state_truncate()); from another state, its KV rows
 * and tokens 0 .. Q − 1 are copied first.  *POS = Q, or −1 when there is
 * none (ST is then unchanged).  Counts a hit or a miss.  Never fails.
 */
void		rs_ckcache_restore(struct rs_ckcache *c, struct rs_state *st,
		    const int32_t *p, int32_t l, int32_t max, int32_t *pos);

/*
 * The position rs_ckcache_restore() with the same arguments would restore,
 * or −1; other states' checkpoints count only when MAX > L.  Changes
 * nothing (no touch, no count): for choosing between a restore and what
 * the state reaches by itself, and a state to run a prompt on.
 */
int32_t		rs_ckcache_peek(const struct rs_ckcache *c,
		    const struct rs_state *st, const int32_t *p, int32_t l,
		    int32_t max);

/* Drop every checkpoint of ST (before freeing or resetting it). */
void		rs_ckcache_forget(struct rs_ckcache *c, const struct rs_state *st);

void		rs_ckcache_stats(const struct rs_ckcache *c,
		    struct rs_ckcache_stats *out);

/*
 * The positions of ST's checkpoints, ascending, in OUT (at most CAP);
 * returns how many there are (for tests and logs).
 */
int		rs_ckcache_list(const struct rs_ckcache *c,
		    const struct rs_state *st, int32_t *out, int cap);

#endif /* RS_CKCACHE_H */
