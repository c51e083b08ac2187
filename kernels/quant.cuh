/*
 * quant.cuh - device decoders: 8 consecutive values of a weight row, for
 * every block format of qwen35-model.md §7 (the same formulas as the CPU
 * oracles in rs_types.c, which tests/check_cuda.c compares them with).
 *
 * dequant8<T>(row, c, out) writes elements 8c .. 8c+7 of ROW.  Eight values
 * never straddle a block (every block holds a multiple of 8), and within
 * one chunk every value shares its scale, so each decoder reads its scales
 * once.  Rows are byte-aligned only to 2, so multi-byte fields are read as
 * halves or bytes.
 */
#ifndef RS_QUANT_CUH
#define RS_QUANT_CUH

#include "common.cuh"
#include "rs_blocks.h"
#include "rs_tile.h"
#include "rs_types.h"

__constant__ static const int8_t iq4_table[16] = RS_IQ4_VALUES;

static __device__ __forceinline__ void
k_scale_min(const uint8_t *s, int j, int *sc, int *mn)
{
	if (j < 4) {
		*sc = s[j] & 63;
		*mn = s[j + 4] & 63;
	} else {
		*sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
		*mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
	}
}

template <int T> struct qtraits;

/* elements and bytes of a block: its struct (rs_blocks.h) says how many */
#define QTRAITS(ty, elems, bytes) \
	template <> struct qtraits<ty> { enum { qk = elems, qb = bytes }; }
#define QBLOCK(ty, t, elems) QTRAITS(ty, elems, sizeof(struct rs_block_##t))
QTRAITS(RS_TYPE_F32, 1, sizeof(float));
QTRAITS(RS_TYPE_F16, 1, sizeof(uint16_t));
QTRAITS(RS_TYPE_BF16, 1, sizeof(uint16_t));
QBLOCK(RS_TYPE_Q4_0, q4_0, RS_QK);
QBLOCK(RS_TYPE_Q4_1, q4_1, RS_QK);
QBLOCK(RS_TYPE_Q5_0, q5_0, RS_QK);
QBLOCK(RS_TYPE_Q5_1, q5_1, RS_QK);
QBLOCK(RS_TYPE_Q8_0, q8_0, RS_QK);
QBLOCK(RS_TYPE_IQ4_NL, iq4_nl, RS_QK);
QBLOCK(RS_TYPE_Q2_K, q2_k, RS_QK_K);
QBLOCK(RS_TYPE_Q3_K, q3_k, RS_QK_K);
QBLOCK(RS_TYPE_Q4_K, q4_k, RS_QK_K);
QBLOCK(RS_TYPE_Q5_K, q5_k, RS_QK_K);
QBLOCK(RS_TYPE_Q6_K, q6_k, RS_QK_K);
QBLOCK(RS_TYPE_IQ4_XS, iq4_xs, RS_QK_K);
#undef QBLOCK
#undef QTRAITS

/* The block holding chunk C, and the chunk's index inside it. */
template <int T>
static __device__ __forceinline__ const uint8_t *
chunk_block(const uint8_t *row, int64_t c, int *w)
{
	const int per = qtraits<T>::qk / 8;

	*w = (int)(c % per);
	return (row + (c / per) * qtraits<T>::qb);
}

static __device__ __forceinline__ float
ld_half(const uint8_t *p)
{
	return (half_to_float((uint16_t)(p[0] | p[1] << 8)));
}

template <int T>
static __device__ __forceinline__ void dequant8(const uint8_t *row, int64_t c,
    float *y);

template <>
__device__ __forceinline__ void
dequant8<RS_TYPE_F32>(const uint8_t *row, int64_t c, float *y)
{
	const float *p = (const float *)(row + c * 32);

	for (int i = 0; i < 8; i++)
		y[i] = p[i];
}

template <>
__device__ __forceinline__ void
dequant8<RS_TYPE_F16>(const uint8_t *row, int64_t c, float *y)
{
	const __half2 *p = (const __half2 *)(row + c * 16);

	for (int i = 0; i < 4; i++) {
		float2 f = __half22float2(p[i]);
		y[2 * i] = f.x;
		y[2 * i + 1] = f.y;
	}
}

