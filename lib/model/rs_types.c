/*
 * rs_types.c - the type-traits table and the scalar reference decoders of
 * every block format (qwen35-model.md §7).  y = decode(block), one row at a
 * time; blocks run along the row.  These are literal transcriptions of the
 * spec's formulas and are the oracle for every faster path.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rs_blocks.h"
#include "rs_half.h"
#include "rs_quant_impl.h"
#include "rs_types.h"

static const int8_t iq4_values[16] = RS_IQ4_VALUES;

/* ---- plain floats (§7.1) ---- */

static void
f32_to_float(const void *src, float *dst, int64_t n)
{
	memcpy(dst, src, (size_t)n * sizeof(float));
}

static void
f32_from_float(const float *src, void *dst, int64_t n)
{
	memcpy(dst, src, (size_t)n * sizeof(float));
}

static void
f16_to_float(const void *src, float *dst, int64_t n)
{
	const uint16_t	*h = src;

	for (int64_t i = 0; i < n; i++)
		dst[i] = rs_f16_to_f32(h[i]);
}

static void
f16_from_float(const float *src, void *dst, int64_t n)
{
	uint16_t	*h = dst;

	for (int64_t i = 0; i < n; i++)
		h[i] = rs_f32_to_f16(src[i]);
}

static void
bf16_to_float(const void *src, float *dst, int64_t n)
{
	const uint16_t	*h = src;

	for (int64_t i = 0; i < n; i++)
		dst[i] = rs_bf16_to_f32(h[i]);
}

static void
bf16_from_float(const float *src, void *dst, int64_t n)
{
	uint16_t	*h = dst;

	for (int64_t i = 0; i < n; i++)
		h[i] = rs_f32_to_bf16(src[i]);
}

/* ---- 32-element legacy blocks (§7.2) ---- */

static void
q4_0_to_float(const void *src, float *y, int64_t n)
{
	const struct rs_block_q4_0 *b = src;

	for (int64_t i = 0; i < n / RS_QK; i++, b++, y += RS_QK) {
		float d = rs_f16_to_f32(b->d);
		for (int j = 0; j < 16; j++) {
			y[j] = (float)((b->qs[j] & 15) - 8) * d;
			y[j + 16] = (float)((b->qs[j] >> 4) - 8) * d;
		}
	}
}

static void
q4_1_to_float(const void *src, float *y, int64_t n)
{
	const struct rs_block_q4_1 *b = src;

	for (int64_t i = 0; i < n / RS_QK; i++, b++, y += RS_QK) {
		float d = rs_f16_to_f32(b->d), m = rs_f16_to_f32(b->m);
		for (int j = 0; j < 16; j++) {
			y[j] = (float)(b->qs[j] & 15) * d + m;
			y[j + 16] = (float)(b->qs[j] >> 4) * d + m;
		}
	}
}

static uint32_t
load_u32(const uint8_t *p)
{
	return ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24);
}

