/*
 * attn_prefill_mma.cuh - the SM80+ kernel of attn_prefill.cu: causal gated
 * flash attention with mma.sync m16n8k16, S, P and O in registers,
 * ldmatrix fragments and cp.async tile copies (FlashAttention-2's scheme).
 * The math, tiling, fragment layouts, registers and napkin math are in
 * attn_prefill.cu's header; the launcher there takes this kernel when
 * has_mma_path() says so.  Device code only under __CUDA_ARCH__ >= 800,
 * so Volta builds and NVRTC's compute_70 check see a stub.
 */
#ifndef RS_ATTN_PREFILL_MMA_CUH
#define RS_ATTN_PREFILL_MMA_CUH

#include <math.h>

#include "common.cuh"
#include "rs_kernels.h"

#define FA2_WARPS	8
#define FA2_THREADS	(FA2_WARPS * RS_WARP)
#define FA2_BR		(16 * FA2_WARPS)	/* query rows per block */
#define FA2_BC		64			/* keys per tile */

/*
 * Shared memory of the mma.sync kernel, in halves from the start: Q (BR
 * rows), one K tile and one V tile (BC rows each), rows D + 8 halves apart
 * (16 bytes of padding: the 8 row addresses of an ldmatrix phase fall in
 * 8 different groups of 4 banks).
 */
template <int D>
struct fa2_layout {
	static const int LD = D + 8;
	static const int Q = 0;
	static const int K = Q + FA2_BR * LD;
	static const int V = K + FA2_BC * LD;
	static const int BYTES = (V + FA2_BC * LD) * 2;
	/* O is D/2 f32 registers a thread, S 32 more: two blocks' 128
	   registers a thread would spill from D = 128 on */
	static const int MIN_BLOCKS = D == 64 ? 2 : 1;

	static_assert(FA2_BC == 64, "softmax and P·V assume 64-key tiles");
	static_assert(D % 16 == 0 && FA2_BC * D / 8 % FA2_THREADS == 0,
	    "head dims must be multiples of 64");
	static_assert(BYTES <= 163 * 1024, "over SM80's 163 KB per block");
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
static __device__ __forceinline__ uint32_t
smem_addr(const void *p)
{
	return ((uint32_t)__cvta_generic_to_shared(p));
}

/* 16 bytes global → shared, asynchronous; N (0 or 16) bytes are read. */
static __device__ __forceinline__ void
cp_async16(void *dst, const void *src, int n)
{
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::
	    "r"(smem_addr(dst)), "l"(src), "r"(n) : "memory");
}

static __device__ __forceinline__ void
cp_async_commit(void)
{
	asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/* Wait for every cp.async of this thread (then a barrier shows them all). */
static __device__ __forceinline__ void
cp_async_wait_all(void)
{
	asm volatile("cp.async.wait_all;\n" ::: "memory");
}

/*
 * Four 8 × 8 b16 matrices from shared memory: lanes 8i .. 8i+7 give the
 * row addresses of matrix i, and lane l receives in R[i] row l/4, columns
 * 2(l%4), 2(l%4)+1 of matrix i (TRANS: column l/4, rows 2(l%4), +1).
 */
static __device__ __forceinline__ void
ldsm_x4(uint32_t *r, const half *p)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 "
	    "{%0, %1, %2, %3}, [%4];\n"
	    : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
	    : "r"(smem_addr(p)) : "memory");
}

static __device__ __forceinline__ void
ldsm_x4_trans(uint32_t *r, const half *p)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 "
	    "{%0, %1, %2, %3}, [%4];\n"
	    : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
	    : "r"(smem_addr(p)) : "memory");
}

