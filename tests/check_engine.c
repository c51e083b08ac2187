/*
 * check_engine.c - the engine API's argument checks: every refused call
 * names the problem and leaves the state as it was; the pass-cost
 * measurement's contract.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_engine.h"
#include "t_ref.h"
#include "t_util.h"

START_TEST(bad_options)
{
	struct rs_model		*m;
	struct rs_engine	*e = NULL;
	struct rs_engine_opts	 o = { 0 };
	struct rs_err		 err;

	ck_assert_int_eq(rs_model_open(&m, t_fixture("tiny/model-f16.gguf"),
	    &err), RS_OK);
	o.n_threads = -1;
	ck_assert_int_eq(rs_engine_new(&e, m, &o, &err), RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "thread count") != NULL);
	o.n_threads = 1;
	o.max_batch = -5;
	ck_assert_int_eq(rs_engine_new(&e, m, &o, &err), RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "max batch") != NULL);
	o.max_batch = 0;
	o.backend = RS_BACKEND_CUDA;
	ck_assert_int_eq(rs_engine_new(&e, m, &o, &err), RS_ERR_UNSUPPORTED);
	ck_assert(strstr(err.msg, "cuda") != NULL);
	ck_assert(e == NULL);
	o.backend = RS_BACKEND_AUTO;
	ck_assert_int_eq(rs_engine_new(&e, m, &o, &err), RS_OK);
	ck_assert_int_eq(rs_engine_backend(e), RS_BACKEND_CPU);
	ck_assert_int_eq(rs_engine_max_batch(e), 64);
	ck_assert_int_eq(rs_backend_from_name("CPU"), RS_BACKEND_CPU);
	ck_assert_int_eq(rs_backend_from_name("tpu"), -1);
	ck_assert_str_eq(rs_backend_name(RS_BACKEND_CUDA), "cuda");
	rs_engine_free(e);
	rs_engine_free(NULL);
	rs_model_close(m);
}
END_TEST

START_TEST(bad_calls)
{
	struct t_lm	 lm;
	struct rs_model	*other;
	struct rs_state	*foreign, *small;
	struct rs_state_opts so = { 4, 0, 0 };
	struct rs_err	 err;
	int32_t		 tok[6] = { 1, 2, 3, 4, 5, 6 }, bad[2] = { 5, 2176 };
	float		*lg, h[256] = { 0 };

	t_lm_open(&lm, "tiny/model-f16.gguf", 1, 0, 0, 0);
	lg = calloc((size_t)(6 * lm.m->hp.n_vocab), sizeof(float));
	ck_assert_int_eq(rs_engine_forward(lm.e, lm.st, tok, 0, lg,
	    RS_LOGITS_ALL, NULL, &err), RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "no tokens") != NULL);
	ck_assert_int_eq(rs_engine_forward(lm.e, lm.st, bad, 2, lg,
	    RS_LOGITS_ALL, NULL, &err), RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "token 2176 at index 1") != NULL);
	ck_assert(strstr(err.msg, "vocabulary") != NULL);
	bad[1] = -3;
	ck_assert_int_eq(rs_engine_forward(lm.e, lm.st, bad, 2, lg,
	    RS_LOGITS_ALL, NULL, &err), RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_engine_forward(lm.e, lm.st, tok, 2, NULL,
	    RS_LOGITS_LAST, NULL, &err), RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_state_pos(lm.st), 0);
	/* the context: 4 positions, 3 used, then 2 more do not fit */
	ck_assert_int_eq(rs_state_new(&small, lm.m, &so, &err), RS_OK);
	ck_assert_int_eq(rs_engine_forward(lm.e, small, tok, 5, lg,
	    RS_LOGITS_ALL, NULL, &err), RS_ERR_LIMIT);
	ck_assert(strstr(err.msg, "exceed the context of 4") != NULL);
	ck_assert_int_eq(rs_engine_forward(lm.e, small, tok, 3, lg,
	    RS_LOGITS_LAST, NULL, &err), RS_OK);
	ck_assert_int_eq(rs_engine_forward(lm.e, small, tok, 2, lg,
	    RS_LOGITS_LAST, NULL, &err), RS_ERR_LIMIT);
	ck_assert_int_eq(rs_state_pos(small), 3);
	/* MTP: no hidden input, a gap, past the context */
	ck_assert_int_eq(rs_engine_mtp(lm.e, small, 1, 0, NULL, lg, NULL,
	    &err), RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_engine_mtp(lm.e, small, 1, 2, h, lg, NULL, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_engine_mtp(lm.e, small, 9999, 0, h, lg, NULL,
	    &err), RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_engine_mtp_batch(lm.e, small, tok, 5, 0, h, lg,
	    NULL, &err), RS_ERR_LIMIT);
	ck_assert_int_eq(rs_state_mtp_pos(small), 0);
	/* a state of another model object */
	ck_assert_int_eq(rs_model_open(&other,
	    t_fixture("tiny/model-f16.gguf"), &err), RS_OK);
	ck_assert_int_eq(rs_state_new(&foreign, other, NULL, &err), RS_OK);
	ck_assert_int_eq(rs_engine_forward(lm.e, foreign, tok, 1, lg,
	    RS_LOGITS_LAST, NULL, &err), RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "another model") != NULL);
	rs_state_free(foreign);
	rs_model_close(other);
	rs_state_free(small);
	free(lg);
	t_lm_close(&lm);
}
END_TEST

