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
 * broadcast from shared memory, and two shuffles join the parts of each
 * dot product.  Each block normalises q and k itself (one reduction of
 * both squares per token).  S is read and written once per call: 27B, 48
 * heads × 64 KB per layer, 151 MB per token for 48 layers, read + written
 * (about 2% of the weight bytes).
 *
 * A prompt chunk is one launch walking its tokens in order, so what counts
 * is the latency of a token: two block barriers (q and k double-buffered
 * by token parity, so no third), 32-long FMA chains, and the next token's
 * q, k, v, β and α loaded while the current one is computed.  Measured
 * before this layout (one block of 256 threads per head, 64-long chains,
 * four barriers a token): 2.0 µs a token and layer on the H200, 42 % of a
 * 2,048-token 27B prefill chunk (docs/perf-log.md).
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

/* What thread e = threadIdx.x (column j) reads of token t. */
struct dn_in {
	float q, k, v, b, a;
};

template <int DK>
static __device__ __forceinline__ struct dn_in
dn_load(const float *__restrict__ u, int64_t ldu, const float *__restrict__ bb,
    const float *__restrict__ aa, int64_t ldba, int m, int n, int n_kh, int j,
    int t)
{
	const float *ut = u + t * ldu;
	int e = threadIdx.x;
	struct dn_in r;

	r.q = e < DK ? ut[m * DK + e] : 0.0f;
	r.k = e < DK ? ut[n_kh * DK + m * DK + e] : 0.0f;
	r.v = ut[2 * n_kh * DK + n * DK + j];
	r.b = bb[t * ldba + n];
	r.a = aa[t * ldba + n];
	return (r);
}

/*
 * Σ q² and Σ k² over the block into *QS and *KS in every thread; RED is
 * this token's 2 × DN_WARPS floats of shared memory.
 */
static __device__ __forceinline__ void
dn_norms(float q2, float k2, float (*red)[DN_WARPS], float *qs, float *ks)
{
	const int lane = threadIdx.x % RS_WARP, warp = threadIdx.x / RS_WARP;

	q2 = warp_sum(q2);
	k2 = warp_sum(k2);
	if (lane == 0) {
		red[0][warp] = q2;
		red[1][warp] = k2;
	}
	__syncthreads();
	*qs = *ks = 0.0f;
	for (int w = 0; w < DN_WARPS; w++) {
		*qs += red[0][w];
		*ks += red[1][w];
	}
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
	/* by token parity: token t + 2 rewrites what token t read only after
	   every thread passed token t + 1's barriers */
	__shared__ float sq[2][DK], sk[2][DK], red[2][2][DN_WARPS];
	const int n = blockIdx.x, m = n % n_kh, e = threadIdx.x;
	const int j = blockIdx.y * DN_COLS + threadIdx.x / DN_SPLIT;
	const int i0 = (threadIdx.x % DN_SPLIT) * R;
	float	s[R];
	float	*S = s_all + (int64_t)n * DK * DK;
	const float scale = rsqrtf((float)DK), dtn = dt[n], an = ssm_a[n];

	static_assert(DK >= DN_COLS && DK <= DN_THREADS, "deltanet: DK");
#pragma unroll
	for (int i = 0; i < R; i++)
		s[i] = S[(i0 + i) * DK + j];
	struct dn_in cur = dn_load<DK>(u, ldu, bb, aa, ldba, m, n, n_kh, j, 0);
	for (int t = 0; t < n_tok; t++) {
		const int b = t & 1;
		struct dn_in nxt = cur;
		if (t + 1 < n_tok)
			nxt = dn_load<DK>(u, ldu, bb, aa, ldba, m, n, n_kh, j,
			    t + 1);
		float qs, ks;
		dn_norms(cur.q * cur.q, cur.k * cur.k, red[b], &qs, &ks);
		if (e < DK) {
			sq[b][e] = cur.q / fmaxf(sqrtf(qs), eps);
			sk[b][e] = cur.k / fmaxf(sqrtf(ks), eps);
		}
		__syncthreads();
		float beta = sigmoid_f(cur.b);
		float x = cur.a + dtn;
		float decay = expf((x > 20.0f ? x : log1pf(expf(x))) * an);
		float r = 0.0f;
#pragma unroll
		for (int i = 0; i < R; i++) {
			s[i] *= decay;
			r += s[i] * sk[b][i0 + i];
		}
		for (int k = 1; k < DN_SPLIT; k <<= 1)
			r += __shfl_xor_sync(0xffffffffu, r, k);
		float delta = beta * (cur.v - r);
		float acc = 0.0f;
#pragma unroll
		for (int i = 0; i < R; i++) {
			s[i] += sk[b][i0 + i] * delta;
			acc += s[i] * sq[b][i0 + i];
		}
		for (int k = 1; k < DN_SPLIT; k <<= 1)
			acc += __shfl_xor_sync(0xffffffffu, acc, k);
		if (i0 == 0)
			o[(int64_t)t * n_vh * DK + (int64_t)n * DK + j] =
			    acc * scale;
		int p = params[0] + t;
		if (snap != NULL && p >= params[1]) {
			float *dst = snap + (int64_t)(p % n_snap) * snap_stride +
			    (int64_t)n * DK * DK;
#pragma unroll
			for (int i = 0; i < R; i++)
				dst[(i0 + i) * DK + j] = s[i];
		}
		cur = nxt;
	}
#pragma unroll
	for (int i = 0; i < R; i++)
		S[(i0 + i) * DK + j] = s[i];
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
