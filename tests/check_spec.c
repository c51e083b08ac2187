/*
 * check_spec.c - greedy speculative decoding with MTP drafts: its output is
 * plain greedy decoding's, token for token, for every draft length.  The
 * expected tokens come from reference.json (HF transformers' greedy
 * continuation, f16 model) and, for the quantized file, from token-by-token
 * decoding through the engine.
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

static void
spec_with(const struct t_lm *lm, const int32_t *p, int32_t n,
    const struct rs_spec_opts *o, int32_t n_new, int32_t *out,
    struct rs_spec_stats *stats)
{
	struct rs_state	*st = t_state(lm, o->k + 1, 0);
	struct rs_err	 err = { 0 };

	ck_assert_msg(rs_spec_greedy(lm->e, st, p, n, o, n_new, out, stats,
	    &err) == RS_OK, "k %d: %s", o->k, err.msg);
	rs_state_free(st);
}

static void
spec(const struct t_lm *lm, const int32_t *p, int32_t n, int k, int32_t n_new,
    int32_t *out, struct rs_spec_stats *stats)
{
	struct rs_spec_opts o = { .k = k };

	spec_with(lm, p, n, &o, n_new, out, stats);
}

/*
 * A drafter that knows the answer: the reference sequence (prompt +
 * greedy continuation), wrong at every position that is a multiple of
 * WRONG_EVERY, so rounds accept every count from 0 to k.
 */
struct oracle {
	const int32_t	*seq;
	int32_t		 n_seq;
	int32_t		 wrong_every;
	int64_t		 calls;
};

static int
oracle_draft(void *ctx, int32_t pos, int32_t y0, int32_t *drafts, int max)
{
	struct oracle *o = ctx;
	int n = 0;

	(void)y0;
	o->calls++;
	for (int32_t q = pos + 1; n < max && q < o->n_seq; q++, n++)
		drafts[n] = q % o->wrong_every == 0 ? (o->seq[q] + 1) % 2176 :
		    o->seq[q];
	return (n);
}

/* f16: every draft length reproduces reference.json's 40 greedy tokens. */
START_TEST(reference_greedy)
{
	struct t_ref	r;
	struct t_lm	lm;
	int32_t		out[64];

	t_ref_load(&r);
	/* a small batch, so the prompt also crosses chunk boundaries */
	t_lm_open(&lm, "tiny/model-f16.gguf", 2, 16, 0, 0);
	for (int k = 1; k <= 4; k++) {
		struct rs_spec_stats s;
		memset(out, 0xff, sizeof(out));
		spec(&lm, r.prompt[r.greedy_prompt], r.len[r.greedy_prompt], k,
		    r.n_greedy, out, &s);
		for (int32_t i = 0; i < r.n_greedy; i++)
			ck_assert_msg(out[i] == r.greedy[i], "k %d: token %d is "
			    "%d, reference %d", k, i, out[i], r.greedy[i]);
		ck_assert_int_eq(s.generated, r.n_greedy);
		ck_assert(s.rounds > 0 && s.accepted <= s.drafted);
		/* each round yields its accepted drafts plus one token */
		ck_assert_int_le(s.rounds + s.accepted, r.n_greedy - 1 + k);
		printf("spec f16 k=%d: %lld rounds, %lld/%lld drafts accepted "
		    "(%.2f tokens per verification)\n", k, (long long)s.rounds,
		    (long long)s.accepted, (long long)s.drafted,
		    (double)(r.n_greedy - 1) / (double)s.rounds);
	}
	t_lm_close(&lm);
	t_ref_free(&r);
}
END_TEST

/*
 * Drafts that are mostly right: rounds accept 0..k drafts and roll back
 * the rest, and the output is still the reference, in fewer rounds.
 */
