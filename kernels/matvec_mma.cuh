/*
 * matvec_mma.cuh - the integer matvec for 1..16 columns on tensor cores
 * (SM80 and later: int8 mma.sync), bit-identical to the one-column dp4a
 * kernel of matvec.cu (for finite weight scales: scale_perm).  From SM80
 * on the launcher gives it every product of tiled weights.
 *
 * Why: a verification pass multiplies every weight with k + 1 columns.
 * The dp4a kernel repeats the x loads and dp4a of every weight for each
 * column, so 16 columns cost 8.5x one (docs/perf-log.md).  Here a warp
 * decodes the weights of 16 rows once and an mma.sync multiplies them with
 * a quad of 4 columns at a time, each column's high and low bytes side by
 * side (rs_xq.h: both signed); what remains per (row, column, 32-value
 * block) is the float tail of matvec_xq.cuh's canonical order (about five
 * instructions), which the decode step's memory time hides.
 *
 * Layout: a CTA of W = 8 / G warps owns 16 rows.  Warp w takes the
 * super-blocks bi = w, w + W, w + 2W, ..., one a step: chunk c of
 * super-block bi is chunk k = 4·bi + c, whose virtual lane
 * (matvec_xq.cuh) is k % 32 = 4·(bi % 8) + c, so warp w owns the G groups
 * of four virtual lanes bi % 8 = w + W·s (s = 0..G − 1) and keeps 4·G
 * partial sums per output, each adding its chunks in increasing k as that
 * lane would.  G = 2 balances rows of 20 super-blocks (5,120 values: 3 and
 * 2 a group) over 4 warps of 5, where 8 warps of 3 and 2 leave half the
 * CTA waiting at its barrier for a third of its time.
 * At the end the 32 partials of every output meet in shared memory and one
 * thread adds them in warp_sum's tree: the same bits as the dp4a kernel.
 *
 * Fragments (PTX ISA, mma m16n8k32 and m16n8k16 with 8-bit operands; g =
 * lane / 4, t = lane % 4): A holds rows g and g + 8, B column g, C rows g
 * and g + 8 by columns 2t and 2t + 1.  B column j of quad u is plane j % 2
 * (high, low) of x column 4u + j / 2, so lane t's accumulators hold both
 * planes of column 4u + t for its two rows.  The k order inside one mma
 * is free (an integer dot product), so for Q4_K/Q5_K lane t takes the 8
 * bytes 8t .. 8t + 7 of a 32-value block as its two 4-byte k slots, one
 * 8-byte load for x.  Q6_K's scales change every 16 values, so it runs
 * one m16n8k16 per half: lane t takes values 4t..4t+3 of each half.  The
 * weights are 16-row tiles (rs_tile.h): slot 8t + g of a chunk's 512-byte
 * run holds lane (g, t)'s bytes of both its rows, so each load of a warp
 * is one 512-byte run (in the GGUF rows a load touched 8 rows' lines for
 * 256 bytes, Q6_K 2-byte aligned: 2-4 columns 10-30 % slower, the head
 * 1.5x, docs/perf-log.md session 11).  x is a block-major batch
 * (rs_xq.h) from two columns on, so the 8 B columns of a quad and block
 * are 2 lines (one a plane) and its 4 metas one: with columns laid out one
 * after the other they were 8 and 4 (two columns: 4 and 2), the L1 was
 * the kernel's busiest unit (76 %), and block-major made 3-16 columns
 * 5-35 % faster, two 3-16 % (session 23).
 *
 * Per 16 rows x 64 values x 4 columns, a warp spends ~4 (Q4_K) weight
 * loads, 4 x loads, 2 mma, 8 nibble operations and ~20 tail instructions:
 * ~310 instructions a super-block for up to 4 columns (~430 while the
 * low byte was unsigned: one mma per plane of 8 columns, and at 3-4
 * columns half the tail spent on copies of the last one); at 8 columns
 * 414 (Q4_K, SASS of sm_90), of which 160 are the tail, 76 the scales,
 * ~40 the x addresses.  Columns beyond NT are computed on a copy of the
 * last column and not written (the 8-column kernel, which also runs
 * launches of 5-7 columns, computes those past xq_in.nw on whatever x
 * holds there); with one or two columns at constant strides (decode,
 * two-token passes: XL below) a quad's columns are x's q % NT instead,
 * and each lane adds only its share of the chunks (mma_few_cols: a
 * quarter or a half of the float tail).
 * Measured in docs/perf-log.md; G and MINB are the launch's knobs.
 */
