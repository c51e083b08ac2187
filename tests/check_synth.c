/*
 * check_synth.c - the GGUF writer and synthetic models: what we write reads
 * back through rs_gguf/rs_model, and the Q4_K_M type choice of §3.7 equals
 * what llama.cpp's quantizer chose for tiny/model-q4_k_m.gguf.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_chat.h"
#include "rs_gguf.h"
#include "rs_gguf_write.h"
#include "rs_model.h"
#include "rs_synth.h"
#include "rs_types.h"
#include "t_util.h"

static enum rs_status
fill_pattern(void *ctx, int64_t i, void *buf, size_t n, struct rs_err *err)
{
	(void)ctx;
	(void)err;
	memset(buf, (int)(0x10 + i), n);
	return (RS_OK);
}

START_TEST(writer_roundtrip)
{
	struct rs_gguf_writer *w;
	struct rs_gguf	*g;
	struct rs_err	 err;
	char		 path[1100];
	int64_t		 ne[2] = { 64, 3 }, ne1[1] = { 5 };
	int32_t		 arr[3] = { 7, -8, 9 };
	const char	*strs[2] = { "a", "bc" };
	uint32_t	 u;
	float		 f;
	struct rs_gguf_str s;

	snprintf(path, sizeof(path), "%s/w.gguf", t_tmpdir());
	ck_assert_int_eq(rs_gguf_writer_new(&w, &err), RS_OK);
	ck_assert_int_eq(rs_gguf_writer_u32(w, "k.u32", 42), RS_OK);
	ck_assert_int_eq(rs_gguf_writer_f32(w, "k.f32", 1.5f), RS_OK);
	ck_assert_int_eq(rs_gguf_writer_str(w, "k.str", "hello", 5), RS_OK);
	ck_assert_int_eq(rs_gguf_writer_i32_array(w, "k.arr", arr, 3), RS_OK);
	ck_assert_int_eq(rs_gguf_writer_str_array(w, "k.strs", strs, 2), RS_OK);
	ck_assert_int_eq(rs_gguf_writer_tensor(w, "t.q8", RS_TYPE_Q8_0, 2, ne,
	    &err), RS_OK);
	ck_assert_int_eq(rs_gguf_writer_tensor(w, "t.f32", RS_TYPE_F32, 1, ne1,
	    &err), RS_OK);
	ck_assert_int_eq(rs_gguf_writer_tensor(w, "bad", RS_TYPE_Q4_K, 1, ne1,
	    &err), RS_ERR_FORMAT);
	ck_assert_int_eq(rs_gguf_writer_write(w, path, fill_pattern, NULL, &err),
	    RS_OK);
	rs_gguf_writer_free(w);

	ck_assert_int_eq(rs_gguf_open(&g, path, &err), RS_OK);
	ck_assert_int_eq(rs_gguf_get_u32(g, "k.u32", &u, &err), RS_OK);
	ck_assert_uint_eq(u, 42);
	ck_assert_int_eq(rs_gguf_get_f32(g, "k.f32", &f, &err), RS_OK);
	ck_assert(f == 1.5f);
	ck_assert_int_eq(rs_gguf_get_str(g, "k.str", &s, &err), RS_OK);
	ck_assert(s.len == 5 && memcmp(s.ptr, "hello", 5) == 0);
	ck_assert_int_eq(rs_gguf_arr_int(rs_gguf_find_kv(g, "k.arr"), 1), -8);
	ck_assert_uint_eq(rs_gguf_find_kv(g, "k.strs")->strs[1].len, 2);
	const struct rs_gguf_tensor *t = rs_gguf_find_tensor(g, "t.q8");
	ck_assert(t != NULL && t->nbytes == 3 * 2 * 34);
	ck_assert_uint_eq(((const unsigned char *)t->data)[0], 0x10);
	t = rs_gguf_find_tensor(g, "t.f32");
	ck_assert(t != NULL && t->nbytes == 20 && t->offset % 32 == 0);
	ck_assert_uint_eq(((const unsigned char *)t->data)[19], 0x11);
	rs_gguf_close(g);
}
END_TEST

START_TEST(tiny_q4_k_m_types)
{
	struct rs_synth_cfg cfg;
	struct rs_model	*syn, *ref;
	struct rs_err	 err;
	char		 path[1100];

	snprintf(path, sizeof(path), "%s/tiny.gguf", t_tmpdir());
	ck_assert_int_eq(rs_synth_preset("tiny", &cfg, &err), RS_OK);
	cfg.mix = RS_SYNTH_Q4_K_M;
	ck_assert_int_eq(rs_synth_write(&cfg, path, &err), RS_OK);
	ck_assert_msg(rs_model_open(&syn, path, &err) == RS_OK, "%s", err.msg);
	ck_assert_int_eq(rs_model_open(&ref,
	    t_fixture("tiny/model-q4_k_m.gguf"), &err), RS_OK);
	ck_assert_int_eq(rs_gguf_n_tensors(syn->gguf),
	    rs_gguf_n_tensors(ref->gguf));
	for (int64_t i = 0; i < rs_gguf_n_tensors(ref->gguf); i++) {
		const struct rs_gguf_tensor *r = rs_gguf_tensor(ref->gguf, i);
		const struct rs_gguf_tensor *s = rs_gguf_find_tensor(syn->gguf,
		    r->name);
		ck_assert_msg(s != NULL, "synthetic model lacks %s", r->name);
		ck_assert_msg(s->type == r->type, "%s: %s, llama.cpp chose %s",
		    r->name, rs_type_name(s->type), rs_type_name(r->type));
		ck_assert_int_eq(s->ne[0], r->ne[0]);
		if (strcmp(r->name, "token_embd.weight") != 0 &&
		    strcmp(r->name, "output.weight") != 0)
			ck_assert_int_eq(s->ne[1], r->ne[1]);
	}
	ck_assert_uint_eq(syn->hp.n_layer, ref->hp.n_layer);
	/* no template text, but the variant the vocabulary is meant for */
	enum rs_chat_variant v = RS_CHAT_UNKNOWN;
	ck_assert_int_eq(rs_chat_identify_gguf(syn->gguf, &v, &err), RS_OK);
	ck_assert_int_eq(v, RS_CHAT_QWEN38);
	ck_assert_uint_eq(syn->hp.ssm_n_vh, ref->hp.ssm_n_vh);
	rs_model_close(syn);
	rs_model_close(ref);
}
END_TEST