START_TEST(oracle_drafts)
{
	struct t_ref	r;
	struct t_lm	lm;
	int32_t		out[64];

	t_ref_load(&r);
	t_lm_open(&lm, "tiny/model-f16.gguf", 2, 0, 0, 0);
	for (int k = 1; k <= 8; k *= 2)
		for (int32_t w = 3; w <= 64; w *= 4) {
			struct oracle oc = { r.seq, r.n_seq, w, 0 };
			struct rs_spec_opts o = { .k = k, .draft = oracle_draft,
			    .draft_ctx = &oc };
			struct rs_spec_stats s;
			spec_with(&lm, r.prompt[r.greedy_prompt],
			    r.len[r.greedy_prompt], &o, r.n_greedy, out, &s);
			for (int32_t i = 0; i < r.n_greedy; i++)
				ck_assert_msg(out[i] == r.greedy[i], "k %d, "
				    "wrong every %d: token %d is %d, reference "
				    "%d", k, w, i, out[i], r.greedy[i]);
			ck_assert_int_gt(s.accepted, 0);
			ck_assert_int_lt(s.rounds, r.n_greedy - 1);
			if (w == 48)
				printf("spec oracle k=%d: %lld rounds for %d "
				    "tokens, %lld/%lld drafts accepted\n", k,
				    (long long)s.rounds, r.n_greedy,
				    (long long)s.accepted, (long long)s.drafted);
		}
	t_lm_close(&lm);
	t_ref_free(&r);
}
END_TEST

/* q4_k_m, another prompt: the same tokens as plain greedy decoding. */
START_TEST(plain_equal)
{
	struct t_ref	r;
	struct t_lm	lm;
	int32_t		want[48], got[48];

	t_ref_load(&r);
	t_lm_open(&lm, "tiny/model-q4_k_m.gguf", 2, 0, 0, 0);
	plain_greedy(&lm, r.prompt[2], r.len[2], 48, want);
	for (int k = 1; k <= 8; k *= 2) {
		struct rs_spec_stats s;
		spec(&lm, r.prompt[2], r.len[2], k, 48, got, &s);
		ck_assert_msg(memcmp(got, want, sizeof(want)) == 0,
		    "k %d: speculative output differs from plain greedy", k);
	}
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
	struct rs_spec_opts k0 = { .k = 0 }, k1 = { .k = 1 }, k2 = { .k = 2 },
	    k17 = { .k = 17 };

	ck_assert_int_eq(rs_spec_greedy(lm.e, st, p, 2, &k0, 4, out, &s, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_spec_greedy(lm.e, st, p, 2, &k17, 4, out, &s, &err),
	    RS_ERR_INVALID_ARG);
	/* two drafts need three snapshots */
	ck_assert_int_eq(rs_spec_greedy(lm.e, st, p, 2, &k2, 4, out, &s, &err),
	    RS_ERR_LIMIT);
	ck_assert(strstr(err.msg, "snapshots") != NULL);
	ck_assert_int_eq(rs_spec_greedy(lm.e, st, p, 2, &k1, 5000, out, &s,
	    &err), RS_ERR_LIMIT);
	ck_assert(strstr(err.msg, "context") != NULL);
	ck_assert_int_eq(rs_engine_forward(lm.e, st, p, 2, NULL, RS_LOGITS_NONE,
	    NULL, &err), RS_OK);
	ck_assert_int_eq(rs_spec_greedy(lm.e, st, p, 2, &k1, 4, out, &s, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "fresh") != NULL);
	rs_state_free(st);
	t_lm_close(&lm);
}
END_TEST

Suite *
spec_suite(void)
{
	Suite	*s = suite_create("spec");
	TCase	*tc = tcase_create("greedy");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, reference_greedy);
	tcase_add_test(tc, oracle_drafts);
	tcase_add_test(tc, plain_equal);
	suite_add_tcase(s, tc);
	tc = tcase_create("bad_input");
	tcase_add_test(tc, bad_input);
	suite_add_tcase(s, tc);
	return (s);
}
