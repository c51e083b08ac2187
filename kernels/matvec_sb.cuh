/*
 * matvec_sb.cuh - per-lane decoders for the split-K matvec (matvec.cu):
 * a warp handles one 256-value super-block of a row per step, each lane 8
 * of its values.  Where a lane's 8 values lie inside the super-block is
 * the "x pattern" (the same positions of x are loaded), chosen per format
 * so that each lane reads its weight bytes with one or a few aligned loads:
 *
 *   RUN8   8 consecutive values at 8·lane (generic: dequant8 of quant.cuh)
 *   RUN4   4 at a, 4 at a + 32, a = 64·(lane/8) + 4·(lane%8)   (Q4_K, Q5_K:
 *          one 32-bit load of qs gives 4 low and 4 high nibbles)
 *   RUN2   2 at a + 32k, k = 0..3, a = 128·(lane/16) + 2·(lane%16)  (Q6_K:
 *          16-bit loads, as its 210-byte blocks are only 2-aligned)
 *
 * Integers become floats through the exponent trick: the bits 0x4B000000|q
 * are the float 2^23 + q exactly, and one FADD removes 2^23, avoiding the
 * quarter-rate integer conversion.  The math is that of quant.cuh /
 * lib/model/rs_types.c (qwen35-model.md §7.3); y = d·sc·q − dmin·mn is
 * formed with one FMA.
 */
#ifndef RS_MATVEC_SB_CUH
#define RS_MATVEC_SB_CUH

#include "quant.cuh"

enum { XP_RUN8, XP_RUN4, XP_RUN2 };

static __device__ __forceinline__ float
u2f(uint32_t q)
{
	return (__int_as_float(0x4B000000 | q) - 8388608.0f);
}

/*
 * Q4_K / Q5_K: d·sc and dmin·mn of sub-blocks 2·CC and 2·CC + 1 of the
 * super-block at B (both start with d, dmin and the 12 packed scales).
 */
static __device__ __forceinline__ void
k_pair_scales(const uint8_t *b, int cc, float *dl0, float *ml0, float *dl1,
    float *ml1)
{
	uint32_t dd = *(const uint32_t *)b;
	float	 d = half_to_float((uint16_t)dd);
	float	 dmin = half_to_float((uint16_t)(dd >> 16));
	int	 sc0, mn0, sc1, mn1;

	k_scale_min(b + 4, 2 * cc, &sc0, &mn0);
	k_scale_min(b + 4, 2 * cc + 1, &sc1, &mn1);
	*dl0 = d * (float)sc0;
	*ml0 = dmin * (float)mn0;
	*dl1 = d * (float)sc1;
	*ml1 = dmin * (float)mn1;
}

template <int TYPE> struct sb {
	enum { xp = XP_RUN8 };
	static __device__ __forceinline__ int
	base(int lane)
	{
		return (8 * lane);
	}
	/* values of super-block BI (256 values) of ROW into W */
	static __device__ __forceinline__ void
	load(const uint8_t *row, int64_t bi, int lane, float *w)
	{
		dequant8<TYPE>(row, bi * 32 + lane, w);
	}
};

template <> struct sb<RS_TYPE_Q4_K> {
	enum { xp = XP_RUN4 };
	static __device__ __forceinline__ int
	base(int lane)
	{
		return (64 * (lane >> 3) + 4 * (lane & 7));
	}
	static __device__ __forceinline__ void
	load(const uint8_t *row, int64_t bi, int lane, float *w)
	{
		const uint8_t *b = row + bi * qtraits<RS_TYPE_Q4_K>::qb;
		int	 cc = lane >> 3, l = 4 * (lane & 7);
		uint32_t q = *(const uint32_t *)(b + 16 + 32 * cc + l);
		float	 dl0, ml0, dl1, ml1;

		k_pair_scales(b, cc, &dl0, &ml0, &dl1, &ml1);
#pragma unroll
		for (int i = 0; i < 4; i++) {
			w[i] = fmaf(dl0, u2f((q >> (8 * i)) & 15), -ml0);
			w[4 + i] = fmaf(dl1, u2f((q >> (8 * i + 4)) & 15), -ml1);
		}
	}
};

