/*
 * check_gguf.c - the GGUF reader against the fixture files and against
 * damaged copies of them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "rs_gguf.h"
#include "rs_gguf_write.h"
#include "rs_model.h"
#include "rs_time.h"
#include "rs_types.h"
#include "t_util.h"

START_TEST(header_tiny)
{
	struct rs_gguf	*g = NULL;
	struct rs_err	 err = { 0 };
	struct rs_gguf_str s;
	uint32_t	 v = 0;

	ck_assert_int_eq(rs_gguf_open(&g, t_fixture("tiny/model-q4_k_m.gguf"),
	    &err), RS_OK);
	ck_assert_uint_eq(rs_gguf_version(g), 3);
	ck_assert_int_eq(rs_gguf_n_tensors(g), 71);
	ck_assert_int_eq(rs_gguf_n_kv(g), 33);
	ck_assert_int_eq(rs_gguf_get_str(g, "general.architecture", &s, &err),
	    RS_OK);
	ck_assert(s.len == 6 && memcmp(s.ptr, "qwen35", 6) == 0);
	ck_assert_int_eq(rs_gguf_get_u32(g, "qwen35.block_count", &v, &err),
	    RS_OK);
	ck_assert_uint_eq(v, 5);
	const struct rs_gguf_kv *toks = rs_gguf_find_kv(g,
	    "tokenizer.ggml.tokens");
	ck_assert(toks != NULL && toks->arr_type == RS_GGUF_STRING);
	ck_assert_uint_eq(toks->arr_len, 2176);
	ck_assert(toks->strs[0].len == 1 && toks->strs[0].ptr[0] == '!');
	rs_gguf_close(g);
}
END_TEST

START_TEST(tensors_tiny)
{
	struct rs_gguf	*g = NULL;
	struct rs_err	 err = { 0 };
	int		 count[RS_TYPE_COUNT] = { 0 };

	ck_assert_int_eq(rs_gguf_open(&g, t_fixture("tiny/model-q4_k_m.gguf"),
	    &err), RS_OK);
	for (int64_t i = 0; i < rs_gguf_n_tensors(g); i++)
		count[rs_gguf_tensor(g, i)->type]++;
	/* the numbers: 36 Q4_K, 5 Q6_K, 30 F32 */
	ck_assert_int_eq(count[RS_TYPE_Q4_K], 36);
	ck_assert_int_eq(count[RS_TYPE_Q6_K], 5);
	ck_assert_int_eq(count[RS_TYPE_F32], 30);
	const struct rs_gguf_tensor *t = rs_gguf_find_tensor(g,
	    "blk.0.attn_qkv.weight");
	ck_assert(t != NULL);
	ck_assert_int_eq(t->ne[0], 256);
	ck_assert_int_eq(t->ne[1], 1280);
	ck_assert_uint_eq(t->nbytes, 1280 * 144);
	ck_assert_uint_eq(t->offset, 882944);
	rs_gguf_close(g);
}
END_TEST

/* ---- damaged copies ---- */

/* The fixture bytes, a private copy each test may corrupt. */
static unsigned char *
load_tiny(size_t *n)
{
	return (t_read_file(t_fixture("tiny/model-q4_k_m.gguf"), n));
}

/* Offset of the first occurrence of the GGUF string S (length + bytes). */
static size_t
find_gguf_str(const unsigned char *buf, size_t n, const char *s)
{
	size_t	 len = strlen(s);
	uint64_t l64 = len;

	for (size_t i = 0; i + 8 + len <= n; i++)
		if (memcmp(buf + i, &l64, 8) == 0 &&
		    memcmp(buf + i + 8, s, len) == 0)
			return (i);
	ck_abort_msg("string '%s' not found in fixture", s);
	return (0);
}