#ifndef RS_MATVEC_MMA_CUH
#define RS_MATVEC_MMA_CUH

#include "matvec_xq.cuh"

#define MMA_ROWS	16
/* the largest batch (columns x n_in) the kernel takes: x offsets in 32 bits */
#define MMA_MAX_IN	((int64_t)1 << 30)

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800

/* C += A·B, 16x32 unsigned (A) by 32x8 signed (B) bytes */
static __device__ __forceinline__ void
mma_k32(int c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
	asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 "
	    "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
	    : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
	    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* C += A·B, 16x16 signed (A) by 16x8 signed (B) bytes */
static __device__ __forceinline__ void
mma_k16(int c[4], uint32_t a0, uint32_t a1, uint32_t b)
{
	asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 "
	    "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
	    : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
	    : "r"(a0), "r"(a1), "r"(b));
}

/*
 * One super-block of the warp's two rows (g and g + 8) as lane t loads
 * it from the tile (rs_tile.h: its slot of each run, the rows' heads):
 * the raw bytes its fragments need, so that the next super-block's loads
 * can be in flight while this one is multiplied.
 *   Q4_K/Q5_K  hd: the 16-byte head; q[c]: qs bytes 32c + 8t .. + 7;
 *              h[0]: Q5_K's qh bytes 8t .. 8t + 7 (bits of every chunk)
 *   Q6_K       hd: the 16 scale bytes; q[c]: ql bytes 64h + 32kk + 4t
 *              and + 16 (c = 2h + kk); h[hh]: qh bytes 32hh + 4t and
 *              + 16; d: the super-block scale
 */
struct mma_raw {
	uint32_t	hd[2][4];
	uint32_t	q[2][4][2];
	uint32_t	h[2][2][2];
	float		d[2];
};

/* One chunk decoded into A fragments and each row's float factors. */
struct mma_chunk {
	uint32_t	a[2][4];	/* [blk]: Q4/Q5 a0..a3; Q6 [half*2+row] */
	float		f[2][2][2];	/* [blk][row g / g + 8][factor] */
	int		xb[2];		/* x-blocks inside the super-block */
};

template <int TYPE> struct mmac;

/*
 * P + I·S by mad.wide (two instructions in the SASS; left to itself the
 * compiler spent three or four on each x address, 61 of the 8-column
 * loop's 442)
 */
template <unsigned S>
static __device__ __forceinline__ const void *
mad_wide(uint32_t i, const void *p)
{
	uint64_t r;

	asm("mad.wide.u32 %0, %1, %2, %3;" : "=l"(r) : "r"(i), "n"(S),
	    "l"(p));
	return ((const void *)r);
}

/*
 * A 6-bit field (byte K of W, K a constant) times F, as k_scales forms
 * it: the byte under the exponent of 2^23 is the float 2^23 + q exactly,
 * and fmaf(F, 2^23 + q, -F·2^23) rounds the exact F·q once, as F·(float)q
 * does, in one byte permutation and one FMA instead of a shift, a mask, a
 * conversion and a multiplication.  NF = -F·2^23 (exact).  The same bits
 * for finite F (an infinite one gives NaN where k_scales gives ±inf).
 */
static __device__ __forceinline__ float
scale_perm(uint32_t w, int k, float f, float nf)
{
	return (fmaf(f, __int_as_float((int)__byte_perm(w, 0x4B000000u,
	    0x7440u | (unsigned)k)), nf));
}

/* k_scales (matvec_xq.cuh) by scale_perm: the same values */
static __device__ __forceinline__ void
k_scales_perm(uint4 hdr, int c, float a[2], float m[2])
{
	uint32_t sc, mn;

	k_scale_words(hdr, c, &sc, &mn);
	const int k = 2 * (c & 1);
	const float2 dm = __half22float2(*(const __half2 *)&hdr.x);
	const float nd = dm.x * -0x1p23f, nm = dm.y * -0x1p23f;
	a[0] = scale_perm(sc, k, dm.x, nd);
	a[1] = scale_perm(sc, k + 1, dm.x, nd);
	m[0] = scale_perm(mn, k, dm.y, nm);
	m[1] = scale_perm(mn, k + 1, dm.y, nm);
}

