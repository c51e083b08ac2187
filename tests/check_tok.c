/*
 * check_tok.c - the tokenizer, pre-tokenizer and streaming detokenizer
 * against the reference fixtures (the tokenizer/ JSON files, made by the HF
 * tokenizers library and llama.cpp), against utf8proc for NFC and UTF-8
 * validity, and against BPE cases worked by hand on synthetic vocabularies
 * (serving.md §1).  Also the speed, printed.
 */
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <check.h>
#include <utf8proc.h>

#include "rs_gguf.h"
#include "rs_json.h"
#include "rs_nfc.h"
#include "rs_pretok.h"
#include "rs_tok.h"
#include "rs_utf8.h"
#include "t_tok.h"
#include "t_util.h"

/* ---- helpers ---- */

/* ---- tokenizer-cases.json: both vocabularies ---- */

static void
check_cases(const char *rel, const char *voc)
{
	/* both reference tokenizers normalize to NFC (tokenizer.json) */
	struct rs_tok	*tok = t_tok_load(rel, RS_TOK_NORM_NFC);
	struct rs_json	*j = t_json_load(T_CASES), *cases;
	struct rs_tok_ids got, want;
	char		 key[32];
	const char	*text, *ref;
	char		*dec;
	size_t		 n, rn, dn;

	rs_tok_ids_init(&got);
	rs_tok_ids_init(&want);
	cases = rs_json_get(j, "cases");
	ck_assert(cases != NULL && rs_json_arr_len(cases) >= 60);
	snprintf(key, sizeof(key), "%s_decoded", voc);
	for (size_t i = 0; i < rs_json_arr_len(cases); i++) {
		struct rs_json *c = rs_json_arr_at(cases, i);

		text = t_json_str(c, "text", &n);
		ref = t_json_str(c, key, &rn);
		t_json_ids(c, voc, &want);
		t_tok_encode(tok, text, n, RS_TOK_SPECIAL_ALL, &got);
		t_tok_assert_ids(&got, &want, "case", i);
		dec = t_tok_decode(tok, &want, RS_TOK_DEC_SPECIAL, &dn);
		ck_assert_msg(dn == rn && memcmp(dec, ref, rn) == 0,
		    "case %zu: decoded text differs from the reference", i);
		t_tok_assert_stream(tok, &want, RS_TOK_DEC_SPECIAL, dec, dn);
		free(dec);
	}
	printf("tok: %zu cases equal the reference for vocabulary %s\n",
	    rs_json_arr_len(cases), voc);
	rs_tok_ids_cleanup(&got);
	rs_tok_ids_cleanup(&want);
	rs_json_free(j);
	rs_tok_free(tok);
}

START_TEST(cases_tiny)
{
	check_cases(T_TINY, "tiny");
}
END_TEST

START_TEST(cases_qwen3)
{
	check_cases(T_QWEN3, "qwen3");
}
END_TEST

/* ---- qwen35-llamacpp-vectors.json: split and byte-level pieces ---- */

START_TEST(byte_map)
{
	struct rs_json	*j = t_json_load(T_VECTORS), *map;
	char		 key[16], buf[4];
	const char	*s;
	size_t		 n;
	int		 k;

	map = rs_json_get(j, "byte_to_unicode");
	ck_assert(map != NULL && rs_json_obj_len(map) == 256);
	for (int b = 0; b < 256; b++) {
		snprintf(key, sizeof(key), "%d", b);
		s = t_json_str(map, key, &n);
		k = rs_utf8_put(rs_tok_byte_cp((unsigned char)b), buf);
		ck_assert_msg((size_t)k == n && memcmp(buf, s, n) == 0,
		    "byte %d maps to U+%04X", b,
		    (unsigned)rs_tok_byte_cp((unsigned char)b));
	}
	/* serving.md §1.5's list */
	ck_assert_uint_eq(rs_tok_byte_cp(0x20), 0x120);
	ck_assert_uint_eq(rs_tok_byte_cp(0x0a), 0x10a);
	ck_assert_uint_eq(rs_tok_byte_cp(0x09), 0x109);
	ck_assert_uint_eq(rs_tok_byte_cp(0x0d), 0x10d);
	ck_assert_uint_eq(rs_tok_byte_cp(0x7f), 0x121);
	ck_assert_uint_eq(rs_tok_byte_cp(0xa0), 0x142);
	ck_assert_uint_eq(rs_tok_byte_cp(0xad), 0x143);
	rs_json_free(j);
}
END_TEST

/* Collected words of one split. */
struct words {
	size_t	off[4096];
	size_t	len[4096];
	size_t	n;
};

static enum rs_status
collect(void *arg, size_t off, size_t len, struct rs_err *err)
{
	struct words	*w = arg;

	(void)err;
	ck_assert(w->n < 4096);
	w->off[w->n] = off;
	w->len[w->n++] = len;
	return (RS_OK);
}

/* The byte-level form of S[0..N) (fixtures spell pieces that way). */
static size_t
byte_level(const char *s, size_t n, char *out)
{
	size_t	o = 0;

	for (size_t i = 0; i < n; i++)
		o += (size_t)rs_utf8_put(rs_tok_byte_cp((unsigned char)s[i]),
		    out + o);
	return (o);
}

