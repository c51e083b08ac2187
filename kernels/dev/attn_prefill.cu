/*
 * attn_prefill.cu - playground for the prefill attention of one 27B layer
 * (kernels/attn_prefill.cu): 24 query heads, 4 KV heads, head dim 256.
 *
 *   make CUDA=1 build/dev/attn_prefill && build/dev/attn_prefill
 *
 * First rs_k_attn_prefill is compared with rs_k_attn (itself checked
 * against the CPU oracle by tests/check_cuda.c "attn") on 300 tokens after
 * 3,000 cached ones.  Then prompts of 4,096 and 32,768 tokens are timed
 * (CUDA events, 3 repeats after a warm-up), in one call or in chunks whose
 * keys include every earlier chunk, as a prefill does.  One JSON line per
 * case: ms for the layer, TFLOP/s of the causal products (Q·Kᵀ and P·V,
 * 4·256 FLOP per (query head, key) pair), ms for the 16 layers, and which
 * kernel ran ("mma.sync" for code built for SM80+, else "wmma").
 */
#include <stdio.h>
#include <stdlib.h>

#include "../common.cuh"
#include "dev.cuh"
#include "rs_kernels.h"
extern "C" {
#include "rs_verify.h"
}

#define NH	24
#define NKV	4
#define HD	256
#define LDQ	(2 * NH * HD)

/*
 * A prompt of T tokens in chunks of CHUNK, one call each; DPOS holds the
 * positions 0, 1, 2, ... so the chunk at P0 reads its params at DPOS + P0.
 */
static void
prompt(const float *dq, const uint16_t *dk, const uint16_t *dv,
    const int32_t *dpos, float *dout, int t, int chunk)
{
	struct rs_err err;

	for (int p0 = 0; p0 < t; p0 += chunk) {
		int n = t - p0 < chunk ? t - p0 : chunk;
		check("attn prefill", rs_k_attn_prefill(dq, LDQ, 2 * HD, HD, dk,
		    dv, NH, NKV, HD, HD, n, dpos + p0, 1.0f / 16.0f, dout, 0,
		    &err), &err);
	}
}

int
main(void)
{
	static const int cases[][2] = { { 4096, 4096 }, { 4096, 512 },
	    { 32768, 4096 }, { 32768, 512 } };
	const int	 ctx = 32768, vt = 300, vp0 = 3000, reps = 3;
	float		*dq = (float *)dev_random((size_t)4096 * LDQ, 0);
	uint16_t	*dk = (uint16_t *)dev_random((size_t)ctx * NKV * HD, 1);
	uint16_t	*dv = (uint16_t *)dev_random((size_t)ctx * NKV * HD, 1);
	float		*dout, *dout2, *scr;
	float		*a = (float *)malloc((size_t)vt * NH * HD * 4);
	float		*b = (float *)malloc((size_t)vt * NH * HD * 4);
	const int32_t	*dpos = dev_positions(ctx);
	struct rs_err	 err;
	double		 rel;
	const char	*kernel;

	die("malloc", cudaMalloc(&dout, (size_t)4096 * NH * HD * 4));
	die("malloc", cudaMalloc(&dout2, (size_t)vt * NH * HD * 4));
	die("malloc", cudaMalloc(&scr, rs_k_attn_scratch(NH, vt, HD) * 4));
	kernel = rs_k_attn_prefill_mma(HD) ? "mma.sync" : "wmma";
	check("attn prefill", rs_k_attn_prefill(dq, LDQ, 2 * HD, HD, dk, dv,
	    NH, NKV, HD, HD, vt, dpos + vp0, 1.0f / 16.0f, dout, 0, &err),
	    &err);
	check("attn", rs_k_attn(dq, LDQ, 2 * HD, HD, dk, dv, NH, NKV, HD, HD,
	    vt, dpos + vp0, vp0 + vt, 1.0f / 16.0f, dout2, scr, 0, &err),
	    &err);
	die("copy", cudaMemcpy(a, dout, (size_t)vt * NH * HD * 4,
	    cudaMemcpyDeviceToHost));
	die("copy", cudaMemcpy(b, dout2, (size_t)vt * NH * HD * 4,
	    cudaMemcpyDeviceToHost));
	rel = rs_verify_rel_err(a, b, (int64_t)vt * NH * HD);
	printf("{\"check\":\"vs rs_k_attn\",\"kernel\":\"%s\",\"tokens\":%d,"
	    "\"after\":%d,\"rel_err\":%.3g}\n", kernel, vt, vp0, rel);
	if (!(rel < 2e-3))
		return (1);
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		int t = cases[c][0], chunk = cases[c][1];
		double flop = 4.0 * HD * NH * ((double)t * (t + 1) / 2);
		cudaEvent_t e0, e1;
		float ms;

		prompt(dq, dk, dv, dpos, dout, t, chunk);
		cudaEventCreate(&e0);
		cudaEventCreate(&e1);
		cudaEventRecord(e0);
		for (int r = 0; r < reps; r++)
			prompt(dq, dk, dv, dpos, dout, t, chunk);
		cudaEventRecord(e1);
		die("run", cudaEventSynchronize(e1));
		cudaEventElapsedTime(&ms, e0, e1);
		ms /= reps;
		printf("{\"kernel\":\"%s\",\"tokens\":%d,\"chunk\":%d,"
		    "\"layer_ms\":%.2f,\"tflop_s\":%.1f,\"model_ms\":%.1f}\n",
		    kernel, t, chunk, ms, flop / (ms * 1e-3) / 1e12, 16 * ms);
	}
	return (0);
}
