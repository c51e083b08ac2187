/*
 * mm_conv.cu - the conversions before the prefill products (gemm.cu): the
 * activations of a chunk to f16 with one power-of-two scale, and weight
 * rows of any format to f16.  Device code only, so NVIDIA's 12.9 front end
 * checks it for compute_70 too (scripts/cuda129-nvrtc.sh); gemm.cu holds
 * the cuBLAS side.  Oracles: rs_cpu_matmul_ref through rs_k_mm; test:
 * tests/check_cuda.c "mm".
 */
#include <math.h>

#include "common.cuh"
#include "quant.cuh"
#include "rs_kernels.h"

#define MM_THREADS	256
#define MM_ROW_BLOCKS	64	/* blocks down the rows (each loops) */
#define MM_COL_VALUES	1024	/* values of a row per block (4 a thread) */

/* ---- kernels ---- */

/*
 * max |x| over N_TOK rows of N values (LDX apart) into *AMAX (its bits: non-negative
 * floats order as unsigned integers; a NaN ends above +inf), which starts
 * at 0.
 */
static __global__ void __launch_bounds__(MM_THREADS)
mm_amax_kernel(const float *__restrict__ x, int64_t ldx, int64_t n,
    int64_t n_tok, unsigned int *amax)
{
	__shared__ float scratch[MM_THREADS / RS_WARP];
	const int lane = threadIdx.x % RS_WARP;
	float mx = 0.0f;

	for (int64_t t = blockIdx.y; t < n_tok; t += gridDim.y)
		for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
		    i < n; i += (int64_t)gridDim.x * blockDim.x)
			mx = fmaxf(mx, fabsf(x[t * ldx + i]));
	mx = warp_max(mx);
	if (lane == 0)
		scratch[threadIdx.x / RS_WARP] = mx;
	__syncthreads();
	if (threadIdx.x >= RS_WARP)
		return;
	mx = lane < MM_THREADS / RS_WARP ? scratch[lane] : 0.0f;
	mx = warp_max(mx);
	if (lane == 0)
		atomicMax(amax, __float_as_uint(mx));
}

/*
 * s = 2^(13 − e) for max = m·2^e, m in [0.5, 1): max·s in [2^12, 2^13),
 * far from f16's 65504 and, since f16 keeps 11 significant bits at every
 * normal scale, costing no precision; zeros, infinities and NaN keep s = 1.
 */
static __device__ __forceinline__ float
mm_scale(unsigned int amax_bits)
{
	float mx = __uint_as_float(amax_bits);
	int e = 0;

	if (!(mx > 0.0f) || !isfinite(mx))
		return (1.0f);
	(void)frexpf(mx, &e);
	return (ldexpf(1.0f, 13 - e));
}

/* x̃ = x·s in f16, (n_tok, n) dense, and ALPHA[0] = 1/s. */
static __global__ void __launch_bounds__(MM_THREADS)
mm_x16_kernel(const float *__restrict__ x, int64_t ldx, int64_t n,
    int64_t n_tok, const unsigned int *__restrict__ amax,
    __half *__restrict__ x16, float *__restrict__ alpha)
{
	const float s = mm_scale(*amax);

	for (int64_t t = blockIdx.y; t < n_tok; t += gridDim.y)
		for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
		    i < n; i += (int64_t)gridDim.x * blockDim.x)
			x16[t * n + i] = __float2half_rn(x[t * ldx + i] * s);
	if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0)
		*alpha = 1.0f / s;
}

/* Rows R0 .. R0 + N_ROWS − 1 of W into W16 (n_rows, n_in): one thread per
   8 values.  T: a stored type (dequant8_at: tiled ones too). */
template <int T>
static __global__ void __launch_bounds__(MM_THREADS)
mm_w16_kernel(const uint8_t *__restrict__ w, int64_t row_bytes, int64_t n_in,
    int64_t r0, int64_t n_rows, __half *__restrict__ w16)
{
	const int64_t chunks = n_in / 8;
	const int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	float v[8];

	if (g >= n_rows * chunks)
		return;
	int64_t r = g / chunks, c = g % chunks;
	dequant8_at<T>(w, row_bytes, r0 + r, c, v);
	__half2 *dst = (__half2 *)(w16 + r * n_in + 8 * c);
	for (int i = 0; i < 4; i++)
		dst[i] = __floats2half2_rn(v[2 * i], v[2 * i + 1]);
}

/* ---- launchers ---- */

struct w16_launch {
	const uint8_t *w;
	int64_t row_bytes, n_in, r0, n_rows;
	__half *w16;
	cudaStream_t s;

	template <int T> void operator()() const
	{
		int64_t n = n_rows * (n_in / 8);
		mm_w16_kernel<T><<<(unsigned)((n + MM_THREADS - 1) / MM_THREADS),
		    MM_THREADS, 0, s>>>(w, row_bytes, n_in, r0, n_rows, w16);
	}
};

extern "C" enum rs_status
rs_k_mm_x16(const float *d_x, int64_t ldx, int64_t n, int n_tok,
    void *d_x16, unsigned int *d_amax, float *d_alpha, cudaStream_t stream,
    struct rs_err *err)
{
	if (n < 1 || n_tok < 1 || ldx < n)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "mm x16: n %lld, %d tokens", (long long)n, n_tok));
	dim3 grid((unsigned)((n + MM_COL_VALUES - 1) / MM_COL_VALUES),
	    (unsigned)(n_tok < MM_ROW_BLOCKS ? n_tok : MM_ROW_BLOCKS));
	RS_CUDA_TRY(err, cudaMemsetAsync(d_amax, 0, sizeof(*d_amax), stream));
	mm_amax_kernel<<<grid, MM_THREADS, 0, stream>>>(d_x, ldx, n, n_tok,
	    d_amax);
	RS_LAUNCH_CHECK(err, "mm amax");
	mm_x16_kernel<<<grid, MM_THREADS, 0, stream>>>(d_x, ldx, n, n_tok,
	    d_amax, (__half *)d_x16, d_alpha);
	RS_LAUNCH_CHECK(err, "mm x16");
	return (RS_OK);
}

extern "C" enum rs_status
rs_k_mm_w16(const void *d_w, int type, int64_t n_in, int64_t row_bytes,
    int64_t r0, int64_t n_rows, void *d_w16, cudaStream_t stream,
    struct rs_err *err)
{
	w16_launch l = { (const uint8_t *)d_w, row_bytes, n_in, r0, n_rows,
	    (__half *)d_w16, stream };

	if (n_in < 8 || n_in % 8 != 0 || r0 < 0 || n_rows < 1)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "mm w16: n_in %lld, rows %lld", (long long)n_in,
		    (long long)n_rows));
	if (!dispatch_stored(type, l))
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "mm: weight type %d has no device decoder", type));
	RS_LAUNCH_CHECK(err, "mm w16");
	return (RS_OK);
}
