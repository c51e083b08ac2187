/*
 * check_state.c - sequence state: truncation by snapshot, checkpoint and
 * rollback, truncation by replay, copies, resets, and bad input.  The
 * invariant (qwen35-model.md §6.5): a state that forgot tokens equals one
 * that never saw them, so the logits of what follows match bit for bit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_engine.h"
#include "rs_state.h"
#include "rs_state_impl.h"
#include "rs_verify.h"
#include "t_ref.h"
#include "t_util.h"

#define N_AFTER	3	/* tokens stepped after a truncation */

static const int32_t after[N_AFTER] = { 17, 1200, 905 };

/* The greedy prompt (37 tokens) plus 8 arbitrary candidates. */
static int32_t *
sequence(const struct t_ref *ref, int32_t *n)
{
	int32_t	 plen = ref->len[ref->greedy_prompt];
	int32_t	*s = malloc((size_t)(plen + 8) * sizeof(*s));

	ck_assert(s != NULL);
	memcpy(s, ref->prompt[ref->greedy_prompt], (size_t)plen * sizeof(*s));
	for (int i = 0; i < 8; i++)
		s[plen + i] = (int32_t)(100 + 211 * i);
	*n = plen + 8;
	return (s);
}

static void
run(struct t_lm *lm, struct rs_state *st, const int32_t *tok, int32_t n,
    float *logits)
{
	struct rs_err err;

	ck_assert_msg(rs_engine_forward(lm->e, st, tok, n, logits,
	    logits != NULL ? RS_LOGITS_ALL : RS_LOGITS_NONE, NULL,
	    &err) == RS_OK, "%s", err.msg);
}

/* Logits of `after` on a fresh state that saw TOK[0 .. keep). */
static float *
expected_after(struct t_lm *lm, const int32_t *tok, int32_t keep)
{
	struct rs_state	*st = t_state(lm, 0, 0);
	float		*lg = calloc((size_t)(N_AFTER * lm->m->hp.n_vocab), 4);

	ck_assert(lg != NULL);
	if (keep > 0)
		run(lm, st, tok, keep, NULL);
	run(lm, st, after, N_AFTER, lg);
	rs_state_free(st);
	return (lg);
}

static void
assert_after(struct t_lm *lm, struct rs_state *st, const float *want,
    const char *what, int32_t keep)
{
	size_t	 sz = (size_t)(N_AFTER * lm->m->hp.n_vocab) * sizeof(float);
	float	*got = malloc(sz);

	ck_assert(got != NULL);
	run(lm, st, after, N_AFTER, got);
	ck_assert_msg(memcmp(got, want, sz) == 0,
	    "%s to %d: logits differ from a fresh run (rel %g)", what, keep,
	    rs_verify_rel_err(got, want, N_AFTER * lm->m->hp.n_vocab));
	free(got);
}

/* Verify 8 candidates in one pass, truncate to every prefix + j. */
START_TEST(truncate_snapshot)
{
	struct t_lm	 lm;
	struct t_ref	 ref;
	struct rs_err	 err;
	int32_t		 n, *tok, plen;

	t_ref_load(&ref);
	tok = sequence(&ref, &n);
	plen = n - 8;
	t_lm_open(&lm, "tiny/model-f16.gguf", 0, 0, 9, 0);
	for (int32_t j = 0; j <= 8; j++) {
		float *want = expected_after(&lm, tok, plen + j);

		rs_state_reset(lm.st);
		run(&lm, lm.st, tok, n, NULL);
		/* positions n − 9 .. n − 1 recorded: truncation reaches
		   n − 8 (n − 9 would need the state after n − 10) */
		ck_assert_int_eq(rs_state_snap_floor(lm.st), n - 8);
		ck_assert_msg(rs_state_truncate(lm.st, plen + j, &err) == RS_OK,
		    "%s", err.msg);
		ck_assert_int_eq(rs_state_pos(lm.st), plen + j);
		assert_after(&lm, lm.st, want, "snapshot truncate", plen + j);
		free(want);
	}
	free(tok);
	t_lm_close(&lm);
	t_ref_free(&ref);
}
END_TEST

