/*
 * matvec_xq.cu - playground for the integer matvec (kernels/matvec.cu and
 * matvec_mma.cuh, matvec_pipe.cuh): the dp4a kernels' shapes (rows per
 * warp R, chunks in flight per lane U, shared-memory stages S) and the
 * cost of 1..16 columns through rs_k_matvec, on the shapes of a
 * Qwen3.8-27B Q4_K_M token.
 *
 *   make CUDA=1 build/dev/matvec_xq && build/dev/matvec_xq
 *   MX_SHAPE=ffn_up MX_VARIANT=mma4 ncu ... build/dev/matvec_xq
 *
 * x is a batch of exactly the launch's columns (rs_xq.h), as in a
 * verification pass.  Every variant and column count is first compared bit
 * for bit with the same columns one at a time through rs_k_matvec, each
 * quantized alone (the kernel's contract:
 * tests/check_cuda.c checks it against the CPU oracle too); then 20
 * launches are timed with CUDA events, each on its own copy of the weights
 * (256 MB of copies in all), so that none finds them in the L2.
 * One JSON line per shape and variant or column count: microseconds, GB/s
 * of weight bytes, cost against one column.  The split-K variants
 * (splitk_*) sum in another order than the engine: they report their
 * largest error against the reference instead of bit identity.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../matvec.cu"

struct shape {
	const char	*name;
	int		 type;
	int64_t		 n_in, n_out;
};

static void
die(const char *what, cudaError_t e)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
		exit(1);
	}
}

static uint64_t rng = 88172645463325252ULL;

static uint32_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return ((uint32_t)(rng >> 16));
}

/* random blocks with finite f16 scales (0.01) */
static void
fill(int type, uint8_t *b, size_t bytes)
{
	const size_t bb = (size_t)rs_type_traits(type)->block_bytes;
	const size_t at = type == RS_TYPE_Q6_K ? 208 : 0;

	for (size_t i = 0; i < bytes; i++)
		b[i] = (uint8_t)next();
	for (size_t off = 0; off < bytes; off += bb) {
		b[off + at] = 0x1f;	/* 0x211f: 0.0100 */
		b[off + at + 1] = 0x21;
		if (type != RS_TYPE_Q6_K) {
			b[off + 2] = 0x1f;
			b[off + 3] = 0x21;
		}
	}
}

typedef void (*launch_fn)(const uint8_t *, int64_t, int64_t, int64_t,
    const xq_in, float *, int64_t);

/* the kernels' parameters for one product */
static mv_parts
one_part(const uint8_t *w, int64_t n_out, int64_t rb, float *y, int64_t ldy)
{
	mv_parts p = {};

	p.w[0] = w;
	p.y[0] = y;
	p.n_out[0] = n_out;
	p.row_bytes[0] = rb;
	p.ldy[0] = ldy;
	p.n = 1;
	return (p);
}

template <int TYPE, int NT, int R, int U>
static void
launch(const uint8_t *w, int64_t n_in, int64_t n_out, int64_t rb,
    const xq_in xq, float *y, int64_t ldy)
{
	mv_parts p = one_part(w, n_out, rb, y, ldy);
	dim3 grid(mv_parts_grid(&p, MV_WARPS * R));
	/* one column: the decode kernel's consecutive blocks (batch() makes
	   batches of one column then) */
	matvec_xq_kernel<TYPE, NT, R, U, NT == 1><<<grid, MV_WARPS * RS_WARP>>>(
	    p, n_in, xq);
}

template <int TYPE, int NT, int SPW, int MINB>
static void
launch_mma(const uint8_t *w, int64_t n_in, int64_t n_out, int64_t rb,
    const xq_in xq, float *y, int64_t ldy)
{
	mv_parts p = one_part(w, n_out, rb, y, ldy);
	dim3 grid(mv_parts_grid(&p, MMA_ROWS));
	matvec_xq_mma_kernel<TYPE, NT, SPW, MINB><<<grid,
	    8 / SPW * RS_WARP>>>(p, n_in, xq);
}

/* CAP: at most that many CTAs an SM (0: as many as fit) */
template <int TYPE, int NT, int R, int S, bool BULK = false, int CAP = 0>
static void
launch_pipe(const uint8_t *w, int64_t n_in, int64_t n_out, int64_t rb,
    const xq_in xq, float *y, int64_t ldy)
{
	mv_parts p = one_part(w, n_out, rb, y, ldy);
	unsigned grid = mv_parts_grid(&p, PIPE_WARPS * R);
	unsigned resident = pipe_resident<TYPE, NT, R, S, BULK>();
	if (CAP > 0 && resident > CAP * 132u)
		resident = CAP * 132u;	/* the H200's SMs */

	matvec_xq_pipe_kernel<TYPE, NT, R, S, BULK><<<grid < resident ? grid :
	    resident, PIPE_WARPS * RS_WARP, pipe_smem_bytes<TYPE, R, S>()>>>(p,
	    n_in, xq);
}