/* Parse N bytes of BUF and expect status ST with KEYWORD in the message. */
static void
expect_fail(const unsigned char *buf, size_t n, enum rs_status st,
    const char *keyword)
{
	struct rs_gguf	*g = NULL;
	struct rs_err	 err = { 0 };

	ck_assert_int_eq(rs_gguf_open_mem(&g, buf, n, &err), st);
	ck_assert_msg(strstr(err.msg, keyword) != NULL,
	    "message '%s' lacks '%s'", err.msg, keyword);
	ck_assert(g == NULL);
}

/*
 * Every prefix of the header, and a sample of prefixes of the data, must
 * be rejected cleanly (ASan builds check that nothing is read past N).
 */
START_TEST(truncated)
{
	size_t		 n, hdr;
	unsigned char	*buf = load_tiny(&n);
	struct rs_gguf	*g;
	struct rs_err	 err;

	ck_assert_int_eq(rs_gguf_open_mem(&g, buf, n, &err), RS_OK);
	hdr = rs_gguf_data_offset(g);
	rs_gguf_close(g);
	for (size_t k = 0; k < n; k += k < hdr ? 1 : 4099) {
		unsigned char *cut = malloc(k ? k : 1);
		memcpy(cut, buf, k);
		g = NULL;
		ck_assert_msg(rs_gguf_open_mem(&g, cut, k, &err) != RS_OK,
		    "prefix of %zu bytes accepted", k);
		ck_assert(g == NULL);
		ck_assert(err.msg[0] != '\0');
		free(cut);
	}
	/* the last tensor ends exactly at EOF: one byte less must fail */
	expect_fail(buf, n - 1, RS_ERR_FORMAT, "past the end");
	free(buf);
}
END_TEST

START_TEST(bad_magic_version)
{
	size_t		 n;
	unsigned char	*buf = load_tiny(&n);

	buf[0] = 'X';
	expect_fail(buf, n, RS_ERR_FORMAT, "magic");
	buf[0] = 'G';
	buf[4] = 1;
	expect_fail(buf, n, RS_ERR_UNSUPPORTED, "version 1");
	buf[4] = 3;
	/* n_tensors far beyond what the file can hold */
	uint64_t huge = (uint64_t)1 << 60;
	memcpy(buf + 8, &huge, 8);
	expect_fail(buf, n, RS_ERR_FORMAT, "n_tensors");
	free(buf);
}
END_TEST

START_TEST(huge_array)
{
	size_t		 n, at;
	unsigned char	*buf = load_tiny(&n);
	uint64_t	 huge = (uint64_t)1 << 62;

	/* key string, i32 type (array), i32 element type, u64 count */
	at = find_gguf_str(buf, n, "tokenizer.ggml.tokens");
	at += 8 + strlen("tokenizer.ggml.tokens") + 4 + 4;
	memcpy(buf + at, &huge, 8);
	expect_fail(buf, n, RS_ERR_FORMAT, "strings exceed");
	/* a string length past EOF */
	at = find_gguf_str(buf, n, "general.name") + 8 + 12 + 4;
	memcpy(buf + at, &huge, 8);
	huge = 2176;
	memcpy(buf + find_gguf_str(buf, n, "tokenizer.ggml.tokens") + 8 + 21 + 8,
	    &huge, 8);
	expect_fail(buf, n, RS_ERR_FORMAT, "exceeds");
	free(buf);
}
END_TEST

/* Offset of the offset field of tensor NAME's info record (2-D tensor). */
static size_t
tensor_off_field(const unsigned char *buf, size_t n, const char *name,
    int dims)
{
	return (find_gguf_str(buf, n, name) + 8 + strlen(name) + 4 +
	    8 * (size_t)dims + 4);
}