/* Snapshots survive call boundaries: decode steps, then truncate. */
START_TEST(truncate_after_steps)
{
	struct t_lm	 lm;
	struct t_ref	 ref;
	struct rs_err	 err;
	int32_t		 n, *tok;
	float		*want;

	t_ref_load(&ref);
	tok = sequence(&ref, &n);
	t_lm_open(&lm, "tiny/model-f16.gguf", 0, 0, 4, 0);
	want = expected_after(&lm, tok, n - 3);
	run(&lm, lm.st, tok, n - 5, NULL);
	for (int32_t i = n - 5; i < n; i++)
		run(&lm, lm.st, &tok[i], 1, NULL);
	ck_assert_msg(rs_state_truncate(lm.st, n - 3, &err) == RS_OK, "%s",
	    err.msg);
	assert_after(&lm, lm.st, want, "truncate after single steps", n - 3);
	/* the ring keeps the last 4 positions (n − 4 .. n − 1): going back
	 * to n − 5 needs the state after n − 6, which is gone */
	ck_assert_int_eq(rs_state_truncate(lm.st, n - 5, &err), RS_ERR_LIMIT);
	free(want);
	free(tok);
	t_lm_close(&lm);
	t_ref_free(&ref);
}
END_TEST

/*
 * The ring across calls (rs_state.h): a call's records replay on its own
 * base, a later call's base leaves them usable until it lands in the same
 * slot, and then rs_state_snap_floor stops above them and truncation says
 * so instead of restoring a wrong state.
 */
START_TEST(truncate_across_calls)
{
	struct t_lm	 lm;
	struct t_ref	 ref;
	struct rs_err	 err;
	int32_t		 n, *tok;
	float		*want;

	t_ref_load(&ref);
	tok = sequence(&ref, &n);
	t_lm_open(&lm, "tiny/model-f16.gguf", 0, 0, 4, 0);
	/* verification-like calls: 4 tokens, keep 2, 3 more, keep 1 */
	run(&lm, lm.st, tok, n - 10, NULL);
	run(&lm, lm.st, tok + n - 10, 4, NULL);
	ck_assert_msg(rs_state_truncate(lm.st, n - 8, &err) == RS_OK, "%s",
	    err.msg);
	run(&lm, lm.st, tok + n - 8, 3, NULL);
	ck_assert_int_eq(rs_state_snap_floor(lm.st), n - 8);
	want = expected_after(&lm, tok, n - 7);
	ck_assert_msg(rs_state_truncate(lm.st, n - 7, &err) == RS_OK, "%s",
	    err.msg);
	assert_after(&lm, lm.st, want, "truncate across calls", n - 7);
	free(want);

	/* a call of 4 (base n − 10), then one token, whose base (n − 6)
	   takes the same slot: n − 9 .. n − 7 are in the ring's range but
	   have lost their base */
	rs_state_reset(lm.st);
	run(&lm, lm.st, tok, n - 9, NULL);
	run(&lm, lm.st, tok + n - 9, 4, NULL);
	run(&lm, lm.st, tok + n - 5, 1, NULL);
	ck_assert_int_eq(rs_state_snap_floor(lm.st), n - 5);
	ck_assert_int_eq(rs_state_truncate(lm.st, n - 6, &err), RS_ERR_LIMIT);
	ck_assert_int_eq(rs_state_pos(lm.st), n - 4);
	want = expected_after(&lm, tok, n - 5);
	ck_assert_msg(rs_state_truncate(lm.st, n - 5, &err) == RS_OK, "%s",
	    err.msg);
	assert_after(&lm, lm.st, want, "truncate to a base", n - 5);
	free(want);
	free(tok);
	t_lm_close(&lm);
	t_ref_free(&ref);
}
END_TEST