static void
check_split(const struct rs_pretok *p, const struct rs_json *v, size_t idx)
{
	static struct words w;
	struct rs_json	*pre = rs_json_get(v, "pretokens");
	struct rs_json	*bl = rs_json_get(v, "byte_level");
	struct rs_err	 err = { 0 };
	const char	*text, *s;
	char		 buf[8192];
	size_t		 n, sn, k;

	text = t_json_str(v, "text", &n);
	w.n = 0;
	ck_assert_msg(rs_pretok_split(p, text, n, collect, &w, &err) == RS_OK,
	    "split: %s", err.msg);
	ck_assert_msg(w.n == rs_json_arr_len(pre),
	    "vector %zu: %zu words, want %zu", idx, w.n, rs_json_arr_len(pre));
	for (size_t i = 0; i < w.n; i++) {
		ck_assert(rs_json_as_str(rs_json_arr_at(pre, i), &s, &sn) == 0);
		ck_assert_msg(w.len[i] == sn &&
		    memcmp(text + w.off[i], s, sn) == 0,
		    "vector %zu: word %zu differs", idx, i);
		ck_assert(rs_json_as_str(rs_json_arr_at(bl, i), &s, &sn) == 0);
		ck_assert(w.len[i] * 2 <= sizeof(buf));
		k = byte_level(text + w.off[i], w.len[i], buf);
		ck_assert_msg(k == sn && memcmp(buf, s, sn) == 0,
		    "vector %zu: byte-level piece %zu differs", idx, i);
	}
}

START_TEST(vectors_split)
{
	struct rs_json	 *j = t_json_load(T_VECTORS), *arr;
	struct rs_pretok *p = NULL;
	struct rs_err	  err = { 0 };
	size_t		  total = 0;
	const char	 *lists[] = { "vectors", "extra_pretokenize" };

	ck_assert_msg(rs_pretok_new(&p, RS_PRETOK_QWEN35, &err) == RS_OK,
	    "%s", err.msg);
	for (size_t l = 0; l < 2; l++) {
		arr = rs_json_get(j, lists[l]);
		ck_assert(arr != NULL && rs_json_arr_len(arr) > 0);
		for (size_t i = 0; i < rs_json_arr_len(arr); i++)
			check_split(p, rs_json_arr_at(arr, i), total + i);
		total += rs_json_arr_len(arr);
	}
	ck_assert_uint_eq(total, 65);
	printf("tok: %zu qwen35 pre-tokenizer splits and byte-level pieces "
	    "equal llama.cpp's vectors (pcre2 jit %s)\n", total,
	    rs_pretok_jit(p) ? "on" : "off");
	rs_pretok_free(p);
	rs_json_free(j);
}
END_TEST

/* ---- round trips ---- */

static uint64_t
rnd(uint64_t *s)
{
	/* xorshift64* */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return (*s * 0x2545f4914f6cdd1dULL);
}

static uint32_t
rnd_in(uint64_t *s, uint32_t lo, uint32_t hi)
{
	return (lo + (uint32_t)(rnd(s) % (hi - lo + 1)));
}

/*
 * A random valid UTF-8 string of up to 48 pieces into BUF (room 512),
 * weighted towards what the tokenizer treats specially: ASCII words and
 * contractions, whitespace of every kind, digits, combining marks, CJK,
 * Hangul, Devanagari, emoji with ZWJ, any scalar value, and added-token
 * texts (whole or cut).  No NUL (utf8proc_NFC stops at one).
 */
static size_t
rnd_utf8(uint64_t *s, char *buf)
{
	static const char *const bits[] = {
		"'s", "'LL", "'ve", " ", "  ", "\n", "\r\n", "\t", "hello",
		" World", "3", "x=1;", "<|im_end|>", "<think>", "</tool_call>",
		"<|im_", "<thin", "\xef\xbb\xbf",
	};
	static const uint32_t spaces[] = {
		0x85, 0xa0, 0x1680, 0x180e, 0x2000, 0x2007, 0x200a, 0x200b,
		0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff, 0x1c, 0x0b,
	};
	size_t	n = 0, pieces = rnd(s) % 49;
	uint32_t cp;

	for (size_t i = 0; i < pieces; i++) {
		switch (rnd(s) % 12) {
		case 0: case 1:
			cp = rnd_in(s, 0x20, 0x7e);
			break;
		case 2: {
			const char *b = bits[rnd(s) % (sizeof(bits) /
			    sizeof(bits[0]))];
			memcpy(buf + n, b, strlen(b));
			n += strlen(b);
			continue;
		}
		case 3: cp = spaces[rnd(s) % 16]; break;
		case 4: cp = rnd_in(s, 0xa0, 0x24f); break;
		case 5: cp = rnd_in(s, 0x300, 0x36f); break;
		case 6: cp = rnd_in(s, 0x4e00, 0x9fff); break;
		case 7: cp = rnd(s) % 2 ? rnd_in(s, 0xac00, 0xd7a3) :
		    rnd_in(s, 0x1100, 0x11ff); break;
		case 8: cp = rnd_in(s, 0x900, 0x97f); break;
		case 9: cp = rnd(s) % 3 ? rnd_in(s, 0x1f300, 0x1faff) :
		    rnd(s) % 2 ? 0x200d : 0xfe0f; break;
		case 10: cp = rnd_in(s, 0x1e00, 0x1fff); break;
		default:
			do
				cp = rnd_in(s, 1, 0x10ffff);
			while (cp >= 0xd800 && cp <= 0xdfff);
			break;
		}
		n += (size_t)rs_utf8_put(cp, buf + n);
	}
	buf[n] = '\0';
	return (n);
}

/* decode(encode(S)) == S, or NFC(S) (by utf8proc) when TOK normalizes. */
static void
assert_round_trip(const struct rs_tok *tok, const char *s, size_t n,
    struct rs_tok_ids *ids, const char *what, size_t k)
{
	utf8proc_uint8_t *nfc = NULL;
	const char	*want = s;
	size_t		 wn = n, dn;
	char		*dec;

