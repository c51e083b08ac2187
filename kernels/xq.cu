/*
 * xq.cu - activations to the 16-bit integer format of lib/rs_xq.h, which
 * the integer matvec reads (matvec.cu).  One warp per 32-value block, one
 * lane per value; the same f32 operations as rs_xq_quantize, so the bytes
 * match the CPU oracle exactly (test: tests/check_cuda.c "xq").
 */
#include "common.cuh"
#include "rs_kernels.h"

extern "C" {
#include "rs_xq.h"
}

#define XQ_WARPS	8

static __global__ void __launch_bounds__(XQ_WARPS * RS_WARP)
xq_kernel(const float *__restrict__ x, int64_t ldx, int64_t n, int n_tok,
    uint8_t *__restrict__ xq)
{
	const int	 lane = threadIdx.x % RS_WARP;
	const int64_t	 nb = n / RS_XQ_BLOCK;
	const int64_t	 g = (int64_t)blockIdx.x * XQ_WARPS + threadIdx.x / RS_WARP;
	const int64_t	 t = g / nb, b = g % nb;

	if (t >= n_tok)
		return;
	float	 xi = x[t * ldx + RS_XQ_BLOCK * b + lane];
	int	 finite = __all_sync(0xffffffffu, isfinite(xi));
	float	 amax = warp_max(fabsf(xi));
	int	 zero = !finite || amax < RS_XQ_MIN_AMAX;
	float	 inv = 32767.0f / amax;
	float	 s = !finite ? NAN : zero ? 0.0f : amax / 32767.0f;
	int	 v = zero ? 0 : __float2int_rn(xi * inv);
	uint8_t	*col = xq + t * RS_XQ_COL_BYTES(n);

	col[RS_XQ_BLOCK * b + lane] = (uint8_t)(int8_t)(v >> 8);
	col[n + RS_XQ_BLOCK * b + lane] = (uint8_t)(v & 255);
	/* exact integer half-sums: lanes 0..15 and 16..31 */
	int half = v;
	for (int o = 8; o > 0; o >>= 1)
		half += __shfl_xor_sync(0xffffffffu, half, o);
	if (lane % 16 == 0) {
		float *meta = (float *)(col + 2 * n) + 4 * b;
		meta[1 + lane / 16] = s * (float)half;
		if (lane == 0) {
			meta[0] = s;
			meta[3] = 0.0f;
		}
	}
}

extern "C" enum rs_status
rs_k_xq(const float *d_x, int64_t ldx, int64_t n, int n_tok, void *d_xq,
    cudaStream_t stream, struct rs_err *err)
{
	if (n <= 0 || n % RS_XQ_BLOCK != 0 || n_tok < 1 || ldx < n)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "xq: n %lld, n_tok %d, ldx %lld (need n a multiple of 32)",
		    (long long)n, n_tok, (long long)ldx));
	int64_t warps = (int64_t)n_tok * (n / RS_XQ_BLOCK);
	dim3 grid((unsigned)((warps + XQ_WARPS - 1) / XQ_WARPS));
	xq_kernel<<<grid, XQ_WARPS * RS_WARP, 0, stream>>>(d_x, ldx, n, n_tok,
	    (uint8_t *)d_xq);
	RS_LAUNCH_CHECK(err, "xq");
	return (RS_OK);
}
