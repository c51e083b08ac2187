/*
 * rs_cpu_dequant.c - fast row decoders, 4 values at a time, bit-identical to
 * the scalar oracles of rs_types.c (qwen35-model.md §7).
 *
 * Each one performs the oracle's float operations in the oracle's order
 * (for Q4_K: (d·sc)·q − dmin·m), only on 4 lanes at once, so every output
 * is the same bits; tests/check_cpu.c compares them on every tensor of the
 * tiny fixtures.  Integer unpacking happens in 32-bit lanes.
 *
 * Napkin math: the oracles spend ~1 ns per value in scalar conversions;
 * in a decode step (one token) decoding is the whole cost of a matmul
 * besides the dot product itself, and for the 27B Q4_K_M file it would be
 * ~27 s per token on one core, against ~1 s to stream the 15 GB of
 * weights.  These run several times faster.
 */
#include <string.h>

#include "rs_blocks.h"
#include "rs_cpu.h"
#include "rs_cpu_vec.h"
#include "rs_half.h"
#include "rs_quant_impl.h"
#include "rs_types.h"

typedef uint8_t	rs_v4b __attribute__((vector_size(4)));
typedef int8_t	rs_v4sb __attribute__((vector_size(4)));

/* Four unsigned bytes at P as int32 lanes. */
static inline rs_v4i
u8x4(const uint8_t *p)
{
	rs_v4b	b;

	memcpy(&b, p, sizeof(b));
	return (__builtin_convertvector(b, rs_v4i));
}

static inline rs_v4f
to_f(rs_v4i v)
{
	return (__builtin_convertvector(v, rs_v4f));
}

static void
f16_row(const void *src, float *y, int64_t n)
{
	const uint16_t	*h = src;
	int64_t		 i;

	for (i = 0; i + RS_VEC <= n; i += RS_VEC)
		rs_vec_store(y + i, rs_vec_from_f16(h + i));
	if (i < n)
		rs_dequant_row(RS_TYPE_F16, h + i, y + i, n - i, NULL);
}

/* y[j] = (q − 8)·d (low nibbles j < 16, high nibbles j + 16). */
static void
q4_0_row(const void *src, float *y, int64_t n)
{
	const struct rs_block_q4_0 *b = src;

	for (int64_t i = 0; i < n / RS_QK; i++, b++, y += RS_QK) {
		rs_v4f d = rs_vec_splat(rs_f16_to_f32(b->d));

		for (int j = 0; j < 16; j += RS_VEC) {
			rs_v4i q = u8x4(b->qs + j);

			rs_vec_store(y + j, to_f((q & 15) - 8) * d);
			rs_vec_store(y + j + 16, to_f((q >> 4) - 8) * d);
		}
	}
}

/* y[j] = q·d. */
static void
q8_0_row(const void *src, float *y, int64_t n)
{
	const struct rs_block_q8_0 *b = src;

	for (int64_t i = 0; i < n / RS_QK; i++, b++, y += RS_QK) {
		rs_v4f d = rs_vec_splat(rs_f16_to_f32(b->d));

		for (int j = 0; j < RS_QK; j += RS_VEC) {
			rs_v4sb	q;

			memcpy(&q, b->qs + j, sizeof(q));
			rs_vec_store(y + j,
			    to_f(__builtin_convertvector(q, rs_v4i)) * d);
		}
	}
}

/* Scale and min factors of sub-blocks 2c and 2c + 1 of a Q4_K/Q5_K block. */
static void
k_factors(const uint8_t *scales, int c, float d, float dmin, rs_v4f *ds,
    rs_v4f *dm)
{
	int sc, mn;

	for (int k = 0; k < 2; k++) {
		rs_k_scale_min(scales, 2 * c + k, &sc, &mn);
		ds[k] = rs_vec_splat(d * (float)sc);
		dm[k] = rs_vec_splat(dmin * (float)mn);
	}
}

