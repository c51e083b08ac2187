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
 * One block per value head; two threads per value index j hold column
 * S[:, j] (dk/2 floats each) in registers for the whole call: every step is
 * a per-thread loop over i with q and k broadcast from shared memory, and
 * one shuffle joins the two halves of each dot product (one thread per
 * column would need 128 live floats and spill on sm_90).  S is read and written
 * once per call: 27B, 48 heads × 64 KB per layer, 151 MB per token for 48
 * layers, read + written (about 2% of the weight bytes).  A prompt chunk
 * is one launch walking its tokens in order: each token costs a few
 * dependent reductions and two 64-long FMA chains (~0.5 µs), so the next
 * token's q, k, v, β and α are loaded while the current one is computed
 * (a memory round trip would otherwise add ~0.7 µs a token and layer).  Snapshots copy S
 * after the token at position p ≥ snap_from to ring slot p mod n_snap.  Oracle: rs_cpu_deltanet_ref; test:
 * tests/check_cuda.c "deltanet".
 */
#include <math.h>

#include "common.cuh"
#include "rs_kernels.h"

/* Threads per column of S: each holds DK / SPLIT of its rows. */
#define SPLIT	2

/* What thread (e = threadIdx.x, column j) reads of one token. */
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

template <int DK>
static __global__ void __launch_bounds__(DK * SPLIT)
deltanet_kernel(float *s_all, const float *__restrict__ u, int64_t ldu,
    const float *__restrict__ bb, const float *__restrict__ aa, int64_t ldba,
    const float *__restrict__ dt, const float *__restrict__ ssm_a, int n_kh,
    int n_vh, int n_tok, float eps, float *__restrict__ o, float *snap,
    int64_t snap_stride, int n_snap, const int32_t *__restrict__ params)
{
	const int R = DK / SPLIT;	/* rows of S per thread */
	__shared__ float sq[DK], sk[DK], scratch[32];
	int	n = blockIdx.x, m = n % n_kh;
	int	j = threadIdx.x / SPLIT, i0 = (threadIdx.x % SPLIT) * R;
	float	s[R];
	float	*S = s_all + (int64_t)n * DK * DK;
	const float scale = rsqrtf((float)DK);

#pragma unroll
	for (int i = 0; i < R; i++)
		s[i] = S[(i0 + i) * DK + j];
	/* token t's inputs; t + 1's are loaded while t is computed, so that a
	   prompt's tokens do not each wait a memory round trip */
	int e = threadIdx.x;
	struct dn_in cur = dn_load<DK>(u, ldu, bb, aa, ldba, m, n, n_kh, j, 0);
	for (int t = 0; t < n_tok; t++) {
		struct dn_in nxt = cur;
		if (t + 1 < n_tok)
			nxt = dn_load<DK>(u, ldu, bb, aa, ldba, m, n, n_kh, j,
			    t + 1);
		/* threads 0..DK-1 hold q and k; all take part in the norms */
		float qe = cur.q, ke = cur.k;
		float qn = sqrtf(block_sum(qe * qe, scratch));
		float kn = sqrtf(block_sum(ke * ke, scratch));
		__syncthreads();
		if (e < DK) {
			sq[e] = qe / fmaxf(qn, eps);
			sk[e] = ke / fmaxf(kn, eps);
		}
		__syncthreads();
		float vj = cur.v;
		float beta = sigmoid_f(cur.b);
		float x = cur.a + dt[n];
		float g = (x > 20.0f ? x : log1pf(expf(x))) * ssm_a[n];
		float decay = expf(g);
		float r = 0.0f;
#pragma unroll
		for (int i = 0; i < R; i++) {
			s[i] *= decay;
			r += s[i] * sk[i0 + i];
		}
		for (int k = 1; k < SPLIT; k <<= 1)
			r += __shfl_xor_sync(0xffffffffu, r, k);
		float delta = beta * (vj - r);
		float acc = 0.0f;
#pragma unroll
		for (int i = 0; i < R; i++) {
			s[i] += sk[i0 + i] * delta;
			acc += s[i] * sq[i0 + i];
		}
		for (int k = 1; k < SPLIT; k <<= 1)
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
		__syncthreads();	/* sq/sk are rewritten next token */
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
		deltanet_kernel<64><<<n_vh, 64 * SPLIT, 0, stream>>>(d_s, d_u, ldu, d_b,
		    d_a, ldba, d_dt, d_ssm_a, n_kh, n_vh, n_tok, eps, d_o,
		    d_snap, snap_stride, n_snap, d_params);
		break;
	case 128:
		deltanet_kernel<128><<<n_vh, 128 * SPLIT, 0, stream>>>(d_s, d_u, ldu,
		    d_b, d_a, ldba, d_dt, d_ssm_a, n_kh, n_vh, n_tok, eps, d_o,
		    d_snap, snap_stride, n_snap, d_params);
		break;
	default:
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "deltanet: head dim %d (only 64 and 128)", dk));
	}
	RS_LAUNCH_CHECK(err, "deltanet");
	return (RS_OK);
}
