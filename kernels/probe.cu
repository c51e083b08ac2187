/*
 * probe.cu - a streaming-read bandwidth probe: the ceiling against which
 * every kernel's and the engine's bandwidth is reported (rs-bench).
 *
 * Each thread sums float4 loads over a grid-stride loop and one value per
 * block is written, so the bytes moved are the buffer's size, read once.
 * The buffer (4 GiB by default) is far larger than any L2 (6 MB on the
 * V100, 60 MB on the H200); a warm-up pass precedes the timed passes.
 */
#include "common.cuh"
#include "rs_kernels.h"

static __global__ void
probe_kernel(const float4 *__restrict__ p, int64_t n4, float *__restrict__ out)
{
	float acc = 0.0f;

	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4;
	    i += (int64_t)gridDim.x * blockDim.x) {
		float4 v = __ldg(p + i);
		acc += v.x + v.y + v.z + v.w;
	}
	acc = warp_sum(acc);
	if (threadIdx.x % RS_WARP == 0)
		atomicAdd(out + blockIdx.x, acc);
}

extern "C" enum rs_status
rs_k_probe_read(size_t bytes, int reps, double *gb_s, struct rs_err *err)
{
	float		*buf = NULL, *out = NULL, ms = 0.0f;
	cudaEvent_t	 a = NULL, b = NULL;
	int		 sms = 0, dev = 0;
	enum rs_status	 st = RS_OK;
	int64_t		 n4 = (int64_t)(bytes / 16);

	if (n4 < 1 || reps < 1)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "probe: %zu bytes",
		    bytes));
	RS_CUDA_TRY(err, cudaGetDevice(&dev));
	RS_CUDA_TRY(err, cudaDeviceGetAttribute(&sms,
	    cudaDevAttrMultiProcessorCount, dev));
	int blocks = sms * 8;
	if (cudaMalloc((void **)&buf, (size_t)n4 * 16) != cudaSuccess ||
	    cudaMalloc((void **)&out, (size_t)blocks * sizeof(float)) !=
	    cudaSuccess || cudaMemset(buf, 0, (size_t)n4 * 16) != cudaSuccess ||
	    cudaEventCreate(&a) != cudaSuccess ||
	    cudaEventCreate(&b) != cudaSuccess) {
		st = rs_errf(err, RS_ERR_CUDA, "probe: %s",
		    cudaGetErrorString(cudaGetLastError()));
		goto out;
	}
	probe_kernel<<<blocks, 256>>>((const float4 *)buf, n4, out);
	cudaEventRecord(a);
	for (int r = 0; r < reps; r++)
		probe_kernel<<<blocks, 256>>>((const float4 *)buf, n4, out);
	cudaEventRecord(b);
	if (cudaEventSynchronize(b) != cudaSuccess ||
	    cudaEventElapsedTime(&ms, a, b) != cudaSuccess) {
		st = rs_errf(err, RS_ERR_CUDA, "probe: %s",
		    cudaGetErrorString(cudaGetLastError()));
		goto out;
	}
	*gb_s = (double)n4 * 16.0 * reps / ((double)ms * 1e-3) / 1e9;
out:
	if (a != NULL)
		cudaEventDestroy(a);
	if (b != NULL)
		cudaEventDestroy(b);
	cudaFree(buf);
	cudaFree(out);
	return (st);
}
