/*
 * matvec_xq.cuh - per-lane weight decoders of the integer matvec
 * (matvec.cu), for the formats of the Q4_K_M files: Q4_K, Q5_K, Q6_K.
 *
 * Eight lanes share each 256-value super-block of a row (matvec.cu puts
 * four rows in a warp).  Every lane covers two runs of 16 consecutive
 * values of its super-block ("groups"), chosen so that its quantized bytes
 * are one or two 16-byte loads, and turns them into 16 bytes q[i] (0..63)
 * per group plus two floats, a and m, with
 *
 *   w[i] = a·q[i] − m          for every value i of the group.
 *
 * Against activations in the rs_xq.h format (x̃ = s·(256·hi + lo)) a group
 * then contributes
 *
 *   Σ w·x̃ = a·s·(256·Σ q·hi + Σ q·lo) − m·Σ x̃,
 *
 * two integer sums of four dp4a each and the block's stored half-sum.
 * The formulas are those of lib/rs_types.c (qwen35-model.md §7.3).
 *
 *   Q4_K, Q5_K  lane j of 8: bytes 16j.. of qs, i.e. chunk cc = j/2, values
 *               16·(j%2).. of sub-blocks 2cc (low nibbles, group 0) and
 *               2cc + 1 (high nibbles, group 1); a = d·sc, m = dmin·mn.
 *   Q6_K        lane j: half h = j/4, kk = (j/2)%2, l0 = 16·(j%2): ql bytes
 *               64h + 32kk + l0.. give the values 32kk + l0.. (low nibbles,
 *               group 0) and 32(kk + 2) + l0.. (high, group 1) of the
 *               half, qh bits 2kk and 2kk + 4 their top two bits;
 *               a = d·sc, m = 32·a.  Its 210-byte blocks are only 2-byte
 *               aligned, so lanes read aligned words and funnel-shift.
 */
#ifndef RS_MATVEC_XQ_CUH
#define RS_MATVEC_XQ_CUH

#include "common.cuh"
#include "quant.cuh"

/* One lane's share of a super-block: two groups of 16 values. */
struct xq_lane {
	uint32_t	q[2][4];	/* 16 values (bytes 0..63) per group */
	float		a[2], m[2];
	int		off[2];		/* value offsets inside the super-block */
};

/* Types with an integer path. */
static inline bool
xq_type(int type)
{
	return (type == RS_TYPE_Q4_K || type == RS_TYPE_Q5_K ||
	    type == RS_TYPE_Q6_K);
}

template <int TYPE> struct xqw;

/*
 * Q4_K / Q5_K scales: HDR is the 16-byte head (d, dmin, 12 packed bytes);
 * sub-blocks 2cc and 2cc + 1 get a = d·sc, m = dmin·mn.  The 6-bit fields
 * are unpacked four at a time in 32-bit words (sub-blocks 0..3 lie in the
 * low six bits of bytes 0..3 and 4..7; sub-blocks 4..7 combine a nibble of
 * bytes 8..11 with the top two bits of bytes 0..7).
 */
static __device__ __forceinline__ void
k_scales(uint4 hdr, int cc, xq_lane *l)
{
	const uint32_t s0 = hdr.y, s1 = hdr.z, s2 = hdr.w;
	uint32_t sc, mn;

	if (cc < 2) {
		sc = s0 & 0x3F3F3F3Fu;
		mn = s1 & 0x3F3F3F3Fu;
	} else {
		sc = (s2 & 0x0F0F0F0Fu) | ((s0 >> 2) & 0x30303030u);
		mn = ((s2 >> 4) & 0x0F0F0F0Fu) | ((s1 >> 2) & 0x30303030u);
	}
	const int sh = 16 * (cc & 1);
	float2 dm = __half22float2(*(const __half2 *)&hdr.x);
	l->a[0] = dm.x * (float)((sc >> sh) & 0xFF);
	l->a[1] = dm.x * (float)((sc >> (sh + 8)) & 0xFF);
	l->m[0] = dm.y * (float)((mn >> sh) & 0xFF);
	l->m[1] = dm.y * (float)((mn >> (sh + 8)) & 0xFF);
}

template <> struct xqw<RS_TYPE_Q4_K> {
	static __device__ __forceinline__ void
	load(const uint8_t *row, int64_t bi, int j, xq_lane *l)
	{
		const uint8_t *b = row + bi * 144;
		const int cc = j >> 1;
		uint4 hdr = __ldg((const uint4 *)b);
		uint4 qs = __ldg((const uint4 *)(b + 16 + 16 * j));
		const uint32_t w[4] = { qs.x, qs.y, qs.z, qs.w };

#pragma unroll
		for (int i = 0; i < 4; i++) {
			l->q[0][i] = w[i] & 0x0F0F0F0Fu;
			l->q[1][i] = (w[i] >> 4) & 0x0F0F0F0Fu;
		}
		k_scales(hdr, cc, l);
		l->off[0] = 64 * cc + 16 * (j & 1);
		l->off[1] = l->off[0] + 32;
	}
};