START_TEST(bad_preset)
{
	struct rs_synth_cfg cfg;
	struct rs_err	err = { 0 };

	ck_assert_int_eq(rs_synth_preset("huge", &cfg, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "huge") != NULL);
	ck_assert_int_eq(rs_synth_preset("tiny", &cfg, &err), RS_OK);
	cfg.n_vocab = 10;
	ck_assert_int_eq(rs_synth_write(&cfg, "/nonexistent/x.gguf", &err),
	    RS_ERR_INVALID_ARG);
	cfg.n_vocab = 512;
	ck_assert_int_eq(rs_synth_write(&cfg, "/nonexistent/x.gguf", &err),
	    RS_ERR_IO);
}
END_TEST

/*
 * rs_model_open refuses a rope.freq_base that is not a finite number above
 * 1 (an infinite base turns every rotation into the identity: the model
 * would run, silently wrong).
 */
START_TEST(bad_rope_base)
{
	static const float	 bases[] = { INFINITY, NAN, 1.0f, -5.0f };
	struct rs_synth_cfg	 cfg;
	struct rs_model		*m = NULL;
	struct rs_err		 err = { 0 };
	char			 path[1100];

	snprintf(path, sizeof(path), "%s/rope-base.gguf", t_tmpdir());
	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		ck_assert_int_eq(rs_synth_preset("tiny", &cfg, &err), RS_OK);
		cfg.rope_base = bases[i];
		ck_assert_int_eq(rs_synth_write(&cfg, path, &err), RS_OK);
		ck_assert_int_ne(rs_model_open(&m, path, &err), RS_OK);
		ck_assert_msg(strstr(err.msg, "rope.freq_base") != NULL, "%s",
		    err.msg);
	}
}
END_TEST

/* The progress callback: called in order, up to the total. */
static void
count_progress(void *ctx, uint64_t done, uint64_t total)
{
	uint64_t *last = ctx;

	ck_assert_uint_ge(done, last[0]);
	ck_assert_uint_lt(done, total);
	last[0] = done;
	last[1]++;
}

START_TEST(progress)
{
	struct rs_synth_cfg cfg;
	struct rs_err	 err = { 0 };
	uint64_t	 seen[2] = { 0, 0 };
	char		 path[1100], c[2400], *out;

	snprintf(path, sizeof(path), "%s/p.gguf", t_tmpdir());
	ck_assert_int_eq(rs_synth_preset("tiny", &cfg, &err), RS_OK);
	cfg.progress = count_progress;
	cfg.progress_ctx = seen;
	ck_assert_int_eq(rs_synth_write(&cfg, path, &err), RS_OK);
	ck_assert_uint_gt(seen[1], 10);		/* once per tensor */
	/* rs-bench --synth on a terminal: a progress line; -q: none */
	snprintf(c, sizeof(c), "%s --synth tiny -o %s", t_bin("rs-bench"),
	    path);
	ck_assert_int_eq(t_run_tty(c, &out), 0);
	ck_assert_msg(strstr(out, "p.gguf:   0%") != NULL, "%s", out);
	free(out);
	snprintf(c, sizeof(c), "%s --synth tiny -q -o %s", t_bin("rs-bench"),
	    path);
	ck_assert_int_eq(t_run_tty(c, &out), 0);
	ck_assert_str_eq(out, "");
	free(out);
}
END_TEST

Suite *
synth_suite(void)
{
	Suite	*s = suite_create("synth");
	TCase	*tc = tcase_create("write");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, writer_roundtrip);
	tcase_add_test(tc, tiny_q4_k_m_types);
	tcase_add_test(tc, bad_preset);
	tcase_add_test(tc, bad_rope_base);
	tcase_add_test(tc, progress);
	suite_add_tcase(s, tc);
	return (s);
}
