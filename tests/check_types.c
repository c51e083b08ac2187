/*
 * check_types.c - block decoders against hand-built blocks whose values
 * follow from qwen35-model.md §7 by inspection, encoder round trips with
 * error bounds, and the tiny fixture's q8_0 file against its f16 file.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_blocks.h"
#include "rs_gguf.h"
#include "rs_half.h"
#include "rs_types.h"
#include "rs_verify.h"
#include "t_util.h"

#define H_ONE	0x3c00	/* 1.0 in binary16 */
#define H_HALF	0x3800	/* 0.5 */
#define H_QUART	0x3400	/* 0.25 */
#define H_TWO	0x4000	/* 2.0 */

static void
dequant(int type, const void *blk, float *y, int n)
{
	struct rs_err err;

	ck_assert_int_eq(rs_dequant_row(type, blk, y, n, &err), RS_OK);
}

/* ---- float formats ---- */

START_TEST(half_values)
{
	ck_assert(rs_f16_to_f32(0x3c00) == 1.0f);
	ck_assert(rs_f16_to_f32(0xc000) == -2.0f);
	ck_assert(rs_f16_to_f32(0x7bff) == 65504.0f);
	ck_assert(rs_f16_to_f32(0x0001) == ldexpf(1.0f, -24));
	ck_assert(rs_f16_to_f32(0x0400) == ldexpf(1.0f, -14));
	ck_assert(isinf(rs_f16_to_f32(0x7c00)));
	ck_assert(isnan(rs_f16_to_f32(0x7e00)));
	ck_assert(rs_bf16_to_f32(0x3f80) == 1.0f);
	ck_assert(rs_bf16_to_f32(0xc040) == -3.0f);
	/* encoding: exact values, ties to even, overflow, subnormals */
	ck_assert_uint_eq(rs_f32_to_f16(1.0f), 0x3c00);
	ck_assert_uint_eq(rs_f32_to_f16(65504.0f), 0x7bff);
	ck_assert_uint_eq(rs_f32_to_f16(65520.0f), 0x7c00);
	ck_assert_uint_eq(rs_f32_to_f16(1.0f + ldexpf(1.0f, -11)), 0x3c00);
	ck_assert_uint_eq(rs_f32_to_f16(1.0f + 3 * ldexpf(1.0f, -11)), 0x3c02);
	ck_assert_uint_eq(rs_f32_to_f16(ldexpf(1.0f, -24)), 0x0001);
	ck_assert_uint_eq(rs_f32_to_f16(ldexpf(1.0f, -26)), 0x0000);
	ck_assert_uint_eq(rs_f32_to_bf16(1.0f), 0x3f80);
	/* every finite half survives f16 -> f32 -> f16 */
	for (uint32_t h = 0; h < 0x10000; h++) {
		if ((h & 0x7c00) == 0x7c00)
			continue;
		ck_assert_uint_eq(rs_f32_to_f16(rs_f16_to_f32((uint16_t)h)), h);
	}
}
END_TEST

/* ---- legacy 32-blocks (§7.2) ---- */

START_TEST(q4_0_block)
{
	struct rs_block_q4_0 b = { .d = H_HALF };
	float	y[32];

	for (int j = 0; j < 16; j++)
		b.qs[j] = (uint8_t)(j | (15 - j) << 4);
	dequant(RS_TYPE_Q4_0, &b, y, 32);
	for (int j = 0; j < 16; j++) {
		ck_assert(y[j] == (float)(j - 8) * 0.5f);
		ck_assert(y[j + 16] == (float)(7 - j) * 0.5f);
	}
}
END_TEST

START_TEST(q4_1_block)
{
	struct rs_block_q4_1 b = { .d = H_HALF, .m = H_ONE };
	float	y[32];

	for (int j = 0; j < 16; j++)
		b.qs[j] = (uint8_t)(j | (15 - j) << 4);
	dequant(RS_TYPE_Q4_1, &b, y, 32);
	for (int j = 0; j < 16; j++) {
		ck_assert(y[j] == (float)j * 0.5f + 1.0f);
		ck_assert(y[j + 16] == (float)(15 - j) * 0.5f + 1.0f);
	}
}
END_TEST

