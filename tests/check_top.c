/*
 * check_top.c - top-k selection (rs_top.h) and what uses it: the
 * reference rs_top_select, rs_engine_forward_top on the CPU backend against
 * rs_engine_forward's rows, and rs_sample_next_top against rs_sample_next
 * (the same tokens, the same draws).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_engine.h"
#include "rs_sample.h"
#include "rs_top.h"
#include "rs_verify.h"
#include "t_ref.h"
#include "t_util.h"

/* Ties by the lower id, padding past the finite values, the first bad one. */
START_TEST(select_order)
{
	const float	 x[8] = { 1, 3, 3, -2, 7, 3, 0, 7 };
	float		 y[4] = { 2, NAN, 5, -INFINITY };
	struct rs_top	 t[8];

	ck_assert_int_eq(rs_top_select(x, 8, 5, NULL, t), -1);
	ck_assert_int_eq(t[0].id, 4);
	ck_assert_int_eq(t[1].id, 7);
	ck_assert_int_eq(t[2].id, 1);
	ck_assert_int_eq(t[3].id, 2);
	ck_assert_int_eq(t[4].id, 5);
	ck_assert(t[4].logit == 3.0f);
	ck_assert_int_eq(rs_top_select(x, 8, 1, NULL, t), -1);
	ck_assert_int_eq(t[0].id, 4);
	ck_assert_int_eq(rs_top_select(y, 4, 4, NULL, t), 1);
	ck_assert_int_eq(t[0].id, 2);
	ck_assert_int_eq(t[1].id, 0);
	ck_assert_int_eq(t[2].id, -1);
	ck_assert(t[3].logit == -INFINITY);
	ck_assert_int_eq(rs_top_select(x, 8, 8, NULL, t), -1);
	for (int i = 1; i < 8; i++)
		ck_assert(t[i - 1].logit > t[i].logit ||
		    (t[i - 1].logit == t[i].logit && t[i - 1].id < t[i].id));
	/* skipped tokens are left out, and still checked */
	const unsigned char skip[8] = { 0, 0, 1, 0, 1, 0, 0, 0 };
	ck_assert_int_eq(rs_top_select(x, 8, 3, skip, t), -1);
	ck_assert_int_eq(t[0].id, 7);
	ck_assert_int_eq(t[1].id, 1);
	ck_assert_int_eq(t[2].id, 5);
	const unsigned char skip1[4] = { 0, 1, 0, 0 };
	ck_assert_int_eq(rs_top_select(y, 4, 1, skip1, t), 1);
}
END_TEST

