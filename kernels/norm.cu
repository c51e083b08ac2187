/*
 * norm.cu - RMSNorm rows and the gated RMSNorm of the GDN output
 * (qwen35-model.md §4.1, §4.6 step 7).
 *
 *   rmsnorm:  y = x · rsqrt(Σx²/n + eps) · w           (rows of n)
 *   gated:    y = rmsnorm(x, w) ⊙ silu(z)               (heads of n)
 *
 * A block per row (or per slice of one, below); the sum of squares is
 * reduced in f32 over the block (n ≤ 5120 values of moderate size:
 * relative error ~1e-7, against the oracles' double sums).  Oracles:
 * rs_cpu_rmsnorm_ref, rs_cpu_gated_rmsnorm_ref; test: tests/check_cuda.c
 * "norm".  Bytes moved are 2n floats per row: negligible next to the
 * matmuls, but a decode step runs 129 of them one after the other.
 */
#include "common.cuh"
#include "rs_kernels.h"
#include "xq.cuh"

#define NORM_THREADS	256
#define NORM_SPLIT_ROWS	16	/* up to this many rows, split them */
#define NORM_VPT	24	/* loads in flight a thread, the sum pass: a
				   row of up to 6,144 in one round trip */

/*
 * Block (r, j) normalises values j·PER .. j·PER + PER − 1 of row r.  Every
 * block of a row first sums the squares of the whole row in one fixed
 * order (thread t: values t, t + blockDim.x, ..., then block_sum), so
 * all of them, and a block that does the whole row (PER = n), find the
 * same bits.  Why: a decode step normalises a 5,120-value row 129 times,
 * and one 1,024-thread block a row, one load in flight a thread and 5
 * conversion passes a warp, took 7.25 µs a row (ncu).  Here each of 20
 * blocks converts one pass, its loads of w and of its own values leave
 * first: 5.3 µs; and with NORM_VPT loads in flight, the sum pass takes a
 * 5,120 row in one round trip a thread (two before): 3.6 µs, the small
 * norms ~2.5 (docs/perf-log.md).  From SM90 on the norm is launched as a
 * programmatic dependent (common.cuh) of the product before it, so it
 * waits for x at rs_pdl_wait.
 *
 * With XQ, row r is also converted to the 16-bit format (rs_xq.h) as
 * column r of a batch of all rows: n, PER and the block are multiples of 32,
 * so each warp's 32 consecutive values of a pass are one 32-value block.
 */
static __global__ void
rmsnorm_kernel(const float *x, int64_t ldx, const float *__restrict__ w,
    float *y, int64_t ldy, int64_t n, int64_t per, float eps,
    uint8_t *__restrict__ xq, int bm)
{
	__shared__ float scratch[32];
	const float *xr = x + (int64_t)blockIdx.x * ldx;
	float	*yr = y + (int64_t)blockIdx.x * ldy;
	const int64_t lo = (int64_t)blockIdx.y * per;
	const int64_t hi = lo + per < n ? lo + per : n;
	int64_t	 i = lo + threadIdx.x;
	float	 ss = 0.0f;

	rs_pdl_trigger();	/* the product after it may start */
	rs_pdl_wait();		/* x: launched early after a product */
	float	 xi = i < hi ? xr[i] : 0.0f, wi = i < hi ? __ldg(w + i) : 0.0f;
	for (int64_t base = 0; base < n; base += NORM_VPT * blockDim.x) {
		float v[NORM_VPT];
#pragma unroll
		for (int k = 0; k < NORM_VPT; k++) {
			const int64_t e = base + threadIdx.x + k * blockDim.x;
			v[k] = e < n ? xr[e] : 0.0f;
		}
#pragma unroll
		for (int k = 0; k < NORM_VPT; k++)
			ss += v[k] * v[k];
	}
	const float r = rsqrtf(block_sum(ss, scratch) / (float)n + eps);
	for (; i < hi; i += blockDim.x) {
		const float val = xi * r * wi;

		if (i + blockDim.x < hi) {	/* the next pass's operands */
			xi = xr[i + blockDim.x];
			wi = __ldg(w + i + blockDim.x);
		}
		yr[i] = val;
		if (xq != NULL)
			xq_store(val, (int)(i % RS_WARP), xq, n, gridDim.x,
			    bm, blockIdx.x, i / RS_XQ_BLOCK);
	}
}

/*
 * Launch the norm as a programmatic dependent (common.cuh) where the
 * device runs its SM90 code: it then starts while the product before it
 * finishes, and waits for that product's output at rs_pdl_wait.
 */
