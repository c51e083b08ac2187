/*
 * matvec_mma_cm.cuh - the tensor-core matvec of matvec_mma.cuh for whole
 * quads of more than 4 columns (the launcher: 16), chunk-major: a kernel
 * variant under measurement (RS_K_VAR_CM, rs_kernels.h).
 *
 * Why: at 16 columns the general loop keeps 4 quads x 4 chunks x G groups
 * x 2 rows partial sums a lane (64 at G = 2), sits at 168 registers with
 * spills and fits three 4-warp CTAs an SM; ncu had it issue every 6.2
 * cycles of a warp at 18 % occupancy: latency-bound on few warps
 * (docs/perf-log.md, session 23).  A partial sum (virtual lane 4·group +
 * c of matvec_mma.cuh: chunk c of the super-blocks of one group) adds only
 * chunk c's blocks, so a warp can walk its super-blocks once a chunk,
 * loading that chunk's weight bytes and the rows' heads each time, and
 * keep a quarter of the sums: 16 a lane at G = 2, room for five CTAs an
 * SM at 96 registers.  The price: the heads loaded four times (from the
 * L1 or the L2: the weights still come from memory once) and the loop's
 * bookkeeping four times, ~10 % more instructions (session 24's SASS).
 *
 * Same bits: each partial sum gets the same terms in the same order
 * (super-blocks in increasing order, the low block then the high), and
 * the 32 virtual lanes of an output meet in warp_sum's tree, whose first
 * three levels add the 8 groups of one chunk and whose last two the
 * chunks:
 *
 *     S_c = ((g0 + g4) + (g2 + g6)) + ((g1 + g5) + (g3 + g7))
 *     y   = (S_0 + S_2) + (S_1 + S_3)
 *
 * So after each chunk's pass the CTA adds the pass's 8 groups in shared
 * memory and keeps S_c, and the last pass adds the four: 12 KB of shared
 * memory at 16 columns where the general loop's reduction takes 16.
 */
#ifndef RS_MATVEC_MMA_CM_CUH
#define RS_MATVEC_MMA_CM_CUH

#include "matvec_mma.cuh"

/*
 * Y (+)= W·X as matvec_xq_mma_kernel for NT (a multiple of 4, more than
 * 4) columns of a block-major batch XC, CTAs of 8 / G warps, MINB of
 * them an SM.
 */
template <int TYPE, int NT, int G, int MINB>
static __global__ void __launch_bounds__(8 / G * RS_WARP, MINB)
matvec_xq_mma_cm_kernel(const mv_parts parts, int64_t n_in,
    const xq_in xc)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	constexpr int	 NQ = NT / 4;		/* quads of columns */
	constexpr int	 W = 8 / G;		/* warps */
	constexpr int	 TB = RS_TILE_ROWS * qtraits<TYPE>::qb;
	static_assert(NT % 4 == 0 && NT > 4, "whole quads, more than one");
	static_assert(G == 1 || G == 2 || G == 4, "8 / G warps");
	/* a pass's partial sums by group, then each chunk's S_c */
	__shared__ float grp[8][MMA_ROWS][NT];
	__shared__ float chk[4][MMA_ROWS][NT];
	const mv_part	 pt = mv_part_of(parts, blockIdx.x);
	const int	 lane = threadIdx.x % RS_WARP;
	const int	 wi = threadIdx.x / RS_WARP, g = lane >> 2, t = lane & 3;
	const int64_t	 nb = n_in / 256;
	const uint8_t	*tiles = pt.w + pt.blk * nb * TB;
	/* x: the lane's B bytes (plane g % 2 of column g / 2 of the first
	   quad) and column t's meta, of block 0; quad u lies 4 columns
	   further, a block's slot xc.nb slots on (rs_xq.h, block-major) */
	const int	 lb = TYPE == RS_TYPE_Q6_K ? 4 * t : 8 * t;
	const uint8_t	*xb0 = xc.p + (g & 1) * xc.nb * n_in +
	    32 * (xc.t0 + (g >> 1)) + lb;
	const float2	*xm0 = (const float2 *)(xc.p + 2 * xc.nb * n_in) +
	    (xc.t0 + t);

	rs_pdl_trigger();
