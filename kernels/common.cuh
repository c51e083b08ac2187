/*
 * common.cuh - what every kernel file shares: the launch check that turns a
 * CUDA error into an rs_status (style.md §2.4), warp reductions, and the
 * f16/bf16 loads.  Baseline kernels use only what SM70 has.
 */
#ifndef RS_COMMON_CUH
#define RS_COMMON_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "rs_err.h"

#define RS_WARP	32

/* Record the launch error of the previous kernel, if any, in ERR. */
#define RS_LAUNCH_CHECK(err, what) do {					\
	cudaError_t e_ = cudaGetLastError();				\
	if (e_ != cudaSuccess)						\
		return (rs_errf((err), RS_ERR_CUDA, "%s: %s (%s:%d)",	\
		    (what), cudaGetErrorString(e_), __FILE__, __LINE__)); \
} while (0)

/* Evaluate a runtime call; on failure return RS_ERR_CUDA with context. */
#define RS_CUDA_TRY(err, expr) do {					\
	cudaError_t e_ = (expr);					\
	if (e_ != cudaSuccess)						\
		return (rs_errf((err), RS_ERR_CUDA, "%s: %s (%s:%d)",	\
		    #expr, cudaGetErrorString(e_), __FILE__, __LINE__)); \
} while (0)

/*
 * Programmatic dependent launch (SM90 on; no-ops before, and in kernels
 * launched without it).  A kernel launched with the programmatic
 * serialization attribute (matvec.cu: mv_launch) may start while the
 * kernel before it in the stream still runs, once every CTA of that one has
 * called rs_pdl_trigger (or exited); rs_pdl_wait then blocks until the
 * earlier kernel has finished and its writes are visible.  What comes
 * before the wait may touch only what no earlier kernel writes (weights).
 * The decode matvecs and RMSNorm are launched so (rs_launch_init below,
 * where rs_runs_ptx(kernel, 90, ...) says the SM90 code runs), which
 * hides the launch between a kernel and the next: 0.3-0.4 µs a norm and
 * its product (kernels/dev/pdl.cu, docs/perf-log.md).
 */
static __device__ __forceinline__ void
rs_pdl_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

static __device__ __forceinline__ void
rs_pdl_trigger(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

static __device__ __forceinline__ float
warp_sum(float v)
{
	for (int o = RS_WARP / 2; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return (v);
}

/*
 * C warp sums at once (C a power of two, at most 32): lane l returns
 * Σ over the warp of v[l / (32 / C)], the same bits warp_sum(v[that])
 * would give.  warp_sum's butterfly adds, at offsets 16, 8, ..., 1, a
 * lane's partial and its partner's; here, at each of the first log2 C
 * offsets, a lane keeps one half of its values (the upper half where its
 * offset bit is set), sends the other half, and adds what the partner
 * sent for the half it kept: the same pairs added in the same order, one
 * shuffle for two of warp_sum's sums.  The last 5 − log2 C offsets are
 * warp_sum's.  31 shuffles at C = 32 where C warp_sums take 5·C.
 */
template <int C>
static __device__ __forceinline__ float
warp_sum_rows(float (&v)[C], int lane)
{
	int n = C;

#pragma unroll
	for (int o = RS_WARP / 2; o >= RS_WARP / C; o >>= 1) {
		const bool up = (lane & o) != 0;

		n /= 2;
#pragma unroll
		for (int i = 0; i < n; i++) {
			float keep = up ? v[i + n] : v[i];
			float send = up ? v[i] : v[i + n];
			v[i] = keep + __shfl_xor_sync(0xffffffffu, send, o);
		}
	}
#pragma unroll
	for (int o = RS_WARP / C / 2; o > 0; o >>= 1)
		v[0] += __shfl_xor_sync(0xffffffffu, v[0], o);
	return (v[0]);
}

static __device__ __forceinline__ float
warp_max(float v)
{
	for (int o = RS_WARP / 2; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return (v);
}

/*
 * Sum of V over the whole block (blockDim.x a multiple of 32, at most
 * 1024); every thread gets the result.  SCRATCH: 32 floats of shared memory.
 */
static __device__ __forceinline__ float
block_sum(float v, float *scratch)
{
	int lane = threadIdx.x % RS_WARP, warp = threadIdx.x / RS_WARP;
	int nw = (blockDim.x + RS_WARP - 1) / RS_WARP;

	v = warp_sum(v);
	__syncthreads();
	if (lane == 0)
		scratch[warp] = v;
	__syncthreads();
	v = lane < nw ? scratch[lane] : 0.0f;
	return (warp_sum(v));
}

static __device__ __forceinline__ float
half_to_float(uint16_t h)
{
	return (__half2float(__ushort_as_half(h)));
}

static __device__ __forceinline__ float
silu_f(float x)
{
	return (x / (1.0f + __expf(-x)));
}

static __device__ __forceinline__ float
sigmoid_f(float x)
{
	return (1.0f / (1.0f + __expf(-x)));
}

#ifndef __CUDACC_RTC__
/*
 * Host helpers (NVRTC's check, scripts/cuda129-nvrtc.sh, compiles the
 * kernels without a host runtime and leaves these out).
 */

#define RS_MAX_DEVICES	64

/*
 * Does the current device run KERNEL from code built for compute
 * capability MIN_PTX (80, 90) or later?  ptxVersion is what the device
 * would run: an sm_75 cubin on an SM80 device, or compute_70 PTX
 * JIT-compiled for an H200, report 75 and 70, and a kernel whose body is
 * guarded by __CUDA_ARCH__ must then take another path.  CACHE (the
 * caller's, zeroed, one per kernel family) keeps the answer per device.
 */
template <typename K>
static int
rs_runs_ptx(K kernel, int min_ptx, signed char cache[RS_MAX_DEVICES])
{
	cudaFuncAttributes fa;
	int dev = 0;

	if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 ||
	    dev >= RS_MAX_DEVICES)
		dev = 0;
	if (cache[dev] == 0) {
		const int ok = cudaFuncGetAttributes(&fa, kernel) ==
		    cudaSuccess && fa.ptxVersion >= min_ptx;
		(void)cudaGetLastError();	/* not sticky: clear it */
		cache[dev] = ok ? 1 : -1;
	}
	return (cache[dev] > 0);
}

/*
 * A launch configuration, with PDL (rs_pdl_wait above) as a programmatic
 * dependent of the stream's previous kernel or without; launch with
 * cudaLaunchKernelEx(&l->cfg, kernel, args...), whose failure is left for
 * cudaGetLastError like <<<>>>'s.  L must outlive the launch call (cfg
 * points at its attribute).
 */
struct rs_launch {
	cudaLaunchConfig_t	cfg;
	cudaLaunchAttribute	at;
};

static inline void
rs_launch_init(struct rs_launch *l, dim3 grid, dim3 block, size_t smem,
    cudaStream_t s, int pdl)
{
	l->cfg = cudaLaunchConfig_t();
	l->at.id = cudaLaunchAttributeProgrammaticStreamSerialization;
	l->at.val.programmaticStreamSerializationAllowed = 1;
	l->cfg.gridDim = grid;
	l->cfg.blockDim = block;
	l->cfg.dynamicSmemBytes = smem;
	l->cfg.stream = s;
	l->cfg.attrs = &l->at;
	l->cfg.numAttrs = pdl ? 1 : 0;
}
#endif

#endif /* RS_COMMON_CUH */