#ifndef __CUDACC_RTC__
static int
norm_pdl(void)
{
	static signed char known[RS_MAX_DEVICES];

	return (rs_runs_ptx(rmsnorm_kernel, 90, known));
}
#endif

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
	/* whole warps: a 32-value block a warp */
	const int threads = n < NORM_THREADS ? (int)((n + RS_WARP - 1) /
	    RS_WARP * RS_WARP) : NORM_THREADS;
	/*
	 * A few rows (decode, verification) in slices of one value a
	 * thread; many rows (prefill), or in place (a slice's block would
	 * overwrite what the row's other blocks still read), a block a row.
	 */
	const int split = n_rows <= NORM_SPLIT_ROWS && d_x != d_y;
	const int64_t per = split ? threads : n;
	const dim3 grid((unsigned)n_rows, (unsigned)((n + per - 1) / per));
#ifndef __CUDACC_RTC__
	struct rs_launch l;

	rs_launch_init(&l, grid, dim3((unsigned)threads), 0, stream,
	    norm_pdl());
	(void)cudaLaunchKernelEx(&l.cfg, rmsnorm_kernel, d_x, ldx, d_w, d_y, ldy,
	    n, per, eps, (uint8_t *)d_xq, rs_k_xq_block_major((int)n_rows));
#else	/* NVRTC's check (scripts/cuda129-nvrtc.sh): no host runtime */
	rmsnorm_kernel<<<grid, threads, 0, stream>>>(d_x, ldx, d_w, d_y, ldy,
	    n, per, eps, (uint8_t *)d_xq, 0);
#endif
	RS_LAUNCH_CHECK(err, "rmsnorm");
	return (RS_OK);
}

/*
 * One block per head.  With XQ, head b is blocks (b % PER_COL)·n/32 ..
 * of column b / PER_COL of a batch of all columns in the 16-bit format
 * (rs_xq.h): n and the block are
 * multiples of 32, so each warp's 32 consecutive values of a pass are
 * one 32-value block (the matvec after it then needs no conversion).
 * From SM90 on it is launched as a programmatic dependent of the scan
 * before it and waits for x first thing; it triggers the product after
 * it at once, whose CTAs then load their first weights during the scan.
 */
static __global__ void
gated_rmsnorm_kernel(const float *__restrict__ x, const float *__restrict__ z,
    const float *__restrict__ w, float *__restrict__ y, int64_t n, float eps,
    uint8_t *__restrict__ xq, int64_t per_col, int bm)
{
	__shared__ float scratch[32];
	int64_t	 off = (int64_t)blockIdx.x * n;
	float	 ss = 0.0f;

	rs_pdl_trigger();	/* the product after it may start */
	rs_pdl_wait();		/* x: launched early after the scan */
	for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
		ss += x[off + i] * x[off + i];
	float r = rsqrtf(block_sum(ss, scratch) / (float)n + eps);
	const int64_t b0 = (int64_t)(blockIdx.x % per_col) * (n / RS_XQ_BLOCK);
	for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
		const float v = x[off + i] * r * w[i] * silu_f(z[off + i]);

		y[off + i] = v;
		if (xq != NULL)
			xq_store(v, (int)(i % RS_WARP), xq, n * per_col,
			    gridDim.x / per_col, bm, blockIdx.x / per_col,
			    b0 + i / RS_XQ_BLOCK);
	}
}

extern "C" enum rs_status
rs_k_gated_rmsnorm(const float *d_x, const float *d_z, const float *d_w,
    float *d_y, int64_t n, int64_t n_rows, float eps, void *d_xq,
    int64_t per_col, cudaStream_t stream, struct rs_err *err)
{
	if (n <= 0 || n_rows <= 0 || n_rows > INT32_MAX ||
	    (d_xq != NULL && (n % RS_XQ_BLOCK != 0 || per_col < 1 ||
	    n_rows % per_col != 0)))
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "gated rmsnorm: n %lld, rows %lld%s", (long long)n,
		    (long long)n_rows, d_xq != NULL ? " (with xq: n a "
		    "multiple of 32, rows of whole columns)" : ""));
	const int bm = d_xq == NULL ? 0 : rs_k_xq_block_major((int)(n_rows /
	    per_col));
#ifndef __CUDACC_RTC__
	static signed char known[RS_MAX_DEVICES];
	struct rs_launch l;

	rs_launch_init(&l, dim3((unsigned)n_rows), dim3(128), 0, stream,
	    rs_runs_ptx(gated_rmsnorm_kernel, 90, known));
	(void)cudaLaunchKernelEx(&l.cfg, gated_rmsnorm_kernel, d_x, d_z, d_w,
	    d_y, n, eps, (uint8_t *)d_xq, per_col, bm);
#else	/* NVRTC's check (scripts/cuda129-nvrtc.sh): no host runtime */
	gated_rmsnorm_kernel<<<(unsigned)n_rows, 128, 0, stream>>>(d_x, d_z,
	    d_w, d_y, n, eps, (uint8_t *)d_xq, per_col, bm);
#endif
	RS_LAUNCH_CHECK(err, "gated rmsnorm");
	return (RS_OK);
}
