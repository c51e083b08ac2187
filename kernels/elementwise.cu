/*
 * elementwise.cu - SwiGLU and the argmax over logits.
 *
 *   swiglu: h = silu(g) ⊙ u                      (qwen35-model.md §4.3)
 *   argmax: the index of the largest logit, lowest index on ties
 *           (greedy sampling on the device, no logits copied to the host)
 *
 * Oracles: rs_cpu_silu on the host; a scan for the argmax; test:
 * tests/check_cuda.c "elementwise".
 */
#include <math.h>

#include "common.cuh"
#include "rs_kernels.h"
#include "xq.cuh"

/*
 * With XQ (n a multiple of 32), every warp's 32 consecutive values are one
 * 32-value block of a row, which it converts to the 16-bit format (the
 * rows: one batch, rs_xq.h).
 */
static __global__ void
swiglu_kernel(const float *__restrict__ g, const float *__restrict__ u,
    float *__restrict__ h, int64_t n, int64_t count, uint8_t *__restrict__ xq,
    int bm)
{
	int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;

	rs_pdl_trigger();	/* the product after it may start */
	if (i >= count)
		return;
	float v = silu_f(g[i]) * u[i];
	h[i] = v;
	if (xq != NULL)
		xq_store(v, (int)(i % RS_WARP), xq, n, count / n, bm, i / n,
		    (i % n) / RS_XQ_BLOCK);
}

extern "C" enum rs_status
rs_k_swiglu(const float *d_g, const float *d_u, float *d_h, int64_t n,
    int n_tok, void *d_xq, cudaStream_t stream, struct rs_err *err)
{
	int64_t count = n * n_tok;

	if (count < 1 || (d_xq != NULL && n % RS_XQ_BLOCK != 0))
		return (rs_errf(err, RS_ERR_INVALID_ARG, "swiglu: n %lld, "
		    "n_tok %d%s", (long long)n, n_tok, d_xq != NULL ?
		    " (with xq: n a multiple of 32)" : ""));
	swiglu_kernel<<<(unsigned)((count + 255) / 256), 256, 0, stream>>>(d_g,
	    d_u, d_h, n, count, (uint8_t *)d_xq, rs_k_xq_block_major(n_tok));
	RS_LAUNCH_CHECK(err, "swiglu");
	return (RS_OK);
}

#define ARGMAX_THREADS	1024

static __global__ void
argmax_kernel(const float *__restrict__ x, int64_t ldx, int64_t n,
    int32_t *__restrict__ out)
{
	__shared__ float bv[ARGMAX_THREADS / 32];
	__shared__ int64_t bi[ARGMAX_THREADS / 32];
	const float *r = x + (int64_t)blockIdx.x * ldx;
	float	 best = -INFINITY;
	int64_t	 idx = n;	/* NaNs never win; all-NaN gives 0 below */

	for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
		if (r[i] > best) {
			best = r[i];
			idx = i;
		}
	for (int o = 16; o > 0; o >>= 1) {
		float ov = __shfl_xor_sync(0xffffffffu, best, o);
		int64_t oi = __shfl_xor_sync(0xffffffffu, idx, o);
		if (ov > best || (ov == best && oi < idx)) {
			best = ov;
			idx = oi;
		}
	}
	if (threadIdx.x % 32 == 0) {
		bv[threadIdx.x / 32] = best;
		bi[threadIdx.x / 32] = idx;
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		for (int w = 1; w < ARGMAX_THREADS / 32; w++)
			if (bv[w] > best || (bv[w] == best && bi[w] < idx)) {
				best = bv[w];
				idx = bi[w];
			}
		out[blockIdx.x] = (int32_t)(idx == n ? 0 : idx);
	}
}

extern "C" enum rs_status
rs_k_argmax(const float *d_x, int64_t ldx, int64_t n, int n_rows,
    int32_t *d_out, cudaStream_t stream, struct rs_err *err)
{
	if (n < 1 || n > INT32_MAX || n_rows < 1)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "argmax: n %lld",
		    (long long)n));
	argmax_kernel<<<n_rows, ARGMAX_THREADS, 0, stream>>>(d_x, ldx, n, d_out);
	RS_LAUNCH_CHECK(err, "argmax");
	return (RS_OK);
}
