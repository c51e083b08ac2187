/*
 * rs_detok.c - ids -> text, whole (rs_tok_decode) and streaming (rs_detok),
 * serving.md §1.8.
 *
 * Both concatenate the tokens' raw bytes and apply the decoding policy of
 * rs_utf8.h, one U+FFFD per maximal subpart (HF tokenizers; f0 9f 9a at the
 * end is one U+FFFD, not three).  The batch decoder does it in one pass over
 * the whole byte string.  The streaming one runs the same left-to-right scan
 * over "held-back bytes + new token", stops where a sequence is still a
 * valid prefix (RS_UTF8_SHORT, at most 3 bytes) and keeps those until the
 * next token completes or breaks them, or the stream ends.  The scan's
 * decision at any position depends only on the bytes up to the end of that
 * position's sequence or maximal subpart (an invalid subpart ends before a
 * byte that is present), so stopping and resuming makes the same decisions
 * as one pass: the outputs are identical.
 */
#include <stdlib.h>
#include <string.h>

#include "rs_tok_impl.h"
#include "rs_utf8.h"

const char *
rs_tok_piece(const struct rs_tok *tok, int32_t id, unsigned flags,
    size_t *len)
{
	const struct rs_tok_entry *e;

	if (id < 0 || id >= tok->meta.n_vocab)
		return (NULL);
	e = &tok->tokens[id];
	switch (e->type) {
	case RS_TOK_CONTROL:
		*len = (flags & RS_TOK_DEC_SPECIAL) ? e->len : 0;
		break;
	case RS_TOK_UNKNOWN:
	case RS_TOK_UNUSED:
		*len = 0;
		break;
	default:		/* NORMAL, USER_DEFINED, BYTE */
		*len = e->len;
		break;
	}
	return (rs_tok_entry_bytes(tok, id));
}

static enum rs_status
bad_id(const struct rs_tok *tok, size_t i, int32_t id, struct rs_err *err)
{
	return (rs_errf(err, RS_ERR_INVALID_ARG,
	    "ids[%zu] = %d: outside the vocabulary [0, %d)", i, (int)id,
	    tok->meta.n_vocab));
}

enum rs_status
rs_tok_decode(const struct rs_tok *tok, const int32_t *ids, size_t n,
    unsigned flags, char **text, size_t *len, struct rs_err *err)
{
	size_t	 total = 0, k, o = 0;
	char	*raw, *out;

	for (size_t i = 0; i < n; i++) {
		if (rs_tok_piece(tok, ids[i], flags, &k) == NULL)
			return (bad_id(tok, i, ids[i], err));
		total += k;
	}
	raw = malloc(total + 1);
	out = total < SIZE_MAX / 4 ? malloc(3 * total + 1) : NULL;
	if (raw == NULL || out == NULL) {
		free(raw);
		free(out);
		return (rs_errf(err, RS_ERR_NOMEM, "detokenizer: no memory "
		    "for %zu bytes", total));
	}
	for (size_t i = 0; i < n; i++) {
		const char *p = rs_tok_piece(tok, ids[i], flags, &k);

		memcpy(raw + o, p, k);
		o += k;
	}
	o = rs_utf8_sanitize(raw, total, RS_UTF8_PER_SUBPART, out, 1, NULL);
	out[o] = '\0';
	free(raw);
	*text = out;
	*len = o;
	return (RS_OK);
}

size_t
rs_detok_max(const struct rs_tok *tok)
{
	return (RS_UTF8_REPL_LEN * (rs_tok_max_piece(tok) + 3));
}

void
rs_detok_init(struct rs_detok *d, const struct rs_tok *tok, unsigned flags)
{
	memset(d, 0, sizeof(*d));
	d->tok = tok;
	d->flags = flags;
}

/* Byte I of the held bytes followed by the piece P. */
static unsigned char
byte_at(const struct rs_detok *d, const char *p, size_t i)
{
	if (i < (size_t)d->nhold)
		return (d->hold[i]);
	return ((unsigned char)p[i - (size_t)d->nhold]);
}

enum rs_status
rs_detok_feed(struct rs_detok *d, int32_t id, char *out, size_t cap,
    size_t *n, struct rs_err *err)
{
	const char	*p;
	unsigned char	 w[4];
	size_t		 len, total, i = 0, o = 0, m;
	int		 k;

	if ((p = rs_tok_piece(d->tok, id, d->flags, &len)) == NULL)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "id %d: outside the vocabulary [0, %d)", (int)id,
		    d->tok->meta.n_vocab));
	total = (size_t)d->nhold + len;
	if (cap / RS_UTF8_REPL_LEN < total)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "detokenizer: "
		    "output room %zu, need %zu", cap, RS_UTF8_REPL_LEN * total));
	while (i < total) {
		/* a sequence is at most 4 bytes: look at that many */
		m = total - i < 4 ? total - i : 4;
		for (size_t j = 0; j < m; j++)
			w[j] = byte_at(d, p, i + j);
		if ((k = rs_utf8_seq(w, m, NULL)) == RS_UTF8_SHORT)
			break;
		if (k < 0) {
			/* the subpart ends at the byte that broke it, in w */
			memcpy(out + o, RS_UTF8_REPL, RS_UTF8_REPL_LEN);
			o += RS_UTF8_REPL_LEN;
			i += rs_utf8_subpart(w, m);
		} else {
			memcpy(out + o, w, (size_t)k);
			o += (size_t)k;
			i += (size_t)k;
		}
	}
	/* a short sequence has fewer than 4 bytes: it fits in hold[] */
	for (size_t j = 0; i + j < total; j++)
		w[j] = byte_at(d, p, i + j);
	d->nhold = (int)(total - i);
	memcpy(d->hold, w, (size_t)d->nhold);
	*n = o;
	return (RS_OK);
}

size_t
rs_detok_flush(struct rs_detok *d, char *out)
{
	size_t	o;

	/* a held sequence is a valid prefix: one maximal subpart, one U+FFFD */
	o = rs_utf8_sanitize((const char *)d->hold, (size_t)d->nhold,
	    RS_UTF8_PER_SUBPART, out, 1, NULL);
	d->nhold = 0;
	return (o);
}
