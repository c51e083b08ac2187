/*
 * check_logprob.c - log-softmax and top-k of one row of logits
 * (rs_logprob.h).
 *
 * Expected values come from the definition worked out by hand for small
 * rows (equal logits: −ln n; logits ln 1..ln 4: ln(i / 10); two logits a
 * gap d apart: −ln(1 + e^−d) and −d − ln(1 + e^−d)), and, for a larger
 * random row, from a straightforward computation here: the sum of e^l over
 * the row without any shift (the logits are small) and a full qsort of the
 * ids by (logit descending, id ascending).  Skipped tokens count as
 * logits of −∞: the rest renormalise among themselves.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_logprob.h"

/* |got − want| <= TOL, with both in the message. */
#define CK_NEAR(got, want, tol)						\
	ck_assert_msg(fabs((got) - (want)) <= (tol), "%s = %.17g, "	\
	    "expected %.17g (tolerance %g)", #got, (double)(got),	\
	    (double)(want), (double)(tol))

static void
compute(const float *l, int64_t n, int32_t tok, int k, struct rs_logprob *o)
{
	struct rs_err err = { 0 };

	ck_assert_msg(rs_logprob_compute(l, n, NULL, tok, k, o, &err) == RS_OK,
	    "%s", err.msg);
	ck_assert_int_eq(o->token, tok);
}

/* ---- hand-made rows ---- */

START_TEST(equal_logits)
{
	static const float l[4] = { 0, 0, 0, 0 };
	struct rs_logprob o;

	compute(l, 4, 2, 3, &o);
	/* softmax of equal logits is uniform: ln(1/4) */
	CK_NEAR(o.logprob, -log(4.0), 1e-15);
	ck_assert_int_eq(o.n_top, 3);
	/* ties: the lower id first, as the greedy sampler breaks them */
	for (int j = 0; j < 3; j++) {
		ck_assert_int_eq(o.top[j].token, j);
		CK_NEAR(o.top[j].logprob, -log(4.0), 1e-15);
	}
}
END_TEST

START_TEST(log_weights)
{
	float			l[4];
	struct rs_logprob	o;

	/*
	 * l_i = ln(i + 1): e^l sums to 1 + 2 + 3 + 4 = 10, so
	 * logprob(i) = ln((i + 1) / 10).  The logits are rounded to float
	 * (relative 2^-24, at most 8.3e-8 here); the logprob moves by at
	 * most twice that.
	 */
	for (int i = 0; i < 4; i++)
		l[i] = (float)log(i + 1.0);
	for (int32_t t = 0; t < 4; t++) {
		compute(l, 4, t, 4, &o);
		CK_NEAR(o.logprob, log((t + 1) / 10.0), 2e-7);
	}
	ck_assert_int_eq(o.n_top, 4);
	for (int j = 0; j < 4; j++) {
		ck_assert_int_eq(o.top[j].token, 3 - j);
		CK_NEAR(o.top[j].logprob, log((4 - j) / 10.0), 2e-7);
	}
}
END_TEST

START_TEST(two_logits)
{
	/* a gap of d = 2: p0 = 1 / (1 + e^-2), p1 = e^-2 / (1 + e^-2) */
	static const float l[2] = { 2, 0 };
	struct rs_logprob o;

	compute(l, 2, 0, 1, &o);
	CK_NEAR(o.logprob, -log1p(exp(-2.0)), 1e-15);
	ck_assert_int_eq(o.n_top, 1);
	ck_assert_int_eq(o.top[0].token, 0);
	compute(l, 2, 1, 0, &o);
	CK_NEAR(o.logprob, -2.0 - log1p(exp(-2.0)), 1e-15);
	ck_assert_int_eq(o.n_top, 0);
}
END_TEST

START_TEST(large_and_far)
{
	/*
	 * e^1000 overflows a double: only the shift by the maximum gives
	 * -ln(1 + e^-1 + e^-2) and so on.
	 */
	static const float big[3] = { 999, 1000, 998 };
	/* e^-800 underflows to 0, yet the logprob is -800 − ln(1 + e^-800) */
	static const float far[2] = { 0, -800 };
	double	 z = log(1 + exp(-1.0) + exp(-2.0));
	struct rs_logprob o;

	compute(big, 3, 1, 3, &o);
	CK_NEAR(o.logprob, -z, 1e-12);
	ck_assert_int_eq(o.top[0].token, 1);
	ck_assert_int_eq(o.top[1].token, 0);
	ck_assert_int_eq(o.top[2].token, 2);
	CK_NEAR(o.top[1].logprob, -1 - z, 1e-12);
	CK_NEAR(o.top[2].logprob, -2 - z, 1e-12);
	compute(far, 2, 1, 2, &o);
	CK_NEAR(o.logprob, -800.0, 1e-12);
	CK_NEAR(o.top[0].logprob, 0.0, 1e-15);
}
END_TEST

START_TEST(top_more_than_n)
{
	static const float l[3] = { -1, 5, 5 };
	struct rs_logprob o;

	compute(l, 3, 0, 5, &o);
	ck_assert_int_eq(o.n_top, 3);
	ck_assert_int_eq(o.top[0].token, 1);
	ck_assert_int_eq(o.top[1].token, 2);
	ck_assert_int_eq(o.top[2].token, 0);
	CK_NEAR(o.top[0].logprob, o.top[1].logprob, 0);
	CK_NEAR(o.logprob, o.top[2].logprob, 0);
}
END_TEST

