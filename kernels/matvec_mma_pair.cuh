/*
 * matvec_mma_pair.cuh - the one-column tensor-core matvec on two tile rows
 * a CTA, for rows whose super-blocks do not split evenly over 8 warps.
 *
 * Why: matvec_mma.cuh's CTA of 8 warps (G = 1) owns one 16-row tile row,
 * warp w the super-blocks bi ≡ w (mod 8).  A row of 5,120 values (the
 * decode step's gdn_qkv, ffn gate/up, attention q/k/v) has 20
 * super-blocks: warps 0-3 take 3, warps 4-7 take 2, so half the CTA waits
 * at the reduction's barrier for a third of its time (ncu: 2.1 of 14.7
 * cycles between a warp's issues were barrier stalls, docs/perf-log.md
 * session 23); ffn_down's 68 likewise (9 and 8).  Here a CTA of 8 warps
 * owns two tile rows (32 rows), warp w group w of the first and group
 * (w + 4) mod 8 of the second: with nb = 8i + 4 super-blocks every warp
 * takes 2i + 1.  Four-warp CTAs (G = 2) balance such rows too but were
 * no faster at one column (17.8 against 17.5 µs), with twice the sums a
 * lane and half the warps a CTA; this keeps G = 1's registers and warps.
 *
 * Bits: each (tile row, group) is the same virtual lanes summing the same
 * chunks in the same order as in matvec_xq_mma_kernel (mma_few_cols, one
 * column at constant strides: XL_COLS), and the reduction adds the 32
 * virtual lanes of an output in warp_sum's tree, so every output equals
 * the one-tile kernel's, and thus the batch kernels' (check_cuda
 * "matvec_pair").
 */
#ifndef RS_MATVEC_MMA_PAIR_CUH
#define RS_MATVEC_MMA_PAIR_CUH

#include "matvec_mma.cuh"

/*
 * The reduction's row of a virtual lane: 32 outputs and 8 words of
 * padding, so that lane (g, t)'s store of virtual lane 4·group + t, row
 * 16·j + g lands on bank 8t + g + 16j: 32 lanes, 32 banks.
 */
#define MMA_PAIR_RED	(2 * MMA_ROWS + 8)

/*
 * Y (+)= W·x for one column of XC laid out column after column (a batch
 * of one: the decode step), every part of PARTS, W Q4_K / Q5_K / Q6_K in
 * 16-row tiles (rs_tile.h).  Grid: one CTA of 8 warps per two tile rows
 * of a part (mv_parts_grid with 2·MMA_ROWS rows); a part's odd last tile
 * row is a CTA's first alone.  MINB as matvec_xq_mma_kernel's.  AHEAD:
 * a warp issues the loads of both its super-blocks of a round before it
 * multiplies either (more bytes in flight a warp, more registers: at
 * MINB 3 they spill); otherwise one after the other, as the compiler
 * schedules the one-tile kernel's.
 */
template <int TYPE, int MINB, bool AHEAD>
static __global__ void __launch_bounds__(8 * RS_WARP, MINB)
matvec_xq_mma_pair_kernel(const mv_parts parts, int64_t n_in,
    const xq_in xc)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	constexpr int	 TB = RS_TILE_ROWS * qtraits<TYPE>::qb;
	__shared__ float red[RS_WARP][MMA_PAIR_RED];
	const mv_part	 pt = mv_part_of(parts, blockIdx.x);
	const int	 lane = threadIdx.x % RS_WARP;
	const int	 wi = threadIdx.x / RS_WARP;
	const int	 g = lane >> 2, t = lane & 3;
	/* the group of virtual lanes the warp takes in tile row j */
	const int	 grp[2] = { wi, (wi + 4) & 7 };
	const int64_t	 o0 = pt.blk * 2 * MMA_ROWS;
	const int64_t	 nb = n_in / 256;
	const int	 n_tiles = o0 + MMA_ROWS < pt.n_out ? 2 : 1;
	const uint8_t	*tiles = pt.w + pt.blk * 2 * nb * TB;
	/* x as matvec_xq_mma_kernel addresses one column at constant
	   strides (XL_COLS): the lane's B bytes and the column's metas */
	const int	 lb = TYPE == RS_TYPE_Q6_K ? 4 * t : 8 * t;
	const uint8_t	*xb = xc.p + (g & 1) * xc.nb * n_in + 32 * xc.t0 *
	    (n_in / RS_XQ_BLOCK) + lb;
	const float2	*xm = (const float2 *)(xc.p + 2 * xc.nb * n_in +
	    8 * xc.t0 * (n_in / RS_XQ_BLOCK));
	float		 p[2][2] = { { 0.0f, 0.0f }, { 0.0f, 0.0f } };
	bool		 waiting = true;

	rs_pdl_trigger();
	for (int64_t b0 = 0; b0 < nb; b0 += 8) {
		mma_raw raw[2];
		bool	ok[2];
#pragma unroll
		for (int j = 0; j < 2; j++) {
			ok[j] = b0 + grp[j] < nb && j < n_tiles;
			if (!ok[j])
				continue;
			mmac<TYPE>::load(tiles + (j * nb + b0 + grp[j]) * TB,
			    g, t, &raw[j]);
			if constexpr (!AHEAD) {
				/* launched early (mv_launch): x only after
				   the wait, the first weights on their way
				   meanwhile */
				if (waiting) {
					rs_pdl_wait();
					waiting = false;
				}
				mma_few_cols<TYPE, 1, 1>(raw[j], b0 + grp[j],
				    t, xb, xm, &p[j]);
			}
		}
		/* AHEAD: both tile rows' loads in flight before either is
		   multiplied */
		if constexpr (AHEAD) {
			if (waiting) {
				rs_pdl_wait();
				waiting = false;
			}
#pragma unroll
			for (int j = 0; j < 2; j++)
				if (ok[j])
					mma_few_cols<TYPE, 1, 1>(raw[j],
					    b0 + grp[j], t, xb, xm, &p[j]);
		}
	}
	/* a warp without a super-block waits here, before y */
	rs_pdl_wait();
	/* virtual lane 4·group + t of row 16j + g (+ 8), zeros where the
	   group had no super-block, as in the one-tile kernel */
#pragma unroll
	for (int j = 0; j < 2; j++) {
		red[4 * grp[j] + t][MMA_ROWS * j + g] = p[j][0];
		red[4 * grp[j] + t][MMA_ROWS * j + g + 8] = p[j][1];
	}
	__syncthreads();
	if (threadIdx.x < 2 * MMA_ROWS) {
		const int row = threadIdx.x;
		float s[RS_WARP];

#pragma unroll
		for (int v = 0; v < RS_WARP; v++)
			s[v] = red[v][row];
#pragma unroll
		for (int lv = 0; lv < 5; lv++)
#pragma unroll
			for (int v = 0; v < RS_WARP / 2; v++)
				if (v < (RS_WARP / 2 >> lv))
					s[v] += s[v + (RS_WARP / 2 >> lv)];
		const int64_t orow = o0 + row;
		if (orow < pt.n_out) {
			float *dst = pt.y + orow;
			*dst = pt.acc ? *dst + s[0] : s[0];
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

#endif /* RS_MATVEC_MMA_PAIR_CUH */