START_TEST(q5_blocks)
{
	struct rs_block_q5_0 b0 = { .d = H_ONE };
	struct rs_block_q5_1 b1 = { .d = H_ONE, .m = H_HALF };
	float	y[32];

	/* qh bit 1 (element 1) and bit 16 (element 16) set */
	b0.qh[0] = 0x02;
	b0.qh[2] = 0x01;
	memcpy(b1.qh, b0.qh, 4);
	for (int j = 0; j < 16; j++)
		b0.qs[j] = b1.qs[j] = (uint8_t)(j | j << 4);
	dequant(RS_TYPE_Q5_0, &b0, y, 32);
	for (int j = 0; j < 16; j++) {
		ck_assert(y[j] == (j == 1 ? 1.0f : (float)(j - 16)));
		ck_assert(y[j + 16] == (j == 0 ? 0.0f : (float)(j - 16)));
	}
	dequant(RS_TYPE_Q5_1, &b1, y, 32);
	for (int j = 0; j < 16; j++) {
		ck_assert(y[j] == (j == 1 ? 17.5f : (float)j + 0.5f));
		ck_assert(y[j + 16] == (j == 0 ? 16.5f : (float)j + 0.5f));
	}
}
END_TEST

START_TEST(q8_0_block)
{
	struct rs_block_q8_0 b = { .d = H_QUART };
	float	y[64];
	struct rs_block_q8_0 two[2];

	for (int j = 0; j < 32; j++)
		b.qs[j] = (int8_t)(j - 16);
	two[0] = two[1] = b;
	two[1].d = H_TWO;
	dequant(RS_TYPE_Q8_0, two, y, 64);
	for (int j = 0; j < 32; j++) {
		ck_assert(y[j] == (float)(j - 16) * 0.25f);
		ck_assert(y[32 + j] == (float)(j - 16) * 2.0f);
	}
}
END_TEST

START_TEST(iq4_blocks)
{
	static const int kv[16] = { -127, -104, -83, -65, -49, -35, -22, -10,
	    1, 13, 25, 38, 53, 69, 89, 113 };
	struct rs_block_iq4_nl nl = { .d = H_HALF };
	struct rs_block_iq4_xs xs = { .d = H_ONE };
	float	y[256];

	for (int j = 0; j < 16; j++)
		nl.qs[j] = (uint8_t)(j | (15 - j) << 4);
	dequant(RS_TYPE_IQ4_NL, &nl, y, 32);
	for (int j = 0; j < 16; j++) {
		ck_assert(y[j] == 0.5f * (float)kv[j]);
		ck_assert(y[j + 16] == 0.5f * (float)kv[15 - j]);
	}
	/* IQ4_XS: sub-block b has 6-bit scale ls = 33 + b -> dl = 1 + b */
	for (int b = 0; b < 8; b++) {
		int ls = 33 + b;
		xs.scales_l[b / 2] |= (uint8_t)((ls & 15) << (4 * (b % 2)));
		xs.scales_h |= (uint16_t)((ls >> 4) << (2 * b));
		for (int j = 0; j < 16; j++)
			xs.qs[16 * b + j] = (uint8_t)(j | (15 - j) << 4);
	}
	dequant(RS_TYPE_IQ4_XS, &xs, y, 256);
	for (int b = 0; b < 8; b++)
		for (int j = 0; j < 16; j++) {
			ck_assert(y[32 * b + j] == (float)(1 + b) * (float)kv[j]);
			ck_assert(y[32 * b + j + 16] ==
			    (float)(1 + b) * (float)kv[15 - j]);
		}
}
END_TEST

/* ---- K-quants (§7.3) ---- */

/* Pack 6-bit scale/min pairs exactly as §7.3's unpacking reads them. */
static void
pack_scales(uint8_t *sc12, const int *sc, const int *mn)
{
	memset(sc12, 0, 12);
	for (int s = 0; s < 4; s++) {
		sc12[s] = (uint8_t)((sc[s] & 63) | (sc[s + 4] >> 4) << 6);
		sc12[s + 4] = (uint8_t)((mn[s] & 63) | (mn[s + 4] >> 4) << 6);
		sc12[s + 8] = (uint8_t)((sc[s + 4] & 15) | (mn[s + 4] & 15) << 4);
	}
}

START_TEST(q4_k_block)
{
	struct rs_block_q4_k b = { .d = H_ONE, .dmin = H_HALF };
	int	sc[8], mn[8];
	float	y[256];

	for (int s = 0; s < 8; s++) {
		sc[s] = 9 * s;		/* 0..63: uses the high bits */
		mn[s] = 63 - 9 * s;
	}
	pack_scales(b.scales, sc, mn);
	for (int i = 0; i < 128; i++)
		b.qs[i] = (uint8_t)((i & 15) | (15 - (i & 15)) << 4);
	dequant(RS_TYPE_Q4_K, &b, y, 256);
	for (int c = 0; c < 4; c++)
		for (int l = 0; l < 32; l++) {
			int q = (32 * c + l) & 15;
			ck_assert(y[64 * c + l] ==
			    (float)(sc[2 * c] * q) - 0.5f * (float)mn[2 * c]);
			ck_assert(y[64 * c + 32 + l] == (float)(sc[2 * c + 1] *
			    (15 - q)) - 0.5f * (float)mn[2 * c + 1]);
		}
}
END_TEST