START_TEST(bad_tensor_info)
{
	size_t		 n, at;
	unsigned char	*buf = load_tiny(&n);
	uint64_t	 off, saved;
	int32_t		 type;

	at = tensor_off_field(buf, n, "output.weight", 2);
	memcpy(&saved, buf + at, 8);
	ck_assert_uint_eq(saved, 0);
	off = (uint64_t)n;			/* aligned, but past EOF */
	off = off / 32 * 32;
	memcpy(buf + at, &off, 8);
	expect_fail(buf, n, RS_ERR_FORMAT, "past the end");
	off = 0xffffffffffffffe0ULL;		/* would overflow an add */
	memcpy(buf + at, &off, 8);
	expect_fail(buf, n, RS_ERR_FORMAT, "past the end");
	off = 8;				/* misaligned */
	memcpy(buf + at, &off, 8);
	expect_fail(buf, n, RS_ERR_FORMAT, "alignment");
	off = 457984;				/* token_embd's offset */
	memcpy(buf + at, &off, 8);
	expect_fail(buf, n, RS_ERR_FORMAT, "overlap");
	memcpy(buf + at, &saved, 8);
	type = 77;				/* unknown ggml type */
	memcpy(buf + at - 4, &type, 4);
	expect_fail(buf, n, RS_ERR_UNSUPPORTED, "unknown ggml type 77");
	type = 14;
	memcpy(buf + at - 4, &type, 4);
	/* a dimension that makes the byte size overflow */
	int64_t big = (int64_t)1 << 62;
	memcpy(buf + at - 4 - 8, &big, 8);
	expect_fail(buf, n, RS_ERR_FORMAT, "overflow");
	free(buf);
}
END_TEST

START_TEST(duplicate_names)
{
	size_t		 n, a;
	unsigned char	*buf = load_tiny(&n);

	/* rename general.name to general.type: a duplicate key */
	a = find_gguf_str(buf, n, "general.name");
	memcpy(buf + a + 8, "general.typ", 11);
	memcpy(buf + a + 8 + 11, "e", 1);
	/* same length (12), so the layout is unchanged */
	expect_fail(buf, n, RS_ERR_FORMAT, "duplicate key 'general.type'");
	/* both renamed to a name with a control byte: quoted as \xHH
	   (rs_utf8_quote), not sent raw to the terminal */
	memcpy(buf + a + 8, "general\x01" "type", 12);
	a = find_gguf_str(buf, n, "general.type");
	memcpy(buf + a + 8, "general\x01" "type", 12);
	expect_fail(buf, n, RS_ERR_FORMAT, "duplicate key 'general\\x01type'");
	free(buf);
}
END_TEST

/*
 * A file of N u8 keys "k<i>" and N one-value F32 tensors "t<i>" (in a
 * shuffled order, so that sorting has work to do) into *LEN bytes; DUP:
 * key and tensor N - 1 repeat the names of the first ones.
 */
static unsigned char *
many_names(int n, int dup, size_t *len)
{
	size_t		 cap = 64 + (size_t)n * 64 + 32 + (size_t)n * 4, at = 0;
	unsigned char	*b = calloc(1, cap);
	char		 name[32];
	uint32_t	 u32;
	uint64_t	 u64;

#define PUT(p, k)	(memcpy(b + at, (p), (k)), at += (k))
	ck_assert(b != NULL);
	PUT("GGUF", 4);
	u32 = 3;
	PUT(&u32, 4);
	u64 = (uint64_t)n;
	PUT(&u64, 8);
	PUT(&u64, 8);
	for (int i = 0; i < n; i++) {
		const int k = dup && i == n - 1 ? 0 : (int)((i * 7919L) % n);

		u64 = (uint64_t)snprintf(name, sizeof(name), "k%d", k);
		PUT(&u64, 8);
		PUT(name, u64);
		u32 = 0;		/* u8 */
		PUT(&u32, 4);
		PUT("", 1);
	}
	for (int i = 0; i < n; i++) {
		const int k = dup && i == n - 1 ? 0 : (int)((i * 7919L) % n);

		u64 = (uint64_t)snprintf(name, sizeof(name), "t%d", k);
		PUT(&u64, 8);
		PUT(name, u64);
		u32 = 1;		/* n_dims */
		PUT(&u32, 4);
		u64 = 1;
		PUT(&u64, 8);
		u32 = 0;		/* F32 */
		PUT(&u32, 4);
		u64 = (uint64_t)i * 32;	/* each at its own aligned offset */
		PUT(&u64, 8);
	}
#undef PUT
	*len = (at + 31) / 32 * 32 + (size_t)n * 32;
	b = realloc(b, *len);
	ck_assert(b != NULL);
	memset(b + at, 0, *len - at);
	return (b);
}