	if (rs_tok_meta(tok)->nfc) {
		nfc = utf8proc_NFC((const utf8proc_uint8_t *)s);
		ck_assert(nfc != NULL);
		want = (const char *)nfc;
		wn = strlen(want);
	}
	t_tok_encode(tok, s, n, RS_TOK_SPECIAL_ALL, ids);
	dec = t_tok_decode(tok, ids, RS_TOK_DEC_SPECIAL, &dn);
	ck_assert_msg(dn == wn && memcmp(dec, want, wn) == 0,
	    "%s %zu (vocabulary %s, nfc %d): decode(encode(s)) differs",
	    what, k, rs_tok_meta(tok)->pre, rs_tok_meta(tok)->nfc);
	t_tok_assert_stream(tok, ids, RS_TOK_DEC_SPECIAL, dec, dn);
	free(dec);
	free(nfc);
}

START_TEST(round_trip)
{
	struct rs_tok	*toks[3];
	struct rs_json	*j = t_json_load(T_CASES), *cases;
	struct rs_tok_ids ids;
	uint64_t	 seed = 0x5eed2026ULL;
	char		 buf[512 * 4];
	const char	*text;
	size_t		 n;

	toks[0] = t_tok_load(T_TINY, RS_TOK_NORM_NFC);
	toks[1] = t_tok_load(T_TINY, RS_TOK_NORM_NONE);
	toks[2] = t_tok_load(T_QWEN3, RS_TOK_NORM_DEFAULT);
	ck_assert_int_eq(rs_tok_meta(toks[1])->nfc, 0);
	ck_assert_int_eq(rs_tok_meta(toks[2])->nfc, 1);	/* qwen2 default */
	rs_tok_ids_init(&ids);
	cases = rs_json_get(j, "cases");
	for (size_t i = 0; i < rs_json_arr_len(cases); i++) {
		text = t_json_str(rs_json_arr_at(cases, i), "text", &n);
		for (int t = 0; t < 3; t++)
			assert_round_trip(toks[t], text, n, &ids, "case", i);
	}
	for (size_t i = 0; i < 600; i++) {
		n = rnd_utf8(&seed, buf);
		for (int t = 0; t < 3; t++)
			assert_round_trip(toks[t], buf, n, &ids, "random", i);
	}
	printf("tok: round trip holds for %zu cases and 600 random strings "
	    "(seed 0x5eed2026), 3 tokenizers\n", rs_json_arr_len(cases));
	rs_tok_ids_cleanup(&ids);
	rs_json_free(j);
	for (int t = 0; t < 3; t++)
		rs_tok_free(toks[t]);
}
END_TEST

/* ---- streaming ---- */

/* Random id sequences: pieces of partial characters, controls, padding. */
START_TEST(stream_random)
{
	struct rs_tok	*tok = t_tok_load(T_QWEN3, RS_TOK_NORM_DEFAULT);
	struct rs_tok_ids ids;
	uint64_t	 seed = 0xdec0de;
	int32_t		 nv = rs_tok_meta(tok)->n_vocab;
	char		*dec;
	size_t		 dn;

	rs_tok_ids_init(&ids);
	ck_assert(ids.v = malloc(64 * sizeof(int32_t)));
	ids.cap = 64;
	for (int i = 0; i < 2000; i++) {
		unsigned flags = i % 2 ? RS_TOK_DEC_SPECIAL : 0;

		ids.n = rnd(&seed) % 64;
		for (size_t k = 0; k < ids.n; k++) {
			/* ids >= 0x80 of byte-level vocabularies are often
			   partial characters: draw them more often */
			ids.v[k] = (int32_t)(rnd(&seed) % 4 ? rnd(&seed) % 400 :
			    rnd(&seed) % (uint64_t)nv);
		}
		dec = t_tok_decode(tok, &ids, flags, &dn);
		ck_assert_msg(t_utf8proc_valid(dec, dn), "decode gave invalid "
		    "UTF-8");
		t_tok_assert_stream(tok, &ids, flags, dec, dn);
		free(dec);
	}
	rs_tok_ids_cleanup(&ids);
	rs_tok_free(tok);
}
END_TEST

/* serving.md §1.8: the llama emoji spans three tokens; nothing partial. */
START_TEST(stream_emoji)
{
	struct rs_tok	*tok = t_tok_load(T_QWEN3, RS_TOK_NORM_DEFAULT);
	struct rs_detok	 d;
	struct rs_tok_ids ids;
	const char	*text = " this is \xf0\x9f\xa6\x99.cpp";
	char		 out[4096];
	size_t		 k, sizes[32];

	rs_tok_ids_init(&ids);
	t_tok_encode(tok, text, strlen(text), RS_TOK_SPECIAL_ALL, &ids);
	ck_assert_uint_lt(ids.n, 32);
	rs_detok_init(&d, tok, 0);
	for (size_t i = 0; i < ids.n; i++) {
		ck_assert(rs_detok_feed(&d, ids.v[i], out, sizeof(out), &k,
		    NULL) == RS_OK);
		sizes[i] = k;
		if (memmem(out, k, "\xf0\x9f\xa6\x99", 4) != NULL)
			ck_assert(i >= 2 && sizes[i - 1] == 0);
	}
	ck_assert_uint_eq(rs_detok_flush(&d, out), 0);
	rs_tok_ids_cleanup(&ids);
	rs_tok_free(tok);
}
END_TEST

/* ---- facts read from the GGUF ---- */

