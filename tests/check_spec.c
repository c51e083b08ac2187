/*
 * check_spec.c - greedy speculative decoding (rs_spec.h) with every
 * drafter: its output is plain greedy decoding's, token for token.  The
 * expected tokens come from reference.json (HF transformers' greedy
 * continuation, f16 model) and, for the quantized file, from token-by-token
 * decoding through the engine.  Rollback is checked bit for bit against a
 * state that never saw the rejected drafts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_spec.h"
#include "rs_verify.h"
#include "t_ref.h"
#include "t_util.h"

/* Plain greedy: one forward pass per token. */
static void
plain_greedy(const struct t_lm *lm, const int32_t *p, int32_t n, int32_t
    n_new, int32_t *out)
{
	struct rs_state	*st = t_state(lm, 0, 0);
	const int64_t	 v = lm->m->hp.n_vocab;
	float		*lg = malloc((size_t)v * sizeof(float));
	struct rs_err	 err;

	ck_assert_int_eq(rs_engine_forward(lm->e, st, p, n, lg, RS_LOGITS_LAST,
	    NULL, &err), RS_OK);
	for (int32_t i = 0; i < n_new; i++) {
		out[i] = rs_logits_argmax(lg, v);
		if (i + 1 < n_new)
			ck_assert_int_eq(rs_engine_forward(lm->e, st, &out[i], 1,
			    lg, RS_LOGITS_LAST, NULL, &err), RS_OK);
	}
	free(lg);
	rs_state_free(st);
}

static struct rs_drafter *
drafter(const struct t_lm *lm, enum rs_drafter_kind kind, int k, int fixed)
{
	struct rs_drafter_opts	 o;
	struct rs_drafter	*d;
	struct rs_err		 err = { 0 };

	rs_drafter_opts_init(&o);
	o.kind = kind;
	o.k_max = k;
	o.fixed = fixed;
	ck_assert_msg(rs_drafter_new(&d, lm->e, &o, &err) == RS_OK, "%s",
	    err.msg);
	return (d);
}

/* rs_spec_greedy on a fresh state; the state is returned when KEEP. */
static struct rs_state *
spec(const struct t_lm *lm, struct rs_drafter *d, const int32_t *p,
    int32_t n, int32_t n_new, int32_t *out, struct rs_spec_stats *stats,
    int keep)
{
	int		 k = d != NULL ? rs_drafter_k_max(d) : 0;
	struct rs_state	*st = t_state(lm, k + 1, 0);
	struct rs_err	 err = { 0 };

	ck_assert_msg(rs_spec_greedy(lm->e, st, d, p, n, n_new, out, stats,
	    &err) == RS_OK, "k %d: %s", k, err.msg);
	if (keep)
		return (st);
	rs_state_free(st);
	return (NULL);
}

/* f16, MTP drafts: every draft count reproduces reference.json's tokens. */
START_TEST(reference_greedy)
{
	struct t_ref	r;
	struct t_lm	lm;
	int32_t		out[64];

	t_ref_load(&r);
	/* a small batch, so the prompt also crosses chunk boundaries */
	t_lm_open(&lm, "tiny/model-f16.gguf", 2, 16, 0, 0);
	for (int k = 1; k <= 4; k++) {
		struct rs_drafter *d = drafter(&lm, RS_DRAFTER_MTP, k, 1);
		struct rs_spec_stats s;
		memset(out, 0xff, sizeof(out));
		spec(&lm, d, r.prompt[r.greedy_prompt], r.len[r.greedy_prompt],
		    r.n_greedy, out, &s, 0);
		for (int32_t i = 0; i < r.n_greedy; i++)
			ck_assert_msg(out[i] == r.greedy[i], "k %d: token %d is "
			    "%d, reference %d", k, i, out[i], r.greedy[i]);
		ck_assert_int_eq(s.generated, r.n_greedy);
		ck_assert(s.rounds > 0 && s.accepted <= s.drafted);
		/* each round yields its accepted drafts plus one token */
		ck_assert_int_eq(s.rounds + s.accepted, r.n_greedy - 1);
		ck_assert(s.draft_ms > 0.0);
		printf("spec f16 mtp k=%d: %lld rounds, %lld/%lld drafts "
		    "accepted\n", k, (long long)s.rounds,
		    (long long)s.accepted, (long long)s.drafted);
		rs_drafter_free(d);
	}
	t_lm_close(&lm);
	t_ref_free(&r);
}
END_TEST

/*
 * Oracle drafts (the reference continuation, each right with probability
 * alpha): rounds accept 0..k drafts and roll back the rest, and the output
 * is still the reference, in fewer rounds the higher alpha is.
 */