template <>
__device__ __forceinline__ void
dequant8<RS_TYPE_BF16>(const uint8_t *row, int64_t c, float *y)
{
	const uint16_t *p = (const uint16_t *)(row + c * 16);

	for (int i = 0; i < 8; i++)
		y[i] = __uint_as_float((uint32_t)p[i] << 16);
}

/* Legacy blocks: chunk w (0..3); w < 2 low nibbles of qs[8w..], else high. */
template <>
__device__ __forceinline__ void
dequant8<RS_TYPE_Q4_0>(const uint8_t *row, int64_t c, float *y)
{
	int w;
	const uint8_t *b = chunk_block<RS_TYPE_Q4_0>(row, c, &w);
	float d = ld_half(b);
	const uint8_t *qs = b + 2 + 8 * (w & 1);
	int sh = w < 2 ? 0 : 4;

	for (int i = 0; i < 8; i++)
		y[i] = (float)(((qs[i] >> sh) & 15) - 8) * d;
}

template <>
__device__ __forceinline__ void
dequant8<RS_TYPE_Q4_1>(const uint8_t *row, int64_t c, float *y)
{
	int w;
	const uint8_t *b = chunk_block<RS_TYPE_Q4_1>(row, c, &w);
	float d = ld_half(b), m = ld_half(b + 2);
	const uint8_t *qs = b + 4 + 8 * (w & 1);
	int sh = w < 2 ? 0 : 4;

	for (int i = 0; i < 8; i++)
		y[i] = (float)((qs[i] >> sh) & 15) * d + m;
}

template <>
__device__ __forceinline__ void
dequant8<RS_TYPE_Q5_0>(const uint8_t *row, int64_t c, float *y)
{
	int w;
	const uint8_t *b = chunk_block<RS_TYPE_Q5_0>(row, c, &w);
	float d = ld_half(b);
	uint32_t qh = b[2] | b[3] << 8 | b[4] << 16 | (uint32_t)b[5] << 24;
	const uint8_t *qs = b + 6 + 8 * (w & 1);
	int sh = w < 2 ? 0 : 4, e0 = 8 * w;

	for (int i = 0; i < 8; i++) {
		int q = ((qs[i] >> sh) & 15) | ((qh >> (e0 + i)) & 1) << 4;
		y[i] = (float)(q - 16) * d;
	}
}

template <>
__device__ __forceinline__ void
dequant8<RS_TYPE_Q5_1>(const uint8_t *row, int64_t c, float *y)
{
	int w;
	const uint8_t *b = chunk_block<RS_TYPE_Q5_1>(row, c, &w);
	float d = ld_half(b), m = ld_half(b + 2);
	uint32_t qh = b[4] | b[5] << 8 | b[6] << 16 | (uint32_t)b[7] << 24;
	const uint8_t *qs = b + 8 + 8 * (w & 1);
	int sh = w < 2 ? 0 : 4, e0 = 8 * w;

	for (int i = 0; i < 8; i++) {
		int q = ((qs[i] >> sh) & 15) | ((qh >> (e0 + i)) & 1) << 4;
		y[i] = (float)q * d + m;
	}
}

template <>
__device__ __forceinline__ void
dequant8<RS_TYPE_Q8_0>(const uint8_t *row, int64_t c, float *y)
{
	int w;
	const uint8_t *b = chunk_block<RS_TYPE_Q8_0>(row, c, &w);
	float d = ld_half(b);
	const int8_t *qs = (const int8_t *)(b + 2 + 8 * w);

	for (int i = 0; i < 8; i++)
		y[i] = (float)qs[i] * d;
}

template <>
__device__ __forceinline__ void
dequant8<RS_TYPE_IQ4_NL>(const uint8_t *row, int64_t c, float *y)
{
	int w;
	const uint8_t *b = chunk_block<RS_TYPE_IQ4_NL>(row, c, &w);
	float d = ld_half(b);
	const uint8_t *qs = b + 2 + 8 * (w & 1);
	int sh = w < 2 ? 0 : 4;

	for (int i = 0; i < 8; i++)
		y[i] = d * (float)iq4_table[(qs[i] >> sh) & 15];
}

