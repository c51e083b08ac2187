/*
 * check_xq.c - the 16-bit activation format (rs_xq.h) against its
 * definition: values within half a step of the input, bytes that rebuild
 * the integers, block sums, the special blocks, and the dot-product oracle
 * against a plain double dot product.  The GPU kernel is compared with
 * this code byte for byte in check_cuda.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_xq.h"

static float
meta(const uint8_t *xq, int64_t n, int64_t b, int k)
{
	float f;

	memcpy(&f, xq + 2 * n + RS_XQ_META_BYTES * b + 4 * k, sizeof(f));
	return (f);
}

START_TEST(round_trip)
{
	enum { N = 256 };
	float	 x[N];
	uint8_t	 q[RS_XQ_COL_BYTES(N)];
	uint32_t r = 12345;

	for (int i = 0; i < N; i++) {
		r = r * 1664525u + 1013904223u;
		/* magnitudes from 1e-3 to 1e3, both signs */
		x[i] = ((float)(r >> 8) / 16777216.0f - 0.5f) *
		    powf(10.0f, (float)(i % 7) - 3.0f);
	}
	rs_xq_quantize(x, N, q);
	for (int b = 0; b < N / 32; b++) {
		float amax = 0.0f;
		for (int i = 0; i < 32; i++)
			amax = fmaxf(amax, fabsf(x[32 * b + i]));
		float s = meta(q, N, b, 0);
		ck_assert_float_eq(s, amax / (float)RS_XQ_VMAX);
		int32_t sum = 0;
		for (int i = 0; i < 32; i++) {
			int64_t k = 32 * b + i;
			int32_t v = 256 * (int8_t)q[k] + (int8_t)q[N + k];
			ck_assert_int_le(abs(v), RS_XQ_VMAX);
			sum += v;
			/* x̃ = s·v within half a step (and the f32 rounding) */
			double err = fabs((double)rs_xq_value(q, N, k) - x[k]);
			ck_assert_msg(err <= 0.5 * s + 1e-6 * amax,
			    "value %lld: error %g, step %g", (long long)k, err, s);
		}
		ck_assert_float_eq(meta(q, N, b, 1), s * (float)sum);
	}
}
END_TEST

START_TEST(special_blocks)
{
	enum { N = 128 };
	float	 x[N];
	uint8_t	 q[RS_XQ_COL_BYTES(N)];

	for (int i = 0; i < 32; i++) {
		x[i] = 0.0f;				/* zeros */
		x[32 + i] = 1e-35f * (float)(i + 1);	/* below MIN_AMAX */
		x[64 + i] = i == 3 ? NAN : 1.0f;	/* a NaN */
		x[96 + i] = i == 31 ? -INFINITY : 2.0f;	/* an infinity */
	}
	x[0] = -0.0f;
	rs_xq_quantize(x, N, q);
	for (int b = 0; b < 4; b++)
		for (int i = 0; i < 32; i++) {
			ck_assert_int_eq(q[32 * b + i], 0);
			ck_assert_int_eq(q[N + 32 * b + i], 0);
		}
	ck_assert_float_eq(meta(q, N, 0, 0), 0.0f);
	ck_assert_float_eq(meta(q, N, 1, 0), 0.0f);
	ck_assert(isnan(meta(q, N, 2, 0)) && isnan(meta(q, N, 2, 1)));
	ck_assert(isnan(meta(q, N, 3, 0)) && isnan(meta(q, N, 3, 1)));
	/* extremes: ±amax map to ±RS_XQ_VMAX exactly, both bytes signed */
	for (int i = 0; i < 32; i++)
		x[i] = (float)(i - 16) / 16.0f;
	rs_xq_quantize(x, 32, q);
	ck_assert_int_eq(256 * (int8_t)q[0] + (int8_t)q[32], -RS_XQ_VMAX);
	ck_assert_int_eq((int8_t)q[0], -127);
	ck_assert_int_eq((int8_t)q[32], -127);
	ck_assert_int_eq(256 * (int8_t)q[16] + (int8_t)q[32 + 16], 0);
}
END_TEST

START_TEST(dot_oracle)
{
	enum { N = 96 };
	float	 x[N], w[N];
	uint8_t	 q[RS_XQ_COL_BYTES(N)];
	double	 plain = 0.0, bound = 0.0;

	for (int i = 0; i < N; i++) {
		x[i] = sinf(0.37f * (float)i) * 3.0f;
		w[i] = cosf(0.11f * (float)i);
	}
	rs_xq_quantize(x, N, q);
	for (int i = 0; i < N; i++) {
		plain += (double)w[i] * x[i];
		bound += fabs(w[i]) * 0.5 * meta(q, N, i / 32, 0);
	}
	double got = rs_xq_dot_ref(w, q, N);
	ck_assert_msg(fabs(got - plain) <= bound * 1.001 + 1e-9,
	    "dot %g, f32 dot %g, bound %g", got, plain, bound);
	ck_assert(got != plain);	/* it reads x̃, not x */
}
END_TEST

/*
 * A batch, column after column or block-major: each byte and meta of
 * column t sits where rs_xq.h says (offsets written out here, not through
 * the macros), and rs_xq_column gives back what rs_xq_quantize makes of
 * the column.
 */
START_TEST(batch_layout)
{
	enum { N = 96, NB = 3, LDX = 100 };
	float	 x[NB * LDX];
	uint8_t	 q[RS_XQ_BATCH_BYTES(N, NB)], one[RS_XQ_COL_BYTES(N)];
	uint8_t	 col[RS_XQ_COL_BYTES(N)];

	/* (2·96 + 96/4)·3 = 648 bytes of data, padded to 16, and the
	   32-byte tail */
	ck_assert_int_eq(sizeof(q), 688);
	for (int i = 0; i < NB * LDX; i++)
		x[i] = sinf(0.7f * (float)i) * (float)(1 + i % 5);
	for (int bm = 0; bm < 2; bm++) {
		rs_xq_quantize_batch(x, LDX, N, NB, bm, q);
		for (int t = 0; t < NB; t++) {
			rs_xq_quantize(x + t * LDX, N, one);
			for (int i = 0; i < N; i++) {
				const int s = bm ? i / 32 * NB + t :
				    t * (N / 32) + i / 32;
				ck_assert_int_eq(q[32 * s + i % 32], one[i]);
				ck_assert_int_eq(q[NB * N + 32 * s + i % 32],
				    one[N + i]);
				if (i % 32 == 0)
					ck_assert_mem_eq(q + 2 * NB * N + 8 * s,
					    one + 2 * N + i / 32 * 8, 8);
			}
			memset(col, 0xA5, sizeof(col));
			rs_xq_column(q, N, NB, bm, t, col);
			ck_assert_mem_eq(col, one, RS_XQ_DATA_BYTES(N));
		}
	}
}
END_TEST

Suite *
xq_suite(void)
{
	Suite	*s = suite_create("xq");
	TCase	*tc = tcase_create("format");

	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, special_blocks);
	tcase_add_test(tc, dot_oracle);
	tcase_add_test(tc, batch_layout);
	suite_add_tcase(s, tc);
	return (s);
}