/*
 * 200,000 keys and tensors open in well under a second (a scan per name
 * for duplicates and lookups took 36 s), and a repeated name among them
 * is still found.
 */
START_TEST(many_names_fast)
{
	const int	 n = 200000;
	struct rs_gguf	*g = NULL;
	struct rs_err	 err = { 0 };
	unsigned char	*buf;
	size_t		 len;
	double		 t0, t;

	buf = many_names(n, 0, &len);
	t0 = rs_time_ms();
	ck_assert_msg(rs_gguf_open_mem(&g, buf, len, &err) == RS_OK, "%s",
	    err.msg);
	ck_assert(rs_gguf_find_kv(g, "k199999") != NULL);
	ck_assert(rs_gguf_find_kv(g, "k200000") == NULL);
	ck_assert(rs_gguf_find_tensor(g, "t123456") != NULL);
	ck_assert(rs_gguf_find_tensor(g, "t-1") == NULL);
	t = (rs_time_ms() - t0) / 1e3;
	rs_gguf_close(g);
	free(buf);
	ck_assert_msg(t < 5.0, "opening %d keys and tensors took %.2f s", n,
	    t);
	printf("gguf: %d keys and %d tensors opened in %.3f s\n", n, n, t);
	buf = many_names(n, 1, &len);
	expect_fail(buf, len, RS_ERR_FORMAT, "duplicate key 'k0'");
	free(buf);
}
END_TEST

/*
 * rs-inspect --check on the N bytes of BUF written as NAME in the test's
 * directory: exit status RC, and when WANT is not NULL it in the message.
 */
static void
inspect_rc(const unsigned char *buf, size_t n, const char *name, int rc,
    const char *want)
{
	char	 path[1200], cmd[2600], *out;

	snprintf(path, sizeof(path), "%s/%s", t_tmpdir(), name);
	t_write_file(path, buf, n);
	snprintf(cmd, sizeof(cmd), "%s --check %s 2>&1", t_bin("rs-inspect"),
	    path);
	ck_assert_int_eq(t_run(cmd, &out), rc);
	ck_assert_msg(want == NULL || strstr(out, want) != NULL, "%s: %s",
	    name, out);
	free(out);
}

/*
 * BUF (N bytes) with NKV key-value pairs, the bytes KV (LEN, a multiple of
 * the fixture's 32-byte alignment, so that the data keeps its padding),
 * put before the first key; the new size in *N.
 */
static unsigned char *
with_kv(unsigned char *buf, size_t *n, uint64_t nkv, const unsigned char *kv,
    size_t len)
{
	unsigned char	*out = malloc(*n + len);
	uint64_t	 n_kv;

	ck_assert(len % 32 == 0 && out != NULL);
	memcpy(out, buf, 24);
	memcpy(&n_kv, out + 16, 8);
	n_kv += nkv;
	memcpy(out + 16, &n_kv, 8);
	memcpy(out + 24, kv, len);
	memcpy(out + 24 + len, buf + 24, *n - 24);
	*n += len;
	free(buf);
	return (out);
}

/* Append key K (u64 length and bytes) and value type T to B at *AT. */
static void
kv_head(unsigned char *b, size_t *at, const char *k, uint32_t t)
{
	uint64_t	len = strlen(k);

	memcpy(b + *at, &len, 8);
	memcpy(b + *at + 8, k, len);
	memcpy(b + *at + 8 + len, &t, 4);
	*at += 12 + len;
}

/*
 * BUF with the key K of type T and value V (VLEN bytes), and a u8 key
 * whose name fills the rest of a 32-byte multiple (32 more bytes where
 * the rest is too short for a key)
 */