/*
 * Split-K, one column (a candidate, not the engine's canonical order): S
 * warps of a CTA share R rows, warp s taking steps s·J/S .. (s + 1)·J/S − 1
 * of the row's J = ⌈nc/32⌉ (lane v: chunk v + 32·j of step j), and their
 * warp sums add in split order through shared memory.  What it measures:
 * whether more warps on the 5,120-row products (ssm_out, attn_output,
 * ffn_down: 320 CTAs of R = 4, 0.6 of a wave on an H200) pay.  Adopting it
 * would change the order of every kernel's sums (dp4a, pipe, tensor
 * cores) together.
 */
template <int TYPE, int R, int S>
static __global__ void __launch_bounds__(MV_WARPS * RS_WARP,
    mv_minb(TYPE, 1))
splitk_kernel(const mv_parts parts, int64_t n_in, const xq_in xq)
{
	constexpr int G = MV_WARPS / S;		/* row groups a CTA */
	__shared__ float part[G][S][R];
	const mv_part	 pt = mv_part_of(parts, blockIdx.x);
	const int	 lane = threadIdx.x % RS_WARP;
	const int	 g = threadIdx.x / RS_WARP / S, sp = threadIdx.x /
	    RS_WARP % S;
	const int64_t	 o0 = (pt.blk * G + g) * R;
	const int64_t	 nc = n_in / 64, steps = (nc + RS_WARP - 1) / RS_WARP;
	const int64_t	 j0 = steps * sp / S, j1 = steps * (sp + 1) / S;
	const xq_at	 x = xq_at_of(xq, n_in);
	const uint8_t	*row[R];
	float		 acc[R][1];

#pragma unroll
	for (int r = 0; r < R; r++) {
		row[r] = pt.w + (o0 + r < pt.n_out ? o0 + r : pt.n_out - 1) *
		    pt.row_bytes;
		acc[r][0] = 0.0f;
	}
	for (int64_t j = j0; j < j1 && o0 < pt.n_out; j++) {
		const int64_t k = lane + j * RS_WARP;
		if (k >= nc)
			break;
		xq_chunk c[R];
#pragma unroll
		for (int r = 0; r < R; r++)
			xqc<TYPE>::load(row[r], k / 4, (int)(k % 4), &c[r]);
		xq_chunk_dot<TYPE, 1, R, true>(c, x, k / 4, acc);
	}
#pragma unroll
	for (int r = 0; r < R; r++) {
		const float v = warp_sum(acc[r][0]);
		if (lane == 0)
			part[g][sp][r] = v;
	}
	__syncthreads();
	if (sp == 0 && lane < R && o0 + lane < pt.n_out) {
		float v = part[g][0][lane];
		for (int q = 1; q < S; q++)
			v += part[g][q][lane];
		float *dst = pt.y + o0 + lane;
		*dst = pt.acc ? *dst + v : v;
	}
}

template <int TYPE, int R, int S>
static void
launch_splitk(const uint8_t *w, int64_t n_in, int64_t n_out, int64_t rb,
    const xq_in xq, float *y, int64_t ldy)
{
	mv_parts p = one_part(w, n_out, rb, y, ldy);
	dim3 grid(mv_parts_grid(&p, MV_WARPS / S * R));

	splitk_kernel<TYPE, R, S><<<grid, MV_WARPS * RS_WARP>>>(p, n_in, xq);
}

/*
 * Super-block tail (TIMING ONLY, wrong values): the tensor-core kernel
 * with the float tail once per (row, column, super-block) instead of per
 * 32-value block.  Per block only integer work: the 6-bit (Q4_K/Q5_K) or
 * 8-bit (Q6_K) scales times the mma's two plane sums into int
 * accumulators, and for Q4_K/Q5_K the min times an integer block sum of x
 * (read here from the meta's second word, one 4-byte load); per super-
 * block one x scale (the meta's first word of block 0) and four float
 * operations.  What it measures: the most a super-block x scale could
 * give at 2-16 columns, before any format changes.
 */
static __device__ __forceinline__ void
k_scales_i(const uint32_t hd[4], int c, int sc[2], int mn[2])
{
	const uint32_t s0 = hd[1], s1 = hd[2], s2 = hd[3];
	uint32_t a, m;

	if (c < 2) {
		a = s0 & 0x3F3F3F3Fu;
		m = s1 & 0x3F3F3F3Fu;
	} else {
		a = (s2 & 0x0F0F0F0Fu) | ((s0 >> 2) & 0x30303030u);
		m = ((s2 >> 4) & 0x0F0F0F0Fu) | ((s1 >> 2) & 0x30303030u);
	}
	const int sh = 16 * (c & 1);
	sc[0] = (a >> sh) & 0xFF;
	sc[1] = (a >> (sh + 8)) & 0xFF;
	mn[0] = (m >> sh) & 0xFF;
	mn[1] = (m >> (sh + 8)) & 0xFF;
}

