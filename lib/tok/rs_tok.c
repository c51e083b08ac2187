/*
 * rs_tok.c - building the tokenizer from the tokenizer.ggml.* keys
 * (serving.md §1.1, qwen35-model.md §2.4) and lookups on it.
 *
 * Load cost is linear: one pass over the tokens (undo the byte-level map,
 * insert NORMAL tokens into an open-addressing hash map of their bytes), one
 * pass over the merges (three vocabulary lookups each, one insertion into the
 * id-pair map).  Both tables are at most half full, so a lookup probes about
 * 1.5 slots.  For the 248k-token Qwen3.5 vocabulary that is a few MB.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "rs_tok_impl.h"
#include "rs_utf8.h"

#define KEY_MODEL	"tokenizer.ggml.model"
#define KEY_PRE		"tokenizer.ggml.pre"
#define KEY_TOKENS	"tokenizer.ggml.tokens"
#define KEY_TYPES	"tokenizer.ggml.token_type"
#define KEY_MERGES	"tokenizer.ggml.merges"

/* Added-token texts that end generation (serving.md §0, llama.cpp). */
static const char *const eog_texts[] = {
	"<|im_end|>", "<|endoftext|>", "<|fim_pad|>", "<|repo_name|>",
	"<|file_sep|>",
};

/* Chat markup the server relies on (serving.md §0). */
static const char *const chat_texts[] = {
	"<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>",
	"</tool_call>", "<tool_response>", "</tool_response>",
};

#define NELEM(a)	(sizeof(a) / sizeof((a)[0]))

/*
 * RS_TOK_NORM_DEFAULT by pre type: the normalizer of the tokenizer.json the
 * vocabulary comes from, which the GGUF does not record.  This table is the
 * one place that decides; every command takes its default from here.  Both
 * Qwen tokenizers normalize to NFC (serving.md §1.2).
 */
static const int pre_nfc[] = {
	[RS_PRETOK_QWEN35] = 1,
	[RS_PRETOK_QWEN2] = 1,
};

/* ---- the byte-level alphabet (serving.md §1.5) ---- */

uint32_t
rs_tok_byte_cp(unsigned char b)
{
	/* printable Latin-1 bytes stand for themselves */
	if ((b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae)
		return (b);
	/* the other 68, in increasing order, take U+0100 .. U+0143 */
	if (b <= 0x20)
		return (0x100 + b);			/* 33 bytes */
	if (b <= 0xa0)
		return (0x100 + 33 + (b - 0x7f));	/* 34 bytes */
	return (0x100 + 67);				/* 0xAD */
}

/* The byte code point CP stands for, or -1 outside the alphabet. */
static int
cp_byte(uint32_t cp)
{
	if ((cp >= 0x21 && cp <= 0x7e) || (cp >= 0xa1 && cp <= 0xac) ||
	    (cp >= 0xae && cp <= 0xff))
		return ((int)cp);
	if (cp < 0x100 || cp > 0x143)
		return (-1);
	cp -= 0x100;
	if (cp <= 32)
		return ((int)cp);
	if (cp <= 66)
		return ((int)(0x7f + cp - 33));
	return (0xad);
}

/*
 * Undo the byte-level map on the N bytes at S into OUT (room for N, since
 * every code point of the alphabet takes at least one byte).  Returns the
 * byte count, or -1 with *BADCP the offending code point (UINT32_MAX for
 * invalid UTF-8).
 */
static int64_t
unmap(const char *s, size_t n, char *out, uint32_t *badcp)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t		i = 0, o = 0;
	uint32_t	cp;
	int		k, b;

	while (i < n) {
		if ((k = rs_utf8_seq(u + i, n - i, &cp)) <= 0) {
			*badcp = UINT32_MAX;
			return (-1);
		}
		if ((b = cp_byte(cp)) < 0) {
			*badcp = cp;
			return (-1);
		}
		out[o++] = (char)b;
		i += (size_t)k;
	}
	return ((int64_t)o);
}

/* ---- hash maps ---- */

/* FNV-1a over the bytes (the table index and tag come from it). */
static uint64_t
hash_bytes(const char *s, size_t n)
{
	uint64_t	h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return (h);
}