START_TEST(q5_k_block)
{
	struct rs_block_q5_k b = { .d = H_ONE, .dmin = H_ONE };
	int	sc[8], mn[8];
	float	y[256];

	for (int s = 0; s < 8; s++) {
		sc[s] = 1 + s;
		mn[s] = 60 - s;
	}
	pack_scales(b.scales, sc, mn);
	/* element 64c + l gets its 5th bit from qh[l] bit 2c: set for odd l */
	for (int l = 0; l < 32; l++)
		b.qh[l] = (l & 1) ? 0x55 : 0xaa;
	for (int i = 0; i < 128; i++)
		b.qs[i] = (uint8_t)(3 | 12 << 4);
	dequant(RS_TYPE_Q5_K, &b, y, 256);
	for (int c = 0; c < 4; c++)
		for (int l = 0; l < 32; l++) {
			int lo = 3 + ((l & 1) ? 16 : 0);
			int hi = 12 + ((l & 1) ? 0 : 16);
			ck_assert(y[64 * c + l] ==
			    (float)(sc[2 * c] * lo - mn[2 * c]));
			ck_assert(y[64 * c + 32 + l] ==
			    (float)(sc[2 * c + 1] * hi - mn[2 * c + 1]));
		}
}
END_TEST

START_TEST(q6_k_block)
{
	struct rs_block_q6_k b = { .d = H_HALF };
	float	y[256];

	/*
	 * Choose the 6-bit code of element e as e mod 64 and scales[i] = i - 8.
	 * §7.3: in half h, element 128h + l + 32k (k = 0..3) takes its low
	 * nibble from ql[64h + l + 32(k&1)] (low nibble for k < 2, high for
	 * k >= 2) and its top 2 bits from qh[32h + l] bits 2k, 2k+1.
	 */
	for (int i = 0; i < 16; i++)
		b.scales[i] = (int8_t)(i - 8);
	for (int h = 0; h < 2; h++)
		for (int l = 0; l < 32; l++)
			for (int k = 0; k < 4; k++) {
				int q = (128 * h + l + 32 * k) % 64;
				int li = 64 * h + l + 32 * (k & 1);
				b.ql[li] |= (uint8_t)((q & 15) << (k >= 2 ? 4 : 0));
				b.qh[32 * h + l] |= (uint8_t)((q >> 4) << (2 * k));
			}
	dequant(RS_TYPE_Q6_K, &b, y, 256);
	for (int e = 0; e < 256; e++)
		ck_assert_msg(y[e] == 0.5f * (float)(e / 16 - 8) *
		    (float)(e % 64 - 32), "q6_k element %d: %g", e, y[e]);
}
END_TEST

START_TEST(q2_k_block)
{
	struct rs_block_q2_k b = { .d = H_ONE, .dmin = H_HALF };
	float	y[256];

	/* scales[i]: scale i % 16, min 15 - i; 2-bit code of e = (e / 2) % 4 */
	for (int i = 0; i < 16; i++)
		b.scales[i] = (uint8_t)(i | (15 - i) << 4);
	for (int h = 0; h < 2; h++)
		for (int j = 0; j < 4; j++)
			for (int k = 0; k < 2; k++)
				for (int l = 0; l < 16; l++) {
					int e = 128 * h + 32 * j + 16 * k + l;
					b.qs[32 * h + 16 * k + l] |=
					    (uint8_t)(((e / 2) % 4) << (2 * j));
				}
	dequant(RS_TYPE_Q2_K, &b, y, 256);
	for (int e = 0; e < 256; e++) {
		int h = e / 128, j = (e % 128) / 32, k = (e % 32) / 16;
		int i = 8 * h + 2 * j + k;
		ck_assert(y[e] == (float)(i * ((e / 2) % 4)) -
		    0.5f * (float)(15 - i));
	}
}
END_TEST