template <int TYPE, int NT, int MINB>
static __global__ void __launch_bounds__(8 * RS_WARP, MINB)
sb_kernel(const mv_parts parts, int64_t n_in, const xq_in xc)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	constexpr int	 NQ = (NT + 3) / 4;
	__shared__ float red[8][MMA_ROWS][4];
	const mv_part	 pt = mv_part_of(parts, blockIdx.x);
	const int	 lane = threadIdx.x % RS_WARP;
	const int	 wi = threadIdx.x / RS_WARP, g = lane >> 2, t = lane & 3;
	const int64_t	 o0 = pt.blk * MMA_ROWS, n_out = pt.n_out;
	const int64_t	 nb = n_in / 256;
	const uint8_t	*__restrict__ xq = xc.p;
	const int64_t	 xbs = xc.bm ? xc.nb : 1;
	const int64_t	 xcs = xc.bm ? 1 : n_in / RS_XQ_BLOCK;
	const int64_t	 ra = o0 + g < n_out ? o0 + g : n_out - 1;
	const int64_t	 rb = o0 + g + 8 < n_out ? o0 + g + 8 : n_out - 1;
	const uint8_t	*r0 = pt.w + ra * pt.row_bytes;
	const uint8_t	*r1 = pt.w + rb * pt.row_bytes;
	float		 p[NQ][2];
	uint32_t	 xb[NQ], xm[NQ];

#pragma unroll
	for (int u = 0; u < NQ; u++) {
		const int cb = xc.t0 + min(4 * u + (g >> 1), NT - 1);
		const int cm = xc.t0 + min(4 * u + t, NT - 1);
		xb[u] = (uint32_t)((g & 1) * xc.nb * n_in + 32 * cb * xcs);
		xm[u] = (uint32_t)(2 * xc.nb * n_in + 8 * cm * xcs);
		p[u][0] = p[u][1] = 0.0f;
	}
	for (int64_t bi = wi; bi < nb; bi += 8) {
		mma_raw raw;
		mmac<TYPE>::load(r0, r1, bi, t, &raw);
		int ih[NQ][2], il[NQ][2], im[NQ][2];
#pragma unroll
		for (int u = 0; u < NQ; u++)
#pragma unroll
			for (int r = 0; r < 2; r++)
				ih[u][r] = il[u][r] = im[u][r] = 0;
#pragma unroll
		for (int c = 0; c < 4; c++) {
			mma_chunk k;
			mmac<TYPE>::chunk(raw, c, &k);
			int sc[2][2][2];	/* [blk][r][0: scale, 1: min / 2nd] */
#pragma unroll
			for (int r = 0; r < 2; r++) {
				if (TYPE == RS_TYPE_Q6_K) {
					const int h = c >> 1, kk = c & 1;
					const int s = 8 * h + 2 * kk;
					sc[0][r][0] = (int)(int8_t)(raw.hd[r][s >> 2] >> (8 * (s & 3)));
					sc[0][r][1] = (int)(int8_t)(raw.hd[r][(s + 1) >> 2] >> (8 * ((s + 1) & 3)));
					sc[1][r][0] = (int)(int8_t)(raw.hd[r][(s + 4) >> 2] >> (8 * ((s + 4) & 3)));
					sc[1][r][1] = (int)(int8_t)(raw.hd[r][(s + 5) >> 2] >> (8 * ((s + 5) & 3)));
				} else {
					int a[2], m[2];
					k_scales_i(raw.hd[r], c, a, m);
					sc[0][r][0] = a[0]; sc[0][r][1] = m[0];
					sc[1][r][0] = a[1]; sc[1][r][1] = m[1];
				}
			}
#pragma unroll
			for (int u = 0; u < NQ; u++)
#pragma unroll
			for (int blk = 0; blk < 2; blk++) {
				const int64_t b = (bi * 8 + k.xb[blk]) * xbs;
				int cc[4] = { 0, 0, 0, 0 };
				if (TYPE == RS_TYPE_Q6_K) {
					int c1[4] = { 0, 0, 0, 0 };
					const uint8_t *bp = xq + xb[u] + 32 * b +
					    4 * t;
					mma_k16(cc, k.a[blk][0], k.a[blk][1],
					    __ldg((const uint32_t *)bp));
					mma_k16(c1, k.a[blk][2], k.a[blk][3],
					    __ldg((const uint32_t *)(bp + 16)));
#pragma unroll
					for (int r = 0; r < 2; r++) {
						ih[u][r] += sc[blk][r][0] * cc[2 * r] +
						    sc[blk][r][1] * c1[2 * r];
						il[u][r] += sc[blk][r][0] * cc[2 * r + 1] +
						    sc[blk][r][1] * c1[2 * r + 1];
					}
				} else {
					const int sb = __ldg((const int *)(xq +
					    xm[u]) + 2 * b + 1);
					const uint2 h = __ldg((const uint2 *)(xq +
					    xb[u] + 32 * b + 8 * t));
					mma_k32(cc, k.a[blk], h.x, h.y);
#pragma unroll
					for (int r = 0; r < 2; r++) {
						ih[u][r] += sc[blk][r][0] * cc[2 * r];
						il[u][r] += sc[blk][r][0] * cc[2 * r + 1];
						im[u][r] += sc[blk][r][1] * sb;
					}
				}
			}
		}
		/* the super-block's tail: d, dmin as k_scales reads them */
#pragma unroll
		for (int u = 0; u < NQ; u++) {
			const float s = __ldg((const float *)(xq + xm[u]) +
			    2 * (bi * 8) * xbs);
#pragma unroll
			for (int r = 0; r < 2; r++) {
				float d, dm;
				if (TYPE == RS_TYPE_Q6_K) {
					d = raw.d[r];
					dm = 0.0f;
				} else {
					const float2 f = __half22float2(
					    *(const __half2 *)&raw.hd[r][0]);
					d = f.x;
					dm = f.y;
				}
				const float v = fmaf(256.0f, (float)ih[u][r],
				    (float)il[u][r]);
				p[u][r] = fmaf(d * s, v, p[u][r]);
				p[u][r] = fmaf(-dm * s, (float)im[u][r], p[u][r]);
			}
		}
	}