/* Checkpoint, step, roll back, step other tokens. */
START_TEST(checkpoint_rollback)
{
	struct t_lm	 lm;
	struct t_ref	 ref;
	struct rs_err	 err;
	int32_t		 n, *tok, plen;
	float		*want;

	t_ref_load(&ref);
	tok = sequence(&ref, &n);
	plen = n - 8;
	t_lm_open(&lm, "tiny/model-f16.gguf", 0, 0, 0, 1);
	want = expected_after(&lm, tok, plen);
	run(&lm, lm.st, tok, plen, NULL);
	ck_assert_int_eq(rs_state_checkpoint(lm.st, &err), RS_OK);
	ck_assert_int_eq(rs_state_checkpoint_pos(lm.st), plen);
	for (int round = 0; round < 2; round++) {
		run(&lm, lm.st, tok + plen, 8, NULL);
		ck_assert_msg(rs_state_rollback(lm.st, &err) == RS_OK, "%s",
		    err.msg);
		ck_assert_int_eq(rs_state_pos(lm.st), plen);
	}
	assert_after(&lm, lm.st, want, "rollback", plen);
	/* truncating below the checkpoint discards it */
	ck_assert_int_eq(rs_state_truncate(lm.st, 0, &err), RS_OK);
	ck_assert_int_eq(rs_state_checkpoint_pos(lm.st), -1);
	ck_assert_int_eq(rs_state_rollback(lm.st, &err), RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "checkpoint") != NULL);
	free(want);
	free(tok);
	t_lm_close(&lm);
	t_ref_free(&ref);
}
END_TEST

/* rs_engine_truncate without snapshots: checkpoint + replay, or replay
 * from the start. */
START_TEST(truncate_replay)
{
	struct t_lm	 lm;
	struct t_ref	 ref;
	struct rs_err	 err;
	int32_t		 n, *tok, keep;
	float		*want;

	t_ref_load(&ref);
	tok = sequence(&ref, &n);
	keep = n - 5;
	t_lm_open(&lm, "tiny/model-f16.gguf", 0, 0, 0, 1);
	want = expected_after(&lm, tok, keep);
	/* checkpoint at 20, replay 20 .. keep */
	run(&lm, lm.st, tok, 20, NULL);
	ck_assert_int_eq(rs_state_checkpoint(lm.st, &err), RS_OK);
	run(&lm, lm.st, tok + 20, n - 20, NULL);
	ck_assert_int_eq(rs_state_truncate(lm.st, keep, &err), RS_ERR_LIMIT);
	ck_assert_int_eq(rs_state_pos(lm.st), n);	/* unchanged */
	ck_assert_msg(rs_engine_truncate(lm.e, lm.st, keep, &err) == RS_OK,
	    "%s", err.msg);
	ck_assert_int_eq(rs_state_pos(lm.st), keep);
	assert_after(&lm, lm.st, want, "checkpoint + replay", keep);
	/* no checkpoint at all: reset + replay of the history */
	rs_state_reset(lm.st);
	run(&lm, lm.st, tok, n, NULL);
	ck_assert_msg(rs_engine_truncate(lm.e, lm.st, keep, &err) == RS_OK,
	    "%s", err.msg);
	assert_after(&lm, lm.st, want, "replay", keep);
	free(want);
	free(tok);
	t_lm_close(&lm);
	t_ref_free(&ref);
}
END_TEST

/*
 * The comparison above can fail: cutting only the KV position (what a
 * transformer-only engine would do) leaves the GDN state of the rejected
 * tokens in place and the logits move far (§8.24).
 */
START_TEST(kv_only_truncation_is_wrong)
{
	struct t_lm	 lm;
	struct t_ref	 ref;
	int32_t		 n, *tok, keep;
	int64_t		 v;
	float		*want, *got;
	double		 rel;

	t_ref_load(&ref);
	tok = sequence(&ref, &n);
	keep = n - 4;
	t_lm_open(&lm, "tiny/model-f16.gguf", 0, 0, 0, 0);
	v = lm.m->hp.n_vocab;
	want = expected_after(&lm, tok, keep);
	got = calloc((size_t)(N_AFTER * v), sizeof(float));
	run(&lm, lm.st, tok, n, NULL);
	lm.st->pos = keep;		/* KV truncation alone */
	run(&lm, lm.st, after, N_AFTER, got);
	rel = rs_verify_rel_err(got, want, N_AFTER * v);
	ck_assert_msg(rel > 1e-3, "KV-only truncation went unnoticed (%g)",
	    rel);
	free(got);
	free(want);
	free(tok);
	t_lm_close(&lm);
	t_ref_free(&ref);
}
END_TEST