/* Smallest BITS >= 4 with 2^BITS >= 2 * N: tables at most half full. */
static int
table_bits(uint64_t n)
{
	int	bits = 4;

	while (((uint64_t)1 << bits) < 2 * n)
		bits++;
	return (bits);
}

/*
 * The slot holding the NORMAL token with bytes S[0..N), or the empty slot
 * where it would go.
 */
static struct rs_tok_slot *
vocab_slot(const struct rs_tok *tok, const char *s, size_t n)
{
	uint64_t	 h = hash_bytes(s, n);
	uint64_t	 mask = ((uint64_t)1 << tok->vocab_bits) - 1;
	uint64_t	 i = rs_tok_hash64(h, tok->vocab_bits);
	uint32_t	 tag = (uint32_t)h;
	struct rs_tok_slot *sl;

	for (;; i = (i + 1) & mask) {
		sl = &tok->vocab[i];
		if (sl->id < 0 || (sl->tag == tag &&
		    tok->tokens[sl->id].len == n &&
		    memcmp(rs_tok_entry_bytes(tok, sl->id), s, n) == 0))
			return (sl);
	}
}

/* The NORMAL token with bytes S[0..N), or -1. */
static int32_t
vocab_find(const struct rs_tok *tok, const char *s, size_t n)
{
	return (vocab_slot(tok, s, n)->id);
}

/* Insert NORMAL token ID; a duplicate text keeps the lower id. */
static void
vocab_insert(struct rs_tok *tok, int32_t id)
{
	const char	*s = rs_tok_entry_bytes(tok, id);
	size_t		 n = tok->tokens[id].len;
	struct rs_tok_slot *sl = vocab_slot(tok, s, n);

	if (sl->id < 0) {
		sl->id = id;
		sl->tag = (uint32_t)hash_bytes(s, n);
	}
}

/* Insert merge (A, B) -> RES at RANK; a repeated pair keeps the lower rank. */
static void
merge_insert(struct rs_tok *tok, int32_t a, int32_t b, uint32_t rank,
    int32_t res)
{
	uint64_t	key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
	uint64_t	mask = ((uint64_t)1 << tok->merge_bits) - 1;
	uint64_t	i = rs_tok_hash64(key, tok->merge_bits);

	for (;; i = (i + 1) & mask) {
		struct rs_tok_merge *m = &tok->merges[i];

		if (m->key == key)
			return;
		if (m->key == RS_TOK_MERGE_EMPTY) {
			m->key = key;
			m->rank = rank;
			m->res = res;
			return;
		}
	}
}

/* ---- loading ---- */

/* String key KEY must equal WANT (RS_ERR_UNSUPPORTED otherwise). */
static enum rs_status
check_model(const struct rs_gguf *g, struct rs_err *err)
{
	struct rs_gguf_str s;
	enum rs_status	 st;
	char		 q[RS_UTF8_QUOTE_SIZE];

	if ((st = rs_gguf_get_str(g, KEY_MODEL, &s, err)) != RS_OK)
		return (st);
	if (s.len != 4 || memcmp(s.ptr, "gpt2", 4) != 0)
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "%s is '%s', only 'gpt2' (byte-level BPE) is supported",
		    KEY_MODEL, rs_utf8_quote(s.ptr, (size_t)s.len, q)));
	return (RS_OK);
}

static enum rs_status
read_pre(const struct rs_gguf *g, enum rs_pretok_kind *kind,
    struct rs_err *err)
{
	struct rs_gguf_str s;
	enum rs_status	 st;
	char		 q[RS_UTF8_QUOTE_SIZE];

	if ((st = rs_gguf_get_str(g, KEY_PRE, &s, err)) != RS_OK)
		return (st);
	if (rs_pretok_kind_parse(s.ptr, (size_t)s.len, kind) != 0)
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "%s is '%s', expected 'qwen35' or 'qwen2'", KEY_PRE,
		    rs_utf8_quote(s.ptr, (size_t)s.len, q)));
	return (RS_OK);
}