static void
q5_0_to_float(const void *src, float *y, int64_t n)
{
	const struct rs_block_q5_0 *b = src;

	for (int64_t i = 0; i < n / RS_QK; i++, b++, y += RS_QK) {
		float d = rs_f16_to_f32(b->d);
		uint32_t qh = load_u32(b->qh);
		for (int j = 0; j < 16; j++) {
			int lo = (b->qs[j] & 15) | ((qh >> j) & 1) << 4;
			int hi = (b->qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4;
			y[j] = (float)(lo - 16) * d;
			y[j + 16] = (float)(hi - 16) * d;
		}
	}
}

static void
q5_1_to_float(const void *src, float *y, int64_t n)
{
	const struct rs_block_q5_1 *b = src;

	for (int64_t i = 0; i < n / RS_QK; i++, b++, y += RS_QK) {
		float d = rs_f16_to_f32(b->d), m = rs_f16_to_f32(b->m);
		uint32_t qh = load_u32(b->qh);
		for (int j = 0; j < 16; j++) {
			int lo = (b->qs[j] & 15) | ((qh >> j) & 1) << 4;
			int hi = (b->qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4;
			y[j] = (float)lo * d + m;
			y[j + 16] = (float)hi * d + m;
		}
	}
}

static void
q8_0_to_float(const void *src, float *y, int64_t n)
{
	const struct rs_block_q8_0 *b = src;

	for (int64_t i = 0; i < n / RS_QK; i++, b++, y += RS_QK) {
		float d = rs_f16_to_f32(b->d);
		for (int j = 0; j < RS_QK; j++)
			y[j] = (float)b->qs[j] * d;
	}
}

static void
iq4_nl_to_float(const void *src, float *y, int64_t n)
{
	const struct rs_block_iq4_nl *b = src;

	for (int64_t i = 0; i < n / RS_QK; i++, b++, y += RS_QK) {
		float d = rs_f16_to_f32(b->d);
		for (int j = 0; j < 16; j++) {
			y[j] = d * (float)iq4_values[b->qs[j] & 15];
			y[j + 16] = d * (float)iq4_values[b->qs[j] >> 4];
		}
	}
}

/* ---- 256-element K-quant super-blocks (§7.3) ---- */

static void
q2_k_to_float(const void *src, float *y, int64_t n)
{
	const struct rs_block_q2_k *b = src;

	for (int64_t i = 0; i < n / RS_QK_K; i++, b++, y += RS_QK_K) {
		float d = rs_f16_to_f32(b->d), dmin = rs_f16_to_f32(b->dmin);
		for (int h = 0; h < 2; h++)
		for (int j = 0; j < 4; j++)
		for (int k = 0; k < 2; k++) {
			int sc = b->scales[8 * h + 2 * j + k];
			for (int l = 0; l < 16; l++) {
				int q = (b->qs[32 * h + 16 * k + l] >> (2 * j)) & 3;
				y[128 * h + 32 * j + 16 * k + l] =
				    d * (float)(sc & 15) * (float)q -
				    dmin * (float)(sc >> 4);
			}
		}
	}
}

/* Signed 6-bit scale s (0..15) of a Q3_K block. */
static int
q3_k_scale(const uint8_t *scales, int s)
{
	int lo4 = s < 8 ? scales[s % 8] & 15 : scales[s % 8] >> 4;
	int hi2 = (scales[8 + s % 4] >> (2 * (s / 4))) & 3;

	return ((lo4 | hi2 << 4) - 32);
}

static void
q3_k_to_float(const void *src, float *y, int64_t n)
{
	const struct rs_block_q3_k *b = src;

	for (int64_t i = 0; i < n / RS_QK_K; i++, b++, y += RS_QK_K) {
		float d = rs_f16_to_f32(b->d);
		for (int h = 0; h < 2; h++)
		for (int j = 0; j < 4; j++)
		for (int k = 0; k < 2; k++) {
			int sc = q3_k_scale(b->scales, 8 * h + 2 * j + k);
			for (int l = 0; l < 16; l++) {
				int ii = 16 * k + l;
				int q = (b->qs[32 * h + ii] >> (2 * j)) & 3;
				if (!((b->hmask[ii] >> (4 * h + j)) & 1))
					q -= 4;
				y[128 * h + 32 * j + ii] =
				    d * (float)sc * (float)q;
			}
		}
	}
}

void
rs_k_scale_min(const uint8_t *scales, int s, int *sc, int *mn)
{
	if (s < 4) {
		*sc = scales[s] & 63;
		*mn = scales[s + 4] & 63;
	} else {
		*sc = (scales[s + 4] & 15) | ((scales[s - 4] >> 6) << 4);
		*mn = (scales[s + 4] >> 4) | ((scales[s] >> 6) << 4);
	}
}

static void
q4_k_to_float(const void *src, float *y, int64_t n)
{
	const struct rs_block_q4_k *b = src;

	for (int64_t i = 0; i < n / RS_QK_K; i++, b++, y += RS_QK_K) {
		float d = rs_f16_to_f32(b->d), dmin = rs_f16_to_f32(b->dmin);
		for (int c = 0; c < 4; c++) {
			int sc0, mn0, sc1, mn1;
			rs_k_scale_min(b->scales, 2 * c, &sc0, &mn0);
			rs_k_scale_min(b->scales, 2 * c + 1, &sc1, &mn1);
			for (int l = 0; l < 32; l++) {
				uint8_t q = b->qs[32 * c + l];
				y[64 * c + l] = d * (float)sc0 *
				    (float)(q & 15) - dmin * (float)mn0;
				y[64 * c + 32 + l] = d * (float)sc1 *
				    (float)(q >> 4) - dmin * (float)mn1;
			}
		}
	}
}

static void
q5_k_to_float(const void *src, float *y, int64_t n)
{
	const struct rs_block_q5_k *b = src;

	for (int64_t i = 0; i < n / RS_QK_K; i++, b++, y += RS_QK_K) {
		float d = rs_f16_to_f32(b->d), dmin = rs_f16_to_f32(b->dmin);
		for (int c = 0; c < 4; c++) {
			int sc0, mn0, sc1, mn1;
			rs_k_scale_min(b->scales, 2 * c, &sc0, &mn0);
			rs_k_scale_min(b->scales, 2 * c + 1, &sc1, &mn1);
			for (int l = 0; l < 32; l++) {
				uint8_t q = b->qs[32 * c + l];
				int lo = (q & 15) + 16 * ((b->qh[l] >> (2 * c)) & 1);
				int hi = (q >> 4) +
				    16 * ((b->qh[l] >> (2 * c + 1)) & 1);
				y[64 * c + l] = d * (float)sc0 * (float)lo -
				    dmin * (float)mn0;
				y[64 * c + 32 + l] = d * (float)sc1 *
				    (float)hi - dmin * (float)mn1;
			}
		}
	}
}

static void
q6_k_to_float(const void *src, float *y, int64_t n)
{
	const struct rs_block_q6_k *b = src;

	for (int64_t i = 0; i < n / RS_QK_K; i++, b++, y += RS_QK_K) {
		float d = rs_f16_to_f32(b->d);
		for (int h = 0; h < 2; h++) {
			const uint8_t *L = b->ql + 64 * h, *H = b->qh + 32 * h;
			const int8_t *S = b->scales + 8 * h;
			float *yh = y + 128 * h;
			for (int l = 0; l < 32; l++) {
				int is = l / 16;
				int q0 = ((L[l] & 15) | ((H[l] >> 0) & 3) << 4) - 32;
				int q1 = ((L[l + 32] & 15) | ((H[l] >> 2) & 3) << 4) - 32;
				int q2 = ((L[l] >> 4) | ((H[l] >> 4) & 3) << 4) - 32;
				int q3 = ((L[l + 32] >> 4) | ((H[l] >> 6) & 3) << 4) - 32;
				yh[l] = d * (float)S[is] * (float)q0;
				yh[l + 32] = d * (float)S[is + 2] * (float)q1;
				yh[l + 64] = d * (float)S[is + 4] * (float)q2;
				yh[l + 96] = d * (float)S[is + 6] * (float)q3;
			}
		}
	}
}

static void
iq4_xs_to_float(const void *src, float *y, int64_t n)
{
	const struct rs_block_iq4_xs *b = src;

	for (int64_t i = 0; i < n / RS_QK_K; i++, b++, y += RS_QK_K) {
		float d = rs_f16_to_f32(b->d);
		for (int s = 0; s < 8; s++) {
			int ls = ((b->scales_l[s / 2] >> (4 * (s % 2))) & 15) |
			    (((b->scales_h >> (2 * s)) & 3) << 4);
			float dl = d * (float)(ls - 32);
			for (int j = 0; j < 16; j++) {
				uint8_t q = b->qs[16 * s + j];
				y[32 * s + j] = dl * (float)iq4_values[q & 15];
				y[32 * s + j + 16] = dl * (float)iq4_values[q >> 4];
			}
		}
	}
}

/* ---- the table ---- */

/* elements and bytes of a block: its struct (rs_blocks.h) says how many */
#define BLOCK(t, qk)	(qk), (int)sizeof(struct rs_block_##t)

static const struct rs_type_traits traits[RS_TYPE_COUNT] = {
	[RS_TYPE_F32] = { "f32", 1, (int)sizeof(float), f32_to_float,
	    f32_from_float },
	[RS_TYPE_F16] = { "f16", 1, (int)sizeof(uint16_t), f16_to_float,
	    f16_from_float },
	[RS_TYPE_BF16] = { "bf16", 1, (int)sizeof(uint16_t), bf16_to_float,
	    bf16_from_float },
	[RS_TYPE_Q4_0] = { "q4_0", BLOCK(q4_0, RS_QK), q4_0_to_float, NULL },
	[RS_TYPE_Q4_1] = { "q4_1", BLOCK(q4_1, RS_QK), q4_1_to_float, NULL },
	[RS_TYPE_Q5_0] = { "q5_0", BLOCK(q5_0, RS_QK), q5_0_to_float, NULL },
	[RS_TYPE_Q5_1] = { "q5_1", BLOCK(q5_1, RS_QK), q5_1_to_float, NULL },
	[RS_TYPE_Q8_0] = { "q8_0", BLOCK(q8_0, RS_QK), q8_0_to_float,
	    rs_quant_q8_0 },
	[RS_TYPE_Q8_1] = { "q8_1", BLOCK(q8_1, RS_QK), NULL, NULL },
	[RS_TYPE_Q2_K] = { "q2_k", BLOCK(q2_k, RS_QK_K), q2_k_to_float, NULL },
	[RS_TYPE_Q3_K] = { "q3_k", BLOCK(q3_k, RS_QK_K), q3_k_to_float, NULL },
	[RS_TYPE_Q4_K] = { "q4_k", BLOCK(q4_k, RS_QK_K), q4_k_to_float,
	    rs_quant_q4_k },
	[RS_TYPE_Q5_K] = { "q5_k", BLOCK(q5_k, RS_QK_K), q5_k_to_float,
	    rs_quant_q5_k },
	[RS_TYPE_Q6_K] = { "q6_k", BLOCK(q6_k, RS_QK_K), q6_k_to_float,
	    rs_quant_q6_k },
	[RS_TYPE_Q8_K] = { "q8_k", BLOCK(q8_k, RS_QK_K), NULL, NULL },
	[RS_TYPE_IQ4_NL] = { "iq4_nl", BLOCK(iq4_nl, RS_QK),
	    iq4_nl_to_float, NULL },
	[RS_TYPE_IQ4_XS] = { "iq4_xs", BLOCK(iq4_xs, RS_QK_K),
	    iq4_xs_to_float, NULL },
};

const struct rs_type_traits *
rs_type_traits(int type)
{
	if (type < 0 || type >= RS_TYPE_COUNT || traits[type].name == NULL)
		return (NULL);
	return (&traits[type]);
}

const char *
rs_type_name(int type)
{
	const struct rs_type_traits *t = rs_type_traits(type);

	return (t != NULL ? t->name : "unknown");
}

int
rs_type_from_name(const char *name)
{
	for (int i = 0; i < RS_TYPE_COUNT; i++) {
		if (traits[i].name != NULL &&
		    strcasecmp(traits[i].name, name) == 0)
			return (i);
	}
	return (-1);
}

enum rs_status
rs_type_row_bytes(int type, int64_t n, size_t *out, struct rs_err *err)
{
	const struct rs_type_traits *t = rs_type_traits(type);

	if (t == NULL)
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "unknown tensor type %d", type));
	if (n < 0 || n % t->block_elems != 0)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "%s rows need a multiple of %d values, got %lld",
		    t->name, t->block_elems, (long long)n));
	if ((uint64_t)(n / t->block_elems) > SIZE_MAX / t->block_bytes)
		return (rs_errf(err, RS_ERR_FORMAT, "a %s row of %lld values "
		    "overflows 64-bit size", t->name, (long long)n));
	*out = (size_t)(n / t->block_elems) * (size_t)t->block_bytes;
	return (RS_OK);
}

enum rs_status
rs_dequant_row(int type, const void *src, float *dst, int64_t n,
    struct rs_err *err)
{
	const struct rs_type_traits *t = rs_type_traits(type);
	size_t	bytes;
	enum rs_status st;

	if ((st = rs_type_row_bytes(type, n, &bytes, err)) != RS_OK)
		return (st);
	if (t->to_float == NULL)
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "%s is not a weight type", t->name));
	t->to_float(src, dst, n);
	return (RS_OK);
}

enum rs_status
rs_quant_row(int type, const float *src, void *dst, int64_t n,
    struct rs_err *err)
{
	const struct rs_type_traits *t = rs_type_traits(type);
	size_t	bytes;
	enum rs_status st;

	if ((st = rs_type_row_bytes(type, n, &bytes, err)) != RS_OK)
		return (st);
	if (t->from_float == NULL)
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "cannot encode %s", t->name));
	t->from_float(src, dst, n);
	return (RS_OK);
}
