/*
 * rs_ckcache.c - checkpoints of the GDN state keyed by token prefix, in
 * device memory with spill to host RAM, least recently used first out
 * (see rs_ckcache.h for what is kept and why no KV rows).
 *
 * An entry's state buffer is one block of gdn_bytes: the conv state of all
 * GDN blocks (n_gdn, conv_len) followed by their recurrent state (n_gdn,
 * ssm_len), the layout of st->conv and st->ssm.  Entries are few (a budget
 * of 8 GiB holds 54 27B checkpoints), so they sit in an array and LRU is a
 * scan for the smallest use tick.
 *
 * Buffers are recycled, never freed before rs_ckcache_free(): a dropped or
 * spilled entry's buffer goes to a pool (one for each memory) and the next
 * save or spill takes it.  Budgets bound what is held plus what is pooled.
 * Why: on the CUDA backend a cudaFree synchronises the device and a
 * cudaMalloc of 150 MiB costs about a millisecond, and a fresh host buffer
 * costs a page fault per 4 KiB on its first copy (pageable) or ~30 ms of
 * pinning (page-locked), all on the request's path to its first token;
 * the H200 replay of issue #14 spilled 2-3 times a turn.  Spills and
 * restores from host RAM go through the memory's asynchronous copies into
 * page-locked buffers when it has them (rs_state_impl.h), so the host
 * never waits for them.
 */
#include <sys/types.h>

#include <stdlib.h>
#include <string.h>

#include "rs_ckcache.h"
#include "rs_state_impl.h"

struct entry {
	uint64_t	 serial;	/* the state's (rs_state_impl.h) */
	const struct rs_state *owner;	/* the state it was taken in, whose
					   KV rows 0 .. pos − 1 hold KEY */
	const struct rs_state_mem *mem;	/* where DEV was allocated */
	int32_t		 pos;
	int32_t		*key;		/* (pos) tokens */
	void		*dev;		/* gdn_bytes in MEM, or NULL */
	void		*host;		/* gdn_bytes of host RAM, or NULL */
	size_t		 bytes;
	uint64_t	 used;		/* LRU tick */
};

/* A buffer held for reuse. */
struct pooled {
	void		*p;
	const struct rs_state_mem *mem;
	size_t		 bytes;
};

struct pool {
	struct pooled	*b;
	size_t		 n, cap;
	uint64_t	*bytes;		/* the stats' counter of this pool */
};

struct rs_ckcache {
	struct rs_ckcache_opts	 o;
	struct entry		*e;
	size_t			 n, cap;
	uint64_t		 tick;
	struct rs_ckcache_stats	 s;
	struct pool		 dpool, hpool;	/* device, host RAM */
};

static void *
host_alloc(const struct rs_state_mem *m, size_t bytes)
{
	return (m->host_alloc != NULL ? m->host_alloc(bytes) : malloc(bytes));
}

static void
host_free(const struct rs_state_mem *m, void *p)
{
	if (m->host_free != NULL)
		m->host_free(p);
	else
		free(p);
}

/* Release buffer P of MEM (DEV: device memory, else host RAM). */
static void
release(const struct rs_state_mem *m, void *p, int dev)
{
	if (dev)
		m->free(p);
	else
		host_free(m, p);
}

/* Keep buffer P of BYTES in MEM for reuse (released when there is no room
   in the pool's array). */
static void
pool_put(struct pool *pl, const struct rs_state_mem *m, void *p,
    size_t bytes, int dev)
{
	if (pl->n == pl->cap) {
		size_t cap = pl->cap > 0 ? 2 * pl->cap : 16;
		struct pooled *nb = realloc(pl->b, cap * sizeof(*nb));
		if (nb == NULL) {
			release(m, p, dev);
			return;
		}
		pl->b = nb;
		pl->cap = cap;
	}
	pl->b[pl->n].p = p;
	pl->b[pl->n].mem = m;
	pl->b[pl->n++].bytes = bytes;
	*pl->bytes += bytes;
}