START_TEST(meta_tiny)
{
	struct rs_tok	*tok = t_tok_load(T_TINY, RS_TOK_NORM_DEFAULT);
	const struct rs_tok_meta *m = rs_tok_meta(tok);
	size_t		 n;
	const char	*p;

	ck_assert_str_eq(m->pre, "qwen35");
	ck_assert_int_eq(m->nfc, 1);		/* qwen35 default */
	ck_assert_int_eq(m->n_vocab, 2176);
	ck_assert_int_eq(m->n_merges, 1792);
	ck_assert_int_eq(m->n_added, 9);
	ck_assert_int_eq(m->eos, 2050);
	ck_assert_int_eq(m->pad, 2048);
	ck_assert_int_eq(m->bos, -1);
	ck_assert_int_eq(m->add_bos, 0);
	ck_assert_int_eq(rs_tok_check_chat(tok, NULL), RS_OK);
	ck_assert(rs_tok_is_eog(tok, 2050) && rs_tok_is_eog(tok, 2048));
	ck_assert(!rs_tok_is_eog(tok, 2049) && !rs_tok_is_eog(tok, 2051));
	ck_assert(!rs_tok_is_eog(tok, -1) && !rs_tok_is_eog(tok, 2176));
	ck_assert_int_eq(rs_tok_find(tok, "<think>", 7), 2051);
	ck_assert_int_eq(rs_tok_find(tok, "<|im_end|>", 10), 2050);
	ck_assert_int_eq(rs_tok_find(tok, "!", 1), 0);
	ck_assert_int_eq(rs_tok_find(tok, "<nope>", 6), -1);
	ck_assert_int_eq(rs_tok_type(tok, 2050), RS_TOK_CONTROL);
	ck_assert_int_eq(rs_tok_type(tok, 2051), RS_TOK_USER_DEFINED);
	ck_assert_int_eq(rs_tok_type(tok, 2100), RS_TOK_UNUSED);
	ck_assert_int_eq(rs_tok_type(tok, 5000), 0);
	/* CONTROL text only on request; padding decodes to nothing */
	p = rs_tok_piece(tok, 2050, 0, &n);
	ck_assert(p != NULL && n == 0);
	p = rs_tok_piece(tok, 2050, RS_TOK_DEC_SPECIAL, &n);
	ck_assert(n == 10 && memcmp(p, "<|im_end|>", 10) == 0);
	p = rs_tok_piece(tok, 2051, 0, &n);
	ck_assert(n == 7 && memcmp(p, "<think>", 7) == 0);
	ck_assert(rs_tok_piece(tok, 2100, RS_TOK_DEC_SPECIAL, &n) != NULL &&
	    n == 0);
	ck_assert(rs_tok_piece(tok, 2176, 0, &n) == NULL);
	ck_assert(strstr(rs_tok_lib_versions(), "pcre2") != NULL);
	ck_assert(strstr(rs_tok_lib_versions(), "utf8proc") != NULL);
	rs_tok_free(tok);
}
END_TEST

START_TEST(meta_qwen3)
{
	struct rs_tok	*tok = t_tok_load(T_QWEN3, RS_TOK_NORM_DEFAULT);
	const struct rs_tok_meta *m = rs_tok_meta(tok);

	ck_assert_str_eq(m->pre, "qwen2");
	ck_assert_int_eq(m->n_vocab, 151936);
	ck_assert_int_eq(m->n_merges, 151387);
	ck_assert_int_eq(m->n_added, 26);
	ck_assert_int_eq(m->eos, 151645);
	ck_assert_int_eq(m->pad, 151643);
	ck_assert_int_eq(rs_tok_check_chat(tok, NULL), RS_OK);
	/* EOG by text: <|fim_pad|>, <|repo_name|>, <|file_sep|> */
	for (int32_t id = 151643; id <= 151668; id++)
		ck_assert_int_eq(rs_tok_is_eog(tok, id), id == 151643 ||
		    id == 151645 || id == 151662 || id == 151663 ||
		    id == 151664);
	rs_tok_free(tok);
}
END_TEST

/* ---- added tokens ---- */

START_TEST(special_modes)
{
	struct rs_tok	*tok = t_tok_load(T_TINY, RS_TOK_NORM_NFC);
	struct rs_tok_ids all, user, none, plain;
	const char	*s = "<|im_start|>a<think>b</think><|im_end|>";
	char		*dec;
	size_t		 dn, k = 0;

	rs_tok_ids_init(&all);
	rs_tok_ids_init(&user);
	rs_tok_ids_init(&none);
	rs_tok_ids_init(&plain);
	t_tok_encode(tok, s, strlen(s), RS_TOK_SPECIAL_ALL, &all);
	t_tok_encode(tok, s, strlen(s), RS_TOK_SPECIAL_USER, &user);
	t_tok_encode(tok, s, strlen(s), RS_TOK_SPECIAL_NONE, &none);
	/* ALL: six tokens, ids from the GGUF (a = 64, b = 65) */
	ck_assert_uint_eq(all.n, 6);
	ck_assert(all.v[0] == 2049 && all.v[2] == 2051 && all.v[4] == 2052 &&
	    all.v[5] == 2050);
	/* USER: <think> and </think> only; NONE: none at all */
	for (size_t i = 0; i < user.n; i++)
		ck_assert(user.v[i] != 2049 && user.v[i] != 2050);
	for (size_t i = 0; i < user.n; i++)
		k += user.v[i] == 2051 || user.v[i] == 2052;
	ck_assert_uint_eq(k, 2);
	for (size_t i = 0; i < none.n; i++)
		ck_assert(none.v[i] < 2048);
	/* NONE is plain BPE of the text: equal to encoding it piecewise */
	t_tok_encode(tok, "<|", 2, RS_TOK_SPECIAL_NONE, &plain);
	ck_assert_int_eq(none.v[0], plain.v[0]);
	/* decoding without RS_TOK_DEC_SPECIAL drops CONTROL only */
	dec = t_tok_decode(tok, &all, 0, &dn);
	ck_assert_str_eq(dec, "a<think>b</think>");
	free(dec);
	dec = t_tok_decode(tok, &none, 0, &dn);
	ck_assert_str_eq(dec, s);
	free(dec);
	rs_tok_ids_cleanup(&all);
	rs_tok_ids_cleanup(&user);
	rs_tok_ids_cleanup(&none);
	rs_tok_ids_cleanup(&plain);
	rs_tok_free(tok);
}
END_TEST

