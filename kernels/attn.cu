/*
 * attn.cu - the KV-cache store and causal gated attention of the full-
 * attention blocks (qwen35-model.md §4.4, §4.8), f16 cache, f32 math.
 *
 *   o_h = Σ_s softmax_s(scale·q_h·K_j[s]) · V_j[s] ⊙ sigmoid(gate_h),
 *   j = h / (n_head / n_head_kv),  s ≤ position of the query token.
 *
 * Flash-decoding with splits of a fixed size.  The n keys of a query row
 * are cut into splits of S(n) keys, S(n) = 128·2^k, the least such that
 * at most RS_K_ATTN_MAX_SPLITS splits cover n: 128 keys up to 16,384,
 * 512 for the 32,769 keys of a step at depth 32,768 (65 splits, 260
 * blocks of the 27B's 4 KV heads).  Measured on the H200 (perf-log): at
 * most 64 splits (1,024-key splits there, 132 blocks) left SMs idle, at
 * most 256 (256-key splits) paid more in each split's fixed work and the
 * merge than the occupancy gave.  One block per (token, group of GB query heads sharing a
 * KV head, split) reads each K/V row of its split once for its GB heads:
 * lane i owns dims [i·d/32, (i+1)·d/32) of q, K and V (one 16-byte load
 * per row at d = 256).  Each of the four warps takes tiles of 32 keys:
 * the GB scores of each key (lane partials summed across the warp eight
 * keys at a time by warp_sum_rows: 9 shuffles a head where eight
 * warp_sums take 40, the same bits), then one online-softmax rescale
 * per tile (max, e^(s − m), kept per lane), then the tile's V rows
 * weighted by the probabilities, broadcast from shared memory.  The
 * warps merge in shared memory into a (m, l, o) partial per (token,
 * head, split); a second kernel merges a row's splits in split order,
 * divides by the sum and applies the gate.
 *
 * Batch invariance: S(n), the splits, the tiles and every reduction order
 * depend only on n = position + 1 of the query row, never on how many
 * tokens the call holds or on MAX_KEYS (which only sizes the grid: blocks
 * past a row's last split return at once), so a verification pass gives
 * exactly the outputs of single decode steps.
 *
 * K is stored after k-norm and RoPE, as llama.cpp does (§4.10: its
 * default f16 KV cache is the rounding we replicate).  Scores, softmax
 * and sums are f32 (__expf).  Oracle: rs_cpu_attn_ref; test:
 * tests/check_cuda.c "attn" (5,000 keys, split-size boundaries, batch vs
 * single rows bit for bit).
 *
 * Napkin math, 27B decode at depth P: each attention layer reads
 * 2·P·1024 halves = 4 KB per position (K and V rows read once per KV
 * head, not once per query head: GB = 6), 16 layers: 64 KB per position;
 * at P = 32768 that is 2.1 GB per token, 0.45 ms at the H200's 4.8 TB/s,
 * 2.3 ms at the V100's 0.9 TB/s.  Per key and KV head a warp issues
 * ~140 instructions (2 loads, 16 conversions, 96 FMA, ~7 shuffles and
 * ~16 adds and selects for the 6 score sums, the V weights; ~180 with a
 * warp_sum a score): at 32,768 keys ~1,000 keys per SM per layer, ~20 µs
 * of issue on an H200 at full rate, but the 253 registers of GB = 6 leave
 * 8 warps an SM, so the loads' latency shows: measured ~55 µs a layer
 * (perf-log, session 17).  Three heads a block (168 registers, 12 warps)
 * read each row twice through L2 and were slower (9.5 against 8.7 ms a
 * decode step at 32,768).
 *
 * From SM80 on, three things.  A warp's K and V rows pass through a
 * ring in shared memory filled by cp.async a few chunks ahead (kv_stream),
 * where two blocks with their rings fit an SM (A100, H100, H200; not the
 * 100 KB SMs of SM86/89/120); elsewhere, in calls of several tokens, each
 * tile first asks L2 for its K and V rows (tile_prefetch).  Rows of at
 * least RS_K_ATTN_MMA_FROM keys take the tensor-core path of attn_mma.cuh
 * instead, in the same launch (blocks past the FMA path's): 8 query rows
 * a block share each K/V row, where the FMA path reads it once a token.
 * Each path keeps its own arithmetic, and a row's path depends on its
 * key count alone.  H200, 27B (perf-log, session 18): a verification
 * pass of 8 / 16 tokens at depth 32,768 16.79 / 27.50 -> 15.05 / 24.16
 * ms, decode there unchanged (8.63 ms).  The ring (session 19, depth
 * 4,096, kernels/dev/attn_decode, µs a layer): 1 / 4 / 16 / 32 tokens
 * 34.4 / 49.7 / 137.1 / 256.7 -> 32.5 / 47.6 / 131.0 / 246.2, the same
 * bits; in the engine verify 16 at depth 4,096 -0.12 ms.
 */
