/*
 * attn_mma.cuh - the SM80+ path of rs_k_attn's split kernel (attn.cu) for
 * rows of at least RS_K_ATTN_MMA_FROM keys: the same split partials (m, l, o)
 * for the same splits, with Q·Kᵀ and P·V on mma.sync m16n8k16 (f16
 * operands, f32 sums) so that the query rows of a whole verification pass
 * share each K and V row a block reads.
 *
 * Why.  attn.cu's kernel holds one token's GB heads a block: a pass of T
 * tokens reads every K/V row T times (through L2) and pays T times the
 * FMA work, so at depth 32,768 a pass of 8 tokens cost 1.97 decode steps
 * and 16 tokens 3.23 (H200, rs-bench --depth, perf-log session 17), where
 * at depth 16 they cost 1.42 and 2.13.
 *
 * Rows.  Query row r = t·G + i is head j·G + i of token t (G = n_head /
 * n_head_kv), as in the prefill kernel.  A block owns 8 rows, one KV
 * head j and one split index s, four warps.  In the
 * m16n8k16 tiles, A's rows 0-7 are those 8 rows rounded to f16 (hi) and
 * rows 8-15 the f16 rounding of what that left (lo: q − hi), so a lane's
 * accumulators c0 + c2 and c1 + c3 are the scores (then the outputs) of
 * one query row from a 22-bit q and a 22-bit P: the f32 precision of the
 * FMA kernel within ~2^-22, with no exchange between lanes.
 *
 * Splits, tiles and batch invariance.  Row r of n_r = p0 + t + 1 keys uses
 * split size S(n_r) (attn.cu) and keys [s·S, min(n_r, (s + 1)·S)) in
 * 32-key tiles from s·S, warp w taking tiles w, w + 4, ...; each warp
 * keeps (m, l, O) per row with one online-softmax rescale a tile, and the
 * warps merge in warp order, as attn.cu's kernel does.  A tile holds the
 * keys of the block's longest row; keys at or past a row's own end score
 * −inf for it, and a tile with none of a row's keys leaves its m, l and O
 * as they were (α = 1 exactly, P = 0), so every row's arithmetic is the
 * one it has in a call of its own token: an mma computes each output row
 * from its own A row.  Rows whose S differs from the first row's (a
 * block straddling a doubling of S) run in a second pass over their own
 * key range.  Keys past the block's longest row are never read (loads
 * return zero), so V's zeros meet P's zeros and nothing past the written
 * cache enters a product.
 *
 * Fragments (PTX ISA, mma.m16n8k16 .f16; lane = 4g + t).  A: rows g, g+8
 * × k 2t, 2t+1 and 2t+8, 2t+9; B: k 2t, 2t+1 and 2t+8, 2t+9 × n = g; C:
 * rows g, g+8 × n 2t, 2t+1.  A dot product may take its k in any order,
 * so the k of a step are mapped to whatever dims make the loads plain:
 *   Q·Kᵀ, keys 8nt .. 8nt+7 of the tile as n: lane (g, t) loads 16-byte
 *     chunks t, t+4, ... of key row 8nt + g (four lanes read 64 bytes of
 *     a row); chunk c = t + 4jj covers two k-steps, 2jj and 2jj + 1, its
 *     words 2h, 2h+1 being b0, b1 of step 2jj + h; Q's A fragment of that
 *     step takes the same dims of rows g (hi) and g+8 (lo) from shared
 *     memory.
 *   P·V, keys 16kk .. 16kk+15 as k: the C fragments of S's key tiles 2kk
 *     and 2kk + 1 are A (P, split into hi and lo in the lane); B needs
 *     pairs of keys for one dim, so lane (g, t) loads chunk g + 8u of V
 *     rows 2t, 2t+1, 2t+8, 2t+9 and pairs the halves with byte
 *     permutations: n-tile (u, e) has, for lane g, dim 8(g + 8u) + e; C
 *     then holds dims 8(2t + 8u) + e and 8(2t + 1 + 8u) + e of the row.
 *
 * Napkin math (27B, d = 256, G = 6; one warp's 32-key tile of 8 rows):
 * 64 + 64 mma, 32 + 32 16-byte loads, 128 byte permutations, 128 FMUL of
 * the rescale (skipped when no row's max moved) and ~80 of softmax: ~540
 * instructions for 32 keys × 8 rows, against ~4,500 on attn.cu's kernel
 * for 32 keys × 6 rows.  A pass of T tokens runs ⌈6T / 8⌉ blocks a KV
 * head and split, each reading the split's K/V (the first from DRAM, the
 * others mostly from L2).
 *
 * Measured alone (session 17, H200, perf-log; kernels/dev/attn_decode, µs
 * a layer, FMA path -> this): depth 32,768: 1 token 87.1 -> 83.5, 4:
 * 230.8 -> 171.8, 16: 731 -> 515; 131,040: 1: 267 -> 222, 16: 2591 ->
 * 1411; but depth 4,096: 4 tokens 51.5 -> 73.2, 16: 141 -> 219.  On
 * short splits a tile is latency-bound (250 registers, 2 blocks an SM;
 * Q·Kᵀ is four chains of D/16 dependent mma, K arrives 8 loads at a
 * time, V only after the softmax) and one tile a warp hides nothing;
 * hence the threshold.  In the engine (session 18, rs-bench --depth,
 * with attn.cu's prefetch; verify 8 / 16 tokens at 32,768): 16.79 /
 * 27.50 ms on the FMA path alone, 16.36 / 26.61 with its prefetch, 15.05
 * / 24.16 with this path.  Next: two accumulator chains, V's loads
 * before the softmax, then a lower threshold.  Registers bound these: O
 * takes 128 of the 250 at d = 256; a second Q·Kᵀ chain (the odd k-steps into
 * their own accumulators) still fits, 254 and no spills (ptxas, not
 * timed); more in flight would need O's dims split between two warps
 * that share a key stream, or O in two halves with P·V run twice.
 */