#pragma unroll
	for (int c = 0; c < 4; c++) {
		float p[NQ][G][2];

#pragma unroll
		for (int u = 0; u < NQ; u++)
#pragma unroll
			for (int st = 0; st < G; st++)
				p[u][st][0] = p[u][st][1] = 0.0f;
		/* rounds of 8 super-blocks: step st takes group w + W·st */
		for (int64_t b0 = wi; b0 < nb; b0 += 8) {
#pragma unroll
			for (int st = 0; st < G; st++) {
				const int64_t bi = b0 + W * st;
				if (bi >= nb)
					break;
				mma_raw raw;
				mma_chunk k;
				mmac<TYPE>::load_chunk(tiles + bi * TB, g, t, c,
				    &raw);
				/* x only after the wait (mv_launch) */
				if (c == 0 && b0 == wi && st == 0)
					rs_pdl_wait();
				mma_chunk_of<TYPE, true>(raw, c, &k);
#pragma unroll
				for (int blk = 0; blk < 2; blk++) {
					const uint32_t sl = ((uint32_t)bi * 8 +
					    (uint32_t)k.xb[blk]) *
					    (uint32_t)xc.nb;
					const uint8_t *bp = xb0 +
					    (uint64_t)sl * 32;
					const float2 *mp = xm0 + sl;
#pragma unroll
					for (int u = 0; u < NQ; u++)
						mma_block_dot<TYPE>(k, blk,
						    bp + 128 * u, mp + 4 * u,
						    p[u][st]);
				}
			}
		}
		/* lane (g, t) holds column 4u + t of rows g and g + 8 */
#pragma unroll
		for (int u = 0; u < NQ; u++)
#pragma unroll
			for (int st = 0; st < G; st++) {
				grp[wi + W * st][g][4 * u + t] = p[u][st][0];
				grp[wi + W * st][g + 8][4 * u + t] =
				    p[u][st][1];
			}
		__syncthreads();
		/* warp_sum's first three levels: groups v and v + 4, then
		   v + 2, then v + 1 */
		for (int el = threadIdx.x; el < MMA_ROWS * NT;
		    el += blockDim.x) {
			const int row = el / NT, col = el % NT;
			float s[8];
#pragma unroll
			for (int v = 0; v < 8; v++)
				s[v] = grp[v][row][col];
#pragma unroll
			for (int lv = 0; lv < 3; lv++)
#pragma unroll
				for (int v = 0; v < 4; v++)
					if (v < (4 >> lv))
						s[v] += s[v + (4 >> lv)];
			chk[c][row][col] = s[0];
		}
		__syncthreads();	/* grp is written again; chk done */
	}
	/* a warp without a super-block (w >= nb) waits here, before y */
	rs_pdl_wait();
	for (int el = threadIdx.x; el < MMA_ROWS * NT; el += blockDim.x) {
		const int row = el / NT, col = el % NT;
		const int64_t orow = pt.blk * MMA_ROWS + row;
		/* the tree's last two levels */
		const float s = (chk[0][row][col] + chk[2][row][col]) +
		    (chk[1][row][col] + chk[3][row][col]);
		if (orow < pt.n_out) {
			float *dst = pt.y + col * pt.ldy + orow;
			*dst = pt.acc ? *dst + s : s;
		}
	}
#else
	/* the host pass and archs before SM80: the launcher never picks
	   this kernel there */
	(void)parts; (void)n_in; (void)xc;
#ifdef __CUDA_ARCH__
	__trap();
#endif
#endif
}

#endif /* RS_MATVEC_MMA_CM_CUH */
