/*
 * rs_quant.c - encoders from f32 rows to Q8_0, Q4_K, Q5_K and Q6_K blocks.
 *
 * Used to write synthetic models and test data, not on any hot path, so they
 * favour clarity over the last bit of accuracy: one pass of min/max (or
 * absolute max) per sub-block, then 6- or 8-bit super-block scales, then
 * round-to-nearest codes against the scales *as stored* (after their f16
 * rounding), so decoding reproduces exactly what the encoder assumed.
 * Layouts and formulas: qwen35-model.md §7.2-7.3.
 */
#include <math.h>
#include <string.h>

#include "rs_blocks.h"
#include "rs_half.h"
#include "rs_quant_impl.h"

static int
clampi(int v, int lo, int hi)
{
	return (v < lo ? lo : v > hi ? hi : v);
}

void
rs_quant_q8_0(const float *x, void *dst, int64_t n)
{
	struct rs_block_q8_0 *b = dst;

	for (int64_t i = 0; i < n / RS_QK; i++, b++, x += RS_QK) {
		float amax = 0.0f;
		for (int j = 0; j < RS_QK; j++)
			amax = fmaxf(amax, fabsf(x[j]));
		b->d = rs_f32_to_f16(amax / 127.0f);
		float d = rs_f16_to_f32(b->d);
		for (int j = 0; j < RS_QK; j++)
			b->qs[j] = (int8_t)(d == 0.0f ? 0 :
			    clampi((int)lrintf(x[j] / d), -127, 127));
	}
}

/*
 * Pack eight 6-bit (scale, min) pairs: the inverse of rs_k_scale_min.
 * Pairs 0-3 sit in the low 6 bits of bytes 0-3 / 4-7; pairs 4-7 keep their
 * low 4 bits in bytes 8-11 and their top 2 bits in the spare top bits.
 */
static void
pack_k_scales(uint8_t *scales, const int *sc, const int *mn)
{
	memset(scales, 0, RS_K_SCALE_BYTES);
	for (int s = 0; s < 8; s++) {
		if (s < 4) {
			scales[s] |= (uint8_t)sc[s];
			scales[s + 4] |= (uint8_t)mn[s];
		} else {
			scales[s + 4] = (uint8_t)((sc[s] & 15) | (mn[s] & 15) << 4);
			scales[s - 4] |= (uint8_t)((sc[s] >> 4) << 6);
			scales[s] |= (uint8_t)((mn[s] >> 4) << 6);
		}
	}
}

/*
 * Shared part of Q4_K and Q5_K: choose d, dmin and the eight 6-bit
 * (scale, min) pairs of one 256-value super-block for codes 0..NMAX, and
 * return the codes in Q.  Each 32-value sub-block maps [lo, hi] (lo <= 0)
 * onto 0..NMAX: value = d*sc*q - dmin*mn.
 */
static void
k_quant_super(const float *x, int nmax, uint16_t *d_out, uint16_t *dmin_out,
    uint8_t *scales, uint8_t *q)
{
	float	scale[8], minv[8], maxscale = 0.0f, maxmin = 0.0f;
	int	sc[8], mn[8];

	for (int s = 0; s < 8; s++) {
		float lo = 0.0f, hi = -INFINITY;
		for (int l = 0; l < 32; l++) {
			lo = fminf(lo, x[32 * s + l]);
			hi = fmaxf(hi, x[32 * s + l]);
		}
		hi = fmaxf(hi, lo);
		scale[s] = (hi - lo) / (float)nmax;
		minv[s] = -lo;
		maxscale = fmaxf(maxscale, scale[s]);
		maxmin = fmaxf(maxmin, minv[s]);
	}
	*d_out = rs_f32_to_f16(maxscale / 63.0f);
	*dmin_out = rs_f32_to_f16(maxmin / 63.0f);
	float d = rs_f16_to_f32(*d_out), dmin = rs_f16_to_f32(*dmin_out);
	for (int s = 0; s < 8; s++) {
		sc[s] = d > 0.0f ? clampi((int)lrintf(scale[s] / d), 0, 63) : 0;
		mn[s] = dmin > 0.0f ?
		    clampi((int)lrintf(minv[s] / dmin), 0, 63) : 0;
	}
	pack_k_scales(scales, sc, mn);
	for (int s = 0; s < 8; s++) {
		float ds = d * (float)sc[s], ms = dmin * (float)mn[s];
		for (int l = 0; l < 32; l++) {
			int v = ds > 0.0f ?
			    (int)lrintf((x[32 * s + l] + ms) / ds) : 0;
			q[32 * s + l] = (uint8_t)clampi(v, 0, nmax);
		}
	}
}