/* ---- synthetic vocabularies: BPE order and load errors ---- */

/* Encode ASCII S with a synthetic tokenizer and compare with WANT. */
static void
assert_bpe(const char **extra, size_t n_extra, const char **merges,
    size_t n_merges, const char *s, const int32_t *want, size_t wn)
{
	struct t_synth	 sy = { .drop_byte = -1, .extra = extra,
	    .n_extra = n_extra, .merges = merges, .n_merges = n_merges,
	    .eos = -1 };
	struct rs_tok	*tok = NULL;
	struct rs_err	 err = { 0 };
	struct rs_tok_ids got, w = { (int32_t *)want, wn, wn };

	ck_assert_msg(t_synth_tok(&sy, &tok, &err) == RS_OK, "%s", err.msg);
	rs_tok_ids_init(&got);
	t_tok_encode(tok, s, strlen(s), RS_TOK_SPECIAL_ALL, &got);
	t_tok_assert_ids(&got, &w, s, n_merges);
	rs_tok_ids_cleanup(&got);
	rs_tok_free(tok);
}

/*
 * serving.md §1.6 worked by hand.  Byte tokens have their byte as id
 * ('a' = 97); extra tokens follow from 256.
 */
START_TEST(bpe_order)
{
	const char *aa[] = { "aa" }, *m_aa[] = { "a a" };
	const char *x2[] = { "bc", "ab" };
	const char *m_bc_ab[] = { "b c", "a b" }, *m_ab_bc[] = { "a b", "b c" };
	const char *x4[] = { "cd", "bc", "ab", "abcd" };
	const char *m4[] = { "c d", "b c", "a b", "ab cd" };

	/* one merge, repeated pair: leftmost first, then re-evaluate */
	assert_bpe(aa, 1, m_aa, 1, "aaa", (const int32_t[]){ 256, 97 }, 2);
	assert_bpe(aa, 1, m_aa, 1, "aaaa", (const int32_t[]){ 256, 256 }, 2);
	assert_bpe(aa, 1, m_aa, 1, "aaaaa",
	    (const int32_t[]){ 256, 256, 97 }, 3);
	/* rank decides, not position */
	assert_bpe(x2, 2, m_bc_ab, 2, "abc", (const int32_t[]){ 97, 256 }, 2);
	assert_bpe(x2, 2, m_ab_bc, 2, "abc", (const int32_t[]){ 257, 99 }, 2);
	/* cd (rank 0), then ab (2: bc is gone), then ab+cd (3) */
	assert_bpe(x4, 4, m4, 4, "abcd", (const int32_t[]){ 259 }, 1);
	assert_bpe(x4, 4, m4, 4, "abcdbc",
	    (const int32_t[]){ 259, 257 }, 2);
	/* words do not merge across the pre-tokenizer split: "a" " a" */
	assert_bpe(aa, 1, m_aa, 1, "a a", (const int32_t[]){ 97, 32, 97 }, 3);
}
END_TEST

START_TEST(added_longest)
{
	const char *x[] = { "<s>", "<s>x", "<|c|>" };
	const int   t[] = { RS_TOK_USER_DEFINED, RS_TOK_CONTROL,
	    RS_TOK_USER_DEFINED };
	struct t_synth sy = { .drop_byte = -1, .extra = x, .etypes = t,
	    .n_extra = 3, .eos = 258 };
	struct rs_tok	*tok = NULL;
	struct rs_err	 err = { 0 };
	struct rs_tok_ids ids;

	ck_assert_msg(t_synth_tok(&sy, &tok, &err) == RS_OK, "%s", err.msg);
	rs_tok_ids_init(&ids);
	/* leftmost-longest: "<s>x" wins over "<s>" when CONTROL may match */
	t_tok_encode(tok, "<s>xy<s>", 8, RS_TOK_SPECIAL_ALL, &ids);
	ck_assert(ids.n == 3 && ids.v[0] == 257 && ids.v[1] == 'y' &&
	    ids.v[2] == 256);
	t_tok_encode(tok, "<s>xy<s>", 8, RS_TOK_SPECIAL_USER, &ids);
	ck_assert(ids.n == 4 && ids.v[0] == 256 && ids.v[1] == 'x' &&
	    ids.v[2] == 'y' && ids.v[3] == 256);
	/* a USER_DEFINED "<|...|>" counts as CONTROL (llama.cpp) */
	ck_assert_int_eq(rs_tok_type(tok, 258), RS_TOK_CONTROL);
	t_tok_encode(tok, "<|c|>", 5, RS_TOK_SPECIAL_USER, &ids);
	ck_assert_uint_eq(ids.n, 5);
	ck_assert(rs_tok_is_eog(tok, 258));
	rs_tok_ids_cleanup(&ids);
	rs_tok_free(tok);
}
END_TEST

/* One broken synthetic GGUF: status ST and KEYWORD in the message. */
static void
assert_load_fails(const struct t_synth *s, enum rs_status st,
    const char *keyword)
{
	struct rs_tok	*tok = NULL;
	struct rs_err	 err = { 0 };

	ck_assert_int_eq(t_synth_tok(s, &tok, &err), st);
	ck_assert(tok == NULL);
	ck_assert_msg(strstr(err.msg, keyword) != NULL,
	    "message '%s' lacks '%s'", err.msg, keyword);
}

