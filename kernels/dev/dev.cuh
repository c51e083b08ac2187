/*
 * dev.cuh - what the kernel playgrounds share (llm.c's dev/cuda/common.h):
 * stop on the first CUDA or launcher error, a seeded generator for inputs,
 * device buffers filled from it, and the timer (llm.c's benchmark_kernel).
 * Playgrounds are programs, not library code, so a failure prints and
 * exits 1.
 *
 * The generator is xorshift64 with a fixed seed: every run of a playground
 * sees the same inputs, so its numbers compare across commits.
 */
#ifndef RS_DEV_CUH
#define RS_DEV_CUH

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "rs_err.h"
#include "rs_kernels.h"

static uint64_t dev_rng = 88172645463325252ULL;

/* Exit 1, naming WHAT, unless E is cudaSuccess. */
static inline void
die(const char *what, cudaError_t e)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
		exit(1);
	}
}

/* Exit 1, naming WHAT, unless a launcher returned RS_OK. */
static inline void
check(const char *what, enum rs_status s, const struct rs_err *err)
{
	if (s != RS_OK) {
		fprintf(stderr, "%s: %s\n", what, err->msg);
		exit(1);
	}
}

/* The next 64 random bits. */
static inline uint64_t
next64(void)
{
	dev_rng ^= dev_rng << 13;
	dev_rng ^= dev_rng >> 7;
	dev_rng ^= dev_rng << 17;
	return (dev_rng);
}

/* Uniform in [−1, 1): the top 53 bits as a double in [0, 1). */
static inline float
frand(void)
{
	return ((float)((next64() >> 11) * (1.0 / 9007199254740992.0)) *
	    2.0f - 1.0f);
}

/* N copies of HOST's bytes on the device (a fresh allocation). */
static inline void *
dev_copy(const void *host, size_t n)
{
	void	*d;

	die("malloc", cudaMalloc(&d, n));
	die("copy", cudaMemcpy(d, host, n, cudaMemcpyHostToDevice));
	return (d);
}

/*
 * Positions 0 .. N − 1 on the device, then RS_K_N_PARAMS more (N, N + 1,
 * ...), so that the array + P is a launcher's params array whose [0] is
 * position P, for every P < N.
 */
static inline int32_t *
dev_positions(int n)
{
	const size_t	 m = (size_t)n + RS_K_N_PARAMS;
	int32_t		*h = (int32_t *)malloc(m * sizeof(int32_t)), *d;

	for (size_t i = 0; i < m; i++)
		h[i] = (int32_t)i;
	d = (int32_t *)dev_copy(h, m * sizeof(int32_t));
	free(h);
	return (d);
}

/* N values uniform in [−2, 2) on the device, f16 if F16, else f32. */
static inline void *
dev_random(size_t n, int f16)
{
	void	*d, *h = malloc(n * (f16 ? 2 : 4));

	for (size_t i = 0; i < n; i++) {
		if (f16)
			((__half *)h)[i] = __float2half(frand() * 2.0f);
		else
			((float *)h)[i] = frand() * 2.0f;
	}
	d = dev_copy(h, n * (f16 ? 2 : 4));
	free(h);
	return (d);
}

/*
 * Milliseconds FN(CTX) takes on the default stream, the mean of REPS runs
 * after one warm-up, each timed with CUDA events after a 256 MB memset
 * that evicts the L2 (50 MB on an H200), so that every run reads its data
 * from memory as a decode step does.
 */
static inline double
dev_time_ms(void (*fn)(void *), void *ctx, int reps)
{
	static void	*flush;
	const size_t	 flush_bytes = (size_t)256 << 20;
	cudaEvent_t	 e0, e1;
	float		 ms, total = 0.0f;

	if (flush == NULL)
		die("malloc", cudaMalloc(&flush, flush_bytes));
	die("event", cudaEventCreate(&e0));
	die("event", cudaEventCreate(&e1));
	for (int r = -1; r < reps; r++) {
		die("flush", cudaMemset(flush, r & 0xff, flush_bytes));
		die("record", cudaEventRecord(e0, 0));
		fn(ctx);
		die("record", cudaEventRecord(e1, 0));
		die("sync", cudaEventSynchronize(e1));
		die("time", cudaEventElapsedTime(&ms, e0, e1));
		if (r >= 0)
			total += ms;
	}
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	return (total / reps);
}

#endif /* RS_DEV_CUH */