/* Every row of a prompt, and the last one, as rs_engine_forward's rows. */
START_TEST(engine_rows)
{
	struct t_lm	 lm;
	struct rs_err	 err;
	const int32_t	 tok[7] = { 11, 400, 3, 1999, 7, 7, 250 };
	const int	 n = 7, k = 16;
	int64_t		 v;
	float		*lg;
	struct rs_top	 top[7 * 16], want[16];

	t_lm_open(&lm, "tiny/model-f16.gguf", 1, 3, 0, 0);
	v = rs_engine_model(lm.e)->hp.n_vocab;
	lg = malloc((size_t)(n * v) * sizeof(float));
	ck_assert_int_eq(rs_engine_forward(lm.e, lm.st, tok, n, lg,
	    RS_LOGITS_ALL, NULL, &err), RS_OK);
	rs_state_reset(lm.st);
	ck_assert_msg(rs_engine_forward_top(lm.e, lm.st, tok, n, RS_LOGITS_ALL,
	    k, 0, top, NULL, &err) == RS_OK, "%s", err.msg);
	ck_assert_int_eq(rs_state_pos(lm.st), n);
	for (int r = 0; r < n; r++) {
		ck_assert_int_eq(rs_top_select(lg + r * v, v, k, NULL, want), -1);
		ck_assert(memcmp(want, top + r * k, sizeof(want)) == 0);
	}
	rs_state_reset(lm.st);
	ck_assert_int_eq(rs_engine_forward_top(lm.e, lm.st, tok, n,
	    RS_LOGITS_LAST, 1, 0, top, NULL, &err), RS_OK);
	ck_assert_int_eq(top[0].id, rs_logits_argmax(lg + (n - 1) * v, v));
	/* a skip mask: the argmax and every even token left out */
	unsigned char *mask = calloc((size_t)v, 1);
	for (int64_t i = 0; i < v; i += 2)
		mask[i] = 1;
	mask[top[0].id] = 1;
	ck_assert_int_eq(rs_engine_set_top_skip(lm.e, mask, &err), RS_OK);
	for (int skip = 0; skip < 2; skip++) {
		rs_state_reset(lm.st);
		ck_assert_int_eq(rs_engine_forward_top(lm.e, lm.st, tok, n,
		    RS_LOGITS_ALL, k, skip, top, NULL, &err), RS_OK);
		for (int r = 0; r < n; r++) {
			rs_top_select(lg + r * v, v, k, skip ? mask : NULL, want);
			ck_assert(memcmp(want, top + r * k, sizeof(want)) == 0);
		}
	}
	free(mask);
	ck_assert_int_eq(rs_engine_set_top_skip(lm.e, NULL, &err), RS_OK);
	/* refused: mode, k, buffer, too many rows; the state unchanged */
	ck_assert_int_eq(rs_engine_forward_top(lm.e, lm.st, tok, 1,
	    RS_LOGITS_NONE, 1, 0, top, NULL, &err), RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "mode") != NULL);
	ck_assert_int_eq(rs_engine_forward_top(lm.e, lm.st, tok, 1,
	    RS_LOGITS_LAST, 0, 0, top, NULL, &err), RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_engine_forward_top(lm.e, lm.st, tok, 1,
	    RS_LOGITS_LAST, RS_TOP_MAX + 1, 0, top, NULL, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "candidates") != NULL);
	ck_assert_int_eq(rs_engine_forward_top(lm.e, lm.st, tok, 1,
	    RS_LOGITS_LAST, 1, 0, NULL, NULL, &err), RS_ERR_INVALID_ARG);
	int32_t many[RS_ENGINE_EXACT_MAX + 1] = { 0 };
	ck_assert_int_eq(rs_engine_forward_top(lm.e, lm.st, many,
	    RS_ENGINE_EXACT_MAX + 1, RS_LOGITS_ALL, 1, 0, top, NULL, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "at most") != NULL);
	ck_assert_int_eq(rs_state_pos(lm.st), n);
	/* an MTP step: its row's best as rs_engine_mtp's row gives them */
	{
		const int64_t d = rs_engine_model(lm.e)->hp.n_embd;
		float *h = calloc((size_t)d, sizeof(float));
		float *h1 = malloc((size_t)d * sizeof(float));
		float *h2 = malloc((size_t)d * sizeof(float));
		struct rs_state *s2 = t_state(&lm, 0, 0);
		rs_state_reset(lm.st);
		ck_assert_int_eq(rs_engine_mtp(lm.e, lm.st, 42, 0, h, lg, h1,
		    &err), RS_OK);
		ck_assert_int_eq(rs_engine_mtp_top(lm.e, s2, 42, 0, h, k, top,
		    h2, &err), RS_OK);
		rs_top_select(lg, v, k, NULL, want);
		ck_assert(memcmp(want, top, sizeof(want)) == 0);
		ck_assert(memcmp(h1, h2, (size_t)d * sizeof(float)) == 0);
		ck_assert_int_eq(rs_engine_mtp_top(lm.e, s2, 42, 0, h, 0, top,
		    h2, &err), RS_ERR_INVALID_ARG);
		rs_state_free(s2);
		free(h);
		free(h1);
		free(h2);
	}
	free(lg);
	t_lm_close(&lm);
}
END_TEST

/*
 * Greedy and top-k sampling (with top-p, min-p, temperature) from the best
 * tokens choose as from the whole row, draw for draw; penalties and biases
 * need the row.
 */