START_TEST(q3_k_block)
{
	struct rs_block_q3_k b = { .d = H_HALF };
	float	y[256];

	/*
	 * Sixteen signed scales sc(s) = s - 8 stored as 6-bit s + 24:
	 * low 4 bits in scales[s % 8] (low nibble if s < 8, else high),
	 * top 2 bits in scales[8 + s % 4] at bit 2 * (s / 4).
	 */
	for (int s = 0; s < 16; s++) {
		int v = s + 24;
		b.scales[s % 8] |= (uint8_t)((v & 15) << (s < 8 ? 0 : 4));
		b.scales[8 + s % 4] |= (uint8_t)((v >> 4) << (2 * (s / 4)));
	}
	/* code of e: low 2 bits = e % 4, hmask bit set when e is even */
	for (int h = 0; h < 2; h++)
		for (int j = 0; j < 4; j++)
			for (int i = 0; i < 32; i++) {
				int e = 128 * h + 32 * j + i;
				b.qs[32 * h + i] |= (uint8_t)((e % 4) << (2 * j));
				if (e % 2 == 0)
					b.hmask[i] |= (uint8_t)(1 << (4 * h + j));
			}
	dequant(RS_TYPE_Q3_K, &b, y, 256);
	for (int e = 0; e < 256; e++) {
		int h = e / 128, j = (e % 128) / 32, k = (e % 32) / 16;
		int s = 8 * h + 2 * j + k;
		int q = e % 4 - (e % 2 == 0 ? 0 : 4);
		ck_assert_msg(y[e] == 0.5f * (float)(s - 8) * (float)q,
		    "q3_k element %d: %g", e, y[e]);
	}
}
END_TEST

/* ---- encoders ---- */

/* Deterministic standard normal values (Box-Muller on an LCG). */
static void
gaussian(float *x, int n, uint64_t seed)
{
	for (int i = 0; i < n; i += 2) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		double u1 = ((seed >> 11) + 1.0) / 9007199254740993.0;
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		double u2 = (seed >> 11) / 9007199254740992.0;
		double r = sqrt(-2.0 * log(u1));
		x[i] = (float)(r * cos(2 * M_PI * u2));
		if (i + 1 < n)
			x[i + 1] = (float)(r * sin(2 * M_PI * u2));
	}
}

/*
 * Round trip of N(0,1) rows.  Bounds on the relative RMS error follow from
 * the code width: a uniform quantizer with step D has RMS error D/sqrt(12);
 * for Gaussian blocks the step is about range/levels with range ~ 5 sigma
 * (32 values) or ~ 6 sigma (256 values); the bounds leave 1.5x headroom for
 * the 6-bit scale rounding.  q8_0: 2*2.6/254/sqrt(12)*1.5 ~ 0.009.
 */
START_TEST(roundtrip)
{
	static const struct { int type; double bound; } cases[] = {
		{ RS_TYPE_Q8_0, 0.009 }, { RS_TYPE_Q6_K, 0.035 },
		{ RS_TYPE_Q5_K, 0.06 }, { RS_TYPE_Q4_K, 0.12 },
		{ RS_TYPE_F16, 0.0004 }, { RS_TYPE_BF16, 0.003 },
	};
	enum { N = 4096 };
	float	*x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
	void	*q = malloc(N * 4);
	struct rs_err err;

	gaussian(x, N, 42);
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		ck_assert_int_eq(rs_quant_row(cases[c].type, x, q, N, &err),
		    RS_OK);
		dequant(cases[c].type, q, y, N);
		double e = rs_verify_rel_err(y, x, N);
		ck_assert_msg(e < cases[c].bound, "%s round trip error %g > %g",
		    rs_type_name(cases[c].type), e, cases[c].bound);
	}
	/* zeros stay zero, and a constant row keeps its value closely */
	memset(x, 0, N * sizeof(float));
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		rs_quant_row(cases[c].type, x, q, N, &err);
		dequant(cases[c].type, q, y, N);
		for (int i = 0; i < N; i++)
			ck_assert(y[i] == 0.0f);
	}
	free(x);
	free(y);
	free(q);
}
END_TEST