/* K-quants: chunk w (0..31) covers elements e0 = 8w .. 8w+7 of the block. */
template <>
__device__ __forceinline__ void
dequant8<RS_TYPE_Q2_K>(const uint8_t *row, int64_t c, float *y)
{
	int w;
	const uint8_t *b = chunk_block<RS_TYPE_Q2_K>(row, c, &w);
	int e0 = 8 * w, h = e0 / 128, j = (e0 % 128) / 32, i = e0 % 32;
	int sc = b[8 * h + 2 * j + i / 16];
	float d = ld_half(b + 80), dmin = ld_half(b + 82);
	float dl = d * (float)(sc & 15), ml = dmin * (float)(sc >> 4);
	const uint8_t *qs = b + 16 + 32 * h + i;

	for (int k = 0; k < 8; k++)
		y[k] = dl * (float)((qs[k] >> (2 * j)) & 3) - ml;
}

template <>
__device__ __forceinline__ void
dequant8<RS_TYPE_Q3_K>(const uint8_t *row, int64_t c, float *y)
{
	int w;
	const uint8_t *b = chunk_block<RS_TYPE_Q3_K>(row, c, &w);
	int e0 = 8 * w, h = e0 / 128, j = (e0 % 128) / 32, i = e0 % 32;
	int s = 8 * h + 2 * j + i / 16;
	const uint8_t *scales = b + 96;
	int lo4 = s < 8 ? scales[s % 8] & 15 : scales[s % 8] >> 4;
	int hi2 = (scales[8 + s % 4] >> (2 * (s / 4))) & 3;
	float dl = ld_half(b + 108) * (float)((lo4 | hi2 << 4) - 32);
	const uint8_t *hm = b + i, *qs = b + 32 + 32 * h + i;

	for (int k = 0; k < 8; k++) {
		int q = (qs[k] >> (2 * j)) & 3;
		if (!((hm[k] >> (4 * h + j)) & 1))
			q -= 4;
		y[k] = dl * (float)q;
	}
}

template <>
__device__ __forceinline__ void
dequant8<RS_TYPE_Q4_K>(const uint8_t *row, int64_t c, float *y)
{
	int w, sc, mn;
	const uint8_t *b = chunk_block<RS_TYPE_Q4_K>(row, c, &w);
	int e0 = 8 * w, cc = e0 / 64, r = e0 % 64, hi = r >= 32;

	k_scale_min(b + 4, 2 * cc + hi, &sc, &mn);
	float dl = ld_half(b) * (float)sc, ml = ld_half(b + 2) * (float)mn;
	const uint8_t *qs = b + 16 + 32 * cc + (r & 31);
	int sh = hi ? 4 : 0;

	for (int k = 0; k < 8; k++)
		y[k] = dl * (float)((qs[k] >> sh) & 15) - ml;
}

template <>
__device__ __forceinline__ void
dequant8<RS_TYPE_Q5_K>(const uint8_t *row, int64_t c, float *y)
{
	int w, sc, mn;
	const uint8_t *b = chunk_block<RS_TYPE_Q5_K>(row, c, &w);
	int e0 = 8 * w, cc = e0 / 64, r = e0 % 64, hi = r >= 32, l0 = r & 31;

	k_scale_min(b + 4, 2 * cc + hi, &sc, &mn);
	float dl = ld_half(b) * (float)sc, ml = ld_half(b + 2) * (float)mn;
	const uint8_t *qh = b + 16 + l0, *qs = b + 48 + 32 * cc + l0;
	int sh = hi ? 4 : 0, hb = 2 * cc + hi;

	for (int k = 0; k < 8; k++)
		y[k] = dl * (float)(((qs[k] >> sh) & 15) +
		    16 * ((qh[k] >> hb) & 1)) - ml;
}