#ifndef RS_ATTN_MMA_CUH
#define RS_ATTN_MMA_CUH

#include <math.h>

#include "attn_prefill_mma.cuh"
#include "common.cuh"
#include "rs_kernels.h"

#define AM_WARPS	4
#define AM_ROWS		8	/* query rows a block */
#define AM_TILE		32	/* keys a warp step */

/* shared memory: Q hi and lo (AM_ROWS × (D + 8) halves each), then per
   warp and row m, l, o[D] for the merge */
template <int D>
struct am_layout {
	static const int LDQ = D + 8;
	static const int PART = AM_ROWS * (2 + D);	/* floats a warp */
	static const int BYTES = 2 * AM_ROWS * LDQ * 2 +
	    AM_WARPS * PART * 4;
};

/* S(n) of attn.cu, for device code */
static __device__ __forceinline__ int64_t
am_split_keys(int64_t n)
{
	int64_t s = RS_K_ATTN_SPLIT_MIN;

	while (s * RS_K_ATTN_MAX_SPLITS < n)
		s *= 2;
	return (s);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800

/* 16 bytes of P at key index KEY (< LAST) or zeros */
static __device__ __forceinline__ uint4
am_ld16(const uint16_t *p, bool in)
{
	return (in ? __ldg((const uint4 *)p) : make_uint4(0, 0, 0, 0));
}

/* f16 pair {lo half: A, hi half: B} and what rounding left of each */
static __device__ __forceinline__ void
am_split2(float a, float b, uint32_t *hi, uint32_t *lo)
{
	const __half2 h = __floats2half2_rn(a, b);
	const float2 f = __half22float2(h);
	const __half2 l = __floats2half2_rn(a - f.x, b - f.y);

	*hi = *(const uint32_t *)&h;
	*lo = *(const uint32_t *)&l;
}

/*
 * One warp's tile of keys KT .. KT+31 for its 8 rows: scores, the online
 * softmax (M, L per lane: row g; L a partial over the lane's keys) and
 * O += P·V.  ACTIVE: this lane's row takes part in the pass; LAST: the
 * row's keys end there; KEND: no key at or past it is read.
 */
template <int D>
static __device__ __forceinline__ void
am_tile(const uint16_t *__restrict__ kc, const uint16_t *__restrict__ vc,
    int64_t row, int kt, int kend, int last, bool active,
    const half *sqh, const half *sql, float &m, float &l,
    float (*o)[8][4], int lane)
{
	const int g = lane / 4, t = lane % 4;
	float s[4][4];

	/* S = Q·Kᵀ, n-tile nt = keys kt + 8nt .. +7 */
#pragma unroll
	for (int nt = 0; nt < 4; nt++)
		s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
	for (int jj = 0; jj < D / 32; jj++) {
		const int c = t + 4 * jj;
		uint4 kw[4];
		uint32_t a[2][4];

#pragma unroll
		for (int nt = 0; nt < 4; nt++) {
			const int key = kt + 8 * nt + g;
			kw[nt] = am_ld16(kc + (int64_t)(key < kend ? key : 0) *
			    row + 8 * c, key < kend);
		}
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const uint2 qh = *(const uint2 *)(sqh + g *
			    am_layout<D>::LDQ + 8 * c + 4 * h);
			const uint2 ql = *(const uint2 *)(sql + g *
			    am_layout<D>::LDQ + 8 * c + 4 * h);
			a[h][0] = qh.x; a[h][1] = ql.x;
			a[h][2] = qh.y; a[h][3] = ql.y;
		}
#pragma unroll
		for (int nt = 0; nt < 4; nt++) {
			mma16816(s[nt], a[0], kw[nt].x, kw[nt].y);
			mma16816(s[nt], a[1], kw[nt].z, kw[nt].w);
		}
	}
	/* scores of row g, keys kt + 8nt + 2t + e; the tile's row max */
	float sc[4][2], mx = -INFINITY;
#pragma unroll
	for (int nt = 0; nt < 4; nt++)
#pragma unroll
		for (int e = 0; e < 2; e++) {
			const int key = kt + 8 * nt + 2 * t + e;
			sc[nt][e] = active && key < last ?
			    s[nt][e] + s[nt][e + 2] : -INFINITY;
			mx = fmaxf(mx, sc[nt][e]);
		}
	mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
	mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
	const float mn = fmaxf(m, mx);
	const float al = mn == -INFINITY ? 1.0f : __expf(m - mn);
	float ps = 0.0f;
	uint32_t ph[4], pl[4];	/* P's f16 pairs, hi and lo parts */
#pragma unroll
	for (int nt = 0; nt < 4; nt++) {
		float p[2];
#pragma unroll
		for (int e = 0; e < 2; e++) {
			p[e] = mn == -INFINITY ? 0.0f : __expf(sc[nt][e] - mn);
			ps += p[e];
		}
		am_split2(p[0], p[1], &ph[nt], &pl[nt]);
	}
	l = l * al + ps;
	m = mn;
	if (!__all_sync(0xffffffffu, al == 1.0f))
#pragma unroll
		for (int f = 0; f < D / 8; f++)
#pragma unroll
			for (int i = 0; i < 4; i++)
				o[f / 8][f % 8][i] *= al;
	/* O += P·V, keys kt + 16kk .. +15 */
#pragma unroll 1
	for (int kk = 0; kk < 2; kk++) {
		const uint32_t a[4] = { kk ? ph[2] : ph[0], kk ? pl[2] : pl[0],
		    kk ? ph[3] : ph[1], kk ? pl[3] : pl[1] };
		const int k0 = kt + 16 * kk + 2 * t;
		const int keys[4] = { k0, k0 + 1, k0 + 8, k0 + 9 };

#pragma unroll
		for (int u = 0; u < D / 64; u++) {
			uint4 vw[4];

#pragma unroll
			for (int i = 0; i < 4; i++)
				vw[i] = am_ld16(vc + (int64_t)(keys[i] < kend ?
				    keys[i] : 0) * row + 8 * (g + 8 * u),
				    keys[i] < kend);
#pragma unroll
			for (int e = 0; e < 8; e++) {
				const uint32_t sel = e % 2 ? 0x7632 : 0x5410;
				const uint32_t w0 = ((const uint32_t *)&vw[0])[e / 2];
				const uint32_t w1 = ((const uint32_t *)&vw[1])[e / 2];
				const uint32_t w2 = ((const uint32_t *)&vw[2])[e / 2];
				const uint32_t w3 = ((const uint32_t *)&vw[3])[e / 2];

				mma16816(o[u][e], a, __byte_perm(w0, w1, sel),
				    __byte_perm(w2, w3, sel));
			}
		}
	}
}

