/*
 * rs_tok_encode.c - text -> ids (serving.md §1.2 - §1.7).
 *
 * Pipeline per call: replace invalid UTF-8 (rs_utf8.h), cut out added tokens
 * leftmost-longest, and for each plain fragment in between: NFC (when the
 * tokenizer normalizes), the pre-tokenizer split, then BPE per word.
 *
 * BPE on one word of n bytes (§1.6).  Symbols start as the n single-byte
 * tokens, kept in a doubly linked list over the byte positions (a symbol is
 * named by the position of its first byte and covers [l, next[l])).  Every
 * adjacent pair that has a merge goes into a binary min-heap keyed by
 * (rank, l): the lowest rank first and, for equal ranks, the leftmost, which
 * is the reference order.  Popping (l, rank) merges l with its right
 * neighbour r, unless the entry went stale: l was absorbed by its left
 * neighbour, or l or r changed since the push.  A symbol only ever grows to
 * the right, so "[l, next[next[l]]) is still the pair's span" (recorded as
 * rend) detects both.  Then the pairs (prev, l) and (l, next) are pushed.
 * Each merge removes a symbol and pushes at most 2 entries, so a word costs
 * O(n log n) whatever its length (a 1 MB run of letters is one word).
 */
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "rs_nfc.h"
#include "rs_tok_impl.h"
#include "rs_utf8.h"

#define NONE	UINT32_MAX	/* no symbol: the end of the list */

/* A candidate merge: key = rank << 32 | l; the pair's span is [l, rend). */
struct heap_ent {
	uint64_t	key;
	uint32_t	rend;
	int32_t		res;
};

/* Per-call state: the output and the BPE scratch, grown on demand. */
struct enc {
	const struct rs_tok	*tok;
	const char		*frag;		/* the fragment being split */
	struct rs_tok_ids	*out;
	int32_t			*sym;		/* (cap) id of the symbol at l */
	uint32_t		*next, *prev;	/* (cap) list links */
	size_t			 cap;
	struct heap_ent		*heap;		/* (3 cap) */
	size_t			 hn;
};

void
rs_tok_ids_init(struct rs_tok_ids *ids)
{
	memset(ids, 0, sizeof(*ids));
}

void
rs_tok_ids_cleanup(struct rs_tok_ids *ids)
{
	free(ids->v);
	memset(ids, 0, sizeof(*ids));
}

/* Make room for K more ids. */
static enum rs_status
ids_reserve(struct rs_tok_ids *ids, size_t k, struct rs_err *err)
{
	size_t	 cap;
	int32_t	*v;

	if (ids->cap - ids->n >= k)
		return (RS_OK);
	cap = ids->cap > 0 ? ids->cap : 256;
	while (cap - ids->n < k)
		cap *= 2;
	if ((v = realloc(ids->v, cap * sizeof(*v))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "tokenizer: no memory for "
		    "%zu ids", cap));
	ids->v = v;
	ids->cap = cap;
	return (RS_OK);
}

static enum rs_status
push_id(struct enc *e, int32_t id, struct rs_err *err)
{
	enum rs_status	st;

	if ((st = ids_reserve(e->out, 1, err)) != RS_OK)
		return (st);
	e->out->v[e->out->n++] = id;
	return (RS_OK);
}

/* ---- the heap ---- */

static void
heap_push(struct enc *e, struct heap_ent x)
{
	size_t	i = e->hn++, p;

	while (i > 0 && e->heap[p = (i - 1) / 2].key > x.key) {
		e->heap[i] = e->heap[p];
		i = p;
	}
	e->heap[i] = x;
}

static struct heap_ent
heap_pop(struct enc *e)
{
	struct heap_ent	top = e->heap[0], x = e->heap[--e->hn];
	size_t		i = 0, c;

	while ((c = 2 * i + 1) < e->hn) {
		if (c + 1 < e->hn && e->heap[c + 1].key < e->heap[c].key)
			c++;
		if (e->heap[c].key >= x.key)
			break;
		e->heap[i] = e->heap[c];
		i = c;
	}
	if (e->hn > 0)
		e->heap[i] = x;
	return (top);
}

/* ---- BPE ---- */

/* Scratch for a word of N bytes: lists of N + 1, a heap of 3 N entries. */
static enum rs_status
reserve_word(struct enc *e, size_t n, struct rs_err *err)
{
	size_t	 cap = e->cap > 0 ? e->cap : 64;
	void	*p;

	if (n + 1 <= e->cap)
		return (RS_OK);
	while (cap < n + 1)
		cap *= 2;
	if ((p = realloc(e->sym, cap * sizeof(*e->sym))) == NULL)
		goto nomem;
	e->sym = p;
	if ((p = realloc(e->next, cap * sizeof(*e->next))) == NULL)
		goto nomem;
	e->next = p;
	if ((p = realloc(e->prev, cap * sizeof(*e->prev))) == NULL)
		goto nomem;
	e->prev = p;
	/* n - 1 initial pairs plus at most 2 pushes per merge (< n merges) */
	if ((p = realloc(e->heap, 3 * cap * sizeof(*e->heap))) == NULL)
		goto nomem;
	e->heap = p;
	e->cap = cap;
	return (RS_OK);
nomem:
	return (rs_errf(err, RS_ERR_NOMEM, "tokenizer: no memory for a "
	    "word of %zu bytes", n));
}