#include <math.h>

#include "attn_mma.cuh"
#include "common.cuh"
#include "rs_kernels.h"
#include "xq.cuh"

#define ATTN_WARPS	4
#define ATTN_UNROLL	8	/* K or V rows loaded ahead per warp */
#define ATTN_CHUNKS	(RS_WARP / ATTN_UNROLL)	/* of a 32-key tile */
/*
 * RS_K_ATTN_MMA_FROM (rs_kernels.h): rows of at least 32,769 keys take
 * the mma path from SM80 on (split size 512 and up: 16 tiles a split).
 * Measured on the H200 (perf-log, sessions 17 and 18): faster there for
 * every pass size (27B, depth 32,768: verify 8 / 16 tokens 16.79 / 27.50
 * -> 15.11 / 24.27 ms, decode unchanged); at 4,096 keys (128-key splits,
 * one tile a warp) slower from 4 tokens on.
 */

/* S(n): the keys per split of a row of N keys (the top comment). */
static __host__ __device__ __forceinline__ int64_t
split_keys(int64_t n)
{
	int64_t s = RS_K_ATTN_SPLIT_MIN;

	while (s * RS_K_ATTN_MAX_SPLITS < n)
		s *= 2;
	return (s);
}

extern "C" int64_t
rs_k_attn_split_keys(int64_t n_keys)
{
	return (split_keys(n_keys));
}

size_t
rs_k_attn_scratch(int n_head, int n_tok, int dv)
{
	return ((size_t)n_tok * n_head * RS_K_ATTN_MAX_SPLITS * (2 + dv));
}

/* W 32-bit words (2·W halves) from P, 4·W-byte aligned. */
template <int W>
static __device__ __forceinline__ void
load_words(const uint16_t *p, uint32_t *w)
{
	if (W == 4) {
		uint4 u = *(const uint4 *)p;
		w[0] = u.x; w[1] = u.y; w[2] = u.z; w[3] = u.w;
	} else if (W == 2) {
		uint2 u = *(const uint2 *)p;
		w[0] = u.x; w[1] = u.y;
	} else
		w[0] = *(const uint32_t *)p;
}

/* Half I of the words W as f32. */
static __device__ __forceinline__ float
word_half(const uint32_t *w, int i)
{
	return (half_to_float((uint16_t)(i % 2 == 0 ? w[i / 2] & 0xffffu :
	    w[i / 2] >> 16)));
}

/*
 * Ask L2 for one key's K and V rows of a KV head (32·DPL halves each, whole
 * 128-byte lines: d = 64, 128, 256) at the start of a tile, so that the
 * tile's K rows after the first eight and all its V rows, which the warp
 * loads eight at a time and V only after the softmax, arrive while it
 * works instead of one round trip after another.  Only in calls of
 * several tokens, whose blocks read each row in turn: measured on the
 * H200 (perf-log, session 18, kernels/dev/attn_decode, µs a layer),
 * depth 32,768: 4 / 16 tokens 231 -> 211, 731 -> 685, but one token 87 ->
 * 94 (its one reader waits on the same DRAM trip either way, and the
 * prefetches add requests); depth 4,096: 16 tokens 141 -> 136.  From SM80
 * on only: the 32 KB a warp asks for (27B) times 8 warps an SM fit the
 * 40-50 MB L2s there, not the V100's 6 MB; and only where the rows do not
 * pass through a ring (kv_stream), which keeps them in flight itself.
 * Values are untouched (the same bits).
 */
template <int DPL>
static __device__ __forceinline__ void
tile_prefetch(const uint16_t *k, const uint16_t *v)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#pragma unroll
	for (int i = 0; i < DPL * RS_WARP; i += 64) {
		asm volatile("prefetch.global.L2 [%0];" : : "l"(k + i));
		asm volatile("prefetch.global.L2 [%0];" : : "l"(v + i));
	}
#else
	(void)k; (void)v;
#endif
}

/*
 * Where a warp's K and V rows come from, one chunk of ATTN_UNROLL rows at
 * a time, in the order the warp uses them: for each of its tiles the K
 * chunks, then the V chunks (ceil(nk / 8) of each, nk the tile's keys).
 * Without a ring each chunk is loaded when it is needed, so the warp
 * waits one DRAM round trip a chunk, eight a full tile (V cannot be
 * loaded into registers before the softmax frees them).  With a ring
 * (SM80 on: cp.async) the chunks are copied into ATTN_STAGES slots of
 * shared memory up to ATTN_STAGES − 1 chunks ahead of the one in use, V's
 * while the scores are still being summed, so a warp keeps ~12 KB in
 * flight (27B) instead of 4 KB part of the time: 64 KB of ring a block at
 * d = 256, two blocks an SM as the registers allow.  Each lane copies and
 * reads only its own DPL halves of a row, so no barrier is needed
 * between a copy and its use, only the lane's cp.async.wait_group.  The
 * values, and every sum made of them, are the same bits either way.
 */