/* A pooled buffer of BYTES in MEM, taken out of the pool, or NULL. */
static void *
pool_take(struct pool *pl, const struct rs_state_mem *m, size_t bytes)
{
	void	*p;

	for (size_t i = 0; i < pl->n; i++) {
		if (pl->b[i].mem != m || pl->b[i].bytes != bytes)
			continue;
		p = pl->b[i].p;
		*pl->bytes -= bytes;
		pl->b[i] = pl->b[--pl->n];
		return (p);
	}
	return (NULL);
}

/* Release the last pooled buffer (one of another size or memory). */
static void
pool_trim(struct pool *pl, int dev)
{
	struct pooled *b = &pl->b[--pl->n];

	*pl->bytes -= b->bytes;
	release(b->mem, b->p, dev);
}

enum rs_status
rs_ckcache_new(struct rs_ckcache **out, const struct rs_ckcache_opts *o,
    struct rs_err *err)
{
	struct rs_ckcache *c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	c->o = *o;
	c->dpool.bytes = &c->s.dev_pool_bytes;
	c->hpool.bytes = &c->s.host_pool_bytes;
	*out = c;
	return (RS_OK);
}

/* Pool entry I's buffers and remove it (the last entry takes its place). */
static void
drop(struct rs_ckcache *c, size_t i)
{
	struct entry *e = &c->e[i];

	if (e->dev != NULL) {
		pool_put(&c->dpool, e->mem, e->dev, e->bytes, 1);
		c->s.dev_bytes -= e->bytes;
		c->s.n_dev--;
	}
	if (e->host != NULL) {
		pool_put(&c->hpool, e->mem, e->host, e->bytes, 0);
		c->s.host_bytes -= e->bytes;
		c->s.n_host--;
	}
	free(e->key);
	c->e[i] = c->e[--c->n];
}

void
rs_ckcache_free(struct rs_ckcache *c)
{
	const struct rs_state_mem *m = NULL;

	if (c == NULL)
		return;
	/* no copy may still read or write a buffer about to be freed */
	for (size_t i = 0; i < c->n && m == NULL; i++)
		m = c->e[i].mem;
	for (size_t i = 0; i < c->hpool.n && m == NULL; i++)
		m = c->hpool.b[i].mem;
	if (m != NULL && m->sync != NULL)
		m->sync();
	while (c->n > 0)
		drop(c, c->n - 1);
	while (c->dpool.n > 0)
		pool_trim(&c->dpool, 1);
	while (c->hpool.n > 0)
		pool_trim(&c->hpool, 0);
	free(c->dpool.b);
	free(c->hpool.b);
	free(c->e);
	free(c);
}

void
rs_ckcache_reserve(struct rs_ckcache *c, const struct rs_state *st)
{
	size_t	 bytes = rs_state_gdn_bytes(st);
	void	*p;

	if (st->mem->to_host == NULL || st->mem->host_alloc == NULL)
		return;
	while (c->s.host_bytes + c->s.host_pool_bytes + bytes <=
	    c->o.host_bytes && (p = st->mem->host_alloc(bytes)) != NULL)
		pool_put(&c->hpool, st->mem, p, bytes, 0);
}

/* The least recently used entry in device (DEV) or host memory, or -1. */
static ssize_t
lru(const struct rs_ckcache *c, int dev)
{
	ssize_t	best = -1;

	for (size_t i = 0; i < c->n; i++) {
		if ((dev ? c->e[i].dev : c->e[i].host) == NULL)
			continue;
		if (best < 0 || c->e[i].used < c->e[best].used)
			best = (ssize_t)i;
	}
	return (best);
}

/*
 * A host buffer of BYTES for MEM within the host budget: a pooled one, a
 * new one, or one freed by dropping the least recently used host entries;
 * NULL when the budget or the allocator says no.
 */
static void *
host_buf(struct rs_ckcache *c, const struct rs_state_mem *m, size_t bytes)
{
	void	*p;
	ssize_t	 i;

	if (bytes > c->o.host_bytes)
		return (NULL);
	for (;;) {
		if ((p = pool_take(&c->hpool, m, bytes)) != NULL)
			return (p);
		if (c->s.host_bytes + c->s.host_pool_bytes + bytes <=
		    c->o.host_bytes)
			return (host_alloc(m, bytes));
		if (c->hpool.n > 0) {
			pool_trim(&c->hpool, 0);
			continue;
		}
		if ((i = lru(c, 0)) < 0)
			return (NULL);
		drop(c, (size_t)i);
		c->s.evictions++;
	}
}