/* Push the pair (l, r) if it merges. */
static void
try_pair(struct enc *e, uint32_t l, uint32_t r)
{
	const struct rs_tok_merge *m;
	struct heap_ent	x;

	if ((m = rs_tok_merge_find(e->tok, e->sym[l], e->sym[r])) == NULL)
		return;
	x.key = (uint64_t)m->rank << 32 | l;
	x.rend = e->next[r];
	x.res = m->res;
	heap_push(e, x);
}

static enum rs_status
bpe_word(struct enc *e, const unsigned char *w, size_t n, struct rs_err *err)
{
	enum rs_status	st;
	uint32_t	l, r, end = (uint32_t)n;

	if ((st = reserve_word(e, n, err)) != RS_OK ||
	    (st = ids_reserve(e->out, n, err)) != RS_OK)
		return (st);
	for (uint32_t i = 0; i < end; i++) {
		e->sym[i] = e->tok->byte_id[w[i]];
		e->next[i] = i + 1;
		e->prev[i] = i > 0 ? i - 1 : NONE;
	}
	e->hn = 0;
	for (uint32_t i = 0; i + 1 < end; i++)
		try_pair(e, i, i + 1);
	while (e->hn > 0) {
		struct heap_ent x = heap_pop(e);

		l = (uint32_t)x.key;
		if (e->sym[l] < 0 || (r = e->next[l]) >= end ||
		    e->next[r] != x.rend)
			continue;	/* stale */
		e->sym[l] = x.res;
		e->sym[r] = -1;
		e->next[l] = x.rend;
		if (x.rend < end)
			e->prev[x.rend] = l;
		if (e->prev[l] != NONE)
			try_pair(e, e->prev[l], l);
		if (x.rend < end)
			try_pair(e, l, x.rend);
	}
	for (uint32_t i = 0; i < end; i = e->next[i])
		e->out->v[e->out->n++] = e->sym[i];
	return (RS_OK);
}

/* rs_pretok_fn: one word of the current fragment. */
static enum rs_status
on_word(void *arg, size_t off, size_t len, struct rs_err *err)
{
	struct enc		*e = arg;
	const unsigned char	*w = (const unsigned char *)e->frag + off;

	if (len == 1)
		return (push_id(e, e->tok->byte_id[w[0]], err));
	if (len >= NONE)
		return (rs_errf(err, RS_ERR_LIMIT, "tokenizer: a word of %zu "
		    "bytes, at most 4 GiB", len));
	return (bpe_word(e, w, len, err));
}

/* A growable byte buffer for the NFC text. */
struct bytes {
	char	*p;
	size_t	 n, cap;
};

static int
bytes_add(struct bytes *b, const void *s, size_t n)
{
	size_t	 cap = b->cap > 0 ? b->cap : 256;
	char	*p;

	if (n == 0)
		return (0);
	if (b->cap - b->n < n) {
		while (cap - b->n < n)
			cap *= 2;
		if ((p = realloc(b->p, cap)) == NULL)
			return (-1);
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	return (0);
}

/* The first byte >= 0x80 in S[I..N), or N: eight bytes a step. */
static size_t
next_non_ascii(const char *s, size_t i, size_t n)
{
	uint64_t	w;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, s + i, 8);
		if ((w & 0x8080808080808080ULL) != 0)
			break;
	}
	for (; i < n && (unsigned char)s[i] < 0x80; i++)
		continue;
	return (i);
}

/*
 * NFC of the valid UTF-8 S[0..N): *OUT, *ON is S itself when it is already
 * NFC, or B's bytes.  NFC(x y) = NFC(x) NFC(y) whenever y starts with an
 * ASCII character: those are starters that never compose with what
 * precedes them.  So only each maximal run of non-ASCII code points,
 * together with the ASCII character before it (which may compose with a
 * following mark: "e" U+0301), goes through rs_nfc_map.  Text is copied into
 * B only from the first run that changes: code and English text, NFC
 * already, cost one scan eight bytes at a time and no copy (the split then
 * reads the caller's bytes, still in cache).
 */
static enum rs_status
nfc(const char *s, size_t n, struct bytes *b, const char **out, size_t *on,
    struct rs_err *err)
{
	uint8_t		 *m;
	long		  k;
	size_t		  p = 0, i = 0, a, z;
	int		  changed = 0;