START_TEST(sampler)
{
	enum { V = 5000, ROWS = 200 };
	struct rs_sample_params	 p;
	struct rs_sampler	*a, *b;
	struct rs_logit_bias	 bias = { 3, -1.0f };
	struct rs_top		 top[RS_TOP_MAX];
	struct rs_err		 err;
	float			*row = malloc(V * sizeof(float));
	uint64_t		 rng = 12345;
	int32_t			 ta, tb;

	for (int mode = 0; mode < 3; mode++) {
		rs_sample_params_init(&p);
		p.seed = 7;
		if (mode == 0)
			p.temperature = 0;
		else {
			p.top_k = mode == 1 ? 20 : RS_TOP_MAX;
			p.top_p = mode == 1 ? 0.95f : 1.0f;
			p.min_p = mode == 2 ? 0.05f : 0.0f;
			p.temperature = 0.8f;
		}
		ck_assert_int_eq(rs_sample_new(&a, &p, V, &err), RS_OK);
		ck_assert_int_eq(rs_sample_new(&b, &p, V, &err), RS_OK);
		ck_assert_int_eq(rs_sample_top_need(b, NULL), mode == 0 ? 1 :
		    p.top_k);
		for (int r = 0; r < ROWS; r++) {
			for (int i = 0; i < V; i++) {
				rng ^= rng << 13;
				rng ^= rng >> 7;
				rng ^= rng << 17;
				/* coarse values: ties between ids happen */
				row[i] = (float)(rng % 64) * 0.25f;
			}
			ck_assert_int_eq(rs_top_select(row, V, RS_TOP_MAX, NULL, top),
			    -1);
			ck_assert_int_eq(rs_sample_next(a, row, &ta, &err),
			    RS_OK);
			ck_assert_int_eq(rs_sample_next_top(b, top, RS_TOP_MAX,
			    &tb, &err), RS_OK);
			ck_assert_int_eq(ta, tb);
			ck_assert_int_eq(rs_sample_accept(a, ta, &err), RS_OK);
			ck_assert_int_eq(rs_sample_accept(b, tb, &err), RS_OK);
		}
		rs_sample_free(a);
		rs_sample_free(b);
	}
	/* bans as a skip mask: exactly the −∞ biases, each once */
	{
		unsigned char *mask = calloc(V, 1);
		struct rs_logit_bias bans[3] = { { 9, -INFINITY },
		    { 4000, -INFINITY }, { 17, -INFINITY } };
		mask[9] = mask[4000] = mask[17] = 1;
		rs_sample_params_init(&p);
		p.top_k = 20;
		p.bias = bans;
		p.n_bias = 3;
		ck_assert_int_eq(rs_sample_new(&a, &p, V, &err), RS_OK);
		ck_assert_int_eq(rs_sample_new(&b, &p, V, &err), RS_OK);
		ck_assert_int_eq(rs_sample_top_need(a, NULL), 0);
		ck_assert_int_eq(rs_sample_top_need(a, mask), 20);
		for (int r = 0; r < ROWS; r++) {
			for (int i = 0; i < V; i++) {
				rng ^= rng << 13;
				rng ^= rng >> 7;
				rng ^= rng << 17;
				row[i] = (float)(rng % 64) * 0.25f;
			}
			row[4000] = 100.0f;	/* banned: never chosen */
			rs_top_select(row, V, 20, mask, top);
			ck_assert_int_eq(rs_sample_next(a, row, &ta, &err),
			    RS_OK);
			ck_assert_int_eq(rs_sample_next_top(b, top, 20, &tb,
			    &err), RS_OK);
			ck_assert_int_eq(ta, tb);
			ck_assert_int_ne(ta, 4000);
		}
		mask[5] = 1;		/* a flagged token the sampler allows */
		ck_assert_int_eq(rs_sample_top_need(a, mask), 0);
		rs_sample_free(a);
		rs_sample_free(b);
		bans[2].token = 9;	/* the same ban twice */
		mask[5] = 0;
		ck_assert_int_eq(rs_sample_new(&a, &p, V, &err), RS_OK);
		ck_assert_int_eq(rs_sample_top_need(a, mask), 0);
		rs_sample_free(a);
		bans[2].bias = -1.0f;	/* not a ban */
		ck_assert_int_eq(rs_sample_new(&a, &p, V, &err), RS_OK);
		ck_assert_int_eq(rs_sample_top_need(a, mask), 0);
		rs_sample_free(a);
		free(mask);
	}
	/* what needs the row */
	rs_sample_params_init(&p);
	ck_assert_int_eq(rs_sample_new(&a, &p, V, &err), RS_OK);
	ck_assert_int_eq(rs_sample_top_need(a, NULL), 0);	/* top-k off */
	ck_assert_int_eq(rs_sample_next_top(a, top, RS_TOP_MAX, &ta, &err),
	    RS_ERR_INVALID_ARG);
	rs_sample_free(a);
	p.temperature = 0;
	p.bias = &bias;
	p.n_bias = 1;
	ck_assert_int_eq(rs_sample_new(&a, &p, V, &err), RS_OK);
	ck_assert_int_eq(rs_sample_top_need(a, NULL), 0);
	rs_sample_free(a);
	p.n_bias = 0;
	p.repetition_penalty = 1.1f;
	ck_assert_int_eq(rs_sample_new(&a, &p, V, &err), RS_OK);
	ck_assert_int_eq(rs_sample_top_need(a, NULL), 0);
	rs_sample_free(a);
	free(row);
}
END_TEST

Suite *
top_suite(void)
{
	Suite	*s = suite_create("top");
	TCase	*tc = tcase_create("select");
	TCase	*te = tcase_create("engine");

	tcase_add_test(tc, select_order);
	tcase_add_test(tc, sampler);
	tcase_set_timeout(te, 60);
	tcase_add_test(te, engine_rows);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, te);
	return (s);
}