template <>
__device__ __forceinline__ void
dequant8<RS_TYPE_Q6_K>(const uint8_t *row, int64_t c, float *y)
{
	int w;
	const uint8_t *b = chunk_block<RS_TYPE_Q6_K>(row, c, &w);
	int e0 = 8 * w, h = e0 / 128, r = e0 % 128, k4 = r / 32, l0 = r % 32;
	float dl = ld_half(b + 208) *
	    (float)((const int8_t *)(b + 192))[8 * h + l0 / 16 + 2 * k4];
	const uint8_t *ql = b + 64 * h + l0 + 32 * (k4 & 1);
	const uint8_t *qh = b + 128 + 32 * h + l0;
	int sh = k4 >= 2 ? 4 : 0;

	for (int k = 0; k < 8; k++) {
		int q = ((ql[k] >> sh) & 15) | ((qh[k] >> (2 * k4)) & 3) << 4;
		y[k] = dl * (float)(q - 32);
	}
}

/*
 * The same 8 values from row I of the 16-row tile T (rs_tile.h), chunk w
 * (0..31) of its super-block: the formulas above, the bytes read as the
 * 4- and 8-byte pieces the tile keeps together.
 */
template <int T>
static __device__ __forceinline__ void
dequant8_tile(const uint8_t *t, int i, int w, float *y)
{
	const int e0 = 8 * w;

	if (T == RS_TYPE_Q6_K) {
		const int h = e0 / 128, r = e0 % 128, k4 = r / 32, l0 = r % 32;
		const int ql = 64 * h + l0 + 32 * (k4 & 1), qh = 128 + 32 * h + l0;
		const uint32_t l[2] = {
		    __ldg((const uint32_t *)(t + rs_tile_off(T, i, ql))),
		    __ldg((const uint32_t *)(t + rs_tile_off(T, i, ql + 4))) };
		const uint32_t q[2] = {
		    __ldg((const uint32_t *)(t + rs_tile_off(T, i, qh))),
		    __ldg((const uint32_t *)(t + rs_tile_off(T, i, qh + 4))) };
		float dl = half_to_float(__ldg((const unsigned short *)(t + 256) +
		    i)) * (float)(int8_t)__ldg(t + 16 * i + 8 * h + l0 / 16 +
		    2 * k4);
		int sh = k4 >= 2 ? 4 : 0;

		for (int k = 0; k < 8; k++) {
			const int ls = (l[k / 4] >> (8 * (k % 4))) & 0xFF;
			const int hs = (q[k / 4] >> (8 * (k % 4))) & 0xFF;
			int v = ((ls >> sh) & 15) | ((hs >> (2 * k4)) & 3) << 4;
			y[k] = dl * (float)(v - 32);
		}
		return;
	}
	const int cc = e0 / 64, r = e0 % 64, hi = r >= 32, l0 = r & 31;
	const int qs = (T == RS_TYPE_Q5_K ? 48 : 16) + 32 * cc + l0;
	const uint8_t *hd = t + 16 * i;	/* the row's head, as in its block */
	const uint2 q = __ldg((const uint2 *)(t + rs_tile_off(T, i, qs)));
	uint2 qh = make_uint2(0, 0);
	int sc, mn;

	if (T == RS_TYPE_Q5_K)
		qh = __ldg((const uint2 *)(t + rs_tile_off(T, i, 16 + l0)));
	k_scale_min(hd + 4, 2 * cc + hi, &sc, &mn);
	const float dl = ld_half(hd) * (float)sc, ml = ld_half(hd + 2) *
	    (float)mn;
	const int sh = hi ? 4 : 0, hb = 2 * cc + hi;

	for (int k = 0; k < 8; k++) {
		const uint32_t qw = k < 4 ? q.x : q.y, hw = k < 4 ? qh.x : qh.y;
		const int b = (qw >> (8 * (k % 4))) & 0xFF;
		int v = (b >> sh) & 15;
		if (T == RS_TYPE_Q5_K)
			v += 16 * (((hw >> (8 * (k % 4))) >> hb) & 1);
		y[k] = dl * (float)v - ml;
	}
}

/*
 * Elements 8c .. 8c + 7 of row R of W, rows ROW_BYTES apart, T any type
 * with a decoder or a tiled one (T | RS_TILED, rs_tile.h: tile row R / 16
 * is 16 rows' bytes long, ROW_BYTES the GGUF row's).
 */