#endif /* __CUDA_ARCH__ >= 800 */

/*
 * Partials of rows 8·MB .. +7 of KV head J, split SPLIT, into PART as
 * attn.cu's FMA path writes them, for the rows of at least FROM keys (the
 * others are that path's).  SMEM: am_layout<D>::BYTES.
 */
template <int D>
static __device__ __forceinline__ void
attn_split_mma(int mb, int j, int split, const float *__restrict__ q,
    int64_t ldq, int64_t qs, const uint16_t *__restrict__ kc,
    const uint16_t *__restrict__ vc, int n_head, int n_head_kv, int n_tok,
    const int32_t *__restrict__ pos0, int64_t from, float scale,
    float *__restrict__ part, unsigned char *smem)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	typedef am_layout<D> L;
	half	*sqh = (half *)smem, *sql = sqh + AM_ROWS * L::LDQ;
	float	*wpart = (float *)(sql + AM_ROWS * L::LDQ);
	const int lane = threadIdx.x % RS_WARP, warp = threadIdx.x / RS_WARP;
	const int g = lane / 4, G = n_head / n_head_kv;
	const int r0 = AM_ROWS * mb;
	const int n_rows = n_tok * G;
	const int64_t p0 = *pos0, row = (int64_t)n_head_kv * D;
	const uint16_t *kb = kc + (int64_t)j * D, *vb = vc + (int64_t)j * D;
	/* this lane's row (g) and the block's first and last rows */
	const int r = r0 + g, rl = min(r0 + AM_ROWS, n_rows) - 1;
	const int64_t n_r = p0 + min(r, rl) / G + 1;
	const int64_t s_r = am_split_keys(n_r);
	const int64_t s_lo = am_split_keys(p0 + r0 / G + 1);
	const int64_t s_hi = am_split_keys(p0 + rl / G + 1);
	float	o[D / 64][8][4], m = -INFINITY, l = 0.0f;

	if (p0 + rl / G + 1 < from)
		return;		/* every row on the FMA path */
	if (split * s_lo >= p0 + rl / G + 1)
		return;		/* past every row's last split (S ≥ s_lo) */

	/* Q of the 8 rows, scaled, as f16 hi and lo (zeros past the last) */
	for (int x = threadIdx.x; x < AM_ROWS * D / 2; x += blockDim.x) {
		const int rr = x / (D / 2), i = 2 * (x % (D / 2));
		float a = 0.0f, b = 0.0f;
		uint32_t hi, lo;

		if (r0 + rr < n_rows) {
			const float *src = q + (int64_t)((r0 + rr) / G) * ldq +
			    (int64_t)(j * G + (r0 + rr) % G) * qs + i;
			a = src[0] * scale;
			b = src[1] * scale;
		}
		am_split2(a, b, &hi, &lo);
		*(uint32_t *)(sqh + rr * L::LDQ + i) = hi;
		*(uint32_t *)(sql + rr * L::LDQ + i) = lo;
	}
	__syncthreads();