START_TEST(copy_and_reset)
{
	struct t_lm	 lm;
	struct t_ref	 ref;
	struct rs_state	*dup;
	struct rs_err	 err;
	int32_t		 n, *tok;
	float		*want;

	t_ref_load(&ref);
	tok = sequence(&ref, &n);
	t_lm_open(&lm, "tiny/model-f16.gguf", 0, 0, 0, 0);
	want = expected_after(&lm, tok, n);
	run(&lm, lm.st, tok, n, NULL);
	dup = t_state(&lm, 0, 0);
	ck_assert_msg(rs_state_copy(dup, lm.st, &err) == RS_OK, "%s", err.msg);
	ck_assert_int_eq(rs_state_pos(dup), n);
	ck_assert_int_eq(rs_state_token(dup, 3), tok[3]);
	assert_after(&lm, dup, want, "copy", n);
	assert_after(&lm, lm.st, want, "original", n);
	rs_state_reset(lm.st);
	ck_assert_int_eq(rs_state_pos(lm.st), 0);
	run(&lm, lm.st, tok, n, NULL);
	assert_after(&lm, lm.st, want, "reset", n);
	rs_state_free(dup);
	free(want);
	free(tok);
	t_lm_close(&lm);
	t_ref_free(&ref);
}
END_TEST

/* The MTP cache follows the trunk on truncation and rollback. */
START_TEST(mtp_cache_cut)
{
	struct t_lm	 lm;
	struct t_ref	 ref;
	struct rs_err	 err;
	int32_t		 n, *tok;
	float		*hid;

	t_ref_load(&ref);
	tok = sequence(&ref, &n);
	t_lm_open(&lm, "tiny/model-f16.gguf", 0, 0, 9, 1);
	hid = calloc((size_t)((n + 1) * lm.m->hp.n_embd), sizeof(float));
	ck_assert(hid != NULL);
	ck_assert_int_eq(rs_engine_forward(lm.e, lm.st, tok, n, NULL,
	    RS_LOGITS_NONE, hid + lm.m->hp.n_embd, &err), RS_OK);
	ck_assert_int_eq(rs_engine_mtp_batch(lm.e, lm.st, tok, n, 0, hid,
	    NULL, NULL, &err), RS_OK);
	ck_assert_int_eq(rs_state_mtp_pos(lm.st), n);
	ck_assert_int_eq(rs_state_truncate(lm.st, n - 2, &err), RS_OK);
	ck_assert_int_eq(rs_state_mtp_pos(lm.st), n - 2);
	/* a gap in the MTP cache is refused */
	ck_assert_int_eq(rs_engine_mtp(lm.e, lm.st, tok[0], n, hid, NULL,
	    NULL, &err), RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "gap") != NULL);
	free(hid);
	free(tok);
	t_lm_close(&lm);
	t_ref_free(&ref);
}
END_TEST