static unsigned char *
with_key(unsigned char *buf, size_t *n, const char *k, uint32_t t,
    const void *v, size_t vlen)
{
	static int	 calls;
	unsigned char	 kv[160];
	size_t		 at = 0, room, kl;
	char		 pad[40];

	kv_head(kv, &at, k, t);
	memcpy(kv + at, v, vlen);
	at += vlen;
	room = 32 - at % 32;
	kl = room >= 14 ? room - 13 : room + 19;
	memset(pad, 'p', kl);
	pad[0] = (char)('a' + calls++ % 26);	/* a new name each call */
	pad[kl] = '\0';
	kv_head(kv, &at, pad, 0);
	kv[at++] = 1;
	return (with_kv(buf, n, 2, kv, at));
}

static unsigned char *
with_f32(unsigned char *buf, size_t *n, const char *k, float f)
{
	return (with_key(buf, n, k, 6, &f, 4));
}

/*
 * The rope keys llama.cpp applies besides scaling.factor (the helper
 * probe of session 44 found them taken and ignored): attn_factor 2 and
 * the older scale_linear 4 are refused; scale_linear is llama.cpp's only
 * where scaling.factor is absent, so beside a factor of 1 it changes
 * nothing and passes.
 */
static void
rope_keys(void)
{
	unsigned char	*buf;
	size_t		 n;

	buf = with_f32(load_tiny(&n), &n, "qwen35.rope.scaling.attn_factor",
	    2.0f);
	inspect_rc(buf, n, "af.gguf", 1, "rope attention factor 2");
	free(buf);
	buf = with_f32(load_tiny(&n), &n, "qwen35.rope.scale_linear", 4.0f);
	inspect_rc(buf, n, "sl.gguf", 1, "rope scaling by 4 "
	    "(qwen35.rope.scale_linear)");
	buf = with_f32(buf, &n, "qwen35.rope.scaling.factor", 1.0f);
	inspect_rc(buf, n, "sl1.gguf", 0, NULL);
	free(buf);
}

/*
 * Keys that change the forward pass and were taken in part: a
 * recurrent_layers array shorter or longer than the blocks (7 u8 flags
 * for 5), rope scaling by 4 (llama.cpp would apply it); both refused.
 * Scaling by 1 is no scaling.
 */
START_TEST(forward_keys)
{
	unsigned char	 kv[128], *buf;
	size_t		 n, at = 0;
	uint64_t	 cnt = 7;
	uint32_t	 u8t = 0;
	float		 f = 4.0f;

	buf = load_tiny(&n);
	kv_head(kv, &at, "qwen35.attention.recurrent_layers", 9);
	memcpy(kv + at, &u8t, 4);
	memcpy(kv + at + 4, &cnt, 8);
	memset(kv + at + 12, 1, 7);
	at += 19;
	buf = with_kv(buf, &n, 1, kv, at);
	inspect_rc(buf, n, "rl.gguf", 1, "recurrent_layers is not an array "
	    "of 5 integer flags");
	free(buf);
	for (int k = 0; k < 2; k++) {
		/* the factor (42 bytes) and a u8 key of 22: 64 */
		at = 0;
		f = k == 1 ? 1.0f : 4.0f;
		kv_head(kv, &at, "qwen35.rope.scaling.factor", 6);
		memcpy(kv + at, &f, 4);
		at += 4;
		kv_head(kv, &at, "general.x", 0);
		kv[at++] = 1;
		buf = with_kv(load_tiny(&n), &n, 2, kv, at);
		inspect_rc(buf, n, "rs.gguf", k == 1 ? 0 : 1, k == 1 ? NULL :
		    "rope scaling by 4");
		free(buf);
	}
	rope_keys();
}
END_TEST

/*
 * Files that the commands cannot compute right, refused by --check as
 * by every command (the helper probe of session 44): one shard of a
 * split model (it named a missing tensor), key_length != value_length
 * (refused only by the backends), a per-tensor output scale (ignored:
 * other logits without a word; output.weight renamed in place, so the
 * head falls back to the tied embedding).  A file with no vocabulary
 * passes, with a note of the commands that need one.
 */