#define ATTN_STAGES	4

template <int DPL>
struct kv_stream {
	const uint16_t	*kb, *vb;	/* this lane's dims of key 0's rows */
	int		 row;		/* halves between two keys' rows */
	int		 first, k1;	/* the warp's first key; split's end */
	/* the shared address of this lane's first DPL halves of the warp's
	   ring, [STAGES][UNROLL][32][DPL] */
	uint32_t	 ring;
	bool		 staged;	/* false: plain loads, no ring */
	int		 total, used;	/* chunks: in all, taken */
};

/* Halves of the ring a warp uses. */
#define ATTN_RING(DPL)	(ATTN_STAGES * ATTN_UNROLL * RS_WARP * (DPL))

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
/* B bytes (4, 8 or 16) global → shared address S, asynchronous. */
template <int B>
static __device__ __forceinline__ void
cp_async_b(uint32_t s, const void *src)
{
	if (B == 16)
		asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::
		    "r"(s), "l"(src) : "memory");
	else
		asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::
		    "r"(s), "l"(src), "n"(B) : "memory");
}

/* W 32-bit words from shared address S, 4·W-byte aligned. */
template <int W>
static __device__ __forceinline__ void
lds_words(uint32_t s, uint32_t *w)
{
	if (W == 4)
		asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" :
		    "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3]) : "r"(s));
	else if (W == 2)
		asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" :
		    "=r"(w[0]), "=r"(w[1]) : "r"(s));
	else
		asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(w[0]) :
		    "r"(s));
}

/* Copy chunk I of the stream (if any) into its slot; one group always. */
template <int DPL>
static __device__ __forceinline__ void
kv_issue(const kv_stream<DPL> &s, int i)
{
	if (i < s.total) {
		const int	j = i % (2 * ATTN_CHUNKS);
		/* every tile but the warp's last has 32 keys, 8 chunks */
		const int	base = s.first + i / (2 * ATTN_CHUNKS) *
		    ATTN_WARPS * RS_WARP;
		const int	nk = min(RS_WARP, s.k1 - base);
		const int	nc = (nk + ATTN_UNROLL - 1) / ATTN_UNROLL;
		const int	c = ATTN_UNROLL * (j < nc ? j : j - nc);
		const uint16_t	*src = (j < nc ? s.kb : s.vb) +
		    (int64_t)(base + c) * s.row;
		const uint32_t	dst = s.ring + (i % ATTN_STAGES) *
		    (ATTN_UNROLL * RS_WARP * DPL * 2);

#pragma unroll
		for (int u = 0; u < ATTN_UNROLL; u++)
			if (c + u < nk)
				cp_async_b<2 * DPL>(dst + u * RS_WARP * DPL *
				    2, src + (int64_t)u * s.row);
	}
	asm volatile("cp.async.commit_group;\n" ::: "memory");
}
#endif

/* The warp's chunks: 8 for each full tile, 2·ceil(nk / 8) for the last. */
template <int DPL>
static __device__ __forceinline__ void
kv_start(kv_stream<DPL> &s)
{
	s.total = s.used = 0;
	if (s.first >= s.k1)
		return;
	const int tiles = (s.k1 - s.first + ATTN_WARPS * RS_WARP - 1) /
	    (ATTN_WARPS * RS_WARP);
	const int nk = min(RS_WARP, s.k1 - s.first - (tiles - 1) *
	    ATTN_WARPS * RS_WARP);

	s.total = (tiles - 1) * 2 * ATTN_CHUNKS +
	    2 * ((nk + ATTN_UNROLL - 1) / ATTN_UNROLL);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	if (s.staged)
		for (int i = 0; i < ATTN_STAGES - 1; i++)
			kv_issue(s, i);
#endif
}

/*
 * Rows C .. C + 7 of the tile at BASE (those below NK), K's or V's, into
 * W: the stream's next chunk, which they must be.
 */
template <int DPL>
static __device__ __forceinline__ void
kv_fetch(kv_stream<DPL> &s, bool v, int64_t base, int c, int nk,
    uint32_t (&w)[ATTN_UNROLL][DPL / 2])
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	if (s.staged) {
		const uint32_t slot = s.ring + (s.used % ATTN_STAGES) *
		    (ATTN_UNROLL * RS_WARP * DPL * 2);

		kv_issue(s, s.used + ATTN_STAGES - 1);
		asm volatile("cp.async.wait_group %0;\n" ::
		    "n"(ATTN_STAGES - 1) : "memory");
#pragma unroll
		for (int u = 0; u < ATTN_UNROLL; u++)
			if (c + u < nk)
				lds_words<DPL / 2>(slot + u * RS_WARP * DPL * 2,
				    w[u]);
		s.used++;
		return;
	}
