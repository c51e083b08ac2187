/*
 * norm.cu - RMSNorm rows and the gated RMSNorm of the GDN output
 * (qwen35-model.md §4.1, §4.6 step 7).
 *
 *   rmsnorm:  y = x · rsqrt(Σx²/n + eps) · w           (rows of n)
 *   gated:    y = rmsnorm(x, w) ⊙ silu(z)               (heads of n)
 *
 * One block per row; the sum of squares is reduced in f32 over the block
 * (n ≤ 5120 values of moderate size: relative error ~1e-7, against the
 * oracles' double sums).  Oracles: rs_cpu_rmsnorm_ref,
 * rs_cpu_gated_rmsnorm_ref; test: tests/check_cuda.c "norm".  Bytes moved
 * are 2n floats per row: negligible next to the matmuls.
 */
#include "common.cuh"
#include "rs_kernels.h"
#include "xq.cuh"

#define NORM_THREADS	256

/*
 * With XQ, row r is also converted to the 16-bit format (rs_xq.h) into
 * XQ + r·RS_XQ_COL_BYTES(n): n is a multiple of 32 and so is the block, so
 * each warp's 32 consecutive values of a pass are one 32-value block.
 */
static __global__ void
rmsnorm_kernel(const float *x, int64_t ldx, const float *__restrict__ w,
    float *y, int64_t ldy, int64_t n, float eps, uint8_t *__restrict__ xq)
{
	__shared__ float scratch[32];
	const float *xr = x + (int64_t)blockIdx.x * ldx;
	float	*yr = y + (int64_t)blockIdx.x * ldy;
	uint8_t	*col = xq == NULL ? NULL :
	    xq + (int64_t)blockIdx.x * RS_XQ_COL_BYTES(n);
	float	 ss = 0.0f;

	for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
		ss += xr[i] * xr[i];
	float r = rsqrtf(block_sum(ss, scratch) / (float)n + eps);
	for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
		float v = xr[i] * r * w[i];
		yr[i] = v;
		if (xq != NULL)
			xq_store(v, (int)(i % RS_WARP), col, n, i / RS_XQ_BLOCK);
	}
}

extern "C" enum rs_status
rs_k_rmsnorm(const float *d_x, int64_t ldx, const float *d_w, float *d_y,
    int64_t ldy, int64_t n, int64_t n_rows, float eps, void *d_xq,
    cudaStream_t stream, struct rs_err *err)
{
	if (n <= 0 || n_rows <= 0 || n_rows > INT32_MAX ||
	    (d_xq != NULL && n % RS_XQ_BLOCK != 0))
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "rmsnorm: n %lld, rows %lld%s", (long long)n,
		    (long long)n_rows, d_xq != NULL ? " (with xq: n a "
		    "multiple of 32)" : ""));
	/* a wide row gets a wide block: one block per row, ~5 values a thread */
	int threads = n >= 4096 ? 1024 : NORM_THREADS;
	rmsnorm_kernel<<<(unsigned)n_rows, threads, 0, stream>>>(d_x, ldx, d_w,
	    d_y, ldy, n, eps, (uint8_t *)d_xq);
	RS_LAUNCH_CHECK(err, "rmsnorm");
	return (RS_OK);
}

static __global__ void
gated_rmsnorm_kernel(const float *__restrict__ x, const float *__restrict__ z,
    const float *__restrict__ w, float *__restrict__ y, int64_t n, float eps)
{
	__shared__ float scratch[32];
	int64_t	 off = (int64_t)blockIdx.x * n;
	float	 ss = 0.0f;

	for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
		ss += x[off + i] * x[off + i];
	float r = rsqrtf(block_sum(ss, scratch) / (float)n + eps);
	for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
		y[off + i] = x[off + i] * r * w[i] * silu_f(z[off + i]);
}

extern "C" enum rs_status
rs_k_gated_rmsnorm(const float *d_x, const float *d_z, const float *d_w,
    float *d_y, int64_t n, int64_t n_rows, float eps, cudaStream_t stream,
    struct rs_err *err)
{
	if (n <= 0 || n_rows <= 0 || n_rows > INT32_MAX)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "gated rmsnorm: n %lld, rows %lld", (long long)n,
		    (long long)n_rows));
	gated_rmsnorm_kernel<<<(unsigned)n_rows, 128, 0, stream>>>(d_x, d_z,
	    d_w, d_y, n, eps);
	RS_LAUNCH_CHECK(err, "gated rmsnorm");
	return (RS_OK);
}
