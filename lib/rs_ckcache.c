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

struct rs_ckcache {
	struct rs_ckcache_opts	 o;
	struct entry		*e;
	size_t			 n, cap;
	uint64_t		 tick;
	struct rs_ckcache_stats	 s;
};

enum rs_status
rs_ckcache_new(struct rs_ckcache **out, const struct rs_ckcache_opts *o,
    struct rs_err *err)
{
	struct rs_ckcache *c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	c->o = *o;
	*out = c;
	return (RS_OK);
}

/* Release entry I's buffers and remove it (the last entry takes its place). */
static void
drop(struct rs_ckcache *c, size_t i)
{
	struct entry *e = &c->e[i];

	if (e->dev != NULL) {
		e->mem->free(e->dev);
		c->s.dev_bytes -= e->bytes;
		c->s.n_dev--;
	}
	if (e->host != NULL) {
		free(e->host);
		c->s.host_bytes -= e->bytes;
		c->s.n_host--;
	}
	free(e->key);
	c->e[i] = c->e[--c->n];
}

void
rs_ckcache_free(struct rs_ckcache *c)
{
	if (c == NULL)
		return;
	while (c->n > 0)
		drop(c, c->n - 1);
	free(c->e);
	free(c);
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

/* Make room for BYTES in host RAM by dropping LRU host entries; 0 or -1. */
static int
host_room(struct rs_ckcache *c, size_t bytes)
{
	ssize_t	i;

	if (bytes > c->o.host_bytes)
		return (-1);
	while (c->s.host_bytes + bytes > c->o.host_bytes) {
		if ((i = lru(c, 0)) < 0)
			return (-1);
		drop(c, (size_t)i);
		c->s.evictions++;
	}
	return (0);
}

/*
 * Move entry I from the device to host RAM, or drop it when the host
 * budget or the backend (no to_host) does not allow it.  The entry may
 * move in the array: dropping host entries reorders it, so it is found
 * again by its tick.
 */
static void
spill(struct rs_ckcache *c, size_t i)
{
	uint64_t used = c->e[i].used;
	void	*h;

	if (c->e[i].mem->to_host == NULL || host_room(c, c->e[i].bytes) != 0 ||
	    (h = malloc(c->e[i].bytes)) == NULL) {
		for (i = 0; i < c->n && c->e[i].used != used; i++)
			;
		drop(c, i);
		c->s.evictions++;
		return;
	}
	for (i = 0; i < c->n && c->e[i].used != used; i++)
		;
	c->e[i].mem->to_host(h, c->e[i].dev, c->e[i].bytes);
	c->e[i].mem->free(c->e[i].dev);
	c->e[i].dev = NULL;
	c->e[i].host = h;
	c->s.dev_bytes -= c->e[i].bytes;
	c->s.n_dev--;
	c->s.host_bytes += c->e[i].bytes;
	c->s.n_host++;
	c->s.spills++;
}

/* Copy ST's live GDN state into DST of ST's memory (TO_HOST: host RAM). */
static void
copy_out(const struct rs_state *st, void *dst, int to_host)
{
	size_t	cb = (size_t)(st->n_gdn * st->conv_len) * sizeof(float);
	size_t	sb = (size_t)(st->n_gdn * st->ssm_len) * sizeof(float);
	void	(*cp)(void *, const void *, size_t) = to_host ?
	    st->mem->to_host : st->mem->copy;

	cp(dst, st->conv, cb);
	cp((char *)dst + cb, st->ssm, sb);
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
	if (bytes <= c->o.dev_bytes) {
		while (c->s.dev_bytes + bytes > c->o.dev_bytes &&
		    (i = lru(c, 1)) >= 0)
			spill(c, (size_t)i);
		if ((e.dev = st->mem->alloc(bytes)) != NULL)
			copy_out(st, e.dev, 0);
	}
	if (e.dev == NULL && st->mem->to_host != NULL &&
	    host_room(c, bytes) == 0 && (e.host = malloc(bytes)) != NULL)
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

	if (e->pos > max || memcmp(e->key, p, (size_t)e->pos *
	    sizeof(int32_t)) != 0)
		return (0);
	if (e->serial == st->serial)
		return (e->pos <= st->pos);
	return (cross && o->model == st->model && o->mem == st->mem &&
	    e->pos <= o->pos && e->pos <= st->n_ctx && memcmp(e->key,
	    o->tokens, (size_t)e->pos * sizeof(int32_t)) == 0);
}

/* The longest usable checkpoint, ST's own first among equals; or -1. */
static ssize_t
best_for(const struct rs_ckcache *c, const struct rs_state *st,
    const int32_t *p, int32_t l, int32_t max, int cross)
{
	const struct entry *e;
	ssize_t	best = -1;

	for (size_t i = 0; i < c->n; i++) {
		e = &c->e[i];
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

	for (int32_t l = 0; l < src->n_attn; l++) {
		src->mem->copy((char *)dst->k + (size_t)(l * dst->n_ctx *
		    dst->kv_row) * ke, (const char *)src->k + (size_t)(l *
		    src->n_ctx * src->kv_row) * ke, (size_t)((int64_t)pos *
		    src->kv_row) * ke);
		src->mem->copy((char *)dst->v + (size_t)(l * dst->n_ctx *
		    dst->kv_row_v) * ke, (const char *)src->v + (size_t)(l *
		    src->n_ctx * src->kv_row_v) * ke, (size_t)((int64_t)pos *
		    src->kv_row_v) * ke);
	}
	memcpy(dst->tokens, src->tokens, (size_t)pos * sizeof(int32_t));
}

void
rs_ckcache_restore(struct rs_ckcache *c, struct rs_state *st,
    const int32_t *p, int32_t l, int32_t max, int32_t *pos)
{
	size_t		 cb = (size_t)(st->n_gdn * st->conv_len) * sizeof(float);
	size_t		 sb = (size_t)(st->n_gdn * st->ssm_len) * sizeof(float);
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
	if (e->dev != NULL) {
		st->mem->copy(st->conv, e->dev, cb);
		st->mem->copy(st->ssm, (char *)e->dev + cb, sb);
	} else {
		st->mem->from_host(st->conv, e->host, cb);
		st->mem->from_host(st->ssm, (char *)e->host + cb, sb);
	}
	e->used = ++c->tick;
	st->pos = e->pos;
	if (st->mtp_pos > st->pos)
		st->mtp_pos = st->pos;
	st->snap_lo = st->pos;
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