START_TEST(oracle_drafts)
{
	static const double alphas[] = { 0.3, 0.8, 1.0 };
	struct t_ref	r;
	struct t_lm	lm;
	int32_t		out[64];

	t_ref_load(&r);
	t_lm_open(&lm, "tiny/model-f16.gguf", 2, 0, 0, 0);
	for (int k = 1; k <= 8; k *= 2) {
		int64_t rounds_prev = INT64_MAX;
		for (size_t a = 0; a < 3; a++) {
			struct rs_drafter *d = drafter(&lm, RS_DRAFTER_MTP, k,
			    1);
			struct rs_spec_stats s;
			rs_drafter_set_oracle(d, r.seq, r.n_seq, alphas[a], 5);
			spec(&lm, d, r.prompt[r.greedy_prompt],
			    r.len[r.greedy_prompt], r.n_greedy, out, &s, 0);
			for (int32_t i = 0; i < r.n_greedy; i++)
				ck_assert_msg(out[i] == r.greedy[i], "k %d, "
				    "alpha %g: token %d is %d, reference %d", k,
				    alphas[a], i, out[i], r.greedy[i]);
			ck_assert_int_gt(s.accepted, 0);
			ck_assert_int_le(s.rounds, rounds_prev);
			if (alphas[a] == 1.0)	/* all kept but at the end */
				ck_assert_int_eq(s.rounds, (r.n_greedy - 1 +
				    k) / (k + 1));
			rounds_prev = s.rounds;
			rs_drafter_free(d);
		}
	}
	t_lm_close(&lm);
	t_ref_free(&r);
}
END_TEST

/*
 * q4_k_m, another prompt, 200 tokens: each drafter, adaptive K, gives the
 * same tokens as plain greedy decoding.
 */
START_TEST(plain_equal)
{
	static const enum rs_drafter_kind kinds[] = { RS_DRAFTER_NONE,
	    RS_DRAFTER_NGRAM, RS_DRAFTER_MTP, RS_DRAFTER_MTP_NGRAM };
	struct t_ref	r;
	struct t_lm	lm;
	int32_t		want[200], got[200];

	t_ref_load(&r);
	t_lm_open(&lm, "tiny/model-q4_k_m.gguf", 2, 0, 0, 0);
	plain_greedy(&lm, r.prompt[2], r.len[2], 200, want);
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		struct rs_drafter *d = drafter(&lm, kinds[i], 6, 0);
		struct rs_spec_stats s;
		memset(got, 0xff, sizeof(got));
		spec(&lm, d, r.prompt[2], r.len[2], 200, got, &s, 0);
		ck_assert_msg(memcmp(got, want, sizeof(want)) == 0,
		    "%s: speculative output differs from plain greedy",
		    rs_drafter_kind_name(kinds[i]));
		printf("spec q4_k_m %s, 200 tokens: %lld rounds, %lld/%lld "
		    "drafts accepted\n", rs_drafter_kind_name(kinds[i]),
		    (long long)s.rounds, (long long)s.accepted,
		    (long long)s.drafted);
		rs_drafter_free(d);
	}
	t_lm_close(&lm);
	t_ref_free(&r);
}
END_TEST

/*
 * After speculative decoding with rejections (MTP drafts on random
 * weights, and oracle drafts half wrong), the state equals, bit for bit,
 * one that decoded only the kept tokens one by one with the MTP cache
 * filled in one batch from the trunk's hidden rows: the next trunk step's
 * logits and hidden state and the next MTP step's logits are identical.
 */