#pragma unroll
	for (int u = 0; u < NQ; u++) {
		red[wi][g][t] = p[u][0];
		red[wi][g + 8][t] = p[u][1];
		__syncthreads();
		if (threadIdx.x < MMA_ROWS * 4) {
			const int row = threadIdx.x / 4, col = threadIdx.x % 4;
			float v = 0.0f;
#pragma unroll
			for (int q = 0; q < 8; q++)
				v += red[q][row][col];
			const int64_t orow = o0 + row;
			const int tc = 4 * u + col;
			if (orow < n_out && tc < NT)
				pt.y[tc * pt.ldy + orow] = v;
		}
		__syncthreads();
	}
#else
	(void)parts; (void)n_in; (void)xc;
#endif
}

/*
 * Tiled weights (TIMING ONLY, wrong values): the tensor-core kernel with
 * each 16-row x 256-value tile stored contiguously (as an upload-time
 * repacking would), the 16 rows' heads first (lane (g, t) reads its two
 * rows' heads, a broadcast to the quad), then the quants in fragment
 * order, every lane 16 bytes of each 512: one warp instruction a 512-byte
 * run, where the GGUF layout gives 8-byte loads over 8 rows' lines.
 * What it measures: what the weights' address pattern costs the kernel.
 */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
template <int TYPE>
static __device__ __forceinline__ void
tile_load(const uint8_t *tile, int g, int lane, mma_raw *w)
{
	const uint4 *q = (const uint4 *)(tile + 256);
	if (TYPE == RS_TYPE_Q6_K) {
		/* scales 16 B a row, then d: 2 B a row (32 B), then quants */
		const uint4 h0 = __ldg((const uint4 *)tile + g);
		const uint4 h1 = __ldg((const uint4 *)tile + g + 8);
		w->hd[0][0] = h0.x; w->hd[0][1] = h0.y; w->hd[0][2] = h0.z;
		w->hd[0][3] = h0.w; w->hd[1][0] = h1.x; w->hd[1][1] = h1.y;
		w->hd[1][2] = h1.z; w->hd[1][3] = h1.w;
		const unsigned short *dd = (const unsigned short *)(tile + 256);
		w->d[0] = half_to_float(__ldg(dd + g));
		w->d[1] = half_to_float(__ldg(dd + g + 8));
		q = (const uint4 *)(tile + 288);
#pragma unroll
		for (int j = 0; j < 4; j++) {
			const uint4 v = __ldg(q + 32 * j + lane);
			w->q[j >> 1][2 * (j & 1)][0] = v.x;
			w->q[j >> 1][2 * (j & 1)][1] = v.y;
			w->q[j >> 1][2 * (j & 1) + 1][0] = v.z;
			w->q[j >> 1][2 * (j & 1) + 1][1] = v.w;
		}
#pragma unroll
		for (int j = 0; j < 2; j++) {
			const uint4 v = __ldg(q + 128 + 32 * j + lane);
			w->h[j][0][0] = v.x; w->h[j][0][1] = v.y;
			w->h[j][1][0] = v.z; w->h[j][1][1] = v.w;
		}
		return;
	}
	const uint4 h0 = __ldg((const uint4 *)tile + g);
	const uint4 h1 = __ldg((const uint4 *)tile + g + 8);
	w->hd[0][0] = h0.x; w->hd[0][1] = h0.y; w->hd[0][2] = h0.z;
	w->hd[0][3] = h0.w; w->hd[1][0] = h1.x; w->hd[1][1] = h1.y;
	w->hd[1][2] = h1.z; w->hd[1][3] = h1.w;
#pragma unroll
	for (int j = 0; j < 4; j++) {
		const uint4 v = __ldg(q + 32 * j + lane);
		w->q[j >> 1][2 * (j & 1)][0] = v.x;
		w->q[j >> 1][2 * (j & 1)][1] = v.y;
		w->q[j >> 1][2 * (j & 1) + 1][0] = v.z;
		w->q[j >> 1][2 * (j & 1) + 1][1] = v.w;
	}
	if (TYPE == RS_TYPE_Q5_K) {
		const uint4 v = __ldg(q + 128 + lane);
		w->h[0][0][0] = v.x; w->h[0][0][1] = v.y;
		w->h[1][0][0] = v.z; w->h[1][0][1] = v.w;
	}
}
#endif