/* C (16 × 8 f32) += A (16 × 16 f16, row) · B (16 × 8 f16, col). */
static __device__ __forceinline__ void
mma16816(float *c, const uint32_t *a, uint32_t b0, uint32_t b1)
{
	asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
	    "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
	    "{%0, %1, %2, %3};\n"
	    : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
	    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Q rows r0 .. r0+BR-1 of KV head J as f16 (zero past the last row). */
template <int D>
static __device__ __forceinline__ void
load_q_mma(half *sq, const float *__restrict__ q, int64_t ldq, int64_t qs,
    int r0, int n_rows, int g, int j)
{
	const int LD = fa2_layout<D>::LD;

	for (int e = threadIdx.x; e < FA2_BR * D / 2; e += FA2_THREADS) {
		int r = e / (D / 2), i = 2 * (e % (D / 2)), row = r0 + r;
		float x0 = 0.0f, x1 = 0.0f;

		if (row < n_rows) {
			const float *src = q + (int64_t)(row / g) * ldq +
			    (int64_t)(j * g + row % g) * qs + i;
			x0 = src[0];
			x1 = src[1];
		}
		*(__half2 *)(sq + r * LD + i) = __floats2half2_rn(x0, x1);
	}
}

/*
 * Start copying keys KV0 .. KV0+63 of one head (D halves each, rows ROW
 * halves apart in SRC) into DST, one commit group; keys at or past N_KEYS
 * read nothing and land as zeros (cp.async's source size 0, the address
 * clamped to key 0), so nothing past the written cache is read and masked
 * V rows are finite.
 */
template <int D>
static __device__ __forceinline__ void
load_tile_async(half *dst, const uint16_t *__restrict__ src, int64_t row,
    int64_t kv0, int64_t n_keys)
{
	const int CH = D / 8, LD = fa2_layout<D>::LD;	/* 16-byte chunks */

#pragma unroll
	for (int it = 0; it < FA2_BC * CH / FA2_THREADS; it++) {
		int e = threadIdx.x + it * FA2_THREADS;
		int key = e / CH, c = e % CH;
		int64_t s = kv0 + key;
		int in = s < n_keys;

		cp_async16(dst + key * LD + c * 8, src + (in ? s : 0) * row +
		    c * 8, in ? 16 : 0);
	}
	cp_async_commit();
}

/*
 * S = Q·Kᵀ for the warp's 16 rows (SQW: row 0 of them) and the 64 keys of
 * the tile, unscaled f32: S[nt] is the accumulator of keys 8nt .. 8nt+7.
 * A fragment (Q, 16 × 16 at dims k): ldmatrix x4 of rows 0-7 / 8-15 ×
 * dims k / k+8, lane l pointing at row l%16, dim k + 8(l/16).  B fragments
 * (Kᵀ: B[k][n] = K[n][k], so a K row is a B column, contiguous as ".col"
 * wants): x4 of keys n0 .. n0+7 / n0+8 .. n0+15 × dims k / k+8, lane l at
 * key n0 + l%8 + 8(l/16), dim k + 8(l/8 % 2): R[0], R[1] are b0, b1 of
 * keys n0.., R[2], R[3] of keys n0+8...
 */
template <int D>
static __device__ __forceinline__ void
qk_mma(float (*s)[4], const half *sqw, const half *sk, int lane)
{
	const int LD = fa2_layout<D>::LD;
	const half *qa = sqw + lane % 16 * LD + 8 * (lane / 16);
	const half *kb = sk + (lane % 8 + 8 * (lane / 16)) * LD +
	    8 * (lane / 8 % 2);

#pragma unroll
	for (int nt = 0; nt < FA2_BC / 8; nt++)
		s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll 2
	for (int k = 0; k < D; k += 16) {
		uint32_t a[4];

		ldsm_x4(a, qa + k);
#pragma unroll
		for (int nt = 0; nt < FA2_BC / 8; nt += 2) {
			uint32_t b[4];

			ldsm_x4(b, kb + nt * 8 * LD + k);
			mma16816(s[nt], a, b[0], b[1]);
			mma16816(s[nt + 1], a, b[2], b[3]);
		}
	}
}

/* The last key LAST relative to the tile at KV0, at most 64 (all seen). */
static __device__ __forceinline__ int
tile_limit(int64_t last, int64_t kv0)
{
	return (last - kv0 < FA2_BC ? (int)(last - kv0) : FA2_BC);
}

/* exp2 of X0 − BASE, X1 − BASE rounded to f16 and packed (X0 low); the
   rounded values are added to *SUM. */
static __device__ __forceinline__ uint32_t
exp_pack(float x0, float x1, float base, float *sum)
{
	union {
		__half2	 h;
		uint32_t u;
	} v;

	v.h = __floats2half2_rn(exp2f(x0 - base), exp2f(x1 - base));
	float2 f = __half22float2(v.h);
	*sum += f.x + f.y;
	return (v.u);
}

/*
 * Online softmax of the warp's tile in registers.  Lane l (group
 * gid = l/4, tig = l%4) holds S[nt][0..1] = row gid, keys 8nt + 2tig, +1
 * and S[nt][2..3] = row gid + 8, the same keys; the 4 lanes of a quad
 * hold a row between them (max by two xor shuffles).  Scores go to the
 * log2 domain (·SL2 = scale·log2 e), keys past LIM_A / LIM_B (row gid /
 * gid+8, tile-relative; all visible when MASK is 0) become −∞; M, L are
 * the rows' running max and this lane's part of their sums.  O is scaled
 * by α = 2^(m_old − m_new), and P = 2^(s − m_new) rounded to f16 is
 * written as the A fragments of P·V: the A fragment of keys 16kk .. +15
 * is {row gid keys 16kk + 2tig, row gid+8 the same, row gid keys
 * 16kk + 8 + 2tig, row gid+8 the same}, which are exactly S[2kk][0..1],
 * S[2kk][2..3], S[2kk+1][0..1], S[2kk+1][2..3]: no data moves.  The first
 * tile holds key 0, which every row sees, so m is finite from then on;
 * the −∞ guards only keep 2^(−∞ + ∞) out.
 */
template <int D>
static __device__ __forceinline__ void
softmax_mma(float (*s)[4], uint32_t (*p)[4], float (*o)[4], float *m,
    float *l, int mask, int lim_a, int lim_b, int tig, float sl2)
{
	float mx_a = m[0], mx_b = m[1], sum_a = 0.0f, sum_b = 0.0f;

#pragma unroll
	for (int nt = 0; nt < FA2_BC / 8; nt++) {
#pragma unroll
		for (int e = 0; e < 4; e++) {
			int key = 8 * nt + 2 * tig + e % 2;

			s[nt][e] *= sl2;
			if (mask && key > (e < 2 ? lim_a : lim_b))
				s[nt][e] = -INFINITY;
		}
		mx_a = fmaxf(mx_a, fmaxf(s[nt][0], s[nt][1]));
		mx_b = fmaxf(mx_b, fmaxf(s[nt][2], s[nt][3]));
	}
	mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, 1));
	mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, 2));
	mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, 1));
	mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, 2));

	float base_a = mx_a == -INFINITY ? 0.0f : mx_a;
	float base_b = mx_b == -INFINITY ? 0.0f : mx_b;
	float al_a = exp2f(m[0] - base_a), al_b = exp2f(m[1] - base_b);

	m[0] = mx_a;
	m[1] = mx_b;
