/*
 * t_tok.c - helpers for the tokenizer suites: fixtures as tokenizers and
 * JSON, encode/decode that fail the test on error, and synthetic
 * vocabulary-only GGUFs built in memory (see t_tok.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <utf8proc.h>

#include "rs_gguf.h"
#include "t_tok.h"
#include "t_util.h"

struct rs_tok *
t_tok_load_path(const char *path, enum rs_tok_norm norm)
{
	struct rs_gguf	*g = NULL;
	struct rs_tok	*tok = NULL;
	struct rs_err	 err = { 0 };

	ck_assert_msg(rs_gguf_open(&g, path, &err) == RS_OK, "%s: %s", path,
	    err.msg);
	ck_assert_msg(rs_tok_new(&tok, g, norm, &err) == RS_OK, "%s: %s",
	    path, err.msg);
	rs_gguf_close(g);
	return (tok);
}

struct rs_tok *
t_tok_load(const char *rel, enum rs_tok_norm norm)
{
	return (t_tok_load_path(t_fixture(rel), norm));
}

struct rs_json *
t_json_load(const char *rel)
{
	struct rs_json	*j = NULL;
	struct rs_err	 err = { 0 };
	size_t		 n;
	char		*buf = t_read_file(t_fixture(rel), &n);

	ck_assert_msg(rs_json_parse(buf, n, &j, &err) == RS_OK, "%s: %s",
	    rel, err.msg);
	free(buf);
	return (j);
}

const char *
t_json_str(const struct rs_json *obj, const char *key, size_t *n)
{
	const char	*s = NULL;

	ck_assert_msg(rs_json_as_str(rs_json_get(obj, key), &s, n) == 0,
	    "fixture: '%s' is not a string", key);
	return (s);
}

/* Integer array OBJ[KEY] into IDS (reset first). */
void
t_json_ids(const struct rs_json *obj, const char *key, struct rs_tok_ids *ids)
{
	struct rs_json	*arr = rs_json_get(obj, key);
	int64_t		 v;

	ck_assert_msg(arr != NULL && rs_json_kind(arr) == RS_JSON_ARRAY,
	    "fixture: '%s' is not an array", key);
	ids->n = 0;
	free(ids->v);
	ids->v = malloc((rs_json_arr_len(arr) + 1) * sizeof(int32_t));
	ck_assert(ids->v != NULL);
	ids->cap = rs_json_arr_len(arr) + 1;
	for (size_t i = 0; i < rs_json_arr_len(arr); i++) {
		ck_assert(rs_json_as_int(rs_json_arr_at(arr, i), &v) == 0);
		ids->v[ids->n++] = (int32_t)v;
	}
}

void
t_tok_encode(const struct rs_tok *tok, const char *s, size_t n,
    enum rs_tok_special special, struct rs_tok_ids *ids)
{
	struct rs_err	err = { 0 };

	ids->n = 0;
	ck_assert_msg(rs_tok_encode(tok, s, n, special, ids, &err) == RS_OK,
	    "encode: %s", err.msg);
}

/* Fail naming the first difference between GOT and WANT. */
void
t_tok_assert_ids(const struct rs_tok_ids *got, const struct rs_tok_ids *want,
    const char *what, size_t k)
{
	size_t	i;

	for (i = 0; i < got->n && i < want->n; i++)
		if (got->v[i] != want->v[i])
			break;
	ck_assert_msg(i == got->n && i == want->n,
	    "%s %zu: ids differ at %zu: got %d, want %d (lengths %zu, %zu)",
	    what, k, i, i < got->n ? (int)got->v[i] : -1,
	    i < want->n ? (int)want->v[i] : -1, got->n, want->n);
}

char *
t_tok_decode(const struct rs_tok *tok, const struct rs_tok_ids *ids,
    unsigned flags, size_t *n)
{
	struct rs_err	 err = { 0 };
	char		*s = NULL;

	ck_assert_msg(rs_tok_decode(tok, ids->v, ids->n, flags, &s, n,
	    &err) == RS_OK, "decode: %s", err.msg);
	return (s);
}

int
t_utf8proc_valid(const char *s, size_t n)
{
	utf8proc_int32_t	c;
	utf8proc_ssize_t	k;

	for (size_t i = 0; i < n; i += (size_t)k)
		if ((k = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
		    (utf8proc_ssize_t)(n - i), &c)) <= 0)
			return (0);
	return (1);
}

void
t_tok_assert_stream(const struct rs_tok *tok, const struct rs_tok_ids *ids,
    unsigned flags, const char *want, size_t wn)
{
	struct rs_detok	 d;
	struct rs_err	 err = { 0 };
	size_t		 cap = rs_detok_max(tok), o = 0, k;
	char		*chunk = malloc(cap), *all = malloc(wn + 16);

	ck_assert(chunk != NULL && all != NULL);
	rs_detok_init(&d, tok, flags);
	for (size_t i = 0; i < ids->n; i++) {
		ck_assert_msg(rs_detok_feed(&d, ids->v[i], chunk, cap, &k,
		    &err) == RS_OK, "feed: %s", err.msg);
		ck_assert_msg(t_utf8proc_valid(chunk, k),
		    "feed %zu emitted a partial or invalid sequence", i);
		ck_assert_msg(o + k <= wn, "stream longer than the decode");
		memcpy(all + o, chunk, k);
		o += k;
	}
	k = rs_detok_flush(&d, chunk);
	ck_assert(o + k <= wn);
	memcpy(all + o, chunk, k);
	o += k;
	ck_assert_msg(o == wn && memcmp(all, want, wn) == 0,
	    "streamed %zu bytes differ from the %zu-byte decode", o, wn);
	free(chunk);
	free(all);
}