#endif
	const uint16_t *b = v ? s.vb : s.kb;
#pragma unroll
	for (int u = 0; u < ATTN_UNROLL; u++)
		if (c + u < nk)
			load_words<DPL / 2>(b + (base + c + u) * s.row, w[u]);
}

/*
 * One (token T, GB query heads HG·GB.. of one KV head, split) on the FMA
 * path: rows of fewer than FROM keys.  DPL = d / 32 dims per lane.
 * Partial record per head: m (max score), l (Σ e^(s − m)), o[d]
 * (Σ e^(s − m)·V[s]); WPART: ATTN_WARPS·GB·(2 + d) floats of shared
 * memory.  PREFETCH: the call has several tokens (tile_prefetch).
 */
template <int DPL, int GB>
static __device__ __forceinline__ void
attn_split_fma(int t, int hg, int split, const float *__restrict__ q,
    int64_t ldq, int64_t qs, const uint16_t *__restrict__ kc,
    const uint16_t *__restrict__ vc, int n_head, int n_head_kv,
    const int32_t *__restrict__ pos0, int64_t from, bool prefetch,
    float scale, float *__restrict__ part, float *wpart, uint16_t *ring)
{
	const int	d = DPL * RS_WARP, nw = DPL / 2;
	const int	h0 = hg * GB;
	const int	lane = threadIdx.x % RS_WARP, warp = threadIdx.x / RS_WARP;
	const int	j = h0 / (n_head / n_head_kv);
	const int64_t	n_keys = (int64_t)*pos0 + t + 1, sk = split_keys(n_keys);
	const int64_t	k0 = split * sk, k1 = min(n_keys, k0 + sk);
	const int64_t	row = (int64_t)n_head_kv * d;
	const uint16_t	*kb = kc + (int64_t)j * d + lane * DPL;
	const uint16_t	*vb = vc + (int64_t)j * d + lane * DPL;
	/* the tile's probabilities, [warp][key][head] */
	__shared__ float sp[ATTN_WARPS][RS_WARP][GB];
	float		qr[GB][DPL], o[GB][DPL], m[GB], l[GB];
	kv_stream<DPL>	ks;

	if (n_keys >= from || k0 >= n_keys)
		return;		/* the mma path's, or past its last split */
	ks.kb = kb;
	ks.vb = vb;
	ks.row = row;
	ks.first = k0 + warp * RS_WARP;
	ks.k1 = k1;
	ks.staged = ring != nullptr;
	ks.ring = ks.staged ? (uint32_t)__cvta_generic_to_shared(ring +
	    warp * ATTN_RING(DPL) + lane * DPL) : 0;
	kv_start(ks);
	for (int g = 0; g < GB; g++) {
		const float *qh = q + t * ldq + (h0 + g) * qs + lane * DPL;
		for (int i = 0; i < DPL; i++) {
			qr[g][i] = qh[i] * scale;
			o[g][i] = 0.0f;
		}
		m[g] = -INFINITY;
		l[g] = 0.0f;
	}
	for (int64_t base = k0 + warp * RS_WARP; base < k1;
	    base += ATTN_WARPS * RS_WARP) {
		const int nk = (int)min((int64_t)RS_WARP, k1 - base);
		float	  sc[GB];	/* the scores of key base + lane */
		float	  sr[GB];	/* a key's score as warp_sum_rows left it */

		if (prefetch && ring == nullptr && lane < nk)
			tile_prefetch<DPL>(kb + (base + lane) * row - lane * DPL,
			    vb + (base + lane) * row - lane * DPL);
		for (int g = 0; g < GB; g++)
			sr[g] = 0.0f;
		for (int c = 0; c < nk; c += ATTN_UNROLL) {
			uint32_t w[ATTN_UNROLL][nw];
			float	 acc[GB][ATTN_UNROLL];

			kv_fetch(ks, false, base, c, nk, w);
#pragma unroll
			for (int u = 0; u < ATTN_UNROLL; u++) {
				float kf[DPL];
				for (int i = 0; i < DPL; i++)
					kf[i] = c + u < nk ? word_half(w[u], i) :
					    0.0f;
				for (int g = 0; g < GB; g++) {
					acc[g][u] = 0.0f;
					for (int i = 0; i < DPL; i++)
						acc[g][u] = fmaf(qr[g][i], kf[i],
						    acc[g][u]);
				}
			}
			for (int g = 0; g < GB; g++) {
				float s = warp_sum_rows<ATTN_UNROLL>(acc[g], lane);
				if (lane % ATTN_CHUNKS == c / ATTN_UNROLL)
					sr[g] = s;
			}
		}
		/* lane L's key is held by lane (L % C)·(32 / C) + L / C */
		for (int g = 0; g < GB; g++) {
			sc[g] = __shfl_sync(0xffffffffu, sr[g],
			    (lane % ATTN_UNROLL) * ATTN_CHUNKS +
			    lane / ATTN_UNROLL);
			if (lane >= nk)
				sc[g] = -INFINITY;
		}
		/* one rescale per tile; l stays a per-lane partial sum */
		for (int g = 0; g < GB; g++) {
			float mn = fmaxf(m[g], warp_max(sc[g]));
			float a = __expf(m[g] - mn), p = __expf(sc[g] - mn);
			l[g] = l[g] * a + p;
			for (int i = 0; i < DPL; i++)
				o[g][i] *= a;
			m[g] = mn;
			sp[warp][lane][g] = p;
		}
		__syncwarp();
		for (int c = 0; c < nk; c += ATTN_UNROLL) {
			uint32_t w[ATTN_UNROLL][nw];

			kv_fetch(ks, true, base, c, nk, w);
#pragma unroll
			for (int u = 0; u < ATTN_UNROLL; u++) {
				if (c + u >= nk)
					break;
				for (int i = 0; i < DPL; i++) {
					float v = word_half(w[u], i);
					for (int g = 0; g < GB; g++)
						o[g][i] = fmaf(sp[warp][c + u][g],
						    v, o[g][i]);
				}
			}
		}
		__syncwarp();
	}
	if (ring != nullptr)
		__syncthreads();	/* wpart lies over the warps' rings */
	for (int g = 0; g < GB; g++) {
		float *mine = wpart + (warp * GB + g) * (2 + d);
		float ls = warp_sum(l[g]);
		if (lane == 0) {
			mine[0] = m[g];
			mine[1] = ls;
		}
		for (int i = 0; i < DPL; i++)
			mine[2 + lane * DPL + i] = o[g][i];
	}
	__syncthreads();
	/* merge the warps in warp order (a warp without keys has m = −inf) */
	for (int x = threadIdx.x; x < GB * d; x += blockDim.x) {
		int g = x / d, i = x % d;
		float M = -INFINITY, L = 0.0f, out = 0.0f;
		for (int w = 0; w < ATTN_WARPS; w++)
			M = fmaxf(M, wpart[(w * GB + g) * (2 + d)]);
		for (int w = 0; w < ATTN_WARPS; w++) {
			const float *p = wpart + (w * GB + g) * (2 + d);
			float f = p[0] == -INFINITY ? 0.0f : __expf(p[0] - M);
			L += p[1] * f;
			out += p[2 + i] * f;
		}
		float *dst = part + (((int64_t)t * n_head + h0 + g) *
		    RS_K_ATTN_MAX_SPLITS + split) * (2 + d);
		if (i == 0) {
			dst[0] = M;
			dst[1] = L;
		}
		dst[2 + i] = out;
	}
}

