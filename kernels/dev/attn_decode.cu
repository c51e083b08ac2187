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
 * little more than the bytes: 128 MB a layer, ~30 µs on an H200.  Last,
 * the split kernel's K/V loads at depth 32,768 without its math, in the
 * mma path's order and as whole rows, 4 or 16 KB in flight a warp, in
 * the kernel's grid (512 keys a block, two blocks an SM) and in four
 * times as many blocks of 128 keys with no cap an SM (probe_kernel): the
 * rate the access pattern itself allows, and whether the kernel's one
 * wave of blocks holds it.
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

/*
 * The split kernel's K/V loads for one token without its math, to tell
 * the access pattern's DRAM rate from the kernel's (perf-log, session
 * 31): a block a (KV head, KPB keys: 512 as the kernel's splits at
 * depth 32,768, or 128, a tile a warp), four warps taking 32-key tiles
 * w, w + 4, ... as attn_mma.cuh's do, each tile's K rows, then its V
 * rows.  ROWS false: as the mma path reads K, 128 bytes of each of the
 * tile's 32 rows at a time (lane 4g + t: chunks 8p + t and 8p + t + 4 of
 * rows 8nt + g, p the 128-byte piece); true: whole 512-byte rows, one a
 * warp-wide load.  IN_FLIGHT of a lane's 32 16-byte loads a tile are made
 * before any is used: 8 is the mma path's 4 KB a warp, 32 a whole tile's
 * K or V.  With KPB 512, 96 KB of dynamic shared memory a block (unused)
 * hold it to two blocks an SM, the split kernel's occupancy (its 255
 * registers a thread allow no more); with 128, none.  What was read is
 * folded into one word, stored only if it equals a value it will not,
 * so that no load is dead.
 */
#define PROBE_SMEM	(96 << 10)

template <bool ROWS, int IN_FLIGHT, int KPB>
static __global__ void __launch_bounds__(128)
probe_kernel(const uint16_t *__restrict__ kc, const uint16_t *__restrict__ vc,
    int n_keys, uint32_t *sink)
{
	const int	lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	const int	g = lane / 4, t = lane % 4;
	const int	k0 = blockIdx.y * KPB, k1 = min(n_keys, k0 + KPB);
	uint32_t	x = 0;

	for (int kt = k0 + 32 * warp; kt < k1; kt += 128)
		for (int kv = 0; kv < 2; kv++) {
			const uint16_t *base = (kv ? vc : kc) +
			    (int64_t)blockIdx.x * HD;

			for (int i0 = 0; i0 < 32; i0 += IN_FLIGHT) {
				uint4 w[IN_FLIGHT];

#pragma unroll
				for (int u = 0; u < IN_FLIGHT; u++) {
					const int i = i0 + u, p = i / 8;
					const int r = ROWS ? i : 8 * ((i / 2) %
					    4) + g;
					const int c = ROWS ? lane : 8 * p + t +
					    4 * (i % 2);
					const int key = kt + r;

					w[u] = key < k1 ? __ldg((const uint4 *)
					    (base + (int64_t)key * NKV * HD +
					    8 * c)) : make_uint4(0, 0, 0, 0);
				}
#pragma unroll
				for (int u = 0; u < IN_FLIGHT; u++)
					x ^= w[u].x ^ w[u].y ^ w[u].z ^ w[u].w;
			}
		}
	if (x == 0x9e3779b9u)
		sink[0] = x;
}

struct probe {
	const uint16_t	*dk, *dv;
	uint32_t	*sink;
	int		 n_keys, rows, in_flight, kpb;
};

template <bool ROWS, int IN_FLIGHT, int KPB>
static void
probe_launch(const struct probe *p)
{
	probe_kernel<ROWS, IN_FLIGHT, KPB><<<dim3(NKV, (p->n_keys + KPB - 1) /
	    KPB), 128, KPB == 512 ? PROBE_SMEM : 0>>>(p->dk, p->dv, p->n_keys,
	    p->sink);
}

template <int KPB>
static void
probe_shape(const struct probe *p)
{
	if (p->rows)
		p->in_flight == 8 ? probe_launch<true, 8, KPB>(p) :
		    probe_launch<true, 32, KPB>(p);
	else
		p->in_flight == 8 ? probe_launch<false, 8, KPB>(p) :
		    probe_launch<false, 32, KPB>(p);
}

static void
probe_call(void *ctx)
{
	const struct probe *p = (const struct probe *)ctx;

	p->kpb == 512 ? probe_shape<512>(p) : probe_shape<128>(p);
}

/* One probe timed, its JSON line printed. */
static void
probe_line(struct probe *p, int depth, double bytes, int reps)
{
	const double us = 1e3 * dev_time_ms(probe_call, p, reps);

	die("probe", cudaGetLastError());
	printf("{\"probe\":\"kv pattern\",\"depth\":%d,\"pattern\":\"%s\","
	    "\"in_flight_kb\":%d,\"keys_a_block\":%d,\"us\":%.1f,"
	    "\"gb_s\":%.0f}\n", depth, p->rows ? "rows" : "tile128",
	    p->in_flight / 2, p->kpb, us, bytes / us / 1e3);
}

/* The eight probes after DEPTH keys, one JSON line each; 0 if they ran. */
static int
probes(const uint16_t *dk, const uint16_t *dv, int depth, int reps)
{
	struct probe	 p = { dk, dv, NULL, depth + 1, 0, 8, 512 };
	const double	 bytes = 2.0 * (depth + 1) * NKV * HD * 2;

	die("malloc", cudaMalloc(&p.sink, 4));
	if (cudaFuncSetAttribute(probe_kernel<true, 8, 512>,
	    cudaFuncAttributeMaxDynamicSharedMemorySize, PROBE_SMEM) !=
	    cudaSuccess || cudaFuncSetAttribute(probe_kernel<true, 32, 512>,
	    cudaFuncAttributeMaxDynamicSharedMemorySize, PROBE_SMEM) !=
	    cudaSuccess || cudaFuncSetAttribute(probe_kernel<false, 8, 512>,
	    cudaFuncAttributeMaxDynamicSharedMemorySize, PROBE_SMEM) !=
	    cudaSuccess || cudaFuncSetAttribute(probe_kernel<false, 32, 512>,
	    cudaFuncAttributeMaxDynamicSharedMemorySize, PROBE_SMEM) !=
	    cudaSuccess) {
		(void)cudaGetLastError();
		printf("{\"probe\":\"kv pattern\",\"skipped\":\"96 KB a "
		    "block refused\"}\n");
		return (1);
	}
	for (p.kpb = 512; p.kpb >= 128; p.kpb /= 4)
		for (p.rows = 0; p.rows < 2; p.rows++)
			for (p.in_flight = 8; p.in_flight <= 32;
			    p.in_flight *= 4)
				probe_line(&p, depth, bytes, reps);
	cudaFree(p.sink);
	return (0);
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
	(void)probes(dk, dv, 32768, reps);
	return (0);
}