START_TEST(skipped)
{
	/* tokens 0 and 3 left out: the softmax of {0, 0} is 1/2 each, and
	   the NaN of a skipped token is never read */
	static const float		l[4] = { 5, 0, 0, NAN };
	static const unsigned char	skip[4] = { 1, 0, 0, 1 };
	struct rs_logprob		o;
	struct rs_err			err = { 0 };

	ck_assert_msg(rs_logprob_compute(l, 4, skip, 1, 3, &o, &err) == RS_OK,
	    "%s", err.msg);
	CK_NEAR(o.logprob, -log(2.0), 1e-15);
	ck_assert_int_eq(o.n_top, 2);
	ck_assert_int_eq(o.top[0].token, 1);
	ck_assert_int_eq(o.top[1].token, 2);
	CK_NEAR(o.top[1].logprob, -log(2.0), 1e-15);
	ck_assert_int_eq(rs_logprob_compute(l, 4, skip, 0, 3, &o, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert_ptr_nonnull(strstr(err.msg, "token 0 is left out"));
}
END_TEST

/* ---- a random row against a straightforward computation ---- */

static const float *cmp_row;

/* By logit from the largest down, then by id. */
static int
cmp_id(const void *a, const void *b)
{
	int32_t	i = *(const int32_t *)a, j = *(const int32_t *)b;

	if (cmp_row[i] != cmp_row[j])
		return (cmp_row[i] > cmp_row[j] ? -1 : 1);
	return (i < j ? -1 : 1);
}

START_TEST(random_row)
{
	enum { N = 2176 };
	static float	 l[N];
	static int32_t	 ids[N];
	struct rs_logprob o;
	uint64_t	 x = 0x9e3779b97f4a7c15ULL;
	double		 sum = 0;

	/* logits in [-8, 8) on a grid of 1/4, so that many tie */
	for (int i = 0; i < N; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		l[i] = (float)((int)(x >> 58) - 32) / 4.0f;
		ids[i] = i;
		sum += exp((double)l[i]);
	}
	cmp_row = l;
	qsort(ids, N, sizeof(ids[0]), cmp_id);
	for (int32_t t = 0; t < N; t += 97) {
		compute(l, N, t, RS_LOGPROB_MAX_TOP, &o);
		/* both sums are about 2000 terms of size <= e^8: rounding
		   differs by ~N ulp of the log */
		CK_NEAR(o.logprob, (double)l[t] - log(sum), 1e-12);
		ck_assert_int_eq(o.n_top, RS_LOGPROB_MAX_TOP);
		for (int j = 0; j < RS_LOGPROB_MAX_TOP; j++) {
			ck_assert_msg(o.top[j].token == ids[j], "top[%d] = %d, "
			    "expected %d", j, o.top[j].token, ids[j]);
			CK_NEAR(o.top[j].logprob, (double)l[ids[j]] - log(sum),
			    1e-12);
		}
	}
}
END_TEST

/* ---- bad input ---- */

static const struct bad {
	int64_t		 n;
	int32_t		 tok;
	int		 k;
	float		 poison;	/* written to logit 1 when non-zero */
	const char	*needle;
} bad[] = {
	{ 0, 0, 0, 0, "0 logits" },
	{ 4, -1, 0, 0, "token -1 outside" },
	{ 4, 4, 0, 0, "token 4 outside" },
	{ 4, 0, -1, 0, "top -1 outside" },
	{ 4, 0, RS_LOGPROB_MAX_TOP + 1, 0, "top 21 outside" },
	{ 4, 0, 1, NAN, "logit 1 is nan" },
	{ 4, 0, 1, INFINITY, "logit 1 is inf" },
	{ 4, 0, 1, -INFINITY, "logit 1 is -inf" },
};

START_TEST(bad_input)
{
	const struct bad	*b = &bad[_i];
	float			 l[4] = { 0.5f, 1, 2, 3 };
	struct rs_logprob	 o;
	struct rs_err		 err = { 0 };

	if (b->poison != 0)	/* NaN included */
		l[1] = b->poison;
	memset(&o, 0x5a, sizeof(o));
	ck_assert_int_eq(rs_logprob_compute(l, b->n, NULL, b->tok, b->k, &o,
	    &err), RS_ERR_INVALID_ARG);
	ck_assert_msg(strstr(err.msg, b->needle) != NULL, "'%s' lacks '%s'",
	    err.msg, b->needle);
	ck_assert_int_eq(o.n_top, 0x5a5a5a5a);	/* untouched */
	/* ERR may be NULL */
	ck_assert_int_eq(rs_logprob_compute(l, b->n, NULL, b->tok, b->k, &o,
	    NULL), RS_ERR_INVALID_ARG);
}
END_TEST

Suite *
logprob_suite(void)
{
	Suite	*s = suite_create("logprob");
	TCase	*tc;

	tc = tcase_create("hand");
	tcase_add_test(tc, equal_logits);
	tcase_add_test(tc, log_weights);
	tcase_add_test(tc, two_logits);
	tcase_add_test(tc, large_and_far);
	tcase_add_test(tc, top_more_than_n);
	tcase_add_test(tc, skipped);
	suite_add_tcase(s, tc);
	tc = tcase_create("straightforward");
	tcase_add_test(tc, random_row);
	suite_add_tcase(s, tc);
	tc = tcase_create("bad_input");
	tcase_add_loop_test(tc, bad_input, 0, sizeof(bad) / sizeof(bad[0]));
	suite_add_tcase(s, tc);
	return (s);
}