/* A string-array key, or RS_ERR_FORMAT. */
static enum rs_status
str_array(const struct rs_gguf *g, const char *key,
    const struct rs_gguf_kv **out, struct rs_err *err)
{
	const struct rs_gguf_kv *kv = rs_gguf_find_kv(g, key);

	if (kv == NULL)
		return (rs_errf(err, RS_ERR_FORMAT, "missing key '%s'", key));
	if (kv->type != RS_GGUF_ARRAY || kv->arr_type != RS_GGUF_STRING)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "key '%s' has type %s, expected an array of strings", key,
		    rs_gguf_vtype_name(kv->type)));
	*out = kv;
	return (RS_OK);
}

/* Type of every token: tokenizer.ggml.token_type, NORMAL when absent. */
static enum rs_status
read_types(struct rs_tok *tok, const struct rs_gguf *g, uint64_t n,
    struct rs_err *err)
{
	const struct rs_gguf_kv *kv = rs_gguf_find_kv(g, KEY_TYPES);
	int64_t	t;

	if (kv == NULL) {
		for (uint64_t i = 0; i < n; i++)
			tok->tokens[i].type = RS_TOK_NORMAL;
		return (RS_OK);
	}
	if (kv->type != RS_GGUF_ARRAY || kv->arr_type == RS_GGUF_STRING ||
	    kv->arr_type == RS_GGUF_F32 || kv->arr_type == RS_GGUF_F64 ||
	    kv->arr_type == RS_GGUF_ARRAY)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "key '%s' has type %s, expected an integer array",
		    KEY_TYPES, rs_gguf_vtype_name(kv->type)));
	if (kv->arr_len != n)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "key '%s' has %llu entries, %s has %llu", KEY_TYPES,
		    (unsigned long long)kv->arr_len, KEY_TOKENS,
		    (unsigned long long)n));
	for (uint64_t i = 0; i < n; i++) {
		t = rs_gguf_arr_int(kv, i);
		if (t < RS_TOK_NORMAL || t > RS_TOK_BYTE)
			return (rs_errf(err, RS_ERR_FORMAT,
			    "%s[%llu] is %lld, expected 1..6", KEY_TYPES,
			    (unsigned long long)i, (long long)t));
		tok->tokens[i].type = (uint8_t)t;
	}
	return (RS_OK);
}

/* "<0xXX>" -> XX for BYTE tokens; -1 otherwise. */
static int
byte_token(const char *s, size_t n)
{
	unsigned	v = 0;

	if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>')
		return (-1);
	for (int i = 3; i < 5; i++) {
		char	c = s[i];

		if (c >= '0' && c <= '9')
			v = v * 16 + (unsigned)(c - '0');
		else if (c >= 'A' && c <= 'F')
			v = v * 16 + (unsigned)(c - 'A' + 10);
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (unsigned)(c - 'a' + 10);
		else
			return (-1);
	}
	return ((int)v);
}