template <> struct sb<RS_TYPE_Q5_K> {
	enum { xp = XP_RUN4 };
	static __device__ __forceinline__ int
	base(int lane)
	{
		return (64 * (lane >> 3) + 4 * (lane & 7));
	}
	static __device__ __forceinline__ void
	load(const uint8_t *row, int64_t bi, int lane, float *w)
	{
		const uint8_t *b = row + bi * qtraits<RS_TYPE_Q5_K>::qb;
		int	 cc = lane >> 3, l = 4 * (lane & 7);
		uint32_t q = *(const uint32_t *)(b + 48 + 32 * cc + l);
		uint32_t qh = *(const uint32_t *)(b + 16 + l);
		float	 dl0, ml0, dl1, ml1;

		k_pair_scales(b, cc, &dl0, &ml0, &dl1, &ml1);
#pragma unroll
		for (int i = 0; i < 4; i++) {
			uint32_t lo = ((q >> (8 * i)) & 15) |
			    ((qh >> (8 * i + 2 * cc)) & 1) << 4;
			uint32_t hi = ((q >> (8 * i + 4)) & 15) |
			    ((qh >> (8 * i + 2 * cc + 1)) & 1) << 4;
			w[i] = fmaf(dl0, u2f(lo), -ml0);
			w[4 + i] = fmaf(dl1, u2f(hi), -ml1);
		}
	}
};

template <> struct sb<RS_TYPE_Q6_K> {
	enum { xp = XP_RUN2 };
	static __device__ __forceinline__ int
	base(int lane)
	{
		return (128 * (lane >> 4) + 2 * (lane & 15));
	}
	static __device__ __forceinline__ void
	load(const uint8_t *row, int64_t bi, int lane, float *w)
	{
		const uint8_t *b = row + bi * qtraits<RS_TYPE_Q6_K>::qb;
		int	 h = lane >> 4, l = 2 * (lane & 15);
		uint32_t ql0 = *(const uint16_t *)(b + 64 * h + l);
		uint32_t ql1 = *(const uint16_t *)(b + 64 * h + 32 + l);
		uint32_t qh = *(const uint16_t *)(b + 128 + 32 * h + l);
		float	 d = half_to_float(*(const uint16_t *)(b + 208));
		const int8_t *S = (const int8_t *)(b + 192) + 8 * h + l / 16;

#pragma unroll
		for (int k = 0; k < 4; k++) {
			float dl = d * (float)S[2 * k];
			uint32_t ql = (k & 1) ? ql1 : ql0;
			int sh = k >= 2 ? 4 : 0;
#pragma unroll
			for (int j = 0; j < 2; j++) {
				uint32_t v = ((ql >> (8 * j + sh)) & 15) |
				    ((qh >> (8 * j + 2 * k)) & 3) << 4;
				/* d·S·(v − 32) in one rounding: −32·dl is exact */
				w[2 * k + j] = fmaf(dl, u2f(v), -32.0f * dl);
			}
		}
	}
};

/* Load the 8 x values matching a lane's weights (pattern XP). */
template <int XP>
static __device__ __forceinline__ void
load_x(const float *x, float *v)
{
	if (XP == XP_RUN8) {
		float4 a = __ldg((const float4 *)x), b = __ldg((const float4 *)x + 1);
		v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
		v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
	} else if (XP == XP_RUN4) {
		float4 a = __ldg((const float4 *)x);
		float4 b = __ldg((const float4 *)(x + 32));
		v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
		v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
	} else {
#pragma unroll
		for (int k = 0; k < 4; k++) {
			float2 a = __ldg((const float2 *)(x + 32 * k));
			v[2 * k] = a.x;
			v[2 * k + 1] = a.y;
		}
	}
}

#endif /* RS_MATVEC_SB_CUH */