/*
 * The split partials of a call: blocks x < N_TOK are the FMA path's
 * (token x, head group y), the rest the mma path's (rows 8·(x − N_TOK)
 * .., KV head y; attn_mma.cuh), each block computing only the rows its
 * path owns: rows of at least FROM keys on the mma path.  A row's path
 * and arithmetic depend on its key count alone, so a pass still equals
 * its tokens' single steps bit for bit.  MMA false: the FMA path alone
 * (FROM past every row), compiled without the mma path so that it keeps
 * its own register count (the mma path's 250 would halve the warps of
 * the GB = 1, 2 and 4 kernels); the launcher takes it for calls that
 * cannot reach RS_K_ATTN_MMA_FROM keys.
 */
template <int DPL, int GB, bool MMA>
static __global__ void __launch_bounds__(ATTN_WARPS * RS_WARP)
attn_split_kernel(const float *__restrict__ q, int64_t ldq, int64_t qs,
    const uint16_t *__restrict__ kc, const uint16_t *__restrict__ vc,
    int n_head, int n_head_kv, int n_tok, const int32_t *__restrict__ pos0,
    int64_t from, bool staged, float scale, float *__restrict__ part)
{
	extern __shared__ __align__(16) unsigned char smem[];

	if ((int)blockIdx.x < n_tok)
		attn_split_fma<DPL, GB>(blockIdx.x, blockIdx.y, blockIdx.z, q,
		    ldq, qs, kc, vc, n_head, n_head_kv, pos0, from, n_tok > 1,
		    scale, part, (float *)smem,
		    staged ? (uint16_t *)smem : nullptr);
	else if (MMA && (int)blockIdx.y < n_head_kv)
		attn_split_mma<DPL * RS_WARP>(blockIdx.x - n_tok, blockIdx.y,
		    blockIdx.z, q, ldq, qs, kc, vc, n_head, n_head_kv, n_tok,
		    pos0, from, scale, part, smem);
}