template <int T>
static __device__ __forceinline__ void
dequant8_at(const uint8_t *w, int64_t row_bytes, int64_t r, int64_t c,
    float *y)
{
	if constexpr ((T & RS_TILED) == 0) {
		dequant8<T>(w + r * row_bytes, c, y);
	} else {
		constexpr int B = T & ~RS_TILED;

		dequant8_tile<B>(w + r / RS_TILE_ROWS * RS_TILE_ROWS *
		    row_bytes + c / 32 * RS_TILE_ROWS * qtraits<B>::qb,
		    (int)(r % RS_TILE_ROWS), (int)(c % 32), y);
	}
}

template <>
__device__ __forceinline__ void
dequant8<RS_TYPE_IQ4_XS>(const uint8_t *row, int64_t c, float *y)
{
	int w;
	const uint8_t *b = chunk_block<RS_TYPE_IQ4_XS>(row, c, &w);
	int sb = w / 4, j0 = 8 * (w % 4);
	int scales_h = b[2] | b[3] << 8;
	int ls = ((b[4 + sb / 2] >> (4 * (sb % 2))) & 15) |
	    (((scales_h >> (2 * sb)) & 3) << 4);
	float dl = ld_half(b) * (float)(ls - 32);
	const uint8_t *qs = b + 8 + 16 * sb + (j0 & 15);
	int sh = j0 >= 16 ? 4 : 0;

	for (int k = 0; k < 8; k++)
		y[k] = dl * (float)iq4_table[(qs[k] >> sh) & 15];
}

/*
 * Call F.template operator()<TYPE>() (a functor with a template call
 * operator) for a runtime ggml type; false for a type without a device
 * decoder.
 */
template <typename F>
static bool
dispatch_type(int type, F &&f)
{
	switch (type) {
	case RS_TYPE_F32: f.template operator()<RS_TYPE_F32>(); return (true);
	case RS_TYPE_F16: f.template operator()<RS_TYPE_F16>(); return (true);
	case RS_TYPE_BF16: f.template operator()<RS_TYPE_BF16>(); return (true);
	case RS_TYPE_Q4_0: f.template operator()<RS_TYPE_Q4_0>(); return (true);
	case RS_TYPE_Q4_1: f.template operator()<RS_TYPE_Q4_1>(); return (true);
	case RS_TYPE_Q5_0: f.template operator()<RS_TYPE_Q5_0>(); return (true);
	case RS_TYPE_Q5_1: f.template operator()<RS_TYPE_Q5_1>(); return (true);
	case RS_TYPE_Q8_0: f.template operator()<RS_TYPE_Q8_0>(); return (true);
	case RS_TYPE_IQ4_NL: f.template operator()<RS_TYPE_IQ4_NL>(); return (true);
	case RS_TYPE_Q2_K: f.template operator()<RS_TYPE_Q2_K>(); return (true);
	case RS_TYPE_Q3_K: f.template operator()<RS_TYPE_Q3_K>(); return (true);
	case RS_TYPE_Q4_K: f.template operator()<RS_TYPE_Q4_K>(); return (true);
	case RS_TYPE_Q5_K: f.template operator()<RS_TYPE_Q5_K>(); return (true);
	case RS_TYPE_Q6_K: f.template operator()<RS_TYPE_Q6_K>(); return (true);
	case RS_TYPE_IQ4_XS: f.template operator()<RS_TYPE_IQ4_XS>(); return (true);
	default: return (false);
	}
}

/* dispatch_type, and the tiled types (rs_tile.h) as T | RS_TILED */
template <typename F>
static bool
dispatch_stored(int type, F &&f)
{
	switch (type) {
	case RS_TYPE_Q4_K | RS_TILED:
		f.template operator()<RS_TYPE_Q4_K | RS_TILED>(); return (true);
	case RS_TYPE_Q5_K | RS_TILED:
		f.template operator()<RS_TYPE_Q5_K | RS_TILED>(); return (true);
	case RS_TYPE_Q6_K | RS_TILED:
		f.template operator()<RS_TYPE_Q6_K | RS_TILED>(); return (true);
	default: return (dispatch_type(type, f));
	}
}

#endif /* RS_QUANT_CUH */