/* The host copy of MEM: asynchronous into page-locked memory if it can. */
static void
to_host(const struct rs_state_mem *m, void *h, const void *d, size_t n)
{
	(m->to_host_async != NULL ? m->to_host_async : m->to_host)(h, d, n);
}

/*
 * Move entry I from the device to host RAM (its device buffer to the
 * pool), or drop it when the host budget or the backend (no to_host) does
 * not allow it.  The entry may move in the array: dropping host entries
 * reorders it, so it is found again by its tick.
 */
static void
spill(struct rs_ckcache *c, size_t i)
{
	uint64_t used = c->e[i].used;
	void	*h = NULL;

	if (c->e[i].mem->to_host != NULL)
		h = host_buf(c, c->e[i].mem, c->e[i].bytes);
	for (i = 0; i < c->n && c->e[i].used != used; i++)
		;
	if (h == NULL) {
		drop(c, i);
		c->s.evictions++;
		return;
	}
	to_host(c->e[i].mem, h, c->e[i].dev, c->e[i].bytes);
	pool_put(&c->dpool, c->e[i].mem, c->e[i].dev, c->e[i].bytes, 1);
	c->e[i].dev = NULL;
	c->e[i].host = h;
	c->s.dev_bytes -= c->e[i].bytes;
	c->s.n_dev--;
	c->s.host_bytes += c->e[i].bytes;
	c->s.n_host++;
	c->s.spills++;
}

/*
 * A device buffer of BYTES in MEM within the device budget: a pooled one,
 * a new one, or the buffer of the least recently used device entry,
 * spilled to make room; NULL when the budget or the allocator says no.
 */
static void *
dev_buf(struct rs_ckcache *c, const struct rs_state_mem *m, size_t bytes)
{
	void	*p;
	ssize_t	 i;

	if (bytes > c->o.dev_bytes)
		return (NULL);
	for (;;) {
		if ((p = pool_take(&c->dpool, m, bytes)) != NULL)
			return (p);
		if (c->s.dev_bytes + c->s.dev_pool_bytes + bytes <=
		    c->o.dev_bytes)
			return (m->alloc(bytes));
		if (c->dpool.n > 0) {
			pool_trim(&c->dpool, 1);
			continue;
		}
		if ((i = lru(c, 1)) < 0)
			return (NULL);
		spill(c, (size_t)i);
	}
}

/*
 * Between ST's live GDN state and BUF (the entry layout: every block's
 * conv state, then every block's recurrent state, a layer split's parts
 * at their blocks' offsets): OUT copies the state out, else back in.
 * HOST: BUF is host RAM (ASYNC: page-locked, the memory's asynchronous
 * copies when it has them).
 */
static void
move(struct rs_state *st, void *buf, int out, int host)
{
	const struct rs_state_mem *m = st->mem;
	const size_t cb = (size_t)(st->n_gdn * st->conv_len) * sizeof(float);

	for (int j = 0; j < st->n_part; j++) {
		struct rs_state_part *q = &st->part[j];
		size_t	 pc = (size_t)(q->n_gdn * st->conv_len) * sizeof(float);
		size_t	 ps = (size_t)(q->n_gdn * st->ssm_len) * sizeof(float);
		char	*bc = (char *)buf + (size_t)(q->gdn0 * st->conv_len) *
			    sizeof(float);
		char	*bs = (char *)buf + cb + (size_t)(q->gdn0 *
			    st->ssm_len) * sizeof(float);

		if (q->n_gdn == 0)
			continue;
		rs_state_on(st, q);
		if (out && host) {
			to_host(m, bc, q->conv, pc);
			to_host(m, bs, q->ssm, ps);
		} else if (out) {
			m->copy(bc, q->conv, pc);
			m->copy(bs, q->ssm, ps);
		} else if (host) {
			void (*cp)(void *, const void *, size_t) =
			    m->from_host_async != NULL ? m->from_host_async :
			    m->from_host;
			cp(q->conv, bc, pc);
			cp(q->ssm, bs, ps);
		} else {
			m->copy(q->conv, bc, pc);
			m->copy(q->ssm, bs, ps);
		}
	}
}