template <int TYPE, int NT, int MINB>
static __global__ void __launch_bounds__(8 * RS_WARP, MINB)
tile_kernel(const mv_parts parts, int64_t n_in, const xq_in xc)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	constexpr int	 NQ = (NT + 3) / 4;
	constexpr int	 TB = 16 * qtraits<TYPE>::qb;	/* a tile's bytes */
	__shared__ float red[RS_WARP][MMA_ROWS][4];
	const mv_part	 pt = mv_part_of(parts, blockIdx.x);
	const int	 lane = threadIdx.x % RS_WARP;
	const int	 wi = threadIdx.x / RS_WARP, g = lane >> 2, t = lane & 3;
	const int64_t	 o0 = pt.blk * MMA_ROWS, n_out = pt.n_out;
	const int64_t	 nb = n_in / 256;
	const uint8_t	*__restrict__ xq = xc.p;
	const int64_t	 xbs = xc.bm ? xc.nb : 1;
	const int64_t	 xcs = xc.bm ? 1 : n_in / RS_XQ_BLOCK;
	const uint8_t	*tiles = pt.w + pt.blk * nb * TB;
	float		 p[NQ][4][2];
	uint32_t	 xb[NQ], xm[NQ];

#pragma unroll
	for (int u = 0; u < NQ; u++) {
		const int cb = xc.t0 + min(4 * u + (g >> 1), NT - 1);
		const int cm = xc.t0 + min(4 * u + t, NT - 1);
		xb[u] = (uint32_t)((g & 1) * xc.nb * n_in + 32 * cb * xcs);
		xm[u] = (uint32_t)(2 * xc.nb * n_in + 8 * cm * xcs);
#pragma unroll
		for (int c = 0; c < 4; c++)
			p[u][c][0] = p[u][c][1] = 0.0f;
	}
	for (int64_t bi = wi; bi < nb; bi += 8) {
		mma_raw raw;
		tile_load<TYPE>(tiles + bi * TB, g, lane, &raw);
#pragma unroll
		for (int c = 0; c < 4; c++) {
			mma_chunk k;
			mmac<TYPE>::chunk(raw, c, &k);
#pragma unroll
			for (int u = 0; u < NQ; u++)
				mma_chunk_dot<TYPE>(k, xq + xb[u], xq + xm[u],
				    xbs, bi, t, p[u][c]);
		}
	}
#pragma unroll
	for (int u = 0; u < NQ; u++) {
#pragma unroll
		for (int c = 0; c < 4; c++) {
			red[4 * wi + c][g][t] = p[u][c][0];
			red[4 * wi + c][g + 8][t] = p[u][c][1];
		}
		__syncthreads();
		for (int el = threadIdx.x; el < MMA_ROWS * 4; el += blockDim.x) {
			const int row = el / 4, col = el % 4;
			float v = 0.0f;
#pragma unroll
			for (int q = 0; q < RS_WARP; q++)
				v += red[q][row][col];
			const int64_t orow = o0 + row;
			const int tc = 4 * u + col;
			if (orow < n_out && tc < NT)
				pt.y[tc * pt.ldy + orow] = v;
		}
		__syncthreads();
	}
#else
	(void)parts; (void)n_in; (void)xc;
#endif
}

template <int TYPE, int NT, int MINB>
static void
launch_tile(const uint8_t *w, int64_t n_in, int64_t n_out, int64_t rb,
    const xq_in xq, float *y, int64_t ldy)
{
	mv_parts p = one_part(w, n_out, rb, y, ldy);
	dim3 grid(mv_parts_grid(&p, MMA_ROWS));
	tile_kernel<TYPE, NT, MINB><<<grid, 8 * RS_WARP>>>(p, n_in, xq);
}

