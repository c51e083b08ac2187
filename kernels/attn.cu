/*
 * attn.cu - the KV-cache store and causal gated attention of the full-
 * attention blocks (qwen35-model.md §4.4, §4.8), f16 cache, f32 math.
 *
 *   o_h = Σ_s softmax_s(scale·q_h·K_j[s]) · V_j[s] ⊙ sigmoid(gate_h),
 *   j = h / (n_head / n_head_kv),  s ≤ position of the query token.
 *
 * Flash-decoding: the keys of each (head, token) are split into
 * RS_K_ATTN_SPLITS ranges, one block each; a block's four warps stride over
 * its keys keeping a running max, sum and output (online softmax, so no
 * score buffer of context length), then merge in shared memory and write
 * (m, l, o) partials.  A second kernel merges the splits, divides by the sum
 * and applies the gate.  K is stored after k-norm and RoPE, as llama.cpp
 * does (§4.10: its default f16 KV cache is the rounding we replicate).
 * Oracle: rs_cpu_attn_ref; test: tests/check_cuda.c "attn".
 *
 * Napkin math, 27B decode at depth P: each attention layer reads
 * 2·P·1024 halves = 4 KB per position, 16 layers: 64 KB per position; at
 * P = 32768 that is 2.1 GB per token, more than an eighth of the weights,
 * so long contexts shift decode toward attention (H200: 0.45 ms).
 */
#include <math.h>

#include "common.cuh"
#include "rs_kernels.h"

#define ATTN_WARPS	4

static __global__ void
kv_store_kernel(const float *__restrict__ k, int64_t ldk,
    const float *__restrict__ v, int64_t ldv, int64_t kv_row,
    int64_t kv_row_v, const int32_t *__restrict__ pos0, uint16_t *kc,
    uint16_t *vc)
{
	int	t = blockIdx.x;
	int64_t	p = *pos0 + t;

	for (int64_t i = threadIdx.x; i < kv_row; i += blockDim.x)
		kc[p * kv_row + i] = __half_as_ushort(__float2half_rn(k[t * ldk + i]));
	for (int64_t i = threadIdx.x; i < kv_row_v; i += blockDim.x)
		vc[p * kv_row_v + i] = __half_as_ushort(__float2half_rn(v[t * ldv + i]));
}

extern "C" enum rs_status
rs_k_kv_store(const float *d_k, int64_t ldk, const float *d_v, int64_t ldv,
    int64_t kv_row, int64_t kv_row_v, int n_tok, const int32_t *d_pos0,
    uint16_t *d_kc, uint16_t *d_vc, cudaStream_t stream, struct rs_err *err)
{
	if (n_tok < 1 || kv_row < 1 || kv_row_v < 1)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "kv store: %d tokens",
		    n_tok));
	kv_store_kernel<<<n_tok, 256, 0, stream>>>(d_k, ldk, d_v, ldv, kv_row,
	    kv_row_v, d_pos0, d_kc, d_vc);
	RS_LAUNCH_CHECK(err, "kv store");
	return (RS_OK);
}

size_t
rs_k_attn_scratch(int n_head, int n_tok, int dv)
{
	return ((size_t)n_tok * n_head * RS_K_ATTN_SPLITS * (2 + dv));
}

/*
 * One (head, token, split).  VPL = dv / 32 output values per lane.
 * Partial record: m (running max), l (sum of e^(s − m)), o[dv].
 */
template <int VPL>
static __global__ void __launch_bounds__(ATTN_WARPS * RS_WARP)
attn_split_kernel(const float *__restrict__ q, int64_t ldq, int64_t qs,
    const uint16_t *__restrict__ kc, const uint16_t *__restrict__ vc,
    int n_head, int n_head_kv, int d, const int32_t *__restrict__ pos0,
    float scale, float *__restrict__ part)
{
	const int dv = VPL * RS_WARP;
	int	h = blockIdx.x, t = blockIdx.y, split = blockIdx.z;
	int	lane = threadIdx.x % RS_WARP, warp = threadIdx.x / RS_WARP;
	int	j = h / (n_head / n_head_kv);
	int64_t	n_keys = (int64_t)*pos0 + t + 1;
	int64_t	chunk = (n_keys + RS_K_ATTN_SPLITS - 1) / RS_K_ATTN_SPLITS;
	int64_t	k0 = split * chunk, k1 = min(n_keys, k0 + chunk);
	int64_t	krow = (int64_t)n_head_kv * d, vrow = (int64_t)n_head_kv * dv;
	extern __shared__ float sm[];	/* q[d], then per warp m, l, o[dv] */
	float	*sq = sm, *wpart = sm + d;
	float	 m = -INFINITY, l = 0.0f, o[VPL];

	for (int i = threadIdx.x; i < d; i += blockDim.x)
		sq[i] = q[t * ldq + h * qs + i] * scale;
	for (int i = 0; i < VPL; i++)
		o[i] = 0.0f;
	__syncthreads();
	for (int64_t s = k0 + warp; s < k1; s += ATTN_WARPS) {
		const uint16_t *kr = kc + s * krow + (int64_t)j * d;
		float acc = 0.0f;
		for (int i = lane; i < d; i += RS_WARP)
			acc += sq[i] * half_to_float(kr[i]);
		float sc = warp_sum(acc);
		float mn = fmaxf(m, sc);
		float a = __expf(m - mn), b = __expf(sc - mn);
		const uint16_t *vr = vc + s * vrow + (int64_t)j * dv;
		l = l * a + b;
		for (int i = 0; i < VPL; i++)
			o[i] = o[i] * a + b * half_to_float(vr[lane + RS_WARP * i]);
		m = mn;
	}
	/* merge the warps: each writes (m, l, o) and warp 0 combines */
	float *mine = wpart + warp * (2 + dv);
	if (lane == 0) {
		mine[0] = m;
		mine[1] = l;
	}
	for (int i = 0; i < VPL; i++)
		mine[2 + lane + RS_WARP * i] = o[i];
	__syncthreads();
	if (warp != 0)
		return;
	float M = -INFINITY;
	for (int w = 0; w < ATTN_WARPS; w++)
		M = fmaxf(M, wpart[w * (2 + dv)]);
	float L = 0.0f, out[VPL];
	for (int i = 0; i < VPL; i++)
		out[i] = 0.0f;
	for (int w = 0; w < ATTN_WARPS; w++) {
		const float *p = wpart + w * (2 + dv);
		float f = p[0] == -INFINITY ? 0.0f : __expf(p[0] - M);
		L += p[1] * f;
		for (int i = 0; i < VPL; i++)
			out[i] += p[2 + lane + RS_WARP * i] * f;
	}
	float *dst = part + (((int64_t)t * n_head + h) * RS_K_ATTN_SPLITS +
	    split) * (2 + dv);
	if (lane == 0) {
		dst[0] = M;
		dst[1] = L;
	}
	for (int i = 0; i < VPL; i++)
		dst[2 + lane + RS_WARP * i] = out[i];
}