/*
 * Merge the splits of (token, head) in split order, normalise, gate; with
 * XQ also the 16-bit form of O (rs_xq.h, the tokens as one batch, BM its
 * layout): a warp's 32 values are one block (DV a multiple of 64, a
 * block's 64 threads its dims 64z .. 64z + 63), stored by the
 * conversion kernel's code.
 *
 * The partials were just written, so each load is an L2 round trip.  A
 * block (token, head, 64 dims) loads the splits' m and l once, one split
 * a thread, into shared memory, with each split's weight e^(m − M); each
 * thread then loads its dim's value of COMBINE_BATCH splits at a time,
 * before it sums them.  L and every output take their terms in split
 * order, skipping the splits without keys (m = −inf), with the same
 * expressions as a loop over the splits would (l·e and o·e added to the
 * sum so far): the same bits, in a few round trips where a split at a
 * time took one each (65 at depth 32,768).
 */
#define COMBINE_THREADS	64
#define COMBINE_BATCH	32

static __global__ void __launch_bounds__(COMBINE_THREADS)
attn_combine_kernel(const float *__restrict__ part, const float *__restrict__ q,
    int64_t ldq, int64_t qs, int64_t gate_off, int n_head, int dv,
    const int32_t *__restrict__ pos0, float *__restrict__ o,
    uint8_t *__restrict__ xq, int bm)
{
	__shared__ float sm[RS_K_ATTN_MAX_SPLITS], sl[RS_K_ATTN_MAX_SPLITS];
	__shared__ float se[RS_K_ATTN_MAX_SPLITS], smax[COMBINE_THREADS /
	    RS_WARP];
	const int	t = blockIdx.x, h = blockIdx.y;
	const int	i = blockIdx.z * COMBINE_THREADS + threadIdx.x;
	const int64_t	n_keys = (int64_t)*pos0 + t + 1;
	const int64_t	sk = split_keys(n_keys);
	const int	ns = (int)((n_keys + sk - 1) / sk);
	const float	*p = part + ((int64_t)t * n_head + h) *
	    RS_K_ATTN_MAX_SPLITS * (2 + dv);
	float		 M = -INFINITY, L = 0.0f, acc = 0.0f;

	/* M: the splits' largest m (a max is the same in any order) */
	for (int s = threadIdx.x; s < ns; s += COMBINE_THREADS) {
		sm[s] = p[s * (2 + dv)];
		sl[s] = p[s * (2 + dv) + 1];
		M = fmaxf(M, sm[s]);
	}
	M = warp_max(M);
	if (threadIdx.x % RS_WARP == 0)
		smax[threadIdx.x / RS_WARP] = M;
	__syncthreads();
	for (int w = 0; w < COMBINE_THREADS / RS_WARP; w++)
		M = fmaxf(M, smax[w]);
	for (int s = threadIdx.x; s < ns; s += COMBINE_THREADS)
		se[s] = sm[s] == -INFINITY ? 0.0f : __expf(sm[s] - M);
	__syncthreads();
	for (int s = 0; s < ns; s++)
		if (sm[s] != -INFINITY)
			L += sl[s] * se[s];
	for (int s0 = 0; s0 < ns; s0 += COMBINE_BATCH) {
		float os[COMBINE_BATCH];

#pragma unroll
		for (int k = 0; k < COMBINE_BATCH; k++)
			os[k] = s0 + k < ns ? p[(s0 + k) * (2 + dv) + 2 + i] :
			    0.0f;
#pragma unroll
		for (int k = 0; k < COMBINE_BATCH; k++)
			if (s0 + k < ns && sm[s0 + k] != -INFINITY)
				acc += os[k] * se[s0 + k];
	}
	const float *gate = q + t * ldq + h * qs + gate_off;
	const float v = acc / L * sigmoid_f(gate[i]);

	o[(int64_t)t * n_head * dv + (int64_t)h * dv + i] = v;
	if (xq != NULL)
		xq_store(v, threadIdx.x % RS_WARP, xq, (int64_t)n_head * dv,
		    gridDim.x, bm, t, ((int64_t)h * dv + i) / RS_XQ_BLOCK);
}