START_TEST(model_refusals)
{
	unsigned char	*buf;
	size_t		 n, at;
	uint16_t	 shards = 3;
	uint32_t	 v;

	buf = with_key(load_tiny(&n), &n, "split.count", 2, &shards, 2);
	inspect_rc(buf, n, "split.gguf", 1, "split into 3 files");
	free(buf);

	buf = load_tiny(&n);
	at = find_gguf_str(buf, n, "qwen35.attention.value_length") + 8 + 29 +
	    4;
	memcpy(&v, buf + at, 4);
	v /= 2;
	memcpy(buf + at, &v, 4);
	inspect_rc(buf, n, "kv.gguf", 1, "!= value_length");
	free(buf);

	buf = load_tiny(&n);
	at = find_gguf_str(buf, n, "output.weight") + 8;
	memcpy(buf + at, "outputw.scale", 13);
	inspect_rc(buf, n, "scale.gguf", 1, "'outputw.scale': per-tensor "
	    "output scales are not supported");
	free(buf);

	buf = load_tiny(&n);
	at = find_gguf_str(buf, n, "tokenizer.ggml.model") + 8;
	memcpy(buf + at, "tokenizer.ggml.mode_", 20);
	at = find_gguf_str(buf, n, "tokenizer.ggml.tokens") + 8;
	memcpy(buf + at, "tokenizer.ggml.token_", 21);
	inspect_rc(buf, n, "novocab.gguf", 0, "no vocabulary: rs-verify and "
	    "rs-bench take it");
	free(buf);
}
END_TEST

/*
 * rs-inspect --check: the fixture passes; damaged copies fail with exit 1
 * and the reason, among them what rs-tokenize or the commands' default
 * context would refuse.
 */
START_TEST(inspect_check)
{
	size_t		 n, at;
	unsigned char	*buf = load_tiny(&n);
	uint64_t	 v;

	inspect_rc(buf, n, "ok.gguf", 0, NULL);
	inspect_rc(buf, n / 2, "truncated.gguf", 1, "past the end");

	at = tensor_off_field(buf, n, "output.weight", 2);
	v = 1ULL << 40;
	memcpy(buf + at, &v, 8);
	inspect_rc(buf, n, "offset.gguf", 1, "output.weight");
	v = 0;
	memcpy(buf + at, &v, 8);

	at = find_gguf_str(buf, n, "tokenizer.ggml.merges") + 8 + 21 + 8;
	v = 1ULL << 61;
	memcpy(buf + at, &v, 8);
	inspect_rc(buf, n, "array.gguf", 1, "tokenizer.ggml.merges");
	free(buf);

	/* an end-of-text id past the vocabulary (key, u32 type, u32 value) */
	buf = load_tiny(&n);
	at = find_gguf_str(buf, n, "tokenizer.ggml.eos_token_id") + 8 + 27 +
	    4;
	v = 1 << 20;
	memcpy(buf + at, &v, 4);
	inspect_rc(buf, n, "eos.gguf", 1, "eos_token_id");
	free(buf);

	/* a vocabulary without its model key, which rs-tokenize refuses
	   (the key renamed in place: same length) */
	buf = load_tiny(&n);
	at = find_gguf_str(buf, n, "tokenizer.ggml.model") + 8;
	memcpy(buf + at, "tokenizer.ggml.mode_", 20);
	inspect_rc(buf, n, "nomodel.gguf", 1, "tokenizer.ggml.model");
	free(buf);

	/* a context of 0, which every command's default refused */
	buf = load_tiny(&n);
	at = find_gguf_str(buf, n, "qwen35.context_length") + 8 + 21 + 4;
	memset(buf + at, 0, 4);
	inspect_rc(buf, n, "ctx0.gguf", 1, "context_length is 0");
	/* 2^31 and more wrapped negative in rs-bench and rs-serve; 1 left
	   no room for a token; past 2^24 no state takes */
	v = 1U << 31;
	memcpy(buf + at, &v, 4);
	inspect_rc(buf, n, "ctx31.gguf", 1, "context_length 2147483648 is "
	    "outside [2, 2^24]");
	v = 1;
	memcpy(buf + at, &v, 4);
	inspect_rc(buf, n, "ctx1.gguf", 1, "context_length 1 is outside");
	v = (1 << 24) + 1;
	memcpy(buf + at, &v, 4);
	inspect_rc(buf, n, "ctx24.gguf", 1, "context_length 16777217 is "
	    "outside");
	free(buf);

	/* a missing value: getopt's word for it, not "unknown option" */
	char	 c[600], *out;
	snprintf(c, sizeof(c), "%s --max-array 2>&1", t_bin("rs-inspect"));
	ck_assert_int_eq(t_run(c, &out), 2);
	ck_assert_msg(strstr(out, "requires an argument") != NULL &&
	    strstr(out, "unknown option") == NULL, "%s", out);
	free(out);
}
END_TEST