/* Bytes of token I (text S, N bytes) into the arena at *O. */
static enum rs_status
token_bytes(struct rs_tok *tok, uint64_t i, const char *s, size_t n,
    size_t *o, struct rs_err *err)
{
	struct rs_tok_entry *e = &tok->tokens[i];
	uint32_t	 badcp;
	int64_t		 k;
	int		 b;
	char		 q[RS_UTF8_QUOTE_SIZE];

	e->off = (uint32_t)*o;
	switch (e->type) {
	case RS_TOK_NORMAL:
		if (n == 0)
			return (rs_errf(err, RS_ERR_FORMAT,
			    "token %llu: empty NORMAL token",
			    (unsigned long long)i));
		if ((k = unmap(s, n, tok->bytes + *o, &badcp)) < 0) {
			if (badcp == UINT32_MAX)
				return (rs_errf(err, RS_ERR_FORMAT,
				    "token %llu: text is not valid UTF-8",
				    (unsigned long long)i));
			return (rs_errf(err, RS_ERR_FORMAT,
			    "token %llu '%s': U+%04X is not in the "
			    "byte-level alphabet", (unsigned long long)i,
			    rs_utf8_quote(s, n, q), (unsigned)badcp));
		}
		e->len = (uint32_t)k;
		break;
	case RS_TOK_BYTE:
		if ((b = byte_token(s, n)) < 0)
			return (rs_errf(err, RS_ERR_FORMAT,
			    "token %llu '%s': BYTE token not of the form "
			    "<0xXX>", (unsigned long long)i,
			    rs_utf8_quote(s, n, q)));
		tok->bytes[*o] = (char)b;
		e->len = 1;
		break;
	case RS_TOK_UNUSED:
		e->len = 0;	/* never produced, decodes to nothing */
		break;
	default:		/* added tokens: the text itself */
		memcpy(tok->bytes + *o, s, n);
		e->len = (uint32_t)n;
		/* llama.cpp: a "<|...|>" text is CONTROL whatever the type */
		if (e->type == RS_TOK_USER_DEFINED && n >= 4 &&
		    memcmp(s, "<|", 2) == 0 && memcmp(s + n - 2, "|>", 2) == 0)
			e->type = RS_TOK_CONTROL;
		break;
	}
	*o += e->len;
	if (e->len > tok->max_piece)
		tok->max_piece = e->len;
	return (RS_OK);
}

static enum rs_status
load_tokens(struct rs_tok *tok, const struct rs_gguf *g, struct rs_err *err)
{
	const struct rs_gguf_kv *kv;
	enum rs_status	 st;
	uint64_t	 n, total = 0;
	size_t		 o = 0;

	if ((st = str_array(g, KEY_TOKENS, &kv, err)) != RS_OK)
		return (st);
	if ((n = kv->arr_len) == 0 || n > INT32_MAX)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "key '%s' has %llu entries, expected 1..%d", KEY_TOKENS,
		    (unsigned long long)n, INT32_MAX));
	for (uint64_t i = 0; i < n; i++)
		total += kv->strs[i].len;
	if (total > UINT32_MAX)
		return (rs_errf(err, RS_ERR_LIMIT,
		    "key '%s': %llu bytes of token text, at most 4 GiB",
		    KEY_TOKENS, (unsigned long long)total));
	tok->meta.n_vocab = (int32_t)n;
	tok->vocab_bits = table_bits(n);
	tok->tokens = calloc(n, sizeof(*tok->tokens));
	tok->bytes = malloc(total + 1);
	tok->vocab = malloc(sizeof(*tok->vocab) << tok->vocab_bits);
	tok->eog = calloc(n / 8 + 1, 1);
	if (tok->tokens == NULL || tok->bytes == NULL || tok->vocab == NULL ||
	    tok->eog == NULL)
		return (rs_errf(err, RS_ERR_NOMEM,
		    "tokenizer: no memory for %llu tokens",
		    (unsigned long long)n));
	memset(tok->vocab, 0xff, sizeof(*tok->vocab) << tok->vocab_bits);
	if ((st = read_types(tok, g, n, err)) != RS_OK)
		return (st);
	for (uint64_t i = 0; i < n; i++) {
		st = token_bytes(tok, i, kv->strs[i].ptr,
		    (size_t)kv->strs[i].len, &o, err);
		if (st != RS_OK)
			return (st);
		if (tok->tokens[i].type == RS_TOK_NORMAL)
			vocab_insert(tok, (int32_t)i);
		else if (tok->tokens[i].type != RS_TOK_UNUSED &&
		    tok->tokens[i].type != RS_TOK_BYTE && kv->strs[i].len > 0)
			tok->meta.n_added++;
	}
	for (int b = 0; b < 256; b++) {
		char	c = (char)b;

		if ((tok->byte_id[b] = vocab_find(tok, &c, 1)) < 0)
			return (rs_errf(err, RS_ERR_FORMAT,
			    "byte 0x%02X (U+%04X) has no NORMAL token", b,
			    (unsigned)rs_tok_byte_cp((unsigned char)b)));
	}
	return (RS_OK);
}

/*
 * The vocabulary id of merge side S[0..N) (byte-level text), using BUF
 * (room for N) for its bytes; -1 when it has none.
 */