/* y[64c + l] = (d·sc)·q − dmin·m, low nibble; +32: high nibble. */
static void
q4_k_row(const void *src, float *y, int64_t n)
{
	const struct rs_block_q4_k *b = src;

	for (int64_t i = 0; i < n / RS_QK_K; i++, b++, y += RS_QK_K) {
		float d = rs_f16_to_f32(b->d), dmin = rs_f16_to_f32(b->dmin);

		for (int c = 0; c < 4; c++) {
			rs_v4f	ds[2], dm[2];

			k_factors(b->scales, c, d, dmin, ds, dm);
			for (int l = 0; l < 32; l += RS_VEC) {
				rs_v4i q = u8x4(b->qs + 32 * c + l);

				rs_vec_store(y + 64 * c + l,
				    ds[0] * to_f(q & 15) - dm[0]);
				rs_vec_store(y + 64 * c + 32 + l,
				    ds[1] * to_f(q >> 4) - dm[1]);
			}
		}
	}
}

/* As Q4_K with a fifth bit from qh (bit 2c, 2c + 1 of byte l). */
static void
q5_k_row(const void *src, float *y, int64_t n)
{
	const struct rs_block_q5_k *b = src;

	for (int64_t i = 0; i < n / RS_QK_K; i++, b++, y += RS_QK_K) {
		float d = rs_f16_to_f32(b->d), dmin = rs_f16_to_f32(b->dmin);

		for (int c = 0; c < 4; c++) {
			rs_v4f	ds[2], dm[2];

			k_factors(b->scales, c, d, dmin, ds, dm);
			for (int l = 0; l < 32; l += RS_VEC) {
				rs_v4i q = u8x4(b->qs + 32 * c + l);
				rs_v4i h = u8x4(b->qh + l);
				rs_v4i lo = (q & 15) + 16 * ((h >> (2 * c)) & 1);
				rs_v4i hi = (q >> 4) +
				    16 * ((h >> (2 * c + 1)) & 1);

				rs_vec_store(y + 64 * c + l,
				    ds[0] * to_f(lo) - dm[0]);
				rs_vec_store(y + 64 * c + 32 + l,
				    ds[1] * to_f(hi) - dm[1]);
			}
		}
	}
}

/* Four quarter-blocks per 128 values, 6-bit q − 32, (d·S)·q. */
static void
q6_k_row(const void *src, float *y, int64_t n)
{
	const struct rs_block_q6_k *b = src;

	for (int64_t i = 0; i < n / RS_QK_K; i++, b++, y += RS_QK_K) {
		float d = rs_f16_to_f32(b->d);

		for (int h = 0; h < 2; h++) {
			const uint8_t	*L = b->ql + 64 * h, *H = b->qh + 32 * h;
			const int8_t	*S = b->scales + 8 * h;
			float		*yh = y + 128 * h;

			for (int l = 0; l < 32; l += RS_VEC) {
				int	 is = l / 16;
				rs_v4i	 l0 = u8x4(L + l), l1 = u8x4(L + l + 32);
				rs_v4i	 hh = u8x4(H + l);

				rs_vec_store(yh + l, rs_vec_splat(d *
				    (float)S[is]) * to_f(((l0 & 15) |
				    (hh & 3) << 4) - 32));
				rs_vec_store(yh + l + 32, rs_vec_splat(d *
				    (float)S[is + 2]) * to_f(((l1 & 15) |
				    ((hh >> 2) & 3) << 4) - 32));
				rs_vec_store(yh + l + 64, rs_vec_splat(d *
				    (float)S[is + 4]) * to_f(((l0 >> 4) |
				    ((hh >> 4) & 3) << 4) - 32));
				rs_vec_store(yh + l + 96, rs_vec_splat(d *
				    (float)S[is + 6]) * to_f(((l1 >> 4) |
				    ((hh >> 6) & 3) << 4) - 32));
			}
		}
	}
}

static const rs_to_float_fn fast_decoders[RS_TYPE_COUNT] = {
	[RS_TYPE_F16] = f16_row,
	[RS_TYPE_Q4_0] = q4_0_row,
	[RS_TYPE_Q8_0] = q8_0_row,
	[RS_TYPE_Q4_K] = q4_k_row,
	[RS_TYPE_Q5_K] = q5_k_row,
	[RS_TYPE_Q6_K] = q6_k_row,
};

rs_to_float_fn
rs_cpu_row_decoder(int type)
{
	const struct rs_type_traits *tt = rs_type_traits(type);

	if (tt == NULL)
		return (NULL);
	return (fast_decoders[type] != NULL ? fast_decoders[type] :
	    tt->to_float);
}