#ifndef __CUDACC_RTC__
/*
 * Whether KERNEL's FMA path stages K and V through rings (kv_stream) on
 * this device, with BYTES of dynamic shared memory a block: the code the
 * device runs for it was compiled for compute_80 or later, two blocks
 * with their rings fit an SM (not the 100 KB of SM86/89/120 at d = 256,
 * which keep plain loads and their two blocks an SM), and the device
 * grants a block BYTES.  CACHE: the caller's, one a kernel.
 */
template <typename K>
static int
ring_ok(K kernel, size_t bytes, signed char cache[RS_MAX_DEVICES])
{
	cudaFuncAttributes fa;
	int dev = 0, per_sm = 0;

	if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 ||
	    dev >= RS_MAX_DEVICES)
		dev = 0;
	if (cache[dev] != 0)
		return (cache[dev] > 0);
	cache[dev] = -1;
	if (cudaFuncGetAttributes(&fa, kernel) == cudaSuccess &&
	    fa.ptxVersion >= 80 && cudaDeviceGetAttribute(&per_sm,
	    cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev) == cudaSuccess &&
	    (size_t)per_sm >= 2 * (bytes + fa.sharedSizeBytes + 1024) &&
	    cudaFuncSetAttribute(kernel,
	    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes) ==
	    cudaSuccess)
		cache[dev] = 1;
	(void)cudaGetLastError();	/* a refusal is not sticky: clear it */
	return (cache[dev] > 0);
}
#endif

/*
 * The split kernel for GB heads a block at d = 32·DPL: the FMA path for
 * every row, and from SM80 on (the code this device runs for it was
 * compiled for compute_80 or later) the mma path for rows of at least
 * RS_K_ATTN_MMA_FROM keys where MAX_KEYS reaches them, and the FMA path's
 * K/V rows staged through rings where ring_ok says so.
 */
template <int DPL, int GB, bool MMA>
static void
launch_kernel(unsigned nx, int64_t ns, int64_t from, size_t shm,
    cudaStream_t stream, const float *d_q, int64_t ldq, int64_t qs,
    const uint16_t *d_kc, const uint16_t *d_vc, int n_head, int n_head_kv,
    int n_tok, const int32_t *d_params, float scale, float *d_scratch)
{
	bool staged = false;

	/* host runtime calls: NVRTC's check of the kernels (scripts/
	   cuda129-nvrtc.sh, device runtime only) compiles without them */
#ifndef __CUDACC_RTC__
	static signed char known[RS_MAX_DEVICES];
	const size_t ring = (size_t)ATTN_WARPS * ATTN_RING(DPL) *
	    sizeof(uint16_t);

	if (ring_ok(attn_split_kernel<DPL, GB, MMA>, shm > ring ? shm : ring,
	    known)) {
		staged = true;
		shm = shm > ring ? shm : ring;
	}
#endif
	attn_split_kernel<DPL, GB, MMA><<<dim3(nx, (unsigned)(n_head / GB),
	    (unsigned)ns), ATTN_WARPS * RS_WARP, shm, stream>>>(d_q, ldq, qs,
	    d_kc, d_vc, n_head, n_head_kv, n_tok, d_params, from, staged,
	    scale, d_scratch);
}

template <int DPL, int GB>
static void
launch_split(int64_t ns, int64_t max_keys, cudaStream_t stream,
    const float *d_q, int64_t ldq, int64_t qs, const uint16_t *d_kc,
    const uint16_t *d_vc, int n_head, int n_head_kv, int n_tok,
    const int32_t *d_params, float scale, float *d_scratch)
{
	const int d = DPL * RS_WARP;
	size_t	  shm = (size_t)ATTN_WARPS * GB * (2 + d) * sizeof(float);
	unsigned  nx = (unsigned)n_tok;
	int	  mma = 0;

	/* host runtime calls (as above), and both launches (so both
	   kernels) in NVRTC's check */
#ifndef __CUDACC_RTC__
	static signed char known[RS_MAX_DEVICES];

	mma = max_keys >= RS_K_ATTN_MMA_FROM &&
	    rs_runs_ptx(attn_split_kernel<DPL, GB, true>, 80, known);
#else
	(void)max_keys;
#endif
	if (!mma) {
		launch_kernel<DPL, GB, false>(nx, ns, INT64_MAX, shm, stream,
		    d_q, ldq, qs, d_kc, d_vc, n_head, n_head_kv, n_tok,
		    d_params, scale, d_scratch);
		return;
	}
	nx += (unsigned)(((int64_t)n_tok * (n_head / n_head_kv) + AM_ROWS -
	    1) / AM_ROWS);
	if (shm < (size_t)am_layout<DPL * RS_WARP>::BYTES)
		shm = am_layout<DPL * RS_WARP>::BYTES;
	launch_kernel<DPL, GB, true>(nx, ns, RS_K_ATTN_MMA_FROM, shm, stream,
	    d_q, ldq, qs, d_kc, d_vc, n_head, n_head_kv, n_tok, d_params,
	    scale, d_scratch);
}