#pragma unroll
	for (int nt = 0; nt < D / 8; nt++) {
		o[nt][0] *= al_a;
		o[nt][1] *= al_a;
		o[nt][2] *= al_b;
		o[nt][3] *= al_b;
	}
#pragma unroll
	for (int kk = 0; kk < FA2_BC / 16; kk++) {
		p[kk][0] = exp_pack(s[2 * kk][0], s[2 * kk][1], base_a, &sum_a);
		p[kk][1] = exp_pack(s[2 * kk][2], s[2 * kk][3], base_b, &sum_b);
		p[kk][2] = exp_pack(s[2 * kk + 1][0], s[2 * kk + 1][1], base_a,
		    &sum_a);
		p[kk][3] = exp_pack(s[2 * kk + 1][2], s[2 * kk + 1][3], base_b,
		    &sum_b);
	}
	l[0] = l[0] * al_a + sum_a;
	l[1] = l[1] * al_b + sum_b;
}

/*
 * O += P·V over the tile's 64 keys: O[nt] is the accumulator of columns
 * 8nt .. 8nt+7.  B[k][n] = V[key k][column n] is row-major in shared
 * memory, so it is read transposed: ldmatrix x4 .trans of keys
 * 16kk .. +7 / +8 .. +15 × columns n0 / n0+8, lane l at key 16kk + l%16,
 * column n0 + 8(l/16): R[0], R[1] are b0, b1 of columns n0.., R[2], R[3]
 * of columns n0+8...
 */
