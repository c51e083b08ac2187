/*
 * attn_decode.cu - playground for the decode/verification attention of one
 * 27B layer (kernels/attn.cu, rs_k_attn): 24 query heads, 4 KV heads, head
 * dim 256, f16 cache.
 *
 *   make CUDA=1 build/dev/attn_decode && build/dev/attn_decode
 *
 * First, batch invariance: 8 tokens in one call against the same 8 one at
 * a time (grid sized for 131,072 keys, as the decode graph does), bit for
 * bit, around the 16,384-key split-size step and across the mma path's
 * RS_K_ATTN_MMA_FROM (the CPU oracle comparison is tests/check_cuda.c
 * "attn"), and an FNV-1a hash of those outputs' bits, to tell whether two
 * builds compute the same bits.  Then rs_k_attn is
 * timed at depths 4,096, 32,768 and 131,072 for 1, 4, 16 and 32 query
 * tokens (CUDA events, 20 repeats after a warm-up, L2 flushed before
 * each), with MAX_KEYS as the engine's graphs pass it (cuda_forward.cu
 * graph_reach: RS_K_ATTN_MMA_FROM − 1 while the rows end below that, so
 * the FMA kernel alone; else 131,072, with the mma path from SM80 on).  One JSON line per
 * case: µs for the layer, the KV bytes it must read (2·depth·1024 halves),
 * GB/s and µs for the 16 layers.  Decode at depth 32,768 should cost
 * little more than the bytes: 128 MB a layer, ~30 µs on an H200.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common.cuh"
#include "dev.cuh"
#include "rs_kernels.h"

#define NH	24
#define NKV	4
#define HD	256
#define LDQ	(2 * NH * HD)
#define CTX	131072
#define MAXT	32
#define VT	8	/* tokens of the invariance checks */

/* One timed rs_k_attn call: N query tokens after D cached ones. */
struct call {
	const float	*dq;
	const uint16_t	*dk, *dv;
	const int32_t	*dpos;
	float		*dout, *scr;
	int		 n, d;
};

static void
attn_call(void *ctx)
{
	const struct call	*c = (const struct call *)ctx;
	struct rs_err		 err;

	const int64_t		 reach = c->d + c->n < RS_K_ATTN_MMA_FROM ?
	    RS_K_ATTN_MMA_FROM - 1 : CTX;

	check("attn", rs_k_attn(c->dq, LDQ, 2 * HD, HD, c->dk, c->dv, NH,
	    NKV, HD, HD, c->n, c->dpos + c->d, reach, 1.0f / 16.0f, c->dout,
	    c->scr, 0, &err), &err);
}

/*
 * VT tokens after VP0 cached ones in one call (grid sized for VP0 + VT
 * keys) against the same tokens one call each (grid sized for CTX keys):
 * bit for bit, and the FNV-1a hash of the outputs' bits.  A and B: host
 * buffers of VT rows.  False if they differ.
 */
static int
invariance(int vp0, const float *dq, const uint16_t *dk, const uint16_t *dv,
    const int32_t *dpos, float *dout, float *dout1, float *scr, float *a,
    float *b)
{
	struct rs_err	 err;
	const int	 vt = VT;

	check("attn", rs_k_attn(dq, LDQ, 2 * HD, HD, dk, dv, NH, NKV, HD, HD,
	    vt, dpos + vp0, vp0 + vt, 1.0f / 16.0f, dout, scr, 0, &err), &err);
	die("copy", cudaMemcpy(a, dout, (size_t)vt * NH * HD * 4,
	    cudaMemcpyDeviceToHost));
	for (int t = 0; t < vt; t++) {
		check("attn", rs_k_attn(dq + (size_t)t * LDQ, LDQ, 2 * HD, HD,
		    dk, dv, NH, NKV, HD, HD, 1, dpos + vp0 + t, CTX,
		    1.0f / 16.0f, dout1, scr, 0, &err), &err);
		die("copy", cudaMemcpy(b + (size_t)t * NH * HD, dout1,
		    (size_t)NH * HD * 4, cudaMemcpyDeviceToHost));
	}
	int same = memcmp(a, b, (size_t)vt * NH * HD * 4) == 0;
	uint64_t fnv = 14695981039346656037ULL;	/* the outputs' bits */
	for (size_t i = 0; i < (size_t)vt * NH * HD * 4; i++)
		fnv = (fnv ^ ((const unsigned char *)a)[i]) * 1099511628211ULL;
	printf("{\"check\":\"batch vs single\",\"tokens\":%d,\"after\":%d,"
	    "\"identical\":%s,\"fnv1a\":\"%016llx\"}\n", vt, vp0,
	    same ? "true" : "false", (unsigned long long)fnv);
	return (same);
}

int
main(void)
{
	static const int depths[] = { 4096, 32768, 131072 - MAXT };
	static const int toks[] = { 1, 4, 16, 32 };
	/* the checks: after 16,382 keys the FMA path alone, after 32,764 both
	   paths (rows of 32,765 .. 32,772 keys, RS_K_ATTN_MMA_FROM = 32,769) */
	const int	 reps = 20, vp0[2] = { 16382, 32764 };
	float		*dq = (float *)dev_random((size_t)MAXT * LDQ, 0);
	uint16_t	*dk = (uint16_t *)dev_random((size_t)CTX * NKV * HD, 1);
	uint16_t	*dv = (uint16_t *)dev_random((size_t)CTX * NKV * HD, 1);
	float		*dout, *dout1, *scr;
	float		*a = (float *)malloc((size_t)VT * NH * HD * 4);
	float		*b = (float *)malloc((size_t)VT * NH * HD * 4);
	const int32_t	*dpos = dev_positions(CTX);

	die("malloc", cudaMalloc(&dout, (size_t)MAXT * NH * HD * 4));
	die("malloc", cudaMalloc(&dout1, (size_t)NH * HD * 4));
	die("malloc", cudaMalloc(&scr, rs_k_attn_scratch(NH, MAXT, HD) * 4));
	for (int v = 0; v < 2; v++)
		if (!invariance(vp0[v], dq, dk, dv, dpos, dout, dout1, scr, a,
		    b))
			return (1);
	for (size_t i = 0; i < sizeof(depths) / sizeof(depths[0]); i++)
		for (size_t j = 0; j < sizeof(toks) / sizeof(toks[0]); j++) {
			int d = depths[i], n = toks[j];
			struct call c = { dq, dk, dv, dpos, dout, scr, n, d };
			double us = 1e3 * dev_time_ms(attn_call, &c, reps);
			double bytes = 2.0 * (d + n) * NKV * HD * 2;
			printf("{\"kernel\":\"attn\",\"depth\":%d,\"tokens\":%d,"
			    "\"split_keys\":%lld,\"us\":%.1f,\"kv_mb\":%.1f,"
			    "\"gb_s\":%.0f,\"us_16_layers\":%.0f}\n", d, n,
			    (long long)rs_k_attn_split_keys(d + n), us,
			    bytes / 1e6, bytes / us / 1e3, 16 * us);
		}
	return (0);
}