/* ---- escaping: strings from a file never reach the terminal raw ---- */

static enum rs_status
fill_zero(void *ctx, int64_t index, void *buf, size_t nbytes,
    struct rs_err *err)
{
	(void)ctx;
	(void)index;
	(void)err;
	memset(buf, 0, nbytes);
	return (RS_OK);
}

/* A GGUF whose strings hold ESC, BEL, a C1 CSI and DEL; DUP: a key twice. */
static const char *
hostile_gguf(int dup)
{
	static char	 path[1100];
	struct rs_gguf_writer *w;
	struct rs_err	 err = { 0 };
	int64_t		 ne[1] = { 32 };
	const char	*arch = "\x1b]0;pwned\x07", *name = "\xc2\x9b" "2J\x7f";

	snprintf(path, sizeof(path), "%s/\x1b[31mhostile.gguf", t_tmpdir());
	ck_assert_int_eq(rs_gguf_writer_new(&w, &err), RS_OK);
	ck_assert_int_eq(rs_gguf_writer_str(w, "general.architecture", arch,
	    strlen(arch)), RS_OK);
	ck_assert_int_eq(rs_gguf_writer_str(w, "general.name", name,
	    strlen(name)), RS_OK);
	if (dup) {
		ck_assert_int_eq(rs_gguf_writer_u32(w, "k\x1b[2J", 1), RS_OK);
		ck_assert_int_eq(rs_gguf_writer_u32(w, "k\x1b[2J", 2), RS_OK);
	}
	ck_assert_int_eq(rs_gguf_writer_tensor(w, "t\x1b[5m", RS_TYPE_F32, 1,
	    ne, &err), RS_OK);
	ck_assert_int_eq(rs_gguf_writer_write(w, path, fill_zero, NULL, &err),
	    RS_OK);
	rs_gguf_writer_free(w);
	return (path);
}

static void
assert_no_controls(const char *out)
{
	for (const unsigned char *p = (const unsigned char *)out; *p; p++)
		ck_assert_msg(*p == '\n' || (*p >= 0x20 && *p != 0x7f &&
		    !(p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)),
		    "raw control byte 0x%02x in: %s", *p, out);
}

START_TEST(inspect_escapes)
{
	static const char *const modes[] = { "", "--tensors", "--check" };
	const char	*path = hostile_gguf(0);
	char		 c[2048], *out;

	snprintf(c, sizeof(c), "%s %s '%s' 2>&1", t_bin("rs-inspect"),
	    modes[_i], path);
	t_run(c, &out);
	assert_no_controls(out);
	ck_assert_msg(strstr(out, "\\x1b[31mhostile.gguf") != NULL ||
	    _i == 1, "%s", out);
	if (_i == 0)
		ck_assert_msg(strstr(out, "\\x1b]0;pwned\\x07") != NULL &&
		    strstr(out, "\\u009b2J\\x7f") != NULL, "%s", out);
	if (_i == 1)
		ck_assert_msg(strstr(out, "t\\x1b[5m") != NULL, "%s", out);
	free(out);
}
END_TEST