template <int TYPE, int NT, int MINB>
static void
launch_sb(const uint8_t *w, int64_t n_in, int64_t n_out, int64_t rb,
    const xq_in xq, float *y, int64_t ldy)
{
	mv_parts p = one_part(w, n_out, rb, y, ldy);
	dim3 grid(mv_parts_grid(&p, MMA_ROWS));
	sb_kernel<TYPE, NT, MINB><<<grid, 8 * RS_WARP>>>(p, n_in, xq);
}

struct variant {
	const char	*name;
	int		 nt;
	launch_fn	 fn[3];		/* Q4_K, Q5_K, Q6_K */
	int		 cm;		/* x: 1 column after column, 2 block-major,
					   0 as rs_k_xq_block_major */
	int		 approx;	/* another order of sums: compare with a
					   tolerance */
};

#define V(nt, r, u) { "dp4a" #nt "_r" #r "_u" #u, nt, { \
	launch<RS_TYPE_Q4_K, nt, r, u>, launch<RS_TYPE_Q5_K, nt, r, u>, \
	launch<RS_TYPE_Q6_K, nt, r, u> } }
#define VC(nt, r, u) { "dp4a_cm" #nt "_r" #r "_u" #u, nt, { \
	launch<RS_TYPE_Q4_K, nt, r, u>, launch<RS_TYPE_Q5_K, nt, r, u>, \
	launch<RS_TYPE_Q6_K, nt, r, u> }, 1 }
#define MB(nt, spw, mb) { "mma_bm" #nt "_spw" #spw "_minb" #mb, nt, { \
	launch_mma<RS_TYPE_Q4_K, nt, spw, mb>, \
	launch_mma<RS_TYPE_Q5_K, nt, spw, mb>, \
	launch_mma<RS_TYPE_Q6_K, nt, spw, mb> }, 2 }
#define BC(nt, r, st, cap) { "bulk" #nt "_r" #r "_s" #st "_cap" #cap, nt, { \
	launch_pipe<RS_TYPE_Q4_K, nt, r, st, true, cap>, \
	launch_pipe<RS_TYPE_Q5_K, nt, r, st, true, cap>, \
	launch_pipe<RS_TYPE_Q6_K, nt, r, st, true, cap> } }
#define P(nt, r, st) { "pipe" #nt "_r" #r "_s" #st, nt, { \
	launch_pipe<RS_TYPE_Q4_K, nt, r, st>, \
	launch_pipe<RS_TYPE_Q5_K, nt, r, st>, \
	launch_pipe<RS_TYPE_Q6_K, nt, r, st> } }
#define B(nt, r, st) { "bulk" #nt "_r" #r "_s" #st, nt, { \
	launch_pipe<RS_TYPE_Q4_K, nt, r, st, true>, \
	launch_pipe<RS_TYPE_Q5_K, nt, r, st, true>, \
	launch_pipe<RS_TYPE_Q6_K, nt, r, st, true> } }
#define SK(r, s) { "splitk1_r" #r "_s" #s, 1, { \
	launch_splitk<RS_TYPE_Q4_K, r, s>, launch_splitk<RS_TYPE_Q5_K, r, s>, \
	launch_splitk<RS_TYPE_Q6_K, r, s> }, 1, 1 }
#define SB(nt, mb) { "sbtail" #nt "_minb" #mb, nt, { \
	launch_sb<RS_TYPE_Q4_K, nt, mb>, launch_sb<RS_TYPE_Q5_K, nt, mb>, \
	launch_sb<RS_TYPE_Q6_K, nt, mb> }, 2, 1 }
#define TL(nt, mb) { "tile" #nt "_minb" #mb, nt, { \
	launch_tile<RS_TYPE_Q4_K, nt, mb>, launch_tile<RS_TYPE_Q5_K, nt, mb>, \
	launch_tile<RS_TYPE_Q6_K, nt, mb> }, 2, 1 }
#define M(nt, spw, mb) { "mma" #nt "_spw" #spw "_minb" #mb, nt, { \
	launch_mma<RS_TYPE_Q4_K, nt, spw, mb>, \
	launch_mma<RS_TYPE_Q5_K, nt, spw, mb>, \
	launch_mma<RS_TYPE_Q6_K, nt, spw, mb> } }

static const struct variant variants[] = {
	V(1, 4, 1), V(2, 4, 1), V(4, 4, 1), VC(4, 4, 1), V(8, 2, 1),
	VC(8, 2, 1), M(2, 1, 2), M(2, 2, 3), MB(2, 1, 2), MB(2, 1, 3),
	B(2, 4, 2), BC(2, 4, 2, 3), B(1, 2, 2), BC(1, 2, 2, 6),
	M(3, 1, 2), M(3, 1, 3), M(3, 2, 3), M(4, 1, 2), M(4, 1, 3), M(4, 2, 3),
	M(8, 1, 2), M(8, 1, 3), M(8, 2, 3), M(16, 1, 1), M(16, 1, 2),
	SK(4, 2), SK(4, 4), SK(2, 2), SK(2, 4),
	SB(2, 3), SB(2, 2), SB(3, 3), SB(3, 2), SB(4, 3), SB(4, 2), SB(8, 3),
	SB(8, 2), SB(16, 2), SB(16, 1),
	TL(2, 3), TL(2, 2), TL(4, 3), TL(4, 2), TL(8, 3), TL(8, 2), TL(16, 2),
	TL(16, 1),
};

