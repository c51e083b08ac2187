/*
 * fuzz_tok.c - libFuzzer target for the tokenizer and detokenizer, on the
 * tiny model's vocabulary ($RS_FIXTURES/tiny/model-f16.gguf, default
 * ../shared/fixtures).
 *
 * The first input byte picks the mode, the rest is the payload:
 *   bit 0      0: encode the payload as text; 1: decode it as ids
 *   bits 1-2   added-token mode (ALL, USER, NONE; 3 = ALL)
 *   bit 3      NFC on or off
 * Encoding must succeed on any bytes.  When the payload is valid UTF-8,
 * decode(encode(x)) must give x back, or with normalization and no added
 * tokens NFC(x) as utf8proc computes it on the whole text (the tokenizer
 * normalizes run by run and copies only what changes).  Decoding reads the
 * payload as little-endian 16-bit ids, some of them out of range: the batch
 * decode and the streaming detokenizer must agree byte for byte and give
 * valid UTF-8, or both reject the same id.  Any violation aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "rs_gguf.h"
#include "rs_tok.h"
#include "rs_utf8.h"

static struct rs_tok	*toks[2];	/* [nfc] */

int	LLVMFuzzerInitialize(int *argc, char ***argv);
int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char	*root = getenv("RS_FIXTURES");
	char		 path[1024];
	struct rs_gguf	*g;
	struct rs_err	 err = { 0 };

	(void)argc;
	(void)argv;
	snprintf(path, sizeof(path), "%s/tiny/model-f16.gguf",
	    root != NULL && *root != '\0' ? root : "../shared/fixtures");
	if (rs_gguf_open(&g, path, &err) != RS_OK ||
	    rs_tok_new(&toks[0], g, RS_TOK_NORM_NONE, &err) != RS_OK ||
	    rs_tok_new(&toks[1], g, RS_TOK_NORM_NFC, &err) != RS_OK) {
		fprintf(stderr, "fuzz_tok: %s: %s\n", path, err.msg);
		exit(1);
	}
	rs_gguf_close(g);
	return (0);
}

static void
fuzz_encode(const struct rs_tok *tok, const char *s, size_t n,
    enum rs_tok_special special)
{
	struct rs_tok_ids ids;
	char		*dec;
	size_t		 dn;

	rs_tok_ids_init(&ids);
	if (rs_tok_encode(tok, s, n, special, &ids, NULL) != RS_OK)
		abort();
	if (rs_tok_decode(tok, ids.v, ids.n, RS_TOK_DEC_SPECIAL, &dec, &dn,
	    NULL) != RS_OK || !rs_utf8_valid(dec, dn, NULL))
		abort();
	/* without NFC, valid text comes back unchanged */
	if (!rs_tok_meta(tok)->nfc && rs_utf8_valid(s, n, NULL) &&
	    (dn != n || memcmp(dec, s, n) != 0))
		abort();
	/* with it and no added tokens, as NFC of the whole text */
	if (rs_tok_meta(tok)->nfc && special == RS_TOK_SPECIAL_NONE &&
	    rs_utf8_valid(s, n, NULL)) {
		utf8proc_uint8_t *w = NULL;
		utf8proc_ssize_t  wn;

		wn = utf8proc_map((const utf8proc_uint8_t *)s,
		    (utf8proc_ssize_t)n, &w, UTF8PROC_STABLE |
		    UTF8PROC_COMPOSE);
		if (wn < 0 || (size_t)wn != dn || memcmp(w, dec, dn) != 0)
			abort();
		free(w);
	}
	free(dec);
	rs_tok_ids_cleanup(&ids);
}

static void
fuzz_decode(const struct rs_tok *tok, const uint8_t *p, size_t n,
    unsigned flags)
{
	struct rs_detok	 d;
	int32_t		*ids;
	size_t		 k = n / 2, dn, cap = rs_detok_max(tok), o = 0, m;
	char		*dec = NULL, *chunk, *all;
	enum rs_status	 st;
	int		 bad = 0;

	ids = malloc((k + 1) * sizeof(*ids));
	chunk = malloc(cap);
	all = malloc(3 * (k + 1) * (rs_tok_max_piece(tok) + 3));
	if (ids == NULL || chunk == NULL || all == NULL)
		abort();
	/* 0..2299: mostly valid ids, a few past the 2176-entry vocabulary */
	for (size_t i = 0; i < k; i++)
		ids[i] = (int32_t)(p[2 * i] | p[2 * i + 1] << 8) % 2300;
	st = rs_tok_decode(tok, ids, k, flags, &dec, &dn, NULL);
	rs_detok_init(&d, tok, flags);
	for (size_t i = 0; i < k && !bad; i++) {
		if (rs_detok_feed(&d, ids[i], chunk, cap, &m, NULL) != RS_OK) {
			bad = 1;
			break;
		}
		if (!rs_utf8_valid(chunk, m, NULL))
			abort();
		memcpy(all + o, chunk, m);
		o += m;
	}
	o += rs_detok_flush(&d, all + o);
	if ((st != RS_OK) != bad)
		abort();
	if (st == RS_OK && (o != dn || memcmp(all, dec, dn) != 0 ||
	    !rs_utf8_valid(dec, dn, NULL)))
		abort();
	free(dec);
	free(ids);
	free(chunk);
	free(all);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum rs_tok_special modes[4] = { RS_TOK_SPECIAL_ALL,
	    RS_TOK_SPECIAL_USER, RS_TOK_SPECIAL_NONE, RS_TOK_SPECIAL_ALL };
	unsigned	 mode;
	const struct rs_tok *tok;

	if (size == 0)
		return (0);
	mode = data[0];
	tok = toks[(mode >> 3) & 1];
	if (mode & 1)
		fuzz_decode(tok, data + 1, size - 1,
		    (mode & 2) ? RS_TOK_DEC_SPECIAL : 0);
	else
		fuzz_encode(tok, (const char *)data + 1, size - 1,
		    modes[(mode >> 1) & 3]);
	return (0);
}
