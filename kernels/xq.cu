/*
 * xq.cu - activations to the 16-bit integer format of rs_xq.h, which
 * the integer matvec reads (matvec.cu), for inputs that no producing
 * kernel converts on the way out.  One warp per 32-value block, one lane
 * per value (xq.cuh); the bytes match rs_xq_quantize exactly (test:
 * tests/check_cuda.c "xq").
 */
#include "common.cuh"
#include "rs_kernels.h"
#include "xq.cuh"

#define XQ_WARPS	8

static __global__ void __launch_bounds__(XQ_WARPS * RS_WARP)
xq_kernel(const float *__restrict__ x, int64_t ldx, int64_t n, int n_tok,
    int bm, uint8_t *__restrict__ xq)
{
	const int	 lane = threadIdx.x % RS_WARP;
	const int64_t	 nb = n / RS_XQ_BLOCK;
	const int64_t	 g = (int64_t)blockIdx.x * XQ_WARPS + threadIdx.x / RS_WARP;
	const int64_t	 t = g / nb, b = g % nb;

	rs_pdl_trigger();	/* the product after it may start */
	if (t >= n_tok)
		return;
	xq_store(x[t * ldx + RS_XQ_BLOCK * b + lane], lane, xq, n, n_tok, bm,
	    t, b);
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
	    rs_k_xq_block_major(n_tok), (uint8_t *)d_xq);
	RS_LAUNCH_CHECK(err, "xq");
	return (RS_OK);
}