static int
type_index(int type)
{
	return (type == RS_TYPE_Q4_K ? 0 : type == RS_TYPE_Q5_K ? 1 : 2);
}

/*
 * Copies of the weights that the timed launches take in turn, together
 * at least 256 MB: each launch then reads its weights from memory, not
 * from the L2 (50 MB) where the previous launch left them, as in a
 * decode step; back to back, the launches' gaps stay out of the time.
 */
#define ROT_BYTES	((size_t)256 << 20)
#define ROT_MAX		16

struct rot {
	uint8_t	*w[ROT_MAX];
	int	 n;
};

static double
time_variant(launch_fn fn, const struct shape *sh, const struct rot *dw,
    int64_t rb, const xq_in dq, float *dy, int reps)
{
	cudaEvent_t a, b;
	float ms;

	cudaEventCreate(&a);
	cudaEventCreate(&b);
	cudaEventRecord(a);
	for (int r = 0; r < reps; r++)
		fn(dw->w[r % dw->n], sh->n_in, sh->n_out, rb, dq, dy,
		    sh->n_out);
	cudaEventRecord(b);
	die("time", cudaEventSynchronize(b));
	cudaEventElapsedTime(&ms, a, b);
	cudaEventDestroy(a);
	cudaEventDestroy(b);
	return (ms * 1e3 / reps);
}

static double
time_us(const struct rot *dw, int type, const struct shape *sh, int64_t rb,
    const xq_in dq, float *dy, int nt, int reps)
{
	struct rs_err err;
	cudaEvent_t a, b;
	float ms;

	cudaEventCreate(&a);
	cudaEventCreate(&b);
	cudaEventRecord(a);
	for (int r = 0; r < reps; r++)
		if (rs_k_matvec(dw->w[r % dw->n], type, sh->n_in, sh->n_out,
		    rb, NULL, sh->n_in, (rs_k_xq_cols){ dq.p, dq.nb, dq.t0 },
		    dy, sh->n_out, nt, 0, 0, &err) != RS_OK) {
			fprintf(stderr, "matvec: %s\n", err.msg);
			exit(1);
		}
	cudaEventRecord(b);
	die("time", cudaEventSynchronize(b));
	cudaEventElapsedTime(&ms, a, b);
	cudaEventDestroy(a);
	cudaEventDestroy(b);
	return (ms * 1e3 / reps);
}

/* The largest |got − ref| over the largest |ref| (N values). */
static double
max_rel_err(const float *got, const float *ref, size_t n)
{
	double d = 0.0, m = 0.0;

	for (size_t i = 0; i < n; i++) {
		const double e = fabs((double)got[i] - (double)ref[i]);
		const double r = fabs((double)ref[i]);
		d = e > d ? e : d;
		m = r > m ? r : m;
	}
	return (m > 0.0 ? d / m : d);
}

/*
 * The NT columns at X (N values each) as one batch in D (host copy H):
 * in rs_k_xq_block_major's layout, column after column (CM 1) or
 * block-major (CM 2).
 */
static xq_in
batch(const float *x, int64_t n, int nt, int cm, uint8_t *h, uint8_t *d)
{
	const xq_in c = { d, nt, 0, cm ? cm == 2 : rs_k_xq_block_major(nt) };

	rs_xq_quantize_batch(x, n, n, nt, c.bm, h);
	die("copy", cudaMemcpy(d, h, (size_t)RS_XQ_BATCH_BYTES(n, nt),
	    cudaMemcpyHostToDevice));
	return (c);
}