void
rs_quant_q4_k(const float *x, void *dst, int64_t n)
{
	struct rs_block_q4_k *b = dst;
	uint8_t	q[RS_QK_K];

	for (int64_t i = 0; i < n / RS_QK_K; i++, b++, x += RS_QK_K) {
		k_quant_super(x, 15, &b->d, &b->dmin, b->scales, q);
		for (int c = 0; c < 4; c++)
			for (int l = 0; l < 32; l++)
				b->qs[32 * c + l] = (uint8_t)(q[64 * c + l] |
				    q[64 * c + 32 + l] << 4);
	}
}

void
rs_quant_q5_k(const float *x, void *dst, int64_t n)
{
	struct rs_block_q5_k *b = dst;
	uint8_t	q[RS_QK_K];

	for (int64_t i = 0; i < n / RS_QK_K; i++, b++, x += RS_QK_K) {
		k_quant_super(x, 31, &b->d, &b->dmin, b->scales, q);
		memset(b->qh, 0, sizeof(b->qh));
		for (int c = 0; c < 4; c++) {
			for (int l = 0; l < 32; l++) {
				int lo = q[64 * c + l], hi = q[64 * c + 32 + l];
				b->qs[32 * c + l] =
				    (uint8_t)((lo & 15) | (hi & 15) << 4);
				b->qh[l] |= (uint8_t)(((lo >> 4) << (2 * c)) |
				    ((hi >> 4) << (2 * c + 1)));
			}
		}
	}
}

/*
 * Q6_K: sixteen 16-value sub-blocks (sub-block e/16 uses scales[e/16]),
 * symmetric codes -32..31 stored biased by 32, int8 scales under one f16 d.
 */
void
rs_quant_q6_k(const float *x, void *dst, int64_t n)
{
	struct rs_block_q6_k *b = dst;
	float	sub[16], maxsub;
	int	q[RS_QK_K];

	for (int64_t i = 0; i < n / RS_QK_K; i++, b++, x += RS_QK_K) {
		maxsub = 0.0f;
		for (int s = 0; s < 16; s++) {
			float amax = 0.0f;
			for (int l = 0; l < 16; l++)
				amax = fmaxf(amax, fabsf(x[16 * s + l]));
			sub[s] = amax / 31.0f;
			maxsub = fmaxf(maxsub, sub[s]);
		}
		b->d = rs_f32_to_f16(maxsub / 127.0f);
		float d = rs_f16_to_f32(b->d);
		for (int s = 0; s < 16; s++) {
			int sc = d > 0.0f ?
			    clampi((int)lrintf(sub[s] / d), 0, 127) : 0;
			float ds = d * (float)sc;
			b->scales[s] = (int8_t)sc;
			for (int l = 0; l < 16; l++) {
				int v = ds > 0.0f ?
				    (int)lrintf(x[16 * s + l] / ds) : 0;
				q[16 * s + l] = clampi(v, -32, 31) + 32;
			}
		}
		memset(b->qh, 0, sizeof(b->qh));
		for (int h = 0; h < 2; h++) {
			uint8_t *L = b->ql + 64 * h, *H = b->qh + 32 * h;
			const int *qq = q + 128 * h;
			for (int l = 0; l < 32; l++) {
				L[l] = (uint8_t)((qq[l] & 15) | (qq[l + 64] & 15) << 4);
				L[l + 32] = (uint8_t)((qq[l + 32] & 15) |
				    (qq[l + 96] & 15) << 4);
				H[l] = (uint8_t)((qq[l] >> 4) |
				    (qq[l + 32] >> 4) << 2 |
				    (qq[l + 64] >> 4) << 4 |
				    (qq[l + 96] >> 4) << 6);
			}
		}
	}
}