START_TEST(bad_rows)
{
	struct rs_err err = { 0 };
	size_t	n;
	float	y[32];

	ck_assert_int_eq(rs_type_row_bytes(RS_TYPE_Q4_K, 200, &n, &err),
	    RS_ERR_FORMAT);
	ck_assert(strstr(err.msg, "multiple of 256") != NULL);
	ck_assert_int_eq(rs_type_row_bytes(99, 256, &n, &err),
	    RS_ERR_UNSUPPORTED);
	/* 2^62 F32 values are 2^64 bytes: it wrapped to 0, and a tensor of
	   that shape passed rs-inspect --check as 0 bytes */
	ck_assert_int_eq(rs_type_row_bytes(RS_TYPE_F32, (int64_t)1 << 62, &n,
	    &err), RS_ERR_FORMAT);
	ck_assert(strstr(err.msg, "overflows") != NULL);
	ck_assert_int_eq(rs_type_row_bytes(RS_TYPE_F32, ((int64_t)1 << 62) - 1,
	    &n, &err), RS_OK);
	ck_assert(n == SIZE_MAX - 3);
	ck_assert_int_eq(rs_dequant_row(RS_TYPE_Q8_K, y, y, 256, &err),
	    RS_ERR_UNSUPPORTED);
	ck_assert_int_eq(rs_quant_row(RS_TYPE_Q2_K, y, y, 256, &err),
	    RS_ERR_UNSUPPORTED);
	ck_assert_int_eq(rs_type_from_name("Q4_K"), RS_TYPE_Q4_K);
	ck_assert_int_eq(rs_type_from_name("nope"), -1);
}
END_TEST

/*
 * tiny/model-q8_0.gguf was made from the same weights as model-f16.gguf, so
 * each Q8_0 value is within half a quantization step (d/2, d = amax/127
 * rounded to f16) of the f16 value, plus the f16 rounding of d applied to
 * |q| <= 127 (127 * amax/127 * 2^-11).
 */
START_TEST(q8_0_vs_f16)
{
	struct rs_gguf	*gq, *gf;
	struct rs_err	 err;
	int		 compared = 0;

	ck_assert_int_eq(rs_gguf_open(&gq, t_fixture("tiny/model-q8_0.gguf"),
	    &err), RS_OK);
	ck_assert_int_eq(rs_gguf_open(&gf, t_fixture("tiny/model-f16.gguf"),
	    &err), RS_OK);
	for (int64_t i = 0; i < rs_gguf_n_tensors(gq); i++) {
		const struct rs_gguf_tensor *tq = rs_gguf_tensor(gq, i);
		const struct rs_gguf_tensor *tf;
		if (tq->type != RS_TYPE_Q8_0)
			continue;
		tf = rs_gguf_find_tensor(gf, tq->name);
		ck_assert_msg(tf != NULL && tf->type == RS_TYPE_F16,
		    "%s: no f16 twin", tq->name);
		int64_t n = tq->ne[0], rows = tq->nbytes / (n / 32 * 34);
		float *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4);
		for (int64_t r = 0; r < rows; r++) {
			const struct rs_block_q8_0 *blk = (const void *)
			    ((const char *)tq->data + r * (n / 32) * 34);
			dequant(RS_TYPE_Q8_0, blk, a, (int)n);
			dequant(RS_TYPE_F16, (const char *)tf->data + r * n * 2,
			    b, (int)n);
			for (int64_t e = 0; e < n; e++) {
				float d = rs_f16_to_f32(blk[e / 32].d);
				float amax = 127.0f * d;
				if (fabsf(a[e] - b[e]) >
				    0.5f * d + amax * ldexpf(1.0f, -10))
					ck_abort_msg("%s row %lld elem %lld: "
					    "q8_0 %g vs f16 %g", tq->name,
					    (long long)r, (long long)e, a[e], b[e]);
			}
		}
		free(a);
		free(b);
		compared++;
	}
	ck_assert_int_gt(compared, 20);
	rs_gguf_close(gq);
	rs_gguf_close(gf);
}
END_TEST

Suite *
types_suite(void)
{
	Suite	*s = suite_create("types");
	TCase	*blocks = tcase_create("blocks");
	TCase	*enc = tcase_create("encode");
	TCase	*fix = tcase_create("fixture");

	tcase_add_test(blocks, half_values);
	tcase_add_test(blocks, q4_0_block);
	tcase_add_test(blocks, q4_1_block);
	tcase_add_test(blocks, q5_blocks);
	tcase_add_test(blocks, q8_0_block);
	tcase_add_test(blocks, iq4_blocks);
	tcase_add_test(blocks, q4_k_block);
	tcase_add_test(blocks, q5_k_block);
	tcase_add_test(blocks, q6_k_block);
	tcase_add_test(blocks, q2_k_block);
	tcase_add_test(blocks, q3_k_block);
	tcase_add_test(blocks, bad_rows);
	tcase_add_test(enc, roundtrip);
	tcase_add_test(fix, q8_0_vs_f16);
	suite_add_tcase(s, blocks);
	suite_add_tcase(s, enc);
	tcase_set_timeout(fix, 60);
	suite_add_tcase(s, fix);
	return (s);
}