template <int D>
static __device__ __forceinline__ void
pv_mma(float (*o)[4], uint32_t (*p)[4], const half *sv, int lane)
{
	const int LD = fa2_layout<D>::LD;
	const half *vb = sv + lane % 16 * LD + 8 * (lane / 16);

#pragma unroll
	for (int kk = 0; kk < FA2_BC / 16; kk++) {
#pragma unroll
		for (int nt = 0; nt < D / 8; nt += 2) {
			uint32_t b[4];

			ldsm_x4_trans(b, vb + 16 * kk * LD + nt * 8);
			mma16816(o[nt], p[kk], b[0], b[1]);
			mma16816(o[nt + 1], p[kk], b[2], b[3]);
		}
	}
}
#endif /* __CUDA_ARCH__ >= 800 */

/*
 * The SM80+ kernel: rows r0 .. r0+BR-1 (r = t·g + i) of KV head
 * blockIdx.x, warp w rows 16w .. 16w+15, all D columns of O.  Each tile:
 * wait for K (and, first, Q), barrier, start V; S = Q·Kᵀ; softmax; wait
 * for V, barrier, start the next K; O += P·V.  So V's copy runs under
 * Q·Kᵀ and the softmax, the next K's under P·V, with one buffer each (the
 * barriers order every warp's last read of a buffer before its refill).
 * Built for SM80 and later only; elsewhere the launcher never picks it.
 */
template <int D>
static __global__ void __launch_bounds__(FA2_THREADS,
    fa2_layout<D>::MIN_BLOCKS)
attn_prefill_mma_kernel(const float *__restrict__ q, int64_t ldq, int64_t qs,
    int64_t gate_off, const uint16_t *__restrict__ kc,
    const uint16_t *__restrict__ vc, int n_head, int n_head_kv, int n_tok,
    const int32_t *__restrict__ params, float scale, float *__restrict__ out)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	typedef fa2_layout<D> L;
	extern __shared__ __align__(128) unsigned char fa_sm[];
	half	*sq = (half *)fa_sm + L::Q, *sk = (half *)fa_sm + L::K;
	half	*sv = (half *)fa_sm + L::V;
	int	 warp = threadIdx.x / RS_WARP, lane = threadIdx.x % RS_WARP;
	int	 gid = lane / 4, tig = lane % 4;
	int	 g = n_head / n_head_kv, j = blockIdx.x, n_rows = n_tok * g;
	int	 r0 = (gridDim.y - 1 - blockIdx.y) * FA2_BR; /* longest 1st */
	int	 wr = r0 + 16 * warp;		/* the warp's first row */
	int64_t	 p0 = params[RS_K_PARAM_POS0];
	int64_t	 n_keys = p0 + (min(r0 + FA2_BR, n_rows) - 1) / g + 1;
	int64_t	 row = (int64_t)n_head_kv * D;	/* cache row, halves */
	/* last key seen by this lane's rows gid, gid+8 and the warp's first
	   row (padding rows past N_ROWS take the last row's mask) */
	int64_t	 last_a = p0 + min(wr + gid, n_rows - 1) / g;
	int64_t	 last_b = p0 + min(wr + gid + 8, n_rows - 1) / g;
	int64_t	 last_w = p0 + min(wr, n_rows - 1) / g;
	const uint16_t *kj = kc + (int64_t)j * D, *vj = vc + (int64_t)j * D;
	float	 sl2 = scale * 1.4426950408889634f;	/* log2 e */
	float	 o[D / 8][4], m[2] = { -INFINITY, -INFINITY }, l[2] = { 0, 0 };

	load_tile_async<D>(sk, kj, row, 0, n_keys);
	load_q_mma<D>(sq, q, ldq, qs, r0, n_rows, g, j);