START_TEST(bad_vocab)
{
	const char *cjk[] = { "\xe4\xb8\x80" }, *ok[] = { "ab" };
	const char *nosp[] = { "ab" }, *unk[] = { "a q?" }, *nores[] = { "b a" };
	const char *byte[] = { "<0xZZ>" };
	const int   bt[] = { RS_TOK_BYTE };
	struct t_synth s;

#define BASE	(struct t_synth){ .drop_byte = -1, .eos = -1 }
	s = BASE;
	s.model = "llama";
	assert_load_fails(&s, RS_ERR_UNSUPPORTED, "gpt2");
	s = BASE;
	s.pre = "llama3";
	assert_load_fails(&s, RS_ERR_UNSUPPORTED, "qwen35");
	/* the file's string quoted safely: a control byte as \xHH */
	s = BASE;
	s.pre = "qw\x01" "en";
	assert_load_fails(&s, RS_ERR_UNSUPPORTED, "'qw\\x01en'");
	s = BASE;
	s.no_tokens = 1;
	assert_load_fails(&s, RS_ERR_FORMAT, "missing key");
	s = BASE;
	s.short_types = 1;
	assert_load_fails(&s, RS_ERR_FORMAT, "token_type");
	s = BASE;
	s.extra = cjk;
	s.n_extra = 1;
	assert_load_fails(&s, RS_ERR_FORMAT, "byte-level alphabet");
	s = BASE;
	s.extra = byte;
	s.etypes = bt;
	s.n_extra = 1;
	assert_load_fails(&s, RS_ERR_FORMAT, "<0xXX>");
	s = BASE;
	s.drop_byte = 'A';
	assert_load_fails(&s, RS_ERR_FORMAT, "byte 0x41");
	s = BASE;
	s.extra = ok;
	s.n_extra = 1;
	s.merges = nosp;
	s.n_merges = 1;
	assert_load_fails(&s, RS_ERR_FORMAT, "separator");
	s.merges = unk;
	assert_load_fails(&s, RS_ERR_FORMAT, "right side");
	s.merges = nores;
	assert_load_fails(&s, RS_ERR_FORMAT, "merged token");
	s = BASE;
	s.eos = 256;
	assert_load_fails(&s, RS_ERR_FORMAT, "eos_token_id");
#undef BASE
}
END_TEST

/* ---- invalid input ---- */

START_TEST(bad_text)
{
	static const char *const pairs[][2] = {
		{ "a\xff" "b", "a\xef\xbf\xbd" "b" },
		{ "x\xe2\x82", "x\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xc0\xaf<think>", "\xef\xbf\xbd\xef\xbf\xbd<think>" },
		{ "s\xed\xa0\x80", "s\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\x80\x80 hi", "\xef\xbf\xbd\xef\xbf\xbd hi" },
	};
	struct rs_tok	*tok = t_tok_load(T_TINY, RS_TOK_NORM_NFC);
	struct rs_tok_ids got, want;
	struct rs_err	 err = { 0 };
	char		*dec;
	size_t		 dn;

	rs_tok_ids_init(&got);
	rs_tok_ids_init(&want);
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		t_tok_encode(tok, pairs[i][0], strlen(pairs[i][0]),
		    RS_TOK_SPECIAL_ALL, &got);
		t_tok_encode(tok, pairs[i][1], strlen(pairs[i][1]),
		    RS_TOK_SPECIAL_ALL, &want);
		t_tok_assert_ids(&got, &want, "invalid text", i);
	}
	/* NUL bytes are text */
	t_tok_encode(tok, "a\0b", 3, RS_TOK_SPECIAL_ALL, &got);
	dec = t_tok_decode(tok, &got, 0, &dn);
	ck_assert(got.n == 3 && dn == 3 && memcmp(dec, "a\0b", 3) == 0);
	free(dec);
	/* empty text is no tokens; encode appends */
	t_tok_encode(tok, "", 0, RS_TOK_SPECIAL_ALL, &got);
	ck_assert_uint_eq(got.n, 0);
	ck_assert(rs_tok_encode(tok, "a", 1, RS_TOK_SPECIAL_ALL, &got,
	    NULL) == RS_OK && got.n == 1);
	ck_assert(rs_tok_encode(tok, "b", 1, RS_TOK_SPECIAL_ALL, &got,
	    NULL) == RS_OK && got.n == 2);
	ck_assert_int_eq(rs_tok_encode(tok, "a", 1, (enum rs_tok_special)7,
	    &got, &err), RS_ERR_INVALID_ARG);
	ck_assert_uint_eq(got.n, 2);
	rs_tok_ids_cleanup(&got);
	rs_tok_ids_cleanup(&want);
	rs_tok_free(tok);
}
END_TEST

