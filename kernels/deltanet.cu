/*
 * deltanet.cu - the gated delta rule of one GDN block over T tokens
 * (qwen35-model.md §4.6 steps 3-6), fused with the L2 norms, β and decay.
 *
 * Per value head n (q/k head m = n mod n_kh, the tiled order of §3.6), per
 * token:
 *   q, k = L2Norm(q_m), L2Norm(k_m)          (x / max(‖x‖, eps))
 *   β = sigmoid(b_n);  g = softplus(a_n + dt_n)·A_n  (softplus = x above 20)
 *   S ← e^g·S;  δ = β·(v − Sᵀk);  S ← S + k·δᵀ;  o = Sᵀq / √dk
 *
 * Column j of S (value index j) evolves on its own: δ_j = β(v_j − S[:,j]ᵀk)
 * needs only that column and the shared q and k.  So a head's columns are
 * split over blocks of DN_COLS columns (27B: 48 heads × 4 blocks, more
 * blocks than an H200 or V100 has SMs), and within a block DN_SPLIT
 * threads hold one column, DK / DN_SPLIT rows each, in registers for the
 * whole call: every step is a per-thread loop over those rows with q and k
 * broadcast from shared memory, and log2(DN_SPLIT) shuffles join the parts of each
 * dot product.  S is read and written once per call: 27B, 48 heads × 64 KB
 * per layer, 151 MB per token for 48 layers, read + written (about 2% of
 * the weight bytes).
 *
 * A prompt chunk is one launch walking its tokens in order, so what counts
 * is the latency of a token.  Tokens are staged DN_STAGE at a time: one
 * coalesced load of their q, k, v, β and α into shared memory, the L2
 * norms a warp a token, then the tokens run from shared memory with no
 * barrier and no memory round trip between them: two 32-long FMA chains
 * and four shuffles a token.  Measured on the H200 (docs/perf-log.md):
 * one block of 256 threads per head with per-token loads and four barriers
 * a token took 2.0 µs a token and layer, 42 % of a 2,048-token 27B
 * prefill chunk; the same split over 4 blocks a head, 2.6 µs; staged,
 * 1.0 µs (30 %); 8 threads a column over 8 blocks a head was no faster.
 *
 * Every sum runs in one order whatever T is, so a batch equals single
 * steps bit for bit.  Snapshots copy S after the token at position
 * p ≥ snap_from to ring slot p mod n_snap.  Oracle: rs_cpu_deltanet_ref;
 * test: tests/check_cuda.c "deltanet".
 */
#include <math.h>

#include "common.cuh"
#include "rs_kernels.h"

#define DN_COLS		32	/* columns of S per block */
#define DN_SPLIT	4	/* threads per column */
#define DN_THREADS	(DN_COLS * DN_SPLIT)
#define DN_WARPS	(DN_THREADS / RS_WARP)
#define DN_STAGE	32	/* tokens staged in shared memory at once */

/*
 * Stage tokens T0 .. T0 + NT − 1 in shared memory: q and k of head M
 * L2-normalised, this block's DN_COLS values of v, β and the decay e^g.
 * Three barriers for NT tokens; the first keeps the previous stage until
 * every thread is done with it.
 */
template <int DK>
static __device__ __forceinline__ void
dn_stage(const float *__restrict__ u, int64_t ldu, const float *__restrict__ bb,
    const float *__restrict__ aa, int64_t ldba, float dtn, float an, int m,
    int n, int n_kh, int j0, int t0, int nt, float eps, float (*sq)[DK],
    float (*sk)[DK], float (*sv)[DN_COLS], float *sbeta, float *sdecay)
{
	const int lane = threadIdx.x % RS_WARP, warp = threadIdx.x / RS_WARP;

	__syncthreads();
	for (int i = threadIdx.x; i < nt * DK; i += DN_THREADS) {
		const float *ut = u + (int64_t)(t0 + i / DK) * ldu;
		sq[i / DK][i % DK] = ut[m * DK + i % DK];
		sk[i / DK][i % DK] = ut[n_kh * DK + m * DK + i % DK];
	}
	for (int i = threadIdx.x; i < nt * DN_COLS; i += DN_THREADS)
		sv[i / DN_COLS][i % DN_COLS] = u[(int64_t)(t0 + i / DN_COLS) *
		    ldu + 2 * n_kh * DK + n * DK + j0 + i % DN_COLS];
	if (threadIdx.x < nt) {
		int64_t t = t0 + threadIdx.x;
		float x = aa[t * ldba + n] + dtn;
		sbeta[threadIdx.x] = sigmoid_f(bb[t * ldba + n]);
		sdecay[threadIdx.x] = expf((x > 20.0f ? x : log1pf(expf(x))) *
		    an);
	}
	__syncthreads();
	/* a warp a token: ‖q‖ and ‖k‖, then x / max(‖x‖, eps) in place */
	for (int t = warp; t < nt; t += DN_WARPS) {
		float q2 = 0.0f, k2 = 0.0f;
		for (int e = lane; e < DK; e += RS_WARP) {
			q2 += sq[t][e] * sq[t][e];
			k2 += sk[t][e] * sk[t][e];
		}
		float qn = fmaxf(sqrtf(warp_sum(q2)), eps);
		float kn = fmaxf(sqrtf(warp_sum(k2)), eps);
		for (int e = lane; e < DK; e += RS_WARP) {
			sq[t][e] = sq[t][e] / qn;
			sk[t][e] = sk[t][e] / kn;
		}
	}
	__syncthreads();
}