/*
 * Q4_K and Q5_K share everything but the fifth bit.  scales_row<PERM>:
 * the scales by k_scales_perm (PERM) or k_scales, the same values (finite
 * scales); the kernel takes the shorter form up to 8 columns and
 * k_scales at 16, where the kernel sits at its register cap and the
 * shorter form spilled (verify 16 16.18 -> 16.36 ms, docs/perf-log.md
 * session 16).
 */
template <int TYPE>
struct mmac_k {
	static constexpr int BB = qtraits<TYPE>::qb;
	static constexpr int QS = TYPE == RS_TYPE_Q5_K ? 768 : 256;

	/* lane (g, t)'s bytes of TILE (rs_tile.h): one slot a chunk */
	static __device__ __forceinline__ void
	load(const uint8_t *tile, int g, int t, mma_raw *w)
	{
		const int slot = 8 * t + g;

#pragma unroll
		for (int r = 0; r < 2; r++) {
			const uint4 hd = ld_weights((const uint4 *)tile + g +
			    8 * r);
			w->hd[r][0] = hd.x; w->hd[r][1] = hd.y;
			w->hd[r][2] = hd.z; w->hd[r][3] = hd.w;
		}
#pragma unroll
		for (int c = 0; c < 4; c++) {
			const uint4 q = ld_weights((const uint4 *)(tile + QS +
			    512 * c) + slot);
			w->q[0][c][0] = q.x; w->q[0][c][1] = q.y;
			w->q[1][c][0] = q.z; w->q[1][c][1] = q.w;
		}
		if (TYPE == RS_TYPE_Q5_K) {
			const uint4 h = ld_weights((const uint4 *)(tile + 256) +
			    slot);
			w->h[0][0][0] = h.x; w->h[0][0][1] = h.y;
			w->h[1][0][0] = h.z; w->h[1][0][1] = h.w;
		}
	}

	/* row R's A fragments of chunk C (both blocks) */
	static __device__ __forceinline__ void
	frags_row(const mma_raw &w, int c, int r, mma_chunk *k)
	{
#pragma unroll
		for (int i = 0; i < 2; i++) {
			uint32_t lo = w.q[r][c][i] & 0x0F0F0F0Fu;
			uint32_t hi = (w.q[r][c][i] >> 4) & 0x0F0F0F0Fu;
			if (TYPE == RS_TYPE_Q5_K) {
				lo |= ((w.h[r][0][i] >> (2 * c)) &
				    0x01010101u) << 4;
				hi |= ((w.h[r][0][i] >> (2 * c + 1)) &
				    0x01010101u) << 4;
			}
			/* a0/a2: row g, slots 4t.. / 16 + 4t..; a1/a3: row
			   g + 8 */
			k->a[0][r + 2 * i] = lo;
			k->a[1][r + 2 * i] = hi;
		}
	}

	/* row R's float factors F[blk][r][a, m] of chunk C (C may vary by
	   lane) */
	template <bool PERM>
	static __device__ __forceinline__ void
	scales_row(const mma_raw &w, int c, int r, float f[2][2][2])
	{
		float a[2], m[2];
		const uint4 hd = make_uint4(w.hd[r][0], w.hd[r][1], w.hd[r][2],
		    w.hd[r][3]);

		if (PERM)
			k_scales_perm(hd, c, a, m);
		else
			k_scales(hd, c, a, m);
		f[0][r][0] = a[0]; f[0][r][1] = m[0];
		f[1][r][0] = a[1]; f[1][r][1] = m[1];
	}

	static __device__ __forceinline__ void
	xblocks(int c, int xb[2])
	{
		xb[0] = 2 * c;
		xb[1] = 2 * c + 1;
	}
};

template <> struct mmac<RS_TYPE_Q4_K> : mmac_k<RS_TYPE_Q4_K> {};
template <> struct mmac<RS_TYPE_Q5_K> : mmac_k<RS_TYPE_Q5_K> {};