/* ---- synthetic GGUFs ---- */

/* A GGUF under construction (version 3, no tensors). */
struct gb {
	unsigned char	*p;
	size_t		 n, cap;
	uint64_t	 n_kv;
};

static void
gb_put(struct gb *b, const void *s, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		ck_assert((b->p = realloc(b->p, b->cap)) != NULL);
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
}

static void
gb_u32(struct gb *b, uint32_t v)
{
	gb_put(b, &v, 4);
}

static void
gb_u64(struct gb *b, uint64_t v)
{
	gb_put(b, &v, 8);
}

static void
gb_str(struct gb *b, const char *s)
{
	gb_u64(b, strlen(s));
	gb_put(b, s, strlen(s));
}

static void
gb_kv_str(struct gb *b, const char *key, const char *v)
{
	gb_str(b, key);
	gb_u32(b, RS_GGUF_STRING);
	gb_str(b, v);
	b->n_kv++;
}

static void
gb_kv_u32(struct gb *b, const char *key, uint32_t v)
{
	gb_str(b, key);
	gb_u32(b, RS_GGUF_U32);
	gb_u32(b, v);
	b->n_kv++;
}

static void
gb_kv_strs(struct gb *b, const char *key, char **v, size_t n)
{
	gb_str(b, key);
	gb_u32(b, RS_GGUF_ARRAY);
	gb_u32(b, RS_GGUF_STRING);
	gb_u64(b, n);
	for (size_t i = 0; i < n; i++)
		gb_str(b, v[i]);
	b->n_kv++;
}

static void
gb_kv_i32s(struct gb *b, const char *key, const int32_t *v, size_t n)
{
	gb_str(b, key);
	gb_u32(b, RS_GGUF_ARRAY);
	gb_u32(b, RS_GGUF_I32);
	gb_u64(b, n);
	gb_put(b, v, 4 * n);
	b->n_kv++;
}

static char	 alphabet[256][8];

static void
load_alphabet(void)
{
	struct rs_json	*j, *map;
	char		 key[16];
	const char	*s;
	size_t		 n;

	if (alphabet[0][0] != '\0')
		return;
	j = t_json_load(T_VECTORS);
	map = rs_json_get(j, "byte_to_unicode");
	for (int b = 0; b < 256; b++) {
		snprintf(key, sizeof(key), "%d", b);
		s = t_json_str(map, key, &n);
		ck_assert(n < 8);
		memcpy(alphabet[b], s, n);
		alphabet[b][n] = '\0';
	}
	rs_json_free(j);
}

/* Build S, open it and make a tokenizer; returns the status. */
enum rs_status
t_synth_tok(const struct t_synth *s, struct rs_tok **tok, struct rs_err *err)
{
	struct gb	 b = { 0 };
	struct rs_gguf	*g = NULL;
	char		*toks[512];
	int32_t		 types[512];
	size_t		 n = 0;
	enum rs_status	 st;

	ck_assert(s->n_extra <= 256);
	load_alphabet();
	gb_put(&b, "GGUF", 4);
	gb_u32(&b, 3);
	gb_u64(&b, 0);
	gb_u64(&b, 0);			/* n_kv, patched below */
	gb_kv_str(&b, "tokenizer.ggml.model", s->model ? s->model : "gpt2");
	gb_kv_str(&b, "tokenizer.ggml.pre", s->pre ? s->pre : "qwen35");
	for (int c = 0; c < 256; c++)
		if (c != s->drop_byte) {
			toks[n] = alphabet[c];
			types[n++] = RS_TOK_NORMAL;
		}
	for (size_t i = 0; i < s->n_extra; i++) {
		toks[n] = (char *)s->extra[i];
		types[n++] = s->etypes != NULL ? s->etypes[i] : RS_TOK_NORMAL;
	}
	if (!s->no_tokens)
		gb_kv_strs(&b, "tokenizer.ggml.tokens", toks, n);
	gb_kv_i32s(&b, "tokenizer.ggml.token_type", types,
	    n - (s->short_types ? 1 : 0));
	gb_kv_strs(&b, "tokenizer.ggml.merges", (char **)s->merges,
	    s->n_merges);
	if (s->eos >= 0)
		gb_kv_u32(&b, "tokenizer.ggml.eos_token_id", (uint32_t)s->eos);
	memcpy(b.p + 16, &b.n_kv, 8);
	while (b.n % 32 != 0)
		gb_put(&b, "", 1);
	ck_assert_msg(rs_gguf_open_mem(&g, b.p, b.n, err) == RS_OK, "%s",
	    err->msg);
	st = rs_tok_new(tok, g, RS_TOK_NORM_NONE, err);
	rs_gguf_close(g);
	free(b.p);
	return (st);
}