START_TEST(bad_input)
{
	struct t_lm	 lm;
	struct rs_state	*st;
	struct rs_state_opts so = { 0 };
	struct rs_err	 err;
	int32_t		 tok[4] = { 1, 2, 3, 4 };

	t_lm_open(&lm, "tiny/model-f16.gguf", 1, 0, 0, 0);
	run(&lm, lm.st, tok, 4, NULL);
	ck_assert_int_eq(rs_state_truncate(lm.st, 5, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "cannot truncate") != NULL);
	ck_assert_int_eq(rs_state_truncate(lm.st, -1, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_state_truncate(lm.st, 2, &err), RS_ERR_LIMIT);
	ck_assert(strstr(err.msg, "snapshot") != NULL);
	ck_assert_int_eq(rs_state_pos(lm.st), 4);
	ck_assert_int_eq(rs_engine_truncate(lm.e, lm.st, 9, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_state_checkpoint(lm.st, &err),
	    RS_ERR_UNSUPPORTED);
	ck_assert(strstr(err.msg, "checkpoint") != NULL);
	ck_assert_int_eq(rs_state_rollback(lm.st, &err), RS_ERR_INVALID_ARG);
	so.n_ctx = -1;
	ck_assert_int_eq(rs_state_new(&st, lm.m, &so, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "context") != NULL);
	so.n_ctx = 8;
	so.n_snap = -2;
	ck_assert_int_eq(rs_state_new(&st, lm.m, &so, &err),
	    RS_ERR_INVALID_ARG);
	so.n_snap = 0;
	so.n_ctx = 2;
	ck_assert_int_eq(rs_state_new(&st, lm.m, &so, &err), RS_OK);
	ck_assert_int_eq(rs_state_copy(st, lm.st, &err), RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "does not fit") != NULL);
	rs_state_free(st);
	rs_state_free(NULL);
	t_lm_close(&lm);
}
END_TEST

/*
 * The memory plan of the 27B at the V100 target: qwen35-model.md §5.1-§5.4
 * give the sizes (f16 KV 9,126,805,504 B at 139,264 positions, MTP KV
 * 570,425,344 B, GDN state 156,893,184 B per copy, (1 + 3) copies with
 * llama.cpp's 3 rollback snapshots), and with the Q4_K_M weights
 * (16,799,719,424 B, §9) everything must fit a 32 GB card with room for
 * the CUDA context and scratch.  The model is built from the §1 numbers,
 * without weights.
 */
START_TEST(plan_27b)
{
	struct rs_layer	 layers[65];
	struct rs_model	 m = { .layers = layers };
	struct rs_state_opts o = { .n_ctx = 139264, .n_snap = 3 };
	struct rs_state_plan p;

	m.hp.n_layer_all = 65;
	m.hp.n_layer = 64;
	m.hp.n_nextn = 1;
	m.hp.n_ctx_train = 262144;
	m.hp.n_head_kv = 4;
	m.hp.head_dim = m.hp.head_dim_v = 256;
	m.hp.ssm_n_kh = 16;
	m.hp.ssm_n_vh = 48;
	m.hp.ssm_d_state = 128;
	m.hp.ssm_d_inner = 6144;
	m.hp.ssm_conv_kernel = 4;
	for (int il = 0; il < 65; il++)
		layers[il].kind = il == 64 ? RS_LAYER_MTP :
		    (il + 1) % 4 == 0 ? RS_LAYER_ATTN : RS_LAYER_GDN;
	rs_state_plan(&m, &o, 2, &p);
	ck_assert_uint_eq(p.kv, 9126805504ULL);
	ck_assert_uint_eq(p.mtp_kv, 570425344ULL);
	ck_assert_uint_eq(p.gdn, 156893184ULL);
	/* a replay record: 48 GDN blocks x (16 + 48) heads x 128 k/v values
	   plus 2 x 48 gates, in f32 */
	ck_assert_uint_eq(p.snapshots, 3ULL * (156893184ULL +
	    48ULL * ((16 + 48) * 128 + 96) * 4));
	printf("plan 27b Q4_K_M at 139264 positions, f16 KV: weights %.2f "
	    "GiB + state %.2f GiB = %.2f GiB\n", 16799719424.0 / 1073741824.0,
	    p.total / 1073741824.0, (16799719424.0 + p.total) / 1073741824.0);
	/* 32 GiB card, 2 GiB kept for the context, cuBLAS and scratch */
	ck_assert(16799719424ULL + p.total < 30ULL * 1073741824ULL);
}
END_TEST

Suite *
state_suite(void)
{
	Suite	*s = suite_create("state");
	TCase	*tc = tcase_create("rollback");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, truncate_snapshot);
	tcase_add_test(tc, truncate_after_steps);
	tcase_add_test(tc, truncate_across_calls);
	tcase_add_test(tc, checkpoint_rollback);
	tcase_add_test(tc, truncate_replay);
	tcase_add_test(tc, kv_only_truncation_is_wrong);
	tcase_add_test(tc, copy_and_reset);
	tcase_add_test(tc, mtp_cache_cut);
	suite_add_tcase(s, tc);
	tc = tcase_create("plan");
	tcase_add_test(tc, plan_27b);
	suite_add_tcase(s, tc);
	tc = tcase_create("bad_input");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, bad_input);
	suite_add_tcase(s, tc);
	return (s);
}