START_TEST(bad_ids)
{
	struct rs_tok	*tok = t_tok_load(T_TINY, RS_TOK_NORM_NONE);
	struct rs_detok	 d;
	struct rs_err	 err = { 0 };
	int32_t		 ids[] = { 39, -1 }, big[] = { 2176 };
	char		*text = NULL, out[64], small[2];
	size_t		 n = 0, k;

	ck_assert_int_eq(rs_tok_decode(tok, ids, 2, 0, &text, &n, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert(text == NULL && strstr(err.msg, "ids[1] = -1") != NULL);
	ck_assert_int_eq(rs_tok_decode(tok, big, 1, 0, &text, &n, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "outside the vocabulary") != NULL);
	/* a failed feed leaves the stream as it was: 0xC3 0xA9 = é */
	rs_detok_init(&d, tok, 0);
	ck_assert(rs_detok_feed(&d, 127, out, sizeof(out), &k, NULL) ==
	    RS_OK && k == 0);		/* Ã = byte 0xC3: held back */
	ck_assert_int_eq(rs_detok_feed(&d, 4000, out, sizeof(out), &k, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "id 4000") != NULL);
	ck_assert_int_eq(rs_detok_feed(&d, 102, small, sizeof(small), &k,
	    &err), RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "output room") != NULL);
	ck_assert(rs_detok_feed(&d, 102, out, sizeof(out), &k, NULL) ==
	    RS_OK && k == 2 && memcmp(out, "\xc3\xa9", 2) == 0);
	/* a held byte left at the end becomes U+FFFD */
	ck_assert(rs_detok_feed(&d, 127, out, sizeof(out), &k, NULL) == RS_OK);
	ck_assert(rs_detok_flush(&d, out) == 3 &&
	    memcmp(out, RS_UTF8_REPL, 3) == 0);
	ck_assert_uint_eq(rs_detok_flush(&d, out), 0);
	rs_tok_free(tok);
}
END_TEST

/* ---- speed (printed; bounds generous for slow or sanitized CI) ---- */

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED	1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED	1
#endif
#endif
#ifdef SANITIZED
#define MIN_MB_S	0.25
#define MAX_256K_S	20.0
#else
#define MIN_MB_S	2.0	/* target 5 MB/s on one core; CI margin */
#define MAX_256K_S	2.0	/* target well under 1 s */
#endif

static double
cpu_s(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ((double)ts.tv_sec + (double)ts.tv_nsec * 1e-9);
}

/* WANT bytes of C source: lib/ (sorted) repeated (run from the repo). */
static char *
source_text(size_t want)
{
	glob_t	 gl;
	char	*buf = malloc(want), *f;
	size_t	 n = 0, k;

	ck_assert_msg(glob("lib/*/*.[ch]", 0, NULL, &gl) == 0 &&
	    gl.gl_pathc > 0, "speed test: no lib/*/*.[ch] (run from the repo "
	    "root)");
	ck_assert(buf != NULL);
	for (size_t i = 0; n < want; i = (i + 1) % gl.gl_pathc) {
		f = t_read_file(gl.gl_pathv[i], &k);
		k = k < want - n ? k : want - n;
		memcpy(buf + n, f, k);
		n += k;
		free(f);
	}
	globfree(&gl);
	return (buf);
}

/* Encode N bytes at S; return CPU seconds, print the speed. */
static double
timed_encode(const struct rs_tok *tok, const char *name, const char *s,
    size_t n, struct rs_tok_ids *ids)
{
	struct timespec	w0, w1;
	double		c0, c;

	clock_gettime(CLOCK_MONOTONIC, &w0);
	c0 = cpu_s();
	t_tok_encode(tok, s, n, RS_TOK_SPECIAL_ALL, ids);
	c = cpu_s() - c0;
	clock_gettime(CLOCK_MONOTONIC, &w1);
	printf("tok: speed: %-11s %8zu bytes -> %7zu tokens in %.3f s cpu "
	    "(%.3f s wall): %.1f MB/s\n", name, n, ids->n, c,
	    (double)(w1.tv_sec - w0.tv_sec) +
	    (double)(w1.tv_nsec - w0.tv_nsec) * 1e-9, (double)n / c / 1e6);
	return (c);
}

START_TEST(speed)
{
	const char	*rels[] = { T_TINY, T_QWEN3, T_QWEN35 };
	const char	*names[] = { "tiny", "qwen3", "qwen35" };
	size_t		 mib = 1 << 20, n256;
	struct rs_tok_ids ids;
	char		*src = source_text(mib), *big, label[32];
	double		 c;

	rs_tok_ids_init(&ids);
	for (int v = 0; v < 3; v++) {
		struct rs_tok *tok = t_tok_load(rels[v], RS_TOK_NORM_DEFAULT);

		c = timed_encode(tok, names[v], src, mib, &ids);
		ck_assert_msg((double)mib / c / 1e6 >= MIN_MB_S,
		    "%s: %.2f MB/s, want >= %.2f", names[v],
		    (double)mib / c / 1e6, MIN_MB_S);
		if (v == 0) {
			rs_tok_free(tok);
			continue;
		}
		/* a 256K-token prompt: enough source at this vocabulary's
		   bytes per token, plus 5% */
		n256 = (size_t)((double)mib / (double)ids.n * 262144 * 1.05);
		big = source_text(n256);
		snprintf(label, sizeof(label), "%s 256K", names[v]);
		c = timed_encode(tok, label, big, n256, &ids);
		ck_assert_uint_ge(ids.n, 262144);
		ck_assert_msg(c <= MAX_256K_S, "%s: 256K tokens in %.2f s",
		    names[v], c);
		free(big);
		rs_tok_free(tok);
	}
	rs_tok_ids_cleanup(&ids);
	free(src);
}
END_TEST

/* ---- NFC in linear time (rs_nfc.h) ---- */

#ifdef SANITIZED
#define MAX_NFC_S	20.0
#else
#define MAX_NFC_S	2.0	/* ~0.003 s here; utf8proc_map: minutes */
#endif

/*
 * A random valid UTF-8 string of up to 64 pieces into BUF (room 8,192):
 * starters that compose (Latin, Greek, Hangul L / V / T jamo and
 * syllables), runs of 1-24 marks drawn from classes 1..240 (and the Tibetan
 * vowels and U+0344 that decompose into marks), where canonical ordering
 * has the most to do.
 */
static size_t
rnd_marks(uint64_t *s, char *buf)
{
	static const uint32_t starters[] = {
		'a', 'e', 'o', 'u', 'A', 0x3b1, 0x3c9, 0x1100, 0x1161, 0x11a8,
		0xac00, 0x0b47, 0x0b3e, 0x1e69, 0x212b, 0x0f40,
	};
	static const uint32_t marks[] = {
		0x0301, 0x0300, 0x0316, 0x0323, 0x0334, 0x0345, 0x0308, 0x0327,
		0x05b0, 0x05bc, 0x0f71, 0x0f72, 0x0f74, 0x0f73, 0x0f75, 0x0344,
		0x302a, 0x0e48, 0x1dce, 0x0338,
	};
	size_t	n = 0, pieces = rnd(s) % 65;

	for (size_t i = 0; i < pieces; i++) {
		if (rnd(s) % 3 == 0) {
			n += (size_t)rs_utf8_put(starters[rnd(s) % (sizeof(
			    starters) / sizeof(starters[0]))], buf + n);
			continue;
		}
		for (size_t k = 1 + rnd(s) % 24; k > 0; k--)
			n += (size_t)rs_utf8_put(marks[rnd(s) % (sizeof(marks) /
			    sizeof(marks[0]))], buf + n);
	}
	buf[n] = '\0';
	return (n);
}

/* rs_nfc_map(S) == utf8proc_map(S, NFC): the same bytes. */
static void
assert_nfc_as_utf8proc(const char *s, size_t n, size_t k)
{
	utf8proc_uint8_t *want;
	uint8_t		 *got;
	utf8proc_ssize_t  wn;
	long		  gn;

	wn = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n,
	    &want, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
	gn = rs_nfc_map(s, n, &got);
	ck_assert_msg(wn >= 0 && gn == (long)wn && memcmp(got, want,
	    (size_t)wn) == 0, "string %zu: rs_nfc_map differs from "
	    "utf8proc_map (%ld against %ld bytes)", k, gn, (long)wn);
	free(want);
	free(got);
}

START_TEST(nfc_linear)
{
	enum { RUN = 200000 };
	uint64_t	 seed = 0x0ccc2026ULL;
	char		 buf[2048 * 4];
	char		*big = malloc(1 + 4 * (size_t)RUN), *want;
	uint8_t		*got;
	size_t		 n = 0, wn = 0;
	long		 gn;
	double		 c;

	/* the same bytes as utf8proc on runs of marks of every kind */
	for (size_t i = 0; i < 3000; i++) {
		n = rnd_marks(&seed, buf);
		assert_nfc_as_utf8proc(buf, n, i);
	}
	/*
	 * "a", then RUN marks of classes 230 (U+0301) and 220 (U+0316) in
	 * turn, which swapping neighbours sorts in time RUN^2.  By the
	 * rules: the 220s first (stable), then the 230s; the first 230 is
	 * not blocked (220 < 230) and composes with "a" into U+00E1.
	 */
	ck_assert(big != NULL && (want = malloc(4 * (size_t)RUN)) != NULL);
	n = 0;
	big[n++] = 'a';
	for (int i = 0; i < RUN / 2; i++) {
		n += (size_t)rs_utf8_put(0x0301, big + n);
		n += (size_t)rs_utf8_put(0x0316, big + n);
	}
	wn += (size_t)rs_utf8_put(0xe1, want + wn);
	for (int i = 0; i < RUN / 2; i++)
		wn += (size_t)rs_utf8_put(0x0316, want + wn);
	for (int i = 1; i < RUN / 2; i++)
		wn += (size_t)rs_utf8_put(0x0301, want + wn);
	c = cpu_s();
	gn = rs_nfc_map(big, n, &got);
	c = cpu_s() - c;
	ck_assert_msg(gn == (long)wn && memcmp(got, want, wn) == 0,
	    "a run of %d alternating marks: not in canonical order", RUN);
	ck_assert_msg(c <= MAX_NFC_S, "NFC of %d alternating marks: %.2f s",
	    RUN, c);
	printf("tok: NFC same as utf8proc on 3000 random runs of marks; %d "
	    "alternating marks in %.3f s cpu\n", RUN, c);
	/* a shorter run (2,000 pairs of 2-byte marks) against utf8proc
	   itself, which is quadratic */
	assert_nfc_as_utf8proc(big, 1 + 2000 * 4, 0);
	free(got);
	free(want);
	free(big);
}
END_TEST

Suite *
tok_suite(void)
{
	Suite	*s = suite_create("tok");
	TCase	*tc;

	tc = tcase_create("cases");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, cases_tiny);
	tcase_add_test(tc, cases_qwen3);
	suite_add_tcase(s, tc);

	tc = tcase_create("pretok");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, byte_map);
	tcase_add_test(tc, vectors_split);
	suite_add_tcase(s, tc);

	tc = tcase_create("roundtrip");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, round_trip);
	suite_add_tcase(s, tc);

	tc = tcase_create("stream");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, stream_random);
	tcase_add_test(tc, stream_emoji);
	suite_add_tcase(s, tc);

	tc = tcase_create("meta");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, meta_tiny);
	tcase_add_test(tc, meta_qwen3);
	tcase_add_test(tc, special_modes);
	suite_add_tcase(s, tc);

	tc = tcase_create("bpe");
	tcase_add_test(tc, bpe_order);
	tcase_add_test(tc, added_longest);
	suite_add_tcase(s, tc);

	tc = tcase_create("bad_input");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, bad_vocab);
	tcase_add_test(tc, bad_text);
	tcase_add_test(tc, bad_ids);
	suite_add_tcase(s, tc);

	tc = tcase_create("speed");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, speed);
	suite_add_tcase(s, tc);

	tc = tcase_create("nfc");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, nfc_linear);
	suite_add_tcase(s, tc);

	return (s);
}