template <> struct mmac<RS_TYPE_Q6_K> {
	static __device__ __forceinline__ void
	load(const uint8_t *tile, int g, int t, mma_raw *w)
	{
		const int slot = 8 * t + g;

#pragma unroll
		for (int r = 0; r < 2; r++) {
			const uint4 hd = ld_weights((const uint4 *)tile + g +
			    8 * r);
			w->hd[r][0] = hd.x; w->hd[r][1] = hd.y;
			w->hd[r][2] = hd.z; w->hd[r][3] = hd.w;
			w->d[r] = half_to_float(__ldg((const unsigned short *)
			    (tile + 256) + g + 8 * r));
		}
#pragma unroll
		for (int c = 0; c < 4; c++) {
			const uint4 q = ld_weights((const uint4 *)(tile + 288 +
			    512 * c) + slot);
			w->q[0][c][0] = q.x; w->q[0][c][1] = q.y;
			w->q[1][c][0] = q.z; w->q[1][c][1] = q.w;
		}
#pragma unroll
		for (int hh = 0; hh < 2; hh++) {
			const uint4 h = ld_weights((const uint4 *)(tile + 2336 +
			    512 * hh) + slot);
			w->h[0][hh][0] = h.x; w->h[0][hh][1] = h.y;
			w->h[1][hh][0] = h.z; w->h[1][hh][1] = h.w;
		}
	}

	/* row R's A fragments of chunk C (both blocks) */
	static __device__ __forceinline__ void
	frags_row(const mma_raw &w, int c, int r, mma_chunk *k)
	{
		const int h = c >> 1, kk = c & 1;

#pragma unroll
		for (int half = 0; half < 2; half++) {
			const uint32_t ql = w.q[r][c][half];
			const uint32_t qh = w.h[r][h][half];
			k->a[0][2 * half + r] = q6_centre(ql & 0x0F0F0F0Fu,
			    ((qh >> (2 * kk)) & 0x03030303u) << 4);
			k->a[1][2 * half + r] = q6_centre((ql >> 4) &
			    0x0F0F0F0Fu, ((qh >> (2 * kk + 4)) & 0x03030303u) <<
			    4);
		}
	}

	/*
	 * Row R's float factors F[blk][r][half] of chunk C (C may vary by
	 * lane): d times the signed scale bytes s, s + 1 (low block) and
	 * s + 4, s + 5 (high), s = 8h + 2kk: bytes 2kk and 2kk + 1 of words
	 * 2h and 2h + 1 of the row's scales.  (PERM: mmac_k's; Q6_K has one
	 * form.)
	 */
	template <bool PERM>
	static __device__ __forceinline__ void
	scales_row(const mma_raw &w, int c, int r, float f[2][2][2])
	{
		const int h = c >> 1, sh = 16 * (c & 1);
		const uint32_t lw = h ? w.hd[r][2] : w.hd[r][0];
		const uint32_t hw = h ? w.hd[r][3] : w.hd[r][1];

		f[0][r][0] = w.d[r] * (float)(int8_t)(lw >> sh);
		f[0][r][1] = w.d[r] * (float)(int8_t)(lw >> (sh + 8));
		f[1][r][0] = w.d[r] * (float)(int8_t)(hw >> sh);
		f[1][r][1] = w.d[r] * (float)(int8_t)(hw >> (sh + 8));
	}

	static __device__ __forceinline__ void
	xblocks(int c, int xb[2])
	{
		xb[0] = 4 * (c >> 1) + (c & 1);
		xb[1] = 4 * (c >> 1) + (c & 1) + 2;
	}
};

/*
 * Chunk C of a super-block decoded into K: its A fragments and float
 * factors, row g's then row g + 8's, and its x-blocks.
 */
template <int TYPE, bool PERM>
static __device__ __forceinline__ void
mma_chunk_of(const mma_raw &w, int c, mma_chunk *k)
{
#pragma unroll
	for (int r = 0; r < 2; r++) {
		mmac<TYPE>::frags_row(w, c, r, k);
		mmac<TYPE>::template scales_row<PERM>(w, c, r, k->f);
	}
	mmac<TYPE>::xblocks(c, k->xb);
}

/*
 * Block BLK of the chunk against a quad of 4 columns, high and low bytes
 * side by side: B column j is plane j % 2 (high, low) of column j / 2, so
 * that lane (g, t) gets both planes of column t for rows g and g + 8 in
 * its own accumulators (C: rows g, g + 8 by B columns 2t, 2t + 1) and
 * P = 256·high + low needs no exchange.  BP: the lane's B bytes of the
 * block (plane g % 2 of column g / 2; 8t for Q4_K / Q5_K, 4t and 4t + 16
 * for Q6_K), MP: column t's meta of the block.  The two outputs' partial
 * sums P[0] (row g), P[1] (row g + 8).
 */