static int32_t
side_id(const struct rs_tok *tok, const char *s, size_t n, char *buf)
{
	uint32_t	badcp;
	int64_t		k;

	if ((k = unmap(s, n, buf, &badcp)) <= 0)
		return (-1);
	return (vocab_find(tok, buf, (size_t)k));
}

static enum rs_status
load_merges(struct rs_tok *tok, const struct rs_gguf *g, struct rs_err *err)
{
	const struct rs_gguf_kv *kv;
	enum rs_status	 st;
	size_t		 maxlen = 0, sp;
	char		*buf, q[RS_UTF8_QUOTE_SIZE];
	int32_t		 a, b, r;
	const char	*what = NULL;

	if ((st = str_array(g, KEY_MERGES, &kv, err)) != RS_OK)
		return (st);
	if (kv->arr_len > INT32_MAX)
		return (rs_errf(err, RS_ERR_FORMAT, "key '%s' has %llu entries",
		    KEY_MERGES, (unsigned long long)kv->arr_len));
	tok->meta.n_merges = (int32_t)kv->arr_len;
	tok->merge_bits = table_bits(kv->arr_len);
	tok->merges = malloc(sizeof(*tok->merges) << tok->merge_bits);
	for (uint64_t i = 0; i < kv->arr_len; i++)
		if (kv->strs[i].len > maxlen)
			maxlen = (size_t)kv->strs[i].len;
	buf = malloc(2 * maxlen + 1);
	if (tok->merges == NULL || buf == NULL) {
		free(buf);
		return (rs_errf(err, RS_ERR_NOMEM, "tokenizer: no memory for "
		    "%d merges", tok->meta.n_merges));
	}
	memset(tok->merges, 0xff, sizeof(*tok->merges) << tok->merge_bits);
	for (uint64_t i = 0; i < kv->arr_len && what == NULL; i++) {
		const char	*s = kv->strs[i].ptr;
		size_t		 n = (size_t)kv->strs[i].len;
		int64_t		 ka, kb;
		uint32_t	 badcp;

		/* "A B": split at the first space at index >= 1 */
		for (sp = 1; sp < n && s[sp] != ' '; sp++)
			continue;
		if (sp + 1 >= n) {
			what = "no 'A B' separator";
		} else if ((a = side_id(tok, s, sp, buf)) < 0) {
			what = "left side not in the vocabulary";
		} else if ((b = side_id(tok, s + sp + 1, n - sp - 1,
		    buf)) < 0) {
			what = "right side not in the vocabulary";
		} else {
			/* the merged token: both sides' bytes back to back */
			ka = unmap(s, sp, buf, &badcp);
			kb = unmap(s + sp + 1, n - sp - 1, buf + ka, &badcp);
			if ((r = vocab_find(tok, buf, (size_t)(ka + kb))) < 0)
				what = "merged token not in the vocabulary";
			else
				merge_insert(tok, a, b, (uint32_t)i, r);
		}
		if (what != NULL)
			rs_errf(err, RS_ERR_FORMAT, "%s[%llu] '%s': %s",
			    KEY_MERGES, (unsigned long long)i,
			    rs_utf8_quote(s, n, q), what);
	}
	free(buf);
	return (what != NULL ? RS_ERR_FORMAT : RS_OK);
}

/* Optional id KEY into *ID (-1 when absent); must be < n_vocab. */
static enum rs_status
read_id(const struct rs_tok *tok, const struct rs_gguf *g, const char *key,
    int32_t *id, struct rs_err *err)
{
	uint32_t	v = UINT32_MAX;
	enum rs_status	st;

	*id = -1;
	if ((st = rs_gguf_get_u32_opt(g, key, &v, err)) != RS_OK)
		return (st);
	if (v == UINT32_MAX)
		return (RS_OK);
	if (v >= (uint32_t)tok->meta.n_vocab)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "%s is %u, outside the vocabulary of %d tokens", key, v,
		    tok->meta.n_vocab));
	*id = (int32_t)v;
	return (RS_OK);
}

static enum rs_status
load_special_ids(struct rs_tok *tok, const struct rs_gguf *g,
    struct rs_err *err)
{
	struct rs_tok_meta *m = &tok->meta;
	enum rs_status	st;