int
main(void)
{
	static const struct shape shapes[] = {
		{ "ffn_up", RS_TYPE_Q4_K, 5120, 17408 },
		{ "ffn_down", RS_TYPE_Q4_K, 17408, 5120 },
		{ "ffn_down_q6", RS_TYPE_Q6_K, 17408, 5120 },
		{ "gdn_qkv", RS_TYPE_Q4_K, 5120, 10240 },
		{ "ssm_out", RS_TYPE_Q4_K, 6144, 5120 },
		{ "attn_o", RS_TYPE_Q5_K, 6144, 5120 },
		{ "output", RS_TYPE_Q6_K, 5120, 248320 },
	};
	static const int cols[] = { 1, 2, 3, 4, 8, 16 };
	const int nt_max = 16, reps = 20;
	/* for a profiler: one shape, the variants whose name holds a string */
	const char *only_shape = getenv("MX_SHAPE");
	const char *only_variant = getenv("MX_VARIANT");
	int status = 0;

	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		const struct shape *sh = &shapes[s];
		if (only_shape && strcmp(only_shape, sh->name) != 0)
			continue;
		const int64_t rb = sh->n_in / 256 *
		    rs_type_traits(sh->type)->block_bytes;
		const size_t wbytes = (size_t)(rb * sh->n_out);
		const size_t qbytes = (size_t)RS_XQ_BATCH_BYTES(sh->n_in,
		    nt_max);
		uint8_t *hw = (uint8_t *)malloc(wbytes);
		uint8_t *hq = (uint8_t *)malloc(qbytes);
		float *hx = (float *)malloc((size_t)(nt_max * sh->n_in) * 4);
		float *ref = (float *)malloc((size_t)(nt_max * sh->n_out) * 4);
		float *got = (float *)malloc((size_t)(nt_max * sh->n_out) * 4);
		struct rot dw;
		uint8_t *dq;
		float *dy;

		fill(sh->type, hw, wbytes);
		for (int64_t i = 0; i < nt_max * sh->n_in; i++)
			hx[i] = (float)(next() % 20001) / 10000.0f - 1.0f;
		dw.n = (int)((ROT_BYTES + wbytes - 1) / wbytes);
		if (dw.n > ROT_MAX)
			dw.n = ROT_MAX;
		for (int i = 0; i < dw.n; i++) {
			die("malloc", cudaMalloc(&dw.w[i], wbytes));
			die("copy", cudaMemcpy(dw.w[i], hw, wbytes,
			    cudaMemcpyHostToDevice));
		}
		die("malloc", cudaMalloc(&dq, qbytes));
		die("malloc", cudaMalloc(&dy, (size_t)(nt_max * sh->n_out) * 4));
		/* the reference: every column alone */
		for (int t = 0; t < nt_max; t++)
			(void)time_us(&dw, sh->type, sh, rb, batch(hx + t *
			    sh->n_in, sh->n_in, 1, 0, hq, dq), dy + t *
			    sh->n_out, 1, 1);
		die("ref", cudaMemcpy(ref, dy, (size_t)(nt_max * sh->n_out) * 4,
		    cudaMemcpyDeviceToHost));
		for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]);
		    v++) {
			launch_fn fn = variants[v].fn[type_index(sh->type)];
			if (only_variant && !strstr(variants[v].name,
			    only_variant))
				continue;

			const size_t outs = (size_t)(variants[v].nt * sh->n_out);
			const xq_in xc = batch(hx, sh->n_in, variants[v].nt,
			    variants[v].cm, hq, dq);
			fn(dw.w[0], sh->n_in, sh->n_out, rb, xc, dy, sh->n_out);
			die("run", cudaMemcpy(got, dy, outs * 4,
			    cudaMemcpyDeviceToHost));
			const int same = memcmp(got, ref, outs * 4) == 0;
			const double err = max_rel_err(got, ref, outs);
			const double us = time_variant(fn, sh, &dw, rb, xc, dy,
			    reps);
			printf("{\"shape\":\"%s\",\"variant\":\"%s\","
			    "\"us\":%.1f,\"GB_s\":%.0f,\"bit_identical\":"
			    "%s,\"max_rel_err\":%.3g}\n", sh->name,
			    variants[v].name, us, wbytes / (us * 1e-6) / 1e9,
			    same ? "true" : "false", err);
			if (variants[v].approx ? err > 1e-5 : !same)
				status = 1;
		}
		double us1 = 0.0;
		for (size_t v = 0; v < (only_variant ? 0 : sizeof(cols) /
		    sizeof(cols[0])); v++) {
			const int nt = cols[v];
			const xq_in xc = batch(hx, sh->n_in, nt, 0, hq, dq);

			(void)time_us(&dw, sh->type, sh, rb, xc, dy, nt, 1);
			die("run", cudaMemcpy(got, dy, (size_t)(nt *
			    sh->n_out) * 4, cudaMemcpyDeviceToHost));
			const int same = memcmp(got, ref, (size_t)(nt *
			    sh->n_out) * 4) == 0;
			const double us = time_us(&dw, sh->type, sh, rb, xc, dy,
			    nt, reps);
			if (nt == 1)
				us1 = us;
			printf("{\"shape\":\"%s\",\"cols\":%d,\"us\":%.1f,"
			    "\"GB_s\":%.0f,\"cost\":%.2f,\"bit_identical\":"
			    "%s}\n", sh->name, nt, us, wbytes / (us * 1e-6) /
			    1e9, us / us1, same ? "true" : "false");
			if (!same)
				status = 1;
		}
		for (int i = 0; i < dw.n; i++)
			cudaFree(dw.w[i]);
		cudaFree(dq);
		cudaFree(dy);
		free(hw);
		free(hq);
		free(hx);
		free(ref);
		free(got);
	}
	return (status);
}
