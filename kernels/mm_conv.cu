/*
 * mm_conv.cu - the conversions around the prefill products (gemm.cu): the
 * activations to f16 with a power-of-two scale per token, weight rows of
 * any format to f16, and the scaled store of the f32 products.  Device code
 * only, so NVIDIA's 12.9 front end checks it for compute_70 too
 * (scripts/cuda129-nvrtc.sh); gemm.cu holds the cuBLAS side.  Oracles:
 * rs_cpu_matmul_ref through rs_k_mm; test: tests/check_cuda.c "mm".
 */
#include <math.h>

#include "common.cuh"
#include "quant.cuh"
#include "rs_kernels.h"

/* ---- kernels ---- */

/* One block per token: x̃ = x·s in f16 and 1/s (step 1). */
static __global__ void __launch_bounds__(256)
mm_x16_kernel(const float *__restrict__ x, int64_t ldx, int64_t n,
    __half *__restrict__ x16, float *__restrict__ inv_s)
{
	__shared__ float scratch[32];
	const float *xr = x + blockIdx.x * ldx;
	__half *out = x16 + blockIdx.x * n;
	float mx = 0.0f;

	for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
		mx = fmaxf(mx, fabsf(xr[i]));
	/* the block's maximum, in every thread (each warp reduces the
	   per-warp maxima again, so all agree on s) */
	const int lane = threadIdx.x % RS_WARP;
	mx = warp_max(mx);
	if (lane == 0)
		scratch[threadIdx.x / RS_WARP] = mx;
	__syncthreads();
	mx = lane < (int)(blockDim.x / RS_WARP) ? scratch[lane] : 0.0f;
	mx = warp_max(mx);
	/* s = 2^(13 − e) with max = m·2^e, m in [0.5, 1): max·s in [2^12,
	   2^13); zeros, infinities and NaN keep s = 1 */
	int e = 0;
	float s = 1.0f;
	if (mx > 0.0f && isfinite(mx)) {
		(void)frexpf(mx, &e);
		s = ldexpf(1.0f, 13 - e);
	}
	for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
		out[i] = __float2half_rn(xr[i] * s);
	if (threadIdx.x == 0)
		inv_s[blockIdx.x] = 1.0f / s;
}

/* Rows R0 .. R0 + N_ROWS − 1 of W into W16 (n_rows, n_in) (step 2): one
   thread per 8 values. */
template <int T>
static __global__ void __launch_bounds__(256)
mm_w16_kernel(const uint8_t *__restrict__ w, int64_t row_bytes, int64_t n_in,
    int64_t r0, int64_t n_rows, __half *__restrict__ w16)
{
	const int64_t chunks = n_in / 8;
	const int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	float v[8];

	if (g >= n_rows * chunks)
		return;
	int64_t r = g / chunks, c = g % chunks;
	dequant8<T>(w + (r0 + r) * row_bytes, c, v);
	__half2 *dst = (__half2 *)(w16 + r * n_in + 8 * c);
	for (int i = 0; i < 4; i++)
		dst[i] = __floats2half2_rn(v[2 * i], v[2 * i + 1]);
}

/* y[t][r] (+)= T[t][r] / s_t for N_ROWS rows of N_TOK tokens (step 3's
   tail). */
static __global__ void
mm_store_kernel(const float *__restrict__ t, int64_t n_rows,
    const float *__restrict__ inv_s, float *__restrict__ y, int64_t ldy,
    int acc)
{
	const int tok = blockIdx.y;
	const float f = inv_s[tok];

	for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	    r < n_rows; r += (int64_t)gridDim.x * blockDim.x) {
		float v = t[tok * n_rows + r] * f;
		y[tok * ldy + r] = acc ? y[tok * ldy + r] + v : v;
	}
}

struct w16_launch {
	const uint8_t *w;
	int64_t row_bytes, n_in, r0, n_rows;
	__half *w16;
	cudaStream_t s;

	template <int T> void operator()() const
	{
		int64_t n = n_rows * (n_in / 8);
		mm_w16_kernel<T><<<(unsigned)((n + 255) / 256), 256, 0, s>>>(w,
		    row_bytes, n_in, r0, n_rows, w16);
	}
};

extern "C" enum rs_status
rs_k_mm_x16(const float *d_x, int64_t ldx, int64_t n, int n_tok,
    void *d_x16, float *d_inv_s, cudaStream_t stream, struct rs_err *err)
{
	if (n < 1 || n_tok < 1 || ldx < n)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "mm x16: n %lld, %d tokens", (long long)n, n_tok));
	mm_x16_kernel<<<n_tok, 256, 0, stream>>>(d_x, ldx, n,
	    (__half *)d_x16, d_inv_s);
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
	if (!dispatch_type(type, l))
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "mm: weight type %d has no device decoder", type));
	RS_LAUNCH_CHECK(err, "mm w16");
	return (RS_OK);
}

extern "C" enum rs_status
rs_k_mm_store(const float *d_t, int64_t n_rows, int n_tok,
    const float *d_inv_s, float *d_y, int64_t ldy, int accumulate,
    cudaStream_t stream, struct rs_err *err)
{
	if (n_rows < 1 || n_tok < 1 || ldy < n_rows)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "mm store: %lld rows, %d tokens", (long long)n_rows, n_tok));
	unsigned gx = (unsigned)((n_rows + 255) / 256);
	gx = gx > 64 ? 64 : gx;
	mm_store_kernel<<<dim3(gx, (unsigned)n_tok), 256, 0, stream>>>(d_t,
	    n_rows, d_inv_s, d_y, ldy, accumulate);
	RS_LAUNCH_CHECK(err, "mm store");
	return (RS_OK);
}