template <> struct xqw<RS_TYPE_Q5_K> {
	static __device__ __forceinline__ void
	load(const uint8_t *row, int64_t bi, int j, xq_lane *l)
	{
		const uint8_t *b = row + bi * 176;
		const int cc = j >> 1;
		uint4 hdr = __ldg((const uint4 *)b);
		uint4 qh4 = __ldg((const uint4 *)(b + 16 + 16 * (j & 1)));
		uint4 qs = __ldg((const uint4 *)(b + 48 + 16 * j));
		const uint32_t w[4] = { qs.x, qs.y, qs.z, qs.w };
		const uint32_t h[4] = { qh4.x, qh4.y, qh4.z, qh4.w };

#pragma unroll
		for (int i = 0; i < 4; i++) {
			l->q[0][i] = (w[i] & 0x0F0F0F0Fu) |
			    ((h[i] >> (2 * cc)) & 0x01010101u) << 4;
			l->q[1][i] = ((w[i] >> 4) & 0x0F0F0F0Fu) |
			    ((h[i] >> (2 * cc + 1)) & 0x01010101u) << 4;
		}
		k_scales(hdr, cc, l);
		l->off[0] = 64 * cc + 16 * (j & 1);
		l->off[1] = l->off[0] + 32;
	}
};

/* 16 bytes at P, which is 2-byte aligned: five aligned words, shifted. */
static __device__ __forceinline__ void
ld16_a2(const uint8_t *p, uint32_t *out)
{
	const uint32_t *w = (const uint32_t *)((uintptr_t)p & ~(uintptr_t)3);
	const int sh = 8 * (int)((uintptr_t)p & 3);
	uint32_t v[5];

#pragma unroll
	for (int i = 0; i < 5; i++)
		v[i] = __ldg(w + i);
#pragma unroll
	for (int i = 0; i < 4; i++)
		out[i] = __funnelshift_r(v[i], v[i + 1], sh);
}

template <> struct xqw<RS_TYPE_Q6_K> {
	static __device__ __forceinline__ void
	load(const uint8_t *row, int64_t bi, int j, xq_lane *l)
	{
		const uint8_t *b = row + bi * 210;
		const int h = j >> 2, kk = (j >> 1) & 1, l0 = 16 * (j & 1);
		const int8_t *sc = (const int8_t *)(b + 192) + 8 * h +
		    (j & 1) + 2 * kk;
		uint32_t ql[4], qh[4];

		ld16_a2(b + 64 * h + 32 * kk + l0, ql);
		ld16_a2(b + 128 + 32 * h + l0, qh);
#pragma unroll
		for (int i = 0; i < 4; i++) {
			l->q[0][i] = (ql[i] & 0x0F0F0F0Fu) |
			    ((qh[i] >> (2 * kk)) & 0x03030303u) << 4;
			l->q[1][i] = ((ql[i] >> 4) & 0x0F0F0F0Fu) |
			    ((qh[i] >> (2 * kk + 4)) & 0x03030303u) << 4;
		}
		float d = half_to_float(__ldg((const unsigned short *)(b + 208)));
		l->a[0] = d * (float)sc[0];
		l->a[1] = d * (float)sc[4];
		l->m[0] = 32.0f * l->a[0];
		l->m[1] = 32.0f * l->a[1];
		l->off[0] = 128 * h + 32 * kk + l0;
		l->off[1] = l->off[0] + 64;
	}
};

/*
 * Σ w·x̃ of lane L's two groups against the quantized column XQ (N values)
 * at super-block BI, summed in one fixed order.
 */
static __device__ __forceinline__ float
xq_dot(const xq_lane &l, const uint8_t *__restrict__ xq, int64_t n,
    int64_t bi, float acc)
{
#pragma unroll
	for (int g = 0; g < 2; g++) {
		const int64_t i0 = bi * 256 + l.off[g];
		uint4 hi = __ldg((const uint4 *)(xq + i0));
		uint4 lo = __ldg((const uint4 *)(xq + n + i0));
		float4 meta = __ldg((const float4 *)(xq + 2 * n) + i0 / 32);
		int sh = __dp4a((int)l.q[g][0], (int)hi.x, 0);
		sh = __dp4a((int)l.q[g][1], (int)hi.y, sh);
		sh = __dp4a((int)l.q[g][2], (int)hi.z, sh);
		sh = __dp4a((int)l.q[g][3], (int)hi.w, sh);
		unsigned sl = __dp4a(l.q[g][0], lo.x, 0u);
		sl = __dp4a(l.q[g][1], lo.y, sl);
		sl = __dp4a(l.q[g][2], lo.z, sl);
		sl = __dp4a(l.q[g][3], lo.w, sl);
		const float p = (float)(256 * sh + (int)sl);
		const float sum = (i0 & 16) ? meta.z : meta.y;
		acc = fmaf(l.a[g], meta.x * p, acc);
		acc = fmaf(-l.m[g], sum, acc);
	}
	return (acc);
}

#endif /* RS_MATVEC_XQ_CUH */