/*
 * rs_engine_pass_costs on the CPU: the one-token pass is the unit, every
 * cost finite and positive, the MTP step's too (the tiny model has the
 * block); a second call for fewer sizes returns the remembered values
 * bit for bit (timings never repeat to the bit); a call for more sizes
 * measures again; sizes outside [1, RS_ENGINE_EXACT_MAX] are refused; a
 * state of the caller's is left as it was (its next step equals the same
 * tokens run without the measurement in between).  The times themselves
 * are the machine's: not checked.
 */
START_TEST(pass_costs)
{
	struct t_lm	 lm;
	struct rs_err	 err;
	double		 c[RS_ENGINE_EXACT_MAX], again[RS_ENGINE_EXACT_MAX];
	double		 mtp = -1.0, mtp2 = -1.0;

	t_lm_open(&lm, "tiny/model-q8_0.gguf", 1, 0, 0, 0);
	const int64_t V = lm.m->hp.n_vocab;
	float	*a = malloc((size_t)V * sizeof(float));
	float	*b = malloc((size_t)V * sizeof(float));
	int32_t	 tok[3] = { 5, 17, 99 };

	/* the caller's state: two tokens before, the third after */
	ck_assert_int_eq(rs_engine_forward(lm.e, lm.st, tok, 2, NULL,
	    RS_LOGITS_NONE, NULL, &err), RS_OK);
	ck_assert_msg(rs_engine_pass_costs(lm.e, 5, c, &mtp, &err) == RS_OK,
	    "%s", err.msg);
	ck_assert_int_eq(rs_engine_forward(lm.e, lm.st, tok + 2, 1, b,
	    RS_LOGITS_LAST, NULL, &err), RS_OK);
	rs_state_reset(lm.st);
	ck_assert_int_eq(rs_engine_forward(lm.e, lm.st, tok, 3, a,
	    RS_LOGITS_LAST, NULL, &err), RS_OK);
	ck_assert(memcmp(a, b, (size_t)V * sizeof(float)) == 0);
	ck_assert(c[0] == 1.0);
	for (int n = 1; n < 5; n++)
		ck_assert_msg(isfinite(c[n]) && c[n] > 0.0, "%d: %g", n, c[n]);
	ck_assert(isfinite(mtp) && mtp > 0.0);
	ck_assert_int_eq(rs_engine_pass_costs(lm.e, 3, again, &mtp2, &err),
	    RS_OK);
	ck_assert(memcmp(c, again, 3 * sizeof(double)) == 0 && mtp2 == mtp);
	ck_assert_int_eq(rs_engine_pass_costs(lm.e, 7, again, NULL, &err),
	    RS_OK);
	ck_assert(again[0] == 1.0 && isfinite(again[6]) && again[6] > 0.0);
	ck_assert_int_eq(rs_engine_pass_costs(lm.e, 0, c, NULL, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "pass costs") != NULL);
	ck_assert_int_eq(rs_engine_pass_costs(lm.e, RS_ENGINE_EXACT_MAX + 1,
	    c, NULL, &err), RS_ERR_INVALID_ARG);
	free(a);
	free(b);
	t_lm_close(&lm);
}
END_TEST

Suite *
engine_suite(void)
{
	Suite	*s = suite_create("engine");
	TCase	*tc = tcase_create("bad_input");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, bad_options);
	tcase_add_test(tc, bad_calls);
	tcase_add_test(tc, pass_costs);
	suite_add_tcase(s, tc);
	return (s);
}