template <int TYPE>
static __device__ __forceinline__ void
mma_block_dot(const mma_chunk &k, int blk, const uint8_t *bp,
    const float2 *mp, float p[2])
{
	const float2 m = xq_ld(mp);
	int c[4] = { 0, 0, 0, 0 };

	if (TYPE == RS_TYPE_Q6_K) {
		int c1[4] = { 0, 0, 0, 0 };
		mma_k16(c, k.a[blk][0], k.a[blk][1],
		    xq_ld((const uint32_t *)bp));
		mma_k16(c1, k.a[blk][2], k.a[blk][3],
		    xq_ld((const uint32_t *)(bp + 16)));
#pragma unroll
		for (int r = 0; r < 2; r++)
			p[r] = xq_term_q6(p[r], k.f[blk][r][0], k.f[blk][r][1],
			    m.x, 256 * c[2 * r] + c[2 * r + 1],
			    256 * c1[2 * r] + c1[2 * r + 1]);
	} else {
		const uint2 h = xq_ld((const uint2 *)bp);
		mma_k32(c, k.a[blk], h.x, h.y);
#pragma unroll
		for (int r = 0; r < 2; r++)
			p[r] = xq_term_min(p[r], k.f[blk][r][0],
			    k.f[blk][r][1], m, 256 * c[2 * r] + c[2 * r + 1]);
	}
}

/*
 * One super-block BI of the warp's 16 rows against NT = 1 or 2 columns
 * (the decode step; two-token passes) whose blocks lie XS slots apart
 * (1: column after column; NT: a block-major batch of NT columns), into
 * P[i] (rows g, g + 8) for the chunks c = (t / NT)·NT + i that lane (g,
 * t) owns, of column t % NT.  The quad's B columns are x's columns q % NT
 * (q = 0..3), so lanes t and t + NT hold the same column's sums: where
 * the general loop has every lane add all four chunks' terms (and decode
 * all four chunks' scales) for its column, here lane t takes the mma
 * results of its NT chunks only, decodes their scales and loads their
 * metas: 1 / (4 / NT) of the float tail, the scales and the meta loads.
 * Each partial sum (row, column, chunk) gets the same terms in the same
 * order as in the general loop (low block, then high), so the same bits.
 * XB: the lane's B bytes of its column's block 0, XM: column t % NT's
 * meta of block 0 (rs_xq.h's slots).
 */
template <int TYPE, int NT, int XS>
static __device__ __forceinline__ void
mma_few_cols(const mma_raw &raw, int64_t bi, int t, const uint8_t *xb,
    const float2 *xm, float (*p)[2])
{
	/* the lane's chunks' integer sums: [i][blk][row][half] (Q4_K /
	   Q5_K: half 0) */
	int s[NT][2][2][2];
	const int c0 = t / NT * NT;

#pragma unroll
	for (int c = 0; c < 4; c++) {
		mma_chunk k;

#pragma unroll
		for (int r = 0; r < 2; r++)
			mmac<TYPE>::frags_row(raw, c, r, &k);
		mmac<TYPE>::xblocks(c, k.xb);
#pragma unroll
		for (int blk = 0; blk < 2; blk++) {
			const uint8_t *bp = xb + 32 * XS * (bi * 8 +
			    k.xb[blk]);
			int d0[4] = { 0, 0, 0, 0 }, d1[4] = { 0, 0, 0, 0 };

			if (TYPE == RS_TYPE_Q6_K) {
				mma_k16(d0, k.a[blk][0], k.a[blk][1],
				    xq_ld((const uint32_t *)bp));
				mma_k16(d1, k.a[blk][2], k.a[blk][3],
				    xq_ld((const uint32_t *)(bp + 16)));
			} else {
				const uint2 h = xq_ld((const uint2 *)bp);
				mma_k32(d0, k.a[blk], h.x, h.y);
			}
			if (c / NT == t / NT) {
#pragma unroll
				for (int r = 0; r < 2; r++) {
					s[c % NT][blk][r][0] = 256 * d0[2 * r] +
					    d0[2 * r + 1];
					s[c % NT][blk][r][1] = 256 * d1[2 * r] +
					    d1[2 * r + 1];
				}
			}
		}
	}
#pragma unroll
	for (int i = 0; i < NT; i++) {
		float f[2][2][2];
		int xbt[2];

#pragma unroll
		for (int r = 0; r < 2; r++)
			mmac<TYPE>::template scales_row<true>(raw, c0 + i, r,
			    f);
		mmac<TYPE>::xblocks(c0 + i, xbt);
#pragma unroll
		for (int blk = 0; blk < 2; blk++) {
			const float2 m = xq_ld(xm + XS * (bi * 8 +
			    xbt[blk]));
#pragma unroll
			for (int r = 0; r < 2; r++)
				p[i][r] = TYPE == RS_TYPE_Q6_K ?
				    xq_term_q6(p[i][r], f[blk][r][0],
				    f[blk][r][1], m.x, s[i][blk][r][0],
				    s[i][blk][r][1]) :
				    xq_term_min(p[i][r], f[blk][r][0],
				    f[blk][r][1], m, s[i][blk][r][0]);
		}
	}
}

