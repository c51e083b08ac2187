/*
 * norm.cu - RMSNorm rows and the gated RMSNorm of the GDN output
 * (qwen35-model.md §4.1, §4.6 step 7).
 *
 *   rmsnorm:  y = x · rsqrt(Σx²/n + eps) · w           (rows of n)
 *   gated:    y = rmsnorm(x, w) ⊙ silu(z)               (heads of n)
 *
 * One block per row, or per 256-value slice of a row in decode and
 * verification passes (rmsnorm_kernel); the sum of squares is reduced in
 * f32 over the block (n ≤ 5120 values of moderate size: relative error
 * ~1e-7, against the oracles' double sums).  Oracles: rs_cpu_rmsnorm_ref,
 * rs_cpu_gated_rmsnorm_ref; test: tests/check_cuda.c "norm".  Bytes moved
 * are 2n floats per row: negligible next to the matmuls.
 */
#include "common.cuh"
#include "rs_kernels.h"
#include "xq.cuh"

#define NORM_THREADS	256
#define NORM_SLICE	256	/* values a block writes, sliced rows */
#define NORM_SLICED_ROWS 32	/* RS_ENGINE_EXACT_MAX: passes up to it */

/*
 * With XQ, row r is also converted to the 16-bit format (rs_xq.h) into
 * XQ + r·RS_XQ_COL_BYTES(n): n is a multiple of 32 and so is the block, so
 * each warp's 32 consecutive values of a pass are one 32-value block.
 *
 * Block (r, s) writes the values s·NORM_SLICE .. of row r; every block of
 * a row sums the squares of the whole row itself (the same sum in the same
 * order in each), so a decode step's 5,120-value norm is spread over 20
 * SMs instead of waiting on one (8.4 µs a launch on the H200 with one
 * block of 1024 threads, docs/perf-log.md).  Prefill chunks (more rows
 * than a verification pass) keep one block per row: there the rows fill
 * the GPU and re-reading each row per slice would cost more than it saves.
 * Both sum in the same order (NORM_THREADS lanes, stride NORM_THREADS), so
 * a row gets the same bits either way.
 */
static __global__ void __launch_bounds__(NORM_THREADS)
rmsnorm_kernel(const float *x, int64_t ldx, const float *__restrict__ w,
    float *y, int64_t ldy, int64_t n, float eps, uint8_t *__restrict__ xq,
    int64_t slice)
{
	__shared__ float scratch[32];
	const float *xr = x + (int64_t)blockIdx.x * ldx;
	float	*yr = y + (int64_t)blockIdx.x * ldy;
	uint8_t	*col = xq == NULL ? NULL :
	    xq + (int64_t)blockIdx.x * RS_XQ_COL_BYTES(n);
	const int64_t from = (int64_t)blockIdx.y * slice;
	const int64_t to = from + slice < n ? from + slice : n;
	float	 ss = 0.0f;

	for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
		ss += xr[i] * xr[i];
	float r = rsqrtf(block_sum(ss, scratch) / (float)n + eps);
	/* in place (y == x) only with one block per row: another block of
	   the row could still be summing what this one overwrites */
	for (int64_t i = from + threadIdx.x; i < to; i += blockDim.x) {
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
	/* slices for the rows of a decode or verification pass written
	   elsewhere; one block per row for prefill chunks and in place */
	const int sliced = n_rows <= NORM_SLICED_ROWS && d_x != d_y;
	const int64_t slice = sliced ? NORM_SLICE : n;
	dim3 grid((unsigned)n_rows, (unsigned)((n + slice - 1) / slice));
	rmsnorm_kernel<<<grid, NORM_THREADS, 0, stream>>>(d_x, ldx, d_w, d_y,
	    ldy, n, eps, (uint8_t *)d_xq, slice);
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