template <int DK>
static __global__ void __launch_bounds__(DN_THREADS)
deltanet_kernel(float *s_all, const float *__restrict__ u, int64_t ldu,
    const float *__restrict__ bb, const float *__restrict__ aa, int64_t ldba,
    const float *__restrict__ dt, const float *__restrict__ ssm_a, int n_kh,
    int n_vh, int n_tok, float eps, float *__restrict__ o, float *snap,
    int64_t snap_stride, int n_snap, const int32_t *__restrict__ params)
{
	const int R = DK / DN_SPLIT;	/* rows of S per thread */
	__shared__ float sq[DN_STAGE][DK], sk[DN_STAGE][DK];
	__shared__ float sv[DN_STAGE][DN_COLS], sbeta[DN_STAGE],
	    sdecay[DN_STAGE];
	const int n = blockIdx.x, m = n % n_kh, j0 = blockIdx.y * DN_COLS;
	const int jl = threadIdx.x / DN_SPLIT, j = j0 + jl;
	/* rows sp, sp + DN_SPLIT, ...: the DN_SPLIT threads of a column read
	   neighbouring words of q and k (distinct banks) */
	const int sp = threadIdx.x % DN_SPLIT;
	const int p0 = params[0], snap_from = params[1];
	float	s[R];
	float	*S = s_all + (int64_t)n * DK * DK;
	const float scale = rsqrtf((float)DK);

	static_assert(DK % DN_COLS == 0 && DK % DN_SPLIT == 0, "deltanet: DK");
#pragma unroll
	for (int i = 0; i < R; i++)
		s[i] = S[(i * DN_SPLIT + sp) * DK + j];
	for (int t0 = 0; t0 < n_tok; t0 += DN_STAGE) {
		const int nt = n_tok - t0 < DN_STAGE ? n_tok - t0 : DN_STAGE;
		dn_stage<DK>(u, ldu, bb, aa, ldba, dt[n], ssm_a[n], m, n, n_kh,
		    j0, t0, nt, eps, sq, sk, sv, sbeta, sdecay);
		for (int tt = 0; tt < nt; tt++) {
			const float decay = sdecay[tt];
			float r = 0.0f;
#pragma unroll
			for (int i = 0; i < R; i++) {
				s[i] *= decay;
				r += s[i] * sk[tt][i * DN_SPLIT + sp];
			}
			for (int k = 1; k < DN_SPLIT; k <<= 1)
				r += __shfl_xor_sync(0xffffffffu, r, k);
			float delta = sbeta[tt] * (sv[tt][jl] - r);
			float acc = 0.0f;
#pragma unroll
			for (int i = 0; i < R; i++) {
				s[i] += sk[tt][i * DN_SPLIT + sp] * delta;
				acc += s[i] * sq[tt][i * DN_SPLIT + sp];
			}
			for (int k = 1; k < DN_SPLIT; k <<= 1)
				acc += __shfl_xor_sync(0xffffffffu, acc, k);
			const int t = t0 + tt;
			if (sp == 0)
				o[(int64_t)t * n_vh * DK + (int64_t)n * DK + j] =
				    acc * scale;
			const int p = p0 + t;
			if (snap != NULL && p >= snap_from) {
				float *dst = snap + (int64_t)(p % n_snap) *
				    snap_stride + (int64_t)n * DK * DK;
#pragma unroll
				for (int i = 0; i < R; i++)
					dst[(i * DN_SPLIT + sp) * DK + j] = s[i];
			}
		}
	}
#pragma unroll
	for (int i = 0; i < R; i++)
		S[(i * DN_SPLIT + sp) * DK + j] = s[i];
}

extern "C" enum rs_status
rs_k_deltanet(float *d_s, const float *d_u, int64_t ldu, const float *d_b,
    const float *d_a, int64_t ldba, const float *d_dt, const float *d_ssm_a,
    int n_kh, int n_vh, int dk, int n_tok, float eps, float *d_o,
    float *d_snap, int64_t snap_stride, int n_snap, const int32_t *d_params,
    cudaStream_t stream, struct rs_err *err)
{
	if (n_tok < 1 || n_kh < 1 || n_vh < 1 || n_vh % n_kh != 0)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "deltanet: %d tokens, %d/%d heads", n_tok, n_kh, n_vh));
	switch (dk) {
	case 64:
		deltanet_kernel<64><<<dim3(n_vh, 64 / DN_COLS), DN_THREADS, 0,
		    stream>>>(d_s, d_u, ldu, d_b, d_a, ldba, d_dt, d_ssm_a,
		    n_kh, n_vh, n_tok, eps, d_o, d_snap, snap_stride, n_snap,
		    d_params);
		break;
	case 128:
		deltanet_kernel<128><<<dim3(n_vh, 128 / DN_COLS), DN_THREADS, 0,
		    stream>>>(d_s, d_u, ldu, d_b, d_a, ldba, d_dt, d_ssm_a,
		    n_kh, n_vh, n_tok, eps, d_o, d_snap, snap_stride, n_snap,
		    d_params);
		break;
	default:
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "deltanet: head dim %d (only 64 and 128)", dk));
	}
	RS_LAUNCH_CHECK(err, "deltanet");
	return (RS_OK);
}