	if ((st = read_id(tok, g, "tokenizer.ggml.bos_token_id", &m->bos,
	    err)) != RS_OK ||
	    (st = read_id(tok, g, "tokenizer.ggml.eos_token_id", &m->eos,
	    err)) != RS_OK ||
	    (st = read_id(tok, g, "tokenizer.ggml.eot_token_id", &m->eot,
	    err)) != RS_OK ||
	    (st = read_id(tok, g, "tokenizer.ggml.eom_token_id", &m->eom,
	    err)) != RS_OK ||
	    (st = read_id(tok, g, "tokenizer.ggml.padding_token_id", &m->pad,
	    err)) != RS_OK)
		return (st);
	if ((st = rs_gguf_get_bool_opt(g, "tokenizer.ggml.add_bos_token",
	    &m->add_bos, err)) != RS_OK ||
	    (st = rs_gguf_get_bool_opt(g, "tokenizer.ggml.add_eos_token",
	    &m->add_eos, err)) != RS_OK)
		return (st);
	return (RS_OK);
}

static int
is_added(int type)
{
	return (type == RS_TOK_CONTROL || type == RS_TOK_USER_DEFINED ||
	    type == RS_TOK_UNKNOWN);
}

/* Sort key of an added token: first byte, then length, then id. */
struct added_key {
	uint32_t	first;
	uint32_t	len;
	int32_t		id;
};

/* First byte ascending, then longest first, then lowest id. */
static int
added_cmp(const void *pa, const void *pb)
{
	const struct added_key *a = pa, *b = pb;

	if (a->first != b->first)
		return (a->first < b->first ? -1 : 1);
	if (a->len != b->len)
		return (a->len > b->len ? -1 : 1);
	return (a->id < b->id ? -1 : a->id > b->id);
}

static enum rs_status
build_added(struct rs_tok *tok, struct rs_err *err)
{
	struct added_key *keys;
	size_t	n = 0;

	keys = malloc(sizeof(*keys) * ((size_t)tok->meta.n_added + 1));
	tok->added = malloc(sizeof(int32_t) * ((size_t)tok->meta.n_added + 1));
	if (keys == NULL || tok->added == NULL) {
		free(keys);
		return (rs_errf(err, RS_ERR_NOMEM, "tokenizer: no memory"));
	}
	for (int32_t i = 0; i < tok->meta.n_vocab; i++)
		if (is_added(tok->tokens[i].type) && tok->tokens[i].len > 0) {
			keys[n].first = (unsigned char)
			    rs_tok_entry_bytes(tok, i)[0];
			keys[n].len = tok->tokens[i].len;
			keys[n++].id = i;
		}
	qsort(keys, n, sizeof(*keys), added_cmp);
	/* added_at[c] = first candidate whose first byte is >= c */
	for (size_t c = 0, k = 0; c <= 256; c++) {
		while (k < n && keys[k].first < c)
			k++;
		tok->added_at[c] = (uint32_t)k;
	}
	for (size_t k = 0; k < n; k++)
		tok->added[k] = keys[k].id;
	free(keys);
	return (RS_OK);
}

static void
eog_set(struct rs_tok *tok, int32_t id)
{
	if (id >= 0)
		tok->eog[id / 8] |= (uint8_t)(1u << (id % 8));
}

static void
build_eog(struct rs_tok *tok)
{
	eog_set(tok, tok->meta.eos);
	eog_set(tok, tok->meta.eot);
	eog_set(tok, tok->meta.eom);
	for (int32_t k = 0; k < tok->meta.n_added; k++) {
		int32_t		 id = tok->added[k];
		uint32_t	 len = tok->tokens[id].len;

		for (size_t j = 0; j < NELEM(eog_texts); j++)
			if (strlen(eog_texts[j]) == len &&
			    memcmp(eog_texts[j], rs_tok_entry_bytes(tok, id),
			    len) == 0)
				eog_set(tok, id);
	}
}