template <int DPL>
static void
launch_dpl(int gb, int64_t ns, int64_t max_keys, cudaStream_t stream,
    const float *d_q, int64_t ldq, int64_t qs, const uint16_t *d_kc,
    const uint16_t *d_vc, int n_head, int n_head_kv, int n_tok,
    const int32_t *d_params, float scale, float *d_scratch)
{
	switch (gb) {
	case 6: launch_split<DPL, 6>(ns, max_keys, stream, d_q, ldq, qs, d_kc,
	    d_vc, n_head, n_head_kv, n_tok, d_params, scale, d_scratch); break;
	case 4: launch_split<DPL, 4>(ns, max_keys, stream, d_q, ldq, qs, d_kc,
	    d_vc, n_head, n_head_kv, n_tok, d_params, scale, d_scratch); break;
	case 2: launch_split<DPL, 2>(ns, max_keys, stream, d_q, ldq, qs, d_kc,
	    d_vc, n_head, n_head_kv, n_tok, d_params, scale, d_scratch); break;
	default: launch_split<DPL, 1>(ns, max_keys, stream, d_q, ldq, qs, d_kc,
	    d_vc, n_head, n_head_kv, n_tok, d_params, scale, d_scratch); break;
	}
}

extern "C" enum rs_status
rs_k_attn(const float *d_q, int64_t ldq, int64_t qs, int64_t gate_off,
    const uint16_t *d_kc, const uint16_t *d_vc, int n_head, int n_head_kv,
    int d, int dv, int n_tok, const int32_t *d_params, int64_t max_keys,
    float scale, float *d_o, float *d_scratch, cudaStream_t stream,
    struct rs_err *err)
{
	return (rs_k_attn_xq(d_q, ldq, qs, gate_off, d_kc, d_vc, n_head,
	    n_head_kv, d, dv, n_tok, d_params, max_keys, scale, d_o, NULL,
	    d_scratch, stream, err));
}

extern "C" enum rs_status
rs_k_attn_xq(const float *d_q, int64_t ldq, int64_t qs, int64_t gate_off,
    const uint16_t *d_kc, const uint16_t *d_vc, int n_head, int n_head_kv,
    int d, int dv, int n_tok, const int32_t *d_params, int64_t max_keys,
    float scale, float *d_o, void *d_xq, float *d_scratch,
    cudaStream_t stream, struct rs_err *err)
{
	int64_t	ns;
	int	group, gb;

	if (n_tok < 1 || n_head < 1 || n_head_kv < 1 ||
	    n_head % n_head_kv != 0 || d != dv ||
	    !(d == 64 || d == 128 || d == 256))
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "attn: heads %d/%d, d %d, dv %d (d = dv in 64, 128, 256)",
		    n_head, n_head_kv, d, dv));
	if (max_keys < n_tok)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "attn: %d tokens but at most %lld keys", n_tok,
		    (long long)max_keys));
	group = n_head / n_head_kv;
	gb = group % 6 == 0 ? 6 : group % 4 == 0 ? 4 : group % 2 == 0 ? 2 : 1;
	/* splits of the longest row: at most ⌈n / S_min⌉ and MAX_SPLITS */
	ns = (max_keys + RS_K_ATTN_SPLIT_MIN - 1) / RS_K_ATTN_SPLIT_MIN;
	ns = ns < RS_K_ATTN_MAX_SPLITS ? ns : RS_K_ATTN_MAX_SPLITS;
	switch (d) {
	case 64: launch_dpl<2>(gb, ns, max_keys, stream, d_q, ldq, qs, d_kc,
	    d_vc, n_head, n_head_kv, n_tok, d_params, scale, d_scratch); break;
	case 128: launch_dpl<4>(gb, ns, max_keys, stream, d_q, ldq, qs, d_kc,
	    d_vc, n_head, n_head_kv, n_tok, d_params, scale, d_scratch); break;
	default: launch_dpl<8>(gb, ns, max_keys, stream, d_q, ldq, qs, d_kc,
	    d_vc, n_head, n_head_kv, n_tok, d_params, scale, d_scratch); break;
	}
	RS_LAUNCH_CHECK(err, "attn split");
	attn_combine_kernel<<<dim3((unsigned)n_tok, (unsigned)n_head,
	    (unsigned)(dv / COMBINE_THREADS)), COMBINE_THREADS, 0, stream>>>(
	    d_scratch, d_q, ldq, qs, gate_off, n_head, dv, d_params, d_o,
	    (uint8_t *)d_xq, rs_k_xq_block_major(n_tok));
	RS_LAUNCH_CHECK(err, "attn combine");
	return (RS_OK);
}