	while ((z = next_non_ascii(s, p, n)) < n) {
		/* s[z] starts a non-ASCII run; take the ASCII byte before */
		a = z > p ? z - 1 : z;
		for (; z < n && (unsigned char)s[z] >= 0x80; z++)
			continue;
		if ((k = rs_nfc_map(s + a, z - a, &m)) < 0)
			return (rs_errf(err, k == UTF8PROC_ERROR_NOMEM ?
			    RS_ERR_NOMEM : RS_ERR_LIMIT, "tokenizer: NFC: %s",
			    utf8proc_errmsg((utf8proc_ssize_t)k)));
		p = z;
		if ((size_t)k == z - a && memcmp(m, s + a, z - a) == 0) {
			free(m);
			continue;
		}
		changed = 1;
		if (bytes_add(b, s + i, a - i) != 0 ||
		    bytes_add(b, m, (size_t)k) != 0) {
			free(m);
			return (rs_errf(err, RS_ERR_NOMEM, "tokenizer: no memory"));
		}
		free(m);
		i = z;
	}
	if (!changed) {
		*out = s;
		*on = n;
		return (RS_OK);
	}
	if (bytes_add(b, s + i, n - i) != 0)
		return (rs_errf(err, RS_ERR_NOMEM, "tokenizer: no memory"));
	*out = b->p;
	*on = b->n;
	return (RS_OK);
}

/* A plain-text fragment (valid UTF-8): normalize, split, BPE. */
static enum rs_status
fragment(struct enc *e, const char *s, size_t n, struct rs_err *err)
{
	struct bytes	norm = { NULL, 0, 0 };
	enum rs_status	st;

	if (n == 0)
		return (RS_OK);
	if (e->tok->meta.nfc &&
	    (st = nfc(s, n, &norm, &s, &n, err)) != RS_OK) {
		free(norm.p);
		return (st);
	}
	e->frag = s;
	st = rs_pretok_split(e->tok->pretok, s, n, on_word, e, err);
	free(norm.p);
	return (st);
}

/* May added token ID be matched under SPECIAL? */
static int
matchable(const struct rs_tok *tok, int32_t id, enum rs_tok_special special)
{
	int	type = tok->tokens[id].type;

	if (special == RS_TOK_SPECIAL_ALL)
		return (1);
	return (special == RS_TOK_SPECIAL_USER && type == RS_TOK_USER_DEFINED);
}

/*
 * The longest added token matchable under SPECIAL at S[0..N), or -1.
 * Candidates for the first byte are sorted longest first.
 */
static int32_t
added_at(const struct rs_tok *tok, const char *s, size_t n,
    enum rs_tok_special special)
{
	unsigned char	c = (unsigned char)s[0];

	for (uint32_t k = tok->added_at[c]; k < tok->added_at[c + 1]; k++) {
		int32_t	id = tok->added[k];
		size_t	len = tok->tokens[id].len;

		if (len <= n && matchable(tok, id, special) &&
		    memcmp(rs_tok_entry_bytes(tok, id), s, len) == 0)
			return (id);
	}
	return (-1);
}

/* Valid UTF-8 S[0..N): added tokens leftmost-longest, fragments between. */
static enum rs_status
encode_valid(struct enc *e, const char *s, size_t n,
    enum rs_tok_special special, struct rs_err *err)
{
	const struct rs_tok *tok = e->tok;
	enum rs_status	st;
	size_t		start = 0;
	int32_t		id;

	for (size_t i = 0; i < n && special != RS_TOK_SPECIAL_NONE; i++) {
		unsigned char c = (unsigned char)s[i];

		if (tok->added_at[c] == tok->added_at[c + 1] ||
		    (id = added_at(tok, s + i, n - i, special)) < 0)
			continue;
		if ((st = fragment(e, s + start, i - start, err)) != RS_OK ||
		    (st = push_id(e, id, err)) != RS_OK)
			return (st);
		i += tok->tokens[id].len - 1;
		start = i + 1;
	}
	return (fragment(e, s + start, n - start, err));
}

enum rs_status
rs_tok_encode(const struct rs_tok *tok, const char *text, size_t len,
    enum rs_tok_special special, struct rs_tok_ids *out, struct rs_err *err)
{
	struct enc	 e;
	enum rs_status	 st;
	char		*clean = NULL;
	size_t		 n0 = out->n;

	if (special != RS_TOK_SPECIAL_ALL && special != RS_TOK_SPECIAL_USER &&
	    special != RS_TOK_SPECIAL_NONE)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "tokenizer: special mode %d unknown", (int)special));
	if (!rs_utf8_valid(text, len, NULL)) {
		/* serving.md §1.7: each invalid byte becomes U+FFFD */
		if (len > SIZE_MAX / 3 || (clean = malloc(3 * len)) == NULL)
			return (rs_errf(err, RS_ERR_NOMEM,
			    "tokenizer: no memory for %zu bytes", len));
		len = rs_utf8_sanitize(text, len, RS_UTF8_PER_BYTE, clean, 1,
		    NULL);
		text = clean;
	}
	memset(&e, 0, sizeof(e));
	e.tok = tok;
	e.out = out;
	st = encode_valid(&e, text, len, special, err);
	free(e.sym);
	free(e.next);
	free(e.prev);
	free(e.heap);
	free(clean);
	if (st != RS_OK)
		out->n = n0;
	return (st);
}
