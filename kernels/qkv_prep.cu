/*
 * qkv_prep.cu - an attention block's q, k and v between the projections
 * and the attention (qwen35-model.md §4.4-4.5), in one launch: the
 * per-head RMSNorm of q and k (q_norm, k_norm weights, in place), IMRoPE
 * of both, and k and v into the f16 caches at their positions.
 *
 * Why one launch: these were five (two norms, two rotations, the cache
 * store) of 3-4 µs each, 16 attention blocks a token, each a few KB of
 * work: ~0.28 ms of a 7.9 ms decode step on the H200 (ncu,
 * docs/perf-log.md).
 *
 * A block per (head, token): blocks 0 .. nh−1 take the q heads, nh ..
 * nh + nkv − 1 the k heads, the rest the v heads (store only).  A q or k
 * head's norm runs as rs_k_rmsnorm runs a row of HD (thread t: values t,
 * t + blockDim.x, ..., then block_sum; y = x·r·w), the normalised head
 * goes through shared memory, and the rotation is NeoX pairs (i, i +
 * n_rot/2) by the sector rule: pair i < n_rot/2 takes the position
 * component chosen by sector = i mod Σsections (t if sector ≡ 0 (mod 3)
 * and sector < 3·s0, h if ≡ 1 and < 3·s1, w if ≡ 2 and < 3·s2, else e)
 * and rotates by θ_i = pos·base^(−2i/n_rot), θ in double as the oracle
 * (rs_cpu_rope_angles) has it.  Text tokens have components (p, p, p, 0).
 * Every value depends on its token alone, so a batch equals single steps
 * bit for bit.  Oracles: rs_cpu_rmsnorm_ref, rs_cpu_rope_ref; test:
 * tests/check_cuda.c "qkv_prep".
 */
#include "common.cuh"
#include "rs_kernels.h"

#define QKV_THREADS	256

struct qkv_rope {
	uint32_t	s[4];	/* sections */
	float		base;
	int		n_rot;
};

/* cos and sin of pair I's angle at position P */
static __device__ __forceinline__ void
qkv_angle(const qkv_rope &r, int p, int i, float *c, float *s)
{
	const uint32_t sum = r.s[0] + r.s[1] + r.s[2] + r.s[3];
	const uint32_t sector = (uint32_t)i % sum;
	int comp = p;		/* t, h and w are p for text; e is 0 */

	if (!((sector % 3 == 0 && sector < 3 * r.s[0]) ||
	    (sector % 3 == 1 && sector < 3 * r.s[1]) ||
	    (sector % 3 == 2 && sector < 3 * r.s[2])))
		comp = 0;
	const double theta = (double)comp * pow((double)r.base,
	    -2.0 * (double)i / (double)r.n_rot);
	*c = (float)cos(theta);
	*s = (float)sin(theta);
}

static __global__ void __launch_bounds__(QKV_THREADS)
qkv_prep_kernel(struct rs_k_qkv a, qkv_rope rope, float eps,
    const int32_t *__restrict__ pos0)
{
	extern __shared__ float head[];		/* the normalised head */
	__shared__ float scratch[32];
	const int	 b = blockIdx.x, t = blockIdx.y;
	const int	 p = *pos0 + t, half = rope.n_rot / 2;

	if (b >= a.nh + a.nkv) {	/* a v head: into the cache */
		const int h = b - a.nh - a.nkv;
		const float *v = a.v + (int64_t)t * a.ldv + (int64_t)h * a.hdv;
		uint16_t *dst = a.vc + (int64_t)p * a.nkv * a.hdv +
		    (int64_t)h * a.hdv;

		for (int i = threadIdx.x; i < a.hdv; i += blockDim.x)
			dst[i] = __half_as_ushort(__float2half_rn(v[i]));
		return;
	}
	const int	 is_k = b >= a.nh, h = is_k ? b - a.nh : b;
	float		*x = is_k ? a.k + (int64_t)t * a.ldk + (int64_t)h * a.hd :
	    a.q + (int64_t)t * a.ldq + (int64_t)h * a.q_stride;
	const float	*w = is_k ? a.k_norm : a.q_norm;
	float		 ss = 0.0f;

	for (int i = threadIdx.x; i < a.hd; i += blockDim.x)
		ss += x[i] * x[i];
	const float r = rsqrtf(block_sum(ss, scratch) / (float)a.hd + eps);
	for (int i = threadIdx.x; i < a.hd; i += blockDim.x)
		head[i] = x[i] * r * __ldg(w + i);
	__syncthreads();
	uint16_t *kc = is_k ? a.kc + (int64_t)p * a.nkv * a.hd +
	    (int64_t)h * a.hd : NULL;
	for (int i = threadIdx.x; i < a.hd; i += blockDim.x) {
		float y = head[i];

		if (i < 2 * half) {
			const int j = i < half ? i : i - half;
			const float u = head[j], v = head[j + half];
			float c, s;

			qkv_angle(rope, p, j, &c, &s);
			y = i < half ? u * c - v * s : u * s + v * c;
		}
		x[i] = y;
		if (kc != NULL)
			kc[i] = __half_as_ushort(__float2half_rn(y));
	}
}

extern "C" enum rs_status
rs_k_qkv_prep(const struct rs_k_qkv *a, int n_tok, int n_rot,
    const uint32_t sections[4], float base, float eps,
    const int32_t *d_params, cudaStream_t stream, struct rs_err *err)
{
	const qkv_rope rope = { { sections[0], sections[1], sections[2],
	    sections[3] }, base, n_rot };

	if (a->nh < 1 || a->nkv < 1 || a->hd < 1 || a->hdv < 1 || n_tok < 1 ||
	    n_rot < 2 || n_rot % 2 != 0 || n_rot > a->hd ||
	    sections[0] + sections[1] + sections[2] + sections[3] == 0 ||
	    a->hd > 48 * 1024 / 4)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "qkv prep: heads %d/%d of %d, %d tokens, n_rot %d", a->nh,
		    a->nkv, a->hd, n_tok, n_rot));
	/* rs_k_rmsnorm's block for a row of hd: the same sums */
	const int threads = a->hd < QKV_THREADS ? (a->hd + RS_WARP - 1) /
	    RS_WARP * RS_WARP : QKV_THREADS;
	const dim3 grid((unsigned)(a->nh + 2 * a->nkv), (unsigned)n_tok);

	qkv_prep_kernel<<<grid, threads, (size_t)a->hd * sizeof(float),
	    stream>>>(*a, rope, eps, d_params);
	RS_LAUNCH_CHECK(err, "qkv prep");
	return (RS_OK);
}