/* Messages: a file name and a key name from a broken file. */
START_TEST(message_escapes)
{
	char	c[2048], *out;

	snprintf(c, sizeof(c), "%s --check '%s' 2>&1", t_bin("rs-inspect"),
	    hostile_gguf(1));
	ck_assert_int_eq(t_run(c, &out), 1);
	assert_no_controls(out);
	ck_assert_msg(strstr(out, "k\\x1b[2J") != NULL, "%s", out);
	free(out);
	snprintf(c, sizeof(c), "%s -m \"$(printf '/no/\\033]0;x\\007.gguf')\" "
	    "--tokens 1 2>&1", t_bin("rs-verify"));
	ck_assert_int_eq(t_run(c, &out), 2);
	assert_no_controls(out);
	ck_assert_msg(strstr(out, "\\x1b]0;x\\x07") != NULL, "%s", out);
	free(out);
}
END_TEST

/* A FIFO is refused at once, not waited on for a writer. */
START_TEST(fifo_refused)
{
	struct rs_gguf	*g = NULL;
	struct rs_err	 err = { 0 };
	char		 path[1100];

	snprintf(path, sizeof(path), "%s/fifo.gguf", t_tmpdir());
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(rs_gguf_open(&g, path, &err), RS_ERR_IO);
	ck_assert_str_eq(err.msg, "not a regular file");
	unlink(path);
}
END_TEST

/*
 * An architecture that is not qwen35 is named in full in the refusal,
 * even when a NUL inside would have cut it to "qwen35" (which read as
 * "architecture 'qwen35' is not supported").
 */
START_TEST(arch_with_nul)
{
	static const char	 arch[] = "qwen35\0x";
	char			 path[1100];
	struct rs_gguf_writer	*w;
	struct rs_model		*m = NULL;
	struct rs_err		 err = { 0 };
	int64_t			 ne[1] = { 32 };

	snprintf(path, sizeof(path), "%s/arch-nul.gguf", t_tmpdir());
	ck_assert_int_eq(rs_gguf_writer_new(&w, &err), RS_OK);
	ck_assert_int_eq(rs_gguf_writer_str(w, "general.architecture", arch,
	    sizeof(arch) - 1), RS_OK);
	ck_assert_int_eq(rs_gguf_writer_tensor(w, "t", RS_TYPE_F32, 1, ne,
	    &err), RS_OK);
	ck_assert_int_eq(rs_gguf_writer_write(w, path, fill_zero, NULL, &err),
	    RS_OK);
	rs_gguf_writer_free(w);
	ck_assert_int_eq(rs_model_open(&m, path, &err), RS_ERR_UNSUPPORTED);
	ck_assert_msg(strstr(err.msg, "architecture 'qwen35\\x00x' is not "
	    "supported") != NULL, "%s", err.msg);
}
END_TEST

Suite *
gguf_suite(void)
{
	Suite	*s = suite_create("gguf");
	TCase	*tc = tcase_create("header");

	tcase_add_test(tc, header_tiny);
	tcase_add_test(tc, tensors_tiny);
	suite_add_tcase(s, tc);
	tc = tcase_create("bad_input");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, truncated);
	tcase_add_test(tc, bad_magic_version);
	tcase_add_test(tc, huge_array);
	tcase_add_test(tc, bad_tensor_info);
	tcase_add_test(tc, duplicate_names);
	tcase_add_test(tc, many_names_fast);
	tcase_add_test(tc, inspect_check);
	tcase_add_test(tc, forward_keys);
	tcase_add_test(tc, model_refusals);
	suite_add_tcase(s, tc);
	tc = tcase_create("escape");
	tcase_add_loop_test(tc, inspect_escapes, 0, 3);
	tcase_add_test(tc, message_escapes);
	tcase_add_test(tc, arch_with_nul);
	tcase_add_test(tc, fifo_refused);
	suite_add_tcase(s, tc);
	return (s);
}