enum rs_status
rs_tok_new(struct rs_tok **out, const struct rs_gguf *g, enum rs_tok_norm norm,
    struct rs_err *err)
{
	struct rs_tok	   *tok;
	enum rs_pretok_kind kind;
	enum rs_status	    st;

	if (norm != RS_TOK_NORM_DEFAULT && norm != RS_TOK_NORM_NONE &&
	    norm != RS_TOK_NORM_NFC)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "tokenizer: normalization %d unknown", (int)norm));
	if ((st = check_model(g, err)) != RS_OK ||
	    (st = read_pre(g, &kind, err)) != RS_OK)
		return (st);
	if ((tok = calloc(1, sizeof(*tok))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "tokenizer: no memory"));
	tok->meta.pre = rs_pretok_kind_name(kind);
	tok->meta.nfc = norm == RS_TOK_NORM_DEFAULT ? pre_nfc[kind] :
	    norm == RS_TOK_NORM_NFC;
	if ((st = load_tokens(tok, g, err)) != RS_OK ||
	    (st = load_merges(tok, g, err)) != RS_OK ||
	    (st = load_special_ids(tok, g, err)) != RS_OK ||
	    (st = build_added(tok, err)) != RS_OK ||
	    (st = rs_pretok_new(&tok->pretok, kind, err)) != RS_OK) {
		rs_tok_free(tok);
		return (st);
	}
	build_eog(tok);
	tok->meta.jit = rs_pretok_jit(tok->pretok);
	*out = tok;
	return (RS_OK);
}

void
rs_tok_free(struct rs_tok *tok)
{
	if (tok == NULL)
		return;
	rs_pretok_free(tok->pretok);
	free(tok->tokens);
	free(tok->bytes);
	free(tok->vocab);
	free(tok->merges);
	free(tok->added);
	free(tok->eog);
	free(tok);
}

/* ---- lookups ---- */

const struct rs_tok_meta *
rs_tok_meta(const struct rs_tok *tok)
{
	return (&tok->meta);
}

int
rs_tok_type(const struct rs_tok *tok, int32_t id)
{
	if (id < 0 || id >= tok->meta.n_vocab)
		return (0);
	return (tok->tokens[id].type);
}

/* The added token with text S[0..N), or -1. */
static int32_t
added_find(const struct rs_tok *tok, const char *s, size_t n)
{
	unsigned char c;

	if (n == 0)
		return (-1);
	c = (unsigned char)s[0];
	for (uint32_t k = tok->added_at[c]; k < tok->added_at[c + 1]; k++) {
		int32_t	id = tok->added[k];

		if (tok->tokens[id].len == n &&
		    memcmp(rs_tok_entry_bytes(tok, id), s, n) == 0)
			return (id);
	}
	return (-1);
}

int32_t
rs_tok_find(const struct rs_tok *tok, const char *text, size_t n)
{
	int32_t	id;

	if ((id = added_find(tok, text, n)) >= 0)
		return (id);
	return (n > 0 ? vocab_find(tok, text, n) : -1);
}

int
rs_tok_is_eog(const struct rs_tok *tok, int32_t id)
{
	if (id < 0 || id >= tok->meta.n_vocab)
		return (0);
	return ((tok->eog[id / 8] >> (id % 8)) & 1);
}

enum rs_status
rs_tok_check_chat(const struct rs_tok *tok, struct rs_err *err)
{
	for (size_t i = 0; i < NELEM(chat_texts); i++)
		if (added_find(tok, chat_texts[i], strlen(chat_texts[i])) < 0)
			return (rs_errf(err, RS_ERR_UNSUPPORTED,
			    "chat token '%s' is not a single added token",
			    chat_texts[i]));
	return (RS_OK);
}

size_t
rs_tok_max_piece(const struct rs_tok *tok)
{
	return (tok->max_piece);
}

static char	versions[160];

static void
make_versions(void)
{
	snprintf(versions, sizeof(versions), "%s; utf8proc %s (unicode %s)",
	    rs_pretok_lib_version(), utf8proc_version(),
	    utf8proc_unicode_version());
}

const char *
rs_tok_lib_versions(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, make_versions);
	return (versions);
}