/* Copy ST's live GDN state into DST of ST's memory (TO_HOST: host RAM). */
static void
copy_out(struct rs_state *st, void *dst, int to_host_ram)
{
	move(st, dst, 1, to_host_ram);
}

/* The entry of ST at POS, or -1. */
static ssize_t
find(const struct rs_ckcache *c, const struct rs_state *st, int32_t pos)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->e[i].serial == st->serial && c->e[i].pos == pos)
			return ((ssize_t)i);
	return (-1);
}

enum rs_status
rs_ckcache_save(struct rs_ckcache *c, struct rs_state *st,
    struct rs_err *err)
{
	size_t		 bytes = rs_state_gdn_bytes(st);
	struct entry	 e;
	ssize_t		 i;

	if (st->pos <= 0)
		return (RS_OK);
	if ((i = find(c, st, st->pos)) >= 0) {
		c->e[i].used = ++c->tick;
		return (RS_OK);
	}
	if (c->n == c->cap) {
		size_t cap = c->cap > 0 ? 2 * c->cap : 16;
		struct entry *ne = realloc(c->e, cap * sizeof(*ne));
		if (ne == NULL)
			return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
		c->e = ne;
		c->cap = cap;
	}
	memset(&e, 0, sizeof(e));
	e.serial = st->serial;
	e.owner = st;
	e.mem = st->mem;
	e.pos = st->pos;
	e.bytes = bytes;
	if ((e.key = malloc((size_t)st->pos * sizeof(int32_t))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	memcpy(e.key, st->tokens, (size_t)st->pos * sizeof(int32_t));
	if ((e.dev = dev_buf(c, st->mem, bytes)) != NULL)
		copy_out(st, e.dev, 0);
	else if (st->mem->to_host != NULL &&
	    (e.host = host_buf(c, st->mem, bytes)) != NULL)
		copy_out(st, e.host, 1);
	if (e.dev == NULL && e.host == NULL) {
		free(e.key);
		return (RS_OK);
	}
	e.used = ++c->tick;
	if (e.dev != NULL) {
		c->s.dev_bytes += bytes;
		c->s.n_dev++;
	} else {
		c->s.host_bytes += bytes;
		c->s.n_host++;
	}
	c->e[c->n++] = e;
	c->s.saves++;
	return (RS_OK);
}

void
rs_ckcache_prune(struct rs_ckcache *c, const struct rs_state *st, int32_t l)
{
	for (size_t i = c->n; i-- > 0; )
		if (c->e[i].serial == st->serial && c->e[i].pos > l)
			drop(c, i);
}

/*
 * 1 when entry E can be restored into ST for a prompt P that may be
 * restored up to MAX: E's key starts P, and E was taken in ST (its KV rows
 * are ST's own), or with CROSS in another state of the same model and
 * memory whose history still starts with the key (its KV rows can be
 * copied).  Pruning keeps every entry's key its owner's history; the
 * memcmps check it anyway, they cost little next to a restore.
 */
static int
usable(const struct entry *e, const struct rs_state *st, const int32_t *p,
    int32_t max, int cross)
{
	const struct rs_state *o = e->owner;

	/* the cheap tests first: a key is up to 256 KB (65,536 positions) */
	if (e->pos > max || (e->serial != st->serial && !cross))
		return (0);
	if (memcmp(e->key, p, (size_t)e->pos * sizeof(int32_t)) != 0)
		return (0);
	if (e->serial == st->serial)
		return (e->pos <= st->pos);
	return (o->model == st->model && o->mem == st->mem &&
	    rs_split_equal(&o->split, &st->split) &&
	    e->pos <= o->pos && e->pos <= st->n_ctx && memcmp(e->key,
	    o->tokens, (size_t)e->pos * sizeof(int32_t)) == 0);
}

/*
 * The longest usable checkpoint, ST's own first among equals; or -1.
 * Entries that cannot beat the best so far are not compared: a lookup
 * over a full cache (80 27B checkpoints of ~50,000 positions: 16 MB of
 * keys) would otherwise cost milliseconds, several times a request.
 */
static ssize_t
best_for(const struct rs_ckcache *c, const struct rs_state *st,
    const int32_t *p, int32_t l, int32_t max, int cross)
{
	const struct entry *e, *b;
	ssize_t	best = -1;

	for (size_t i = 0; i < c->n; i++) {
		e = &c->e[i];
		b = best >= 0 ? &c->e[best] : NULL;
		if (b != NULL && (e->pos < b->pos || (e->pos == b->pos &&
		    (e->serial != st->serial || b->serial == st->serial))))
			continue;
		if (!usable(e, st, p, e->serial == st->serial ? l : max, cross))
			continue;
		if (best < 0 || e->pos > c->e[best].pos || (e->pos ==
		    c->e[best].pos && e->serial == st->serial))
			best = (ssize_t)i;
	}
	return (best);
}

int32_t
rs_ckcache_peek(const struct rs_ckcache *c, const struct rs_state *st,
    const int32_t *p, int32_t l, int32_t max)
{
	ssize_t	i = best_for(c, st, p, l, max, max > l);

	return (i >= 0 ? c->e[i].pos : -1);
}

/*
 * Copy KV rows 0 .. POS − 1 of every attention layer, and the token
 * history, from SRC into DST (the same model and memory).  27B: 64 KiB a
 * position, a device-to-device copy (30,000 positions: 1.9 GiB, ~1.5 ms
 * at H200 bandwidth).
 */
static void
copy_kv(struct rs_state *dst, const struct rs_state *src, int32_t pos)
{
	const size_t ke = src->mem->kv_elem;
	struct rs_state *s = (struct rs_state *)src;

	for (int32_t l = 0; l < src->n_attn; l++) {
		rs_state_on(src, rs_state_attn_part(s, l));
		src->mem->copy(rs_state_kv_k(dst, l), rs_state_kv_k(s, l),
		    (size_t)((int64_t)pos * src->kv_row) * ke);
		src->mem->copy(rs_state_kv_v(dst, l), rs_state_kv_v(s, l),
		    (size_t)((int64_t)pos * src->kv_row_v) * ke);
	}
	memcpy(dst->tokens, src->tokens, (size_t)pos * sizeof(int32_t));
}

void
rs_ckcache_restore(struct rs_ckcache *c, struct rs_state *st,
    const int32_t *p, int32_t l, int32_t max, int32_t *pos)
{
	ssize_t		 best = best_for(c, st, p, l, max, 1);
	struct entry	*e;

	if (best < 0) {
		c->s.misses++;
		*pos = -1;
		return;
	}
	e = &c->e[best];
	if (e->serial != st->serial) {
		copy_kv(st, e->owner, e->pos);
		if (st->mtp_pos > l)		/* its rows past L are stale */
			st->mtp_pos = l;
		c->s.cross++;
	}
	if (e->dev != NULL)
		move(st, e->dev, 0, 0);
	else {
		move(st, e->host, 0, 1);
		c->s.host_restores++;
	}
	e->used = ++c->tick;
	st->pos = e->pos;
	if (st->mtp_pos > st->pos)
		st->mtp_pos = st->pos;
	rs_state_snap_drop(st);
	if (st->ck_pos > st->pos)
		st->ck_pos = -1;
	c->s.hits++;
	c->s.tokens_reused += (uint64_t)e->pos;
	*pos = e->pos;
}

void
rs_ckcache_forget(struct rs_ckcache *c, const struct rs_state *st)
{
	rs_ckcache_prune(c, st, -1);
}

void
rs_ckcache_stats(const struct rs_ckcache *c, struct rs_ckcache_stats *out)
{
	*out = c->s;
}

int
rs_ckcache_list(const struct rs_ckcache *c, const struct rs_state *st,
    int32_t *out, int cap)
{
	int	n = 0;

	for (size_t i = 0; i < c->n; i++) {
		int32_t	v = c->e[i].pos;
		int	j;

		if (c->e[i].serial != st->serial)
			continue;
		/* insertion into the sorted prefix that fits in OUT */
		for (j = n < cap ? n : cap; j > 0 && out[j - 1] > v; j--)
			if (j < cap)
				out[j] = out[j - 1];
		if (j < cap)
			out[j] = v;
		n++;
	}
	return (n);
}