#pragma unroll
	for (int u = 0; u < D / 64; u++)
#pragma unroll
		for (int e = 0; e < 8; e++)
			o[u][e][0] = o[u][e][1] = o[u][e][2] = o[u][e][3] = 0.0f;
	/* one pass per split size among the rows (two where S doubles) */
	for (int pass = 0; pass < (s_hi != s_lo ? 2 : 1); pass++) {
		const int S = (int)(pass == 0 ? s_lo : s_hi);
		const int k0 = split * S;
		const int kend = (int)min(p0 + rl / G + 1, (int64_t)k0 + S);
		const bool active = r <= rl && s_r == S && n_r >= from;
		const int last = (int)min(n_r, (int64_t)k0 + S);

		for (int kt = k0 + AM_TILE * warp; kt < kend;
		    kt += AM_TILE * AM_WARPS)
			am_tile<D>(kb, vb, row, kt, kend, last, active, sqh,
			    sql, m, l, o, lane);
	}
	/* l of row g: the quad's partials in a fixed order; then the warp's
	   (m, l, o) to shared memory */
	l += __shfl_xor_sync(0xffffffffu, l, 1);
	l += __shfl_xor_sync(0xffffffffu, l, 2);
	float *mine = wpart + warp * L::PART + g * (2 + D);
	if (lane % 4 == 0) {
		mine[0] = m;
		mine[1] = l;
	}
#pragma unroll
	for (int u = 0; u < D / 64; u++)
#pragma unroll
		for (int e = 0; e < 8; e++) {
			const int t = lane % 4;
			mine[2 + 8 * (2 * t + 8 * u) + e] = o[u][e][0] +
			    o[u][e][2];
			mine[2 + 8 * (2 * t + 1 + 8 * u) + e] = o[u][e][1] +
			    o[u][e][3];
		}
	__syncthreads();
	/* merge the warps in warp order, as attn_split_kernel does */
	for (int x = threadIdx.x; x < AM_ROWS * D; x += blockDim.x) {
		const int rr = x / D, i = x % D, rw = r0 + rr;
		if (rw >= n_rows)
			break;
		const int64_t n = p0 + rw / G + 1, S = am_split_keys(n);
		if (n < from || split * S >= n)
			continue;	/* the FMA path's, or past its splits */
		float M = -INFINITY, Lsum = 0.0f, out = 0.0f;
		for (int w = 0; w < AM_WARPS; w++)
			M = fmaxf(M, wpart[w * L::PART + rr * (2 + D)]);
		for (int w = 0; w < AM_WARPS; w++) {
			const float *p = wpart + w * L::PART + rr * (2 + D);
			float f = p[0] == -INFINITY ? 0.0f : __expf(p[0] - M);
			Lsum += p[1] * f;
			out += p[2 + i] * f;
		}
		float *dst = part + (((int64_t)(rw / G) * n_head + j * G +
		    rw % G) * RS_K_ATTN_MAX_SPLITS + split) * (2 + D);
		if (i == 0) {
			dst[0] = M;
			dst[1] = Lsum;
		}
		dst[2 + i] = out;
	}
#else
	/* archs before SM80: the launcher gives them no rows here */
	(void)mb; (void)j; (void)split; (void)q; (void)ldq; (void)qs;
	(void)kc; (void)vc; (void)n_head; (void)n_head_kv; (void)n_tok;
	(void)pos0; (void)from; (void)scale; (void)part; (void)smem;
#endif
}

#endif /* RS_ATTN_MMA_CUH */