START_TEST(rollback_exact)
{
	struct t_ref	 r;
	struct t_lm	 lm;
	int32_t		 out[60], seq[128];
	const int64_t	 n_new = 60;

	t_ref_load(&r);
	t_lm_open(&lm, "tiny/model-f16.gguf", 2, 0, 0, 0);
	const int64_t v = lm.m->hp.n_vocab, dim = lm.m->hp.n_embd;
	float *la = malloc((size_t)(2 * v + 2 * dim) * sizeof(float));
	float *lb = la + v, *ha = lb + v, *hb = ha + dim;
	for (int oracle = 0; oracle < 2; oracle++) {
		struct rs_drafter *d = drafter(&lm, RS_DRAFTER_MTP, 4, 1);
		struct rs_spec_stats s;
		struct rs_err	 err = { 0 };
		int32_t		 n = r.len[1];

		if (oracle)
			rs_drafter_set_oracle(d, r.seq, r.n_seq, 0.5, 9);
		struct rs_state *a = spec(&lm, d, r.prompt[1], n, n_new, out,
		    &s, 1);
		ck_assert_int_gt(s.drafted, s.accepted);	/* rejections */
		/* B: prompt and the kept tokens, then the MTP cache in one
		   batch from the trunk's hidden rows (zeros before row 0) */
		memcpy(seq, r.prompt[1], (size_t)n * sizeof(int32_t));
		memcpy(seq + n, out, (size_t)(n_new - 1) * sizeof(int32_t));
		int32_t len = n + (int32_t)n_new - 1;
		struct rs_state *b = t_state(&lm, 0, 0);
		float *h = calloc((size_t)(len + 1) * dim, sizeof(float));
		ck_assert_int_eq(rs_engine_forward(lm.e, b, seq, len, NULL,
		    RS_LOGITS_NONE, h + dim, &err), RS_OK);
		ck_assert_int_eq(rs_engine_mtp_batch(lm.e, b, seq, len, 0, h,
		    NULL, NULL, &err), RS_OK);
		ck_assert_int_eq(rs_state_pos(a), len);
		ck_assert_int_eq(rs_state_mtp_pos(a), len);
		/* the next steps from both */
		ck_assert_int_eq(rs_engine_forward(lm.e, a, &out[n_new - 1], 1,
		    la, RS_LOGITS_LAST, ha, &err), RS_OK);
		ck_assert_int_eq(rs_engine_forward(lm.e, b, &out[n_new - 1], 1,
		    lb, RS_LOGITS_LAST, hb, &err), RS_OK);
		ck_assert_msg(memcmp(la, lb, (size_t)v * sizeof(float)) == 0,
		    "oracle %d: trunk logits differ after rollback", oracle);
		ck_assert(memcmp(ha, hb, (size_t)dim * sizeof(float)) == 0);
		ck_assert_int_eq(rs_engine_mtp(lm.e, a, out[n_new - 1], len, h +
		    (int64_t)len * dim, la, NULL, &err), RS_OK);
		ck_assert_int_eq(rs_engine_mtp(lm.e, b, out[n_new - 1], len, h +
		    (int64_t)len * dim, lb, NULL, &err), RS_OK);
		ck_assert_msg(memcmp(la, lb, (size_t)v * sizeof(float)) == 0,
		    "oracle %d: MTP cache differs after rollback", oracle);
		free(h);
		rs_state_free(a);
		rs_state_free(b);
		rs_drafter_free(d);
	}
	free(la);
	t_lm_close(&lm);
	t_ref_free(&r);
}
END_TEST

START_TEST(bad_input)
{
	struct t_lm	lm;
	struct rs_err	err = { 0 };
	struct rs_spec_stats s;
	int32_t		p[2] = { 1, 2 }, out[4];

	t_lm_open(&lm, "tiny/model-q8_0.gguf", 1, 0, 0, 0);
	struct rs_state *st = t_state(&lm, 2, 0);
	struct rs_drafter *d2 = drafter(&lm, RS_DRAFTER_MTP, 2, 1);
	struct rs_drafter *d1 = drafter(&lm, RS_DRAFTER_MTP, 1, 1);

	ck_assert_int_eq(rs_spec_greedy(lm.e, st, d1, p, 0, 4, out, &s, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "prompt") != NULL);
	ck_assert_int_eq(rs_spec_greedy(lm.e, st, d1, p, 2, 0, out, &s, &err),
	    RS_ERR_INVALID_ARG);
	/* two drafts need three snapshots */
	ck_assert_int_eq(rs_spec_greedy(lm.e, st, d2, p, 2, 4, out, &s, &err),
	    RS_ERR_LIMIT);
	ck_assert(strstr(err.msg, "snapshots") != NULL);
	ck_assert_int_eq(rs_spec_greedy(lm.e, st, d1, p, 2, 5000, out, &s,
	    &err), RS_ERR_LIMIT);
	ck_assert(strstr(err.msg, "context") != NULL);
	ck_assert_int_eq(rs_engine_forward(lm.e, st, p, 2, NULL, RS_LOGITS_NONE,
	    NULL, &err), RS_OK);
	ck_assert_int_eq(rs_spec_greedy(lm.e, st, d1, p, 2, 4, out, &s, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "fresh") != NULL);
	rs_drafter_free(d1);
	rs_drafter_free(d2);
	rs_state_free(st);
	t_lm_close(&lm);
}
END_TEST

Suite *
spec_suite(void)
{
	Suite	*s = suite_create("spec");
	TCase	*tc = tcase_create("greedy");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, reference_greedy);
	tcase_add_test(tc, oracle_drafts);
	tcase_add_test(tc, plain_equal);
	tcase_add_test(tc, rollback_exact);
	suite_add_tcase(s, tc);
	tc = tcase_create("bad_input");
	tcase_add_test(tc, bad_input);
	suite_add_tcase(s, tc);
	return (s);
}