#endif /* __CUDA_ARCH__ >= 800 */

/*
 * Y (+)= W·X for NT = 1..16 columns of XC (columns t0 .. t0 + NT − 1 of a
 * batch, rs_xq.h), for every part (W, Y) of PARTS, W Q4_K / Q5_K / Q6_K
 * rows of n_in values (a multiple of 256) in 16-row tiles (rs_tile.h).
 * Grid: one CTA of 8 / G warps per tile row of a part (mv_parts_grid).
 * MINB: CTAs an SM must fit (launch bounds: caps the registers), a tuning
 * knob like G.  XL: XC's layout (rs_xq.h) as the kernel knows it:
 *   XL_COLS   column after column, one quad of columns at most, the
 *             strides constants (one column, the decode step's products:
 *             3-6 % faster than with the strides read from XC,
 *             docs/perf-log.md session 22)
 *   XL_BM     block-major (more than one quad of columns needs it), the
 *             strides read from XC
 *   XL_BM_NT  block-major, exactly NT = 2..4 columns (NB = NT, T0 = 0),
 *             the strides constants (passes of 2-4 tokens: verify 2 / 4
 *             1.18 / 1.18x -> 1.06 / 1.15x a one-token pass, session 23)
 */
enum { XL_COLS, XL_BM, XL_BM_NT };

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
/* the kernel's work for the CTA's part PT */
template <int TYPE, int NT, int G, int MINB, int XL>
static __device__ __forceinline__ void
matvec_xq_mma_body(const mv_part &pt, int64_t n_in, const xq_in &xc)
{
	constexpr int	 NQ = (NT + 3) / 4;	/* quads of columns */
	constexpr int	 TB = RS_TILE_ROWS * qtraits<TYPE>::qb;
	/* the reduction's rounds take QR quads each (see its loop) */
	constexpr int	 QR = NQ < 2 ? NQ : 2;
	/* one or two columns at constant strides: mma_few_cols, NT sums a
	   lane and step, NT columns of red */
	constexpr bool	 FEW = NT <= 2 && XL != XL_BM;
	constexpr int	 RC = FEW ? NT : 4 * QR;
	__shared__ float red[RS_WARP][MMA_ROWS][RC];
	const uint8_t	*__restrict__ w = pt.w;
	float		*__restrict__ y = pt.y;
	const int64_t	 n_out = pt.n_out;
	const int64_t	 ldy = pt.ldy;
	const int	 accumulate = pt.acc;
	const int	 lane = threadIdx.x % RS_WARP;
	const int	 wi = threadIdx.x / RS_WARP, g = lane >> 2, t = lane & 3;
	static_assert(G == 1 || G == 2 || G == 4, "8 / G warps");
	static_assert(XL == XL_BM || NQ == 1, "x at constant strides: one "
	    "quad");
	static_assert(XL != XL_BM_NT || NT >= 2, "XL_BM_NT: two or more");
	constexpr int	 W = 8 / G;		/* warps */
	const int64_t	 o0 = pt.blk * MMA_ROWS;
	const int64_t	 nb = n_in / 256;
	const uint8_t	*__restrict__ xq = xc.p;
	/* the CTA's tile row (rs_tile.h; rows past n_out are zeros) */
	const uint8_t	*tiles = w + pt.blk * nb * TB;
	float		 p[NQ][4 * G][2];
	/*
	 * x: the lane's B bytes and column t's meta of block 0 for the
	 * first quad (XB0, XM0) and the last (XBL, XML); a block's slot
	 * (32 bits: MMA_MAX_IN) is added to them with one wide multiply-add
	 * a load.  The quads between lie 4 columns (128 B, 32 B of meta)
	 * apart in a block-major batch (rs_xq.h), which every launch of
	 * more than 4 columns takes (the launcher's check), so their loads
	 * share XB0 and XM0 at constant offsets; the last quad has its own
	 * pointers where its columns past NT read the last one again.
	 */
	constexpr bool	 FULL = NT % 4 == 0;
	const int	 lb = TYPE == RS_TYPE_Q6_K ? 4 * t : 8 * t;
	/* (XL_BM && xc.bm, though XL_BM implies xc.bm: the block-major
	   kernels keep the code they had when the strides came from xc
	   alone; taking them as known, ptxas allocated the registers of 8
	   and 16 columns differently, verify 8 and 16 +0.09 ms,
	   docs/perf-log.md session 22) */
	constexpr bool	 BMK = XL == XL_BM_NT;	/* block-major, known */
	const uint32_t	 xbs = XL == XL_BM && xc.bm ? xc.nb : BMK ? NT : 1;
	const int64_t	 xcs = (XL == XL_BM && xc.bm) || BMK ? 1 : n_in /
	    RS_XQ_BLOCK;
	/* the batch's columns and the launch's first */
	const int	 nbk = BMK ? NT : xc.nb, t0k = BMK ? 0 : xc.t0;
	const uint8_t	*xb0 = xq + (g & 1) * xc.nb * n_in +
	    32 * (xc.t0 + (g >> 1)) * xcs + lb;
	const float2	*xm0 = (const float2 *)(xq + 2 * xc.nb * n_in) +
	    (xc.t0 + t) * xcs;
	/* (the last quad's as 32-bit offsets from xq: as 64-bit pointers,
	   the first form, they made the decode step 9 % slower) */
	/* (FEW: a quad's columns q are x's q % NT, not the last past NT) */
	const int	 qb = FEW ? (g >> 1) % NT : min(4 * (NQ - 1) + (g >> 1),
	    NT - 1);
	const int	 qm = FEW ? t % NT : min(4 * (NQ - 1) + t, NT - 1);
	const uint32_t	 xbl = (uint32_t)((g & 1) * nbk * n_in + 32 *
	    (t0k + qb) * xcs + lb);
	const uint32_t	 xml = (uint32_t)(2 * nbk * n_in + 8 * (t0k + qm) *
	    xcs);

#pragma unroll
	for (int u = 0; u < NQ; u++)
#pragma unroll
		for (int c = 0; c < 4 * G; c++)
			p[u][c][0] = p[u][c][1] = 0.0f;
	rs_pdl_trigger();
	/* rounds of 8 super-blocks: step s takes group w + W·s */
	for (int64_t b0 = wi; b0 < nb; b0 += 8) {
#pragma unroll
		for (int st = 0; st < G; st++) {
			const int64_t bi = b0 + W * st;
			if (bi >= nb)
				break;
			mma_raw raw;
			mmac<TYPE>::load(tiles + bi * TB, g, t, &raw);
			/* launched early (mv_launch), the kernel reads x
			   only after the wait: the first weights are on
			   their way meanwhile */
			if (b0 == wi && st == 0)
				rs_pdl_wait();
			if constexpr (FEW) {
				mma_few_cols<TYPE, NT, BMK ? NT : 1>(raw, bi,
				    t, xq + xbl, (const float2 *)(xq + xml),
				    &p[0][NT * st]);
				continue;
			}
			const uint32_t s0 = (uint32_t)bi * 8 * xbs;
#pragma unroll
			for (int c = 0; c < 4; c++) {
				mma_chunk k;
				/* (the forms of mmac_k at 16 columns:
				   fewer registers, no spills) */
				mma_chunk_of<TYPE, NQ <= 2>(raw, c, &k);
#pragma unroll
				for (int blk = 0; blk < 2; blk++) {
					/* one quad (decode, 2-4 columns):
					   the addressing of the kernel before
					   the shared pointers, whose loop was
					   shorter there than either form */
					if constexpr (NQ == 1) {
						const int64_t b = (bi * 8 +
						    k.xb[blk]) * (int64_t)xbs;
						mma_block_dot<TYPE>(k, blk,
						    xq + xbl + 32 * b,
						    (const float2 *)(xq + xml) +
						    b, p[0][4 * st + c]);
						continue;
					}
					const uint32_t sl = s0 +
					    (uint32_t)k.xb[blk] * xbs;
					const uint8_t *bp = NQ <= 2 ?
					    (const uint8_t *)mad_wide<32>(sl,
					    xb0) : xb0 + (uint64_t)sl * 32;
					const float2 *mp = NQ <= 2 ?
					    (const float2 *)mad_wide<8>(sl,
					    xm0) : xm0 + sl;
#pragma unroll
					for (int u = 0; u < NQ; u++)
						mma_block_dot<TYPE>(k, blk,
						    u < NQ - 1 || FULL ?
						    bp + 128 * u : xq + xbl +
						    32 * (int64_t)sl,
						    u < NQ - 1 || FULL ?
						    mp + 4 * u : (const float2 *)
						    (xq + xml) + sl,
						    p[u][4 * st + c]);
				}
			}
		}
	}
	/* a warp without a super-block (w >= nb) waits here, before y */
	rs_pdl_wait();
	/*
	 * The 32 virtual lanes of every output, added in warp_sum's tree, QR
	 * quads a round: at 8 columns one round of 128 adding threads where
	 * a round a quad had 64 and twice the barriers, with 16 KB of shared
	 * memory at most (a round for all four quads of 16 columns would take
	 * 32 KB, at the L1's expense).
	 */
#pragma unroll
	for (int u0 = 0; u0 < NQ; u0 += QR) {
#pragma unroll
		for (int u = u0; u < u0 + QR && u < NQ; u++)
#pragma unroll
			for (int c = 0; c < (FEW ? NT * G : 4 * G); c++) {
				/* slot c: chunk c % 4 of group w + W·(c / 4);
				   FEW: chunk (t / NT)·NT + c % NT of group w +
				   W·(c / NT), column t % NT */
				const int v = FEW ? 4 * (wi + W * (c / NT)) +
				    t / NT * NT + c % NT :
				    4 * (wi + W * (c / 4)) + c % 4;
				const int col = FEW ? t % NT : 4 * (u - u0) + t;
				red[v][g][col] = p[u][c][0];
				red[v][g + 8][col] = p[u][c][1];
			}
		__syncthreads();
		for (int el = threadIdx.x; el < MMA_ROWS * RC;
		    el += blockDim.x) {
			const int row = el / RC, col = el % RC;
			const float s = xq_lanes_sum(red, row, col);
			const int64_t orow = o0 + row;
			const int tc = 4 * u0 + col;
			/* (8 columns may stand in for 5-7: xq_in.nw) */
			if (orow < n_out && tc < (NT == 8 ? xc.nw : NT)) {
				float *dst = y + tc * ldy + orow;
				*dst = accumulate ? *dst + s : s;
			}
		}
		if (u0 + QR < NQ)
			__syncthreads();	/* red is written again */
	}
}
#endif /* __CUDA_ARCH__ >= 800 */