#pragma unroll
	for (int nt = 0; nt < D / 8; nt++)
		o[nt][0] = o[nt][1] = o[nt][2] = o[nt][3] = 0.0f;
	for (int64_t kv0 = 0; kv0 < n_keys; kv0 += FA2_BC) {
		float	 s[FA2_BC / 8][4];
		uint32_t p[FA2_BC / 16][4];

		cp_async_wait_all();
		__syncthreads();	/* K (and Q) in; all warps done with V */
		load_tile_async<D>(sv, vj, row, kv0, n_keys);
		qk_mma<D>(s, sq + 16 * warp * L::LD, sk, lane);
		softmax_mma<D>(s, p, o, m, l, kv0 + FA2_BC - 1 > last_w,
		    tile_limit(last_a, kv0), tile_limit(last_b, kv0), tig, sl2);
		cp_async_wait_all();
		__syncthreads();	/* V in; every warp done with K */
		if (kv0 + FA2_BC < n_keys)
			load_tile_async<D>(sk, kj, row, kv0 + FA2_BC, n_keys);
		pv_mma<D>(o, p, sv, lane);
	}

	/* o = O / l ⊙ sigmoid(gate); l is summed over the row's quad */
#pragma unroll
	for (int h = 0; h < 2; h++) {
		l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
		l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
	}
#pragma unroll
	for (int h = 0; h < 2; h++) {
		int	 r = wr + gid + 8 * h;
		float	 inv = 1.0f / l[h];

		if (r >= n_rows)
			continue;
		int64_t	 t = r / g, hd = (int64_t)j * g + r % g;
		const float *gate = q + t * ldq + hd * qs + gate_off;
		float	*dst = out + (t * n_head + hd) * D;
#pragma unroll
		for (int nt = 0; nt < D / 8; nt++) {
#pragma unroll
			for (int e = 0; e < 2; e++) {
				int c = 8 * nt + 2 * tig + e;
				dst[c] = o[nt][2 * h + e] * inv *
				    sigmoid_f(gate[c]);
			}
		}
	}
#else
	/* the host pass (clang compiles this body for the host too) and
	   archs before SM80: the launcher never picks this kernel there */
	(void)q; (void)ldq; (void)qs; (void)gate_off; (void)kc; (void)vc;
	(void)n_head; (void)n_head_kv; (void)n_tok; (void)params; (void)scale;
	(void)out;
#ifdef __CUDA_ARCH__
	__trap();
#endif
#endif
}

#ifndef __CUDACC_RTC__
/*
 * Whether the mma.sync kernel runs here: the code the device would run
 * for it was compiled for compute_80 or later (common.cuh: rs_runs_ptx;
 * otherwise the wmma path), and the device grants its shared memory (not
 * SM86/89 at D = 256).
 * Host runtime calls: NVRTC's check (scripts/cuda129-nvrtc.sh) leaves
 * this out.
 */
template <int D>
static int
has_mma_path(void)
{
	static signed char known[RS_MAX_DEVICES];

	if (!rs_runs_ptx(attn_prefill_mma_kernel<D>, 80, known))
		return (0);
	if (cudaFuncSetAttribute(attn_prefill_mma_kernel<D>,
	    cudaFuncAttributeMaxDynamicSharedMemorySize,
	    fa2_layout<D>::BYTES) != cudaSuccess) {
		(void)cudaGetLastError();
		return (0);
	}
	return (1);
}
#endif

#endif /* RS_ATTN_PREFILL_MMA_CUH */