/* Merge the splits of (head, token), normalise, gate. */
static __global__ void
attn_combine_kernel(const float *__restrict__ part, const float *__restrict__ q,
    int64_t ldq, int64_t qs, int64_t gate_off, int n_head, int dv,
    float *__restrict__ o)
{
	int	h = blockIdx.x, t = blockIdx.y;
	const float *p = part + ((int64_t)t * n_head + h) * RS_K_ATTN_SPLITS *
	    (2 + dv);
	float	M = -INFINITY, L = 0.0f;

	for (int s = 0; s < RS_K_ATTN_SPLITS; s++)
		M = fmaxf(M, p[s * (2 + dv)]);
	for (int s = 0; s < RS_K_ATTN_SPLITS; s++) {
		float ms = p[s * (2 + dv)];
		if (ms != -INFINITY)
			L += p[s * (2 + dv) + 1] * __expf(ms - M);
	}
	const float *gate = q + t * ldq + h * qs + gate_off;
	for (int i = threadIdx.x; i < dv; i += blockDim.x) {
		float acc = 0.0f;
		for (int s = 0; s < RS_K_ATTN_SPLITS; s++) {
			float ms = p[s * (2 + dv)];
			if (ms != -INFINITY)
				acc += p[s * (2 + dv) + 2 + i] * __expf(ms - M);
		}
		o[(int64_t)t * n_head * dv + (int64_t)h * dv + i] =
		    acc / L * sigmoid_f(gate[i]);
	}
}

extern "C" enum rs_status
rs_k_attn(const float *d_q, int64_t ldq, int64_t qs, int64_t gate_off,
    const uint16_t *d_kc, const uint16_t *d_vc, int n_head, int n_head_kv,
    int d, int dv, int n_tok, const int32_t *d_pos0, float scale, float *d_o,
    float *d_scratch, cudaStream_t stream, struct rs_err *err)
{
	dim3	grid((unsigned)n_head, (unsigned)n_tok, RS_K_ATTN_SPLITS);
	size_t	shm = ((size_t)d + ATTN_WARPS * (2 + (size_t)dv)) * sizeof(float);
	int	vpl = dv / RS_WARP;

	if (n_tok < 1 || n_head < 1 || n_head_kv < 1 ||
	    n_head % n_head_kv != 0 || d < 1 || d > 1024 ||
	    dv % RS_WARP != 0 || !(vpl == 1 || vpl == 2 || vpl == 4 || vpl == 8))
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "attn: heads %d/%d, d %d, dv %d (dv must be 32, 64, 128 "
		    "or 256)", n_head, n_head_kv, d, dv));
	switch (vpl) {
	case 1: attn_split_kernel<1><<<grid, ATTN_WARPS * RS_WARP, shm, stream>>>(
	    d_q, ldq, qs, d_kc, d_vc, n_head, n_head_kv, d, d_pos0, scale,
	    d_scratch); break;
	case 2: attn_split_kernel<2><<<grid, ATTN_WARPS * RS_WARP, shm, stream>>>(
	    d_q, ldq, qs, d_kc, d_vc, n_head, n_head_kv, d, d_pos0, scale,
	    d_scratch); break;
	case 4: attn_split_kernel<4><<<grid, ATTN_WARPS * RS_WARP, shm, stream>>>(
	    d_q, ldq, qs, d_kc, d_vc, n_head, n_head_kv, d, d_pos0, scale,
	    d_scratch); break;
	case 8: attn_split_kernel<8><<<grid, ATTN_WARPS * RS_WARP, shm, stream>>>(
	    d_q, ldq, qs, d_kc, d_vc, n_head, n_head_kv, d, d_pos0, scale,
	    d_scratch); break;
	}
	RS_LAUNCH_CHECK(err, "attn split");
	attn_combine_kernel<<<dim3((unsigned)n_head, (unsigned)n_tok), 128, 0,
	    stream>>>(d_scratch, d_q, ldq, qs, gate_off, n_head, dv, d_o);
	RS_LAUNCH_CHECK(err, "attn combine");
	return (RS_OK);
}