template <int TYPE, int NT, int G, int MINB, int XL>
static __global__ void __launch_bounds__(8 / G * RS_WARP, MINB)
matvec_xq_mma_kernel(const mv_parts parts, int64_t n_in,
    const xq_in xc)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	matvec_xq_mma_body<TYPE, NT, G, MINB, XL>(mv_part_of(parts,
	    blockIdx.x), n_in, xc);
#else
	/* the host pass and archs before SM80: the launcher never picks
	   this kernel there */
	(void)parts; (void)n_in; (void)xc;
#ifdef __CUDA_ARCH__
	__trap();
#endif
#endif
}

/*
 * One launch for parts of two types TA and TB (a GDN layer's Q6_K qkv
 * beside its Q4_K gate, beta and alpha): each CTA runs its part's type,
 * the same code as matvec_xq_mma_kernel, so the same bits.
 */
template <int TA, int TB, int NT, int G, int MINB, int XL>
static __global__ void __launch_bounds__(8 / G * RS_WARP, MINB)
matvec_xq_mma_mix_kernel(const mv_parts parts, int64_t n_in,
    const xq_in xc)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	const mv_part pt = mv_part_of(parts, blockIdx.x);

	if (pt.type == TA)
		matvec_xq_mma_body<TA, NT, G, MINB, XL>(pt, n_in, xc);
	else
		matvec_xq_mma_body<TB, NT, G, MINB, XL>(pt, n_in, xc);
#else
	(void)parts; (void)n_in; (void)xc;
#ifdef __CUDA_ARCH__
	__trap();
#endif
#endif
}

#ifndef __CUDACC_RTC__
/*
 * Whether the mma kernels run here: their code on this device was built
 * for compute_80 or later (common.cuh: rs_runs_ptx; otherwise the dp4a
 * path).  Every instantiation is built for the same targets, so one
 * answers for all.
 */
static int
has_mma_matvec(void)
{
	static signed char known[RS_MAX_DEVICES];

	return (rs_runs_ptx(matvec_xq_mma_kernel<RS_TYPE_Q4_K, 2, 1, 1,
	    XL_COLS>,
	    80, known));
}
#endif

#endif /* RS_MATVEC_MMA_CUH */
