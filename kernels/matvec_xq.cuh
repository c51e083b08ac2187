/*
 * matvec_xq.cuh - the integer matvec's canonical order and its weight
 * decoders, for the formats of the Q4_K_M files: Q4_K, Q5_K, Q6_K.
 *
 * The kernels that read these (matvec.cu's one-row-per-warp dp4a kernel,
 * the tensor-core kernels for 2..16 columns of matvec_mma.cuh, SM80 on,
 * and matvec_884.cuh, Volta) must give the same bits for every output,
 * so that a verification pass equals token-by-token decoding.  Integer
 * sums are exact whoever computes them; what has to match is every float
 * operation and its order.  That order is defined here, once:
 *
 *   chunks     a row of N values is N/64 chunks of 64 values; chunk k is
 *              chunk c = k % 4 of super-block k / 4 and holds two 32-value
 *              x-blocks ("low" and "high", below per format)
 *   lanes      chunk k belongs to virtual lane k % 32, which sums its
 *              chunks in increasing k, starting from 0.0f, low block
 *              first, each block by xq_term_min or xq_term_q6
 *   reduction  the 32 lane sums are added as warp_sum adds them
 *              (xor 16, 8, 4, 2, 1) and lane 0's value is the output
 *              (xq_lanes_sum, for kernels that meet in shared memory)
 *
 * A block's term takes the exact integer sums of 256·hi and lo against
 * the block's quantized weights (P = 256·Σ q·hi + Σ q·lo = Σ q·v, which
 * fits in 32 bits: |q| < 64, |v| <= RS_XQ_VMAX, 32 values) and the
 * block's x meta (s, S = Σ x̃) of rs_xq.h:
 *
 *   Q4_K, Q5_K   w = a·q − m per 32-value sub-block:
 *                acc += a·(s·P);  acc −= m·S                (two fmaf)
 *   Q6_K         w = a·q' with q' = q − 32 (signed) per 16 values:
 *                acc += a0·(s·P0);  acc += a1·(s·P1)        (two fmaf)
 *
 * Chunk layouts (qwen35-model.md §7.3; the formulas of lib/model/rs_types.c):
 *   Q4_K, Q5_K  chunk c: qs bytes 32c .. 32c + 31; the low nibble of byte
 *               l is value l of sub-block 2c (the low block), the high
 *               nibble value l of sub-block 2c + 1; Q5_K adds bit 2c (low)
 *               or 2c + 1 (high) of qh[l] as bit 4.
 *   Q6_K        chunk c, h = c / 2, kk = c % 2: ql bytes 64h + 32kk + l
 *               and qh bytes 32h + l; the low nibble with qh bits 2kk..
 *               is value 128h + 32kk + l (low block, x-block 4h + kk), the
 *               high nibble with qh bits 2kk + 4.. value 128h + 64 + 32kk
 *               + l (high block, x-block 4h + kk + 2); the scales of the
 *               two 16-value halves are sc[8h + 2kk + {0, 1}] (low) and
 *               sc[8h + 2kk + {4, 5}] (high).
 * The kernels read these bytes from the 16-row tiles of rs_tile.h, where
 * each 4-byte word of a block keeps its place inside a 16-byte slot
 * (Q6_K's 2-byte aligned blocks included).
 */
#ifndef RS_MATVEC_XQ_CUH
#define RS_MATVEC_XQ_CUH

#include "common.cuh"
#include "quant.cuh"
#include "rs_kernels.h"

extern "C" {
#include "rs_xq.h"
}

/*
 * The products one launch of the integer kernels computes: up to
 * RS_K_MATVEC_MAX_PARTS weights of one type and width against the same x
 * (q, k and v; gate and up; a GDN layer's four input projections), each
 * into its own y.  CTAs first[i] .. first[i + 1] - 1 compute part i.  A part's
 * outputs are summed as in a launch of its own (the CTA's index inside
 * the part plays blockIdx.x), so grouping changes no bit; it saves the
 * gaps between launches and lets the small products (ssm_beta and
 * ssm_alpha: 48 rows, a few CTAs) run beside the large ones.
 */
struct mv_parts {
	const uint8_t	*w[RS_K_MATVEC_MAX_PARTS];
	float		*y[RS_K_MATVEC_MAX_PARTS];
	int64_t		 n_out[RS_K_MATVEC_MAX_PARTS];
	int64_t		 ldy[RS_K_MATVEC_MAX_PARTS];
	int		 acc[RS_K_MATVEC_MAX_PARTS];	/* add to y instead of storing */
	unsigned	 first[RS_K_MATVEC_MAX_PARTS + 1];
	int		 n;
	int		 type[RS_K_MATVEC_MAX_PARTS];	/* read by the mixed kernel */
};

/* One part as CTA B sees it; BLK: B's index inside the part. */
struct mv_part {
	const uint8_t	*w;
	float		*y;
	int64_t		 n_out, ldy, blk;
	int		 acc;
	int		 type;
};

/* (compile-time indices only: the parameters stay in the constant bank) */
static __device__ __forceinline__ mv_part
mv_part_of(const mv_parts &p, unsigned b)
{
	mv_part r = { p.w[0], p.y[0], p.n_out[0], p.ldy[0],
	    (int64_t)b, p.acc[0], p.type[0] };

#pragma unroll
	for (int j = 1; j < RS_K_MATVEC_MAX_PARTS; j++)
		if (j < p.n && b >= p.first[j]) {
			r.w = p.w[j];
			r.y = p.y[j];
			r.n_out = p.n_out[j];
			r.ldy = p.ldy[j];
			r.blk = (int64_t)(b - p.first[j]);
			r.acc = p.acc[j];
			r.type = p.type[j];
		}
	return (r);
}

/*
 * Fills P's first[] for CTAs of ROWS rows (a divisor or a multiple of a
 * tile row's 16: the CTAs cover whole tile rows, rs_tile.h); returns the
 * grid's size.
 */
static unsigned
mv_parts_grid(mv_parts *p, int64_t rows)
{
	unsigned n = 0;

	for (int i = 0; i < p->n; i++) {
		const int64_t padded = (p->n_out[i] + RS_TILE_ROWS - 1) /
		    RS_TILE_ROWS * RS_TILE_ROWS;
		p->first[i] = n;
		n += (unsigned)((padded + rows - 1) / rows);
	}
	p->first[p->n] = n;
	return (n);
}

/*
 * A launch's x: columns T0 .. T0 + NT − 1 of the batch of NB at P,
 * block-major if BM (rs_xq.h; rs_k_xq_block_major chose it for the
 * batch's producer).  NW of them are written: NT, or fewer where an
 * 8-column tensor-core kernel runs a launch of 5-7 (matvec.cu's go_xq).
 */
struct xq_in {
	const uint8_t	*p;
	int		 nb, t0, bm, nw;
};

/*
 * The same as the kernels address it: block b of the launch's column t is
 * slot s = b·bs + t·cs past the first column's block 0, its high bytes at
 * h + 32·s, its low bytes lo further, its meta at m + 8·s.
 */
struct xq_at {
	const uint8_t	*h, *m;
	int64_t		 lo, bs, cs;
};

static __device__ __forceinline__ xq_at
xq_at_of(const xq_in &x, int64_t n)
{
	xq_at a = { x.p + RS_XQ_HI_AT(n, x.nb, x.bm, x.t0, 0),
	    x.p + RS_XQ_META_AT(n, x.nb, x.bm, x.t0, 0), (int64_t)x.nb * n,
	    x.bm ? x.nb : 1, x.bm ? 1 : n / RS_XQ_BLOCK };

	return (a);
}

/*
 * Loads of x, the output of the kernel before: coherent (ld.global), never
 * __ldg.  Both kernels are launched early (PDL) and wait for x at
 * rs_pdl_wait; ptxas treats read-only loads (ld.global.nc) as if the data
 * never changed and moved them above the wait, so that the tensor-core
 * kernel read x before it was written (NaN logits; docs/perf-log.md
 * session 12).  Volatile, so that the compiler keeps them after the wait's
 * asm too.  The weights' 16-byte loads go through ld_weights (below),
 * their few narrower ones (Q6_K's scales) through __ldg.
 */
static __device__ __forceinline__ uint4
xq_ld(const uint4 *p)
{
	uint4 v;

	asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x),
	    "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
	return (v);
}

static __device__ __forceinline__ uint2
xq_ld(const uint2 *p)
{
	uint2 v;

	asm volatile("ld.global.v2.u32 {%0, %1}, [%2];" : "=r"(v.x),
	    "=r"(v.y) : "l"(p));
	return (v);
}

static __device__ __forceinline__ uint32_t
xq_ld(const uint32_t *p)
{
	uint32_t v;

	asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(p));
	return (v);
}

static __device__ __forceinline__ float2
xq_ld(const float2 *p)
{
	float2 v;

	asm volatile("ld.global.v2.f32 {%0, %1}, [%2];" : "=f"(v.x),
	    "=f"(v.y) : "l"(p));
	return (v);
}

/*
 * 16 bytes of weights, leaving no line in the L1: a product streams its
 * weights once, while x, which every warp of an SM reads, should stay
 * there.  (ncu, 16 columns on the tensor cores: x's loads hit the L1 54 %
 * of the time and their waits were 41 % of the stalls; with the weights
 * not allocated verify 8 and 16 took 4 % and 2.5 % less, decode 1 %,
 * docs/perf-log.md session 21.)  Non-coherent like __ldg, which is right
 * only because no kernel writes the weights.
 */
static __device__ __forceinline__ uint4
ld_weights(const uint4 *p)
{
	uint4 v;

	asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
	    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
	return (v);
}

/*
 * Q6_K's q − 32 for four 6-bit values q = LO + HI as signed bytes: LO holds
 * their low nibbles (bytes 0..15), HI their top two bits in place (bytes
 * 0, 16, 32 or 48).  q + 96 stays under 160, so no byte carries into the
 * next, and flipping bit 7 then subtracts 128 modulo 256: (q + 96) ^ 128 =
 * q − 32.  One three-way add and one logic op, where assembling q with an
 * OR and __vsub4 took four.
 */
static __device__ __forceinline__ uint32_t
q6_centre(uint32_t lo, uint32_t hi)
{
	return ((lo + hi + 0x60606060u) ^ 0x80808080u);
}

/* ---- the canonical float steps (every kernel calls these) ---- */

/*
 * The _f forms take P as the float (float)P, which the Volta tensor-core
 * kernel (matvec_884.cuh) forms in one fmaf; the integer forms convert
 * and call them: one code for every kernel's tail.
 */
static __device__ __forceinline__ float
xq_term_min_f(float acc, float a, float m, float2 meta, float p)
{
	acc = fmaf(a, __fmul_rn(meta.x, p), acc);
	return (fmaf(-m, meta.y, acc));
}

static __device__ __forceinline__ float
xq_term_q6_f(float acc, float a0, float a1, float s, float p0, float p1)
{
	acc = fmaf(a0, __fmul_rn(s, p0), acc);
	return (fmaf(a1, __fmul_rn(s, p1), acc));
}

static __device__ __forceinline__ float
xq_term_min(float acc, float a, float m, float2 meta, int p)
{
	return (xq_term_min_f(acc, a, m, meta, (float)p));
}

static __device__ __forceinline__ float
xq_term_q6(float acc, float a0, float a1, float s, int p0, int p1)
{
	return (xq_term_q6_f(acc, a0, a1, s, (float)p0, (float)p1));
}

/*
 * The order's reduction: output (ROW, COL)'s 32 virtual-lane sums, lane
 * v's in RED[v][ROW][COL] (a kernel's shared array), added as warp_sum
 * adds them (partners 16, 8, 4, 2, 1 apart; lane 0's value) by one thread
 * instead of a warp's shuffles.
 */
template <int ROWS, int COLS>
static __device__ __forceinline__ float
xq_lanes_sum(const float (&red)[RS_WARP][ROWS][COLS], int row, int col)
{
	float s[RS_WARP];

#pragma unroll
	for (int v = 0; v < RS_WARP; v++)
		s[v] = red[v][row][col];
	/* five rounds (log2 RS_WARP) of fixed trip counts, which nvcc's
	   front end unrolls itself (a loop over v < h it left to ptxas) */
#pragma unroll
	for (int lv = 0; lv < 5; lv++)
#pragma unroll
		for (int v = 0; v < RS_WARP / 2; v++)
			if (v < (RS_WARP / 2 >> lv))
				s[v] += s[v + (RS_WARP / 2 >> lv)];
	return (s[0]);
}

/* dp4a of unsigned bytes A with signed bytes B (PTX has the mixed form) */
static __device__ __forceinline__ int
dp4a_us(unsigned a, int b, int c)
{
	int d;

	asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b),
	    "r"(c));
	return (d);
}

/*
 * Q4_K / Q5_K scales: HDR is the 16-byte head (d, dmin, 12 packed bytes);
 * sub-blocks 2c and 2c + 1 get a = d·sc, m = dmin·mn.  The 6-bit fields
 * are unpacked four at a time in 32-bit words (sub-blocks 0..3 lie in the
 * low six bits of bytes 0..3 and 4..7; sub-blocks 4..7 combine a nibble of
 * bytes 8..11 with the top two bits of bytes 0..7).
 */
/* the 6-bit fields of chunk C's half of the sub-blocks: SC and MN hold
   four each, one a byte (bytes 2(c % 2), 2(c % 2) + 1 are the chunk's) */
static __device__ __forceinline__ void
k_scale_words(uint4 hdr, int c, uint32_t *sc, uint32_t *mn)
{
	const uint32_t s0 = hdr.y, s1 = hdr.z, s2 = hdr.w;

	if (c < 2) {
		*sc = s0 & 0x3F3F3F3Fu;
		*mn = s1 & 0x3F3F3F3Fu;
	} else {
		*sc = (s2 & 0x0F0F0F0Fu) | ((s0 >> 2) & 0x30303030u);
		*mn = ((s2 >> 4) & 0x0F0F0F0Fu) | ((s1 >> 2) & 0x30303030u);
	}
}

static __device__ __forceinline__ void
k_scales(uint4 hdr, int c, float a[2], float m[2])
{
	uint32_t sc, mn;

	k_scale_words(hdr, c, &sc, &mn);
	const int sh = 16 * (c & 1);
	float2 dm = __half22float2(*(const __half2 *)&hdr.x);
	a[0] = dm.x * (float)((sc >> sh) & 0xFF);
	a[1] = dm.x * (float)((sc >> (sh + 8)) & 0xFF);
	m[0] = dm.y * (float)((mn >> sh) & 0xFF);
	m[1] = dm.y * (float)((mn >> (sh + 8)) & 0xFF);
}

/* ---- one lane, one whole chunk (the dp4a kernel) ---- */

/*
 * A chunk as loaded: its 32 bytes of low bits (Q4_K/Q5_K qs, Q6_K ql) and
 * of high bits (Q5_K, Q6_K qh), and per block the float factors of its
 * term.  The values are unpacked per block where they are used
 * (xqc::unpack), which keeps loads in flight in fewer registers.
 */
struct xq_chunk {
	uint32_t	w[8];
	uint32_t	h[8];		/* Q4_K: unused */
	float		f[2][2];	/* [low/high] Q4/Q5: a, m;  Q6: a0, a1 */
	int		c;		/* chunk index in its super-block */
};

/*
 * Rows P and P + 8 of the 512-byte run RUN of a tile (rs_tile.h: a chunk's
 * quants, or Q5_K's qh): slots 8t + P (t = 0..3), each 8 bytes of row P,
 * then 8 of row P + 8, their words in order into W0 and W1.  The 8 lanes
 * that load one run for P = 0..7 read one 128-byte line per load.
 */
static __device__ __forceinline__ void
tile_qs_pair(const uint8_t *run, int p, uint32_t w0[8], uint32_t w1[8])
{
	const uint4 *q = (const uint4 *)run + p;

#pragma unroll
	for (int i = 0; i < 4; i++) {
		const uint4 v = ld_weights(q + 8 * i);
		w0[2 * i] = v.x; w0[2 * i + 1] = v.y;
		w1[2 * i] = v.z; w1[2 * i + 1] = v.w;
	}
}

/* Q4_K / Q5_K: the factors of chunk C of rows P and P + 8 from the heads */
static __device__ __forceinline__ void
tile_k_heads(const uint8_t *tile, int p, int c, xq_chunk *k0, xq_chunk *k1)
{
	xq_chunk *k[2] = { k0, k1 };

#pragma unroll
	for (int r = 0; r < 2; r++) {
		float a[2], m[2];
		k_scales(ld_weights((const uint4 *)tile + p + 8 * r), c, a,
		    m);
		k[r]->f[0][0] = a[0]; k[r]->f[0][1] = m[0];
		k[r]->f[1][0] = a[1]; k[r]->f[1][1] = m[1];
		k[r]->c = c;
	}
}

template <int TYPE> struct xqc;

template <> struct xqc<RS_TYPE_Q4_K> {
	/* chunk C of rows P and P + 8 of TILE (rs_tile.h) */
	static __device__ __forceinline__ void
	load_pair(const uint8_t *tile, int p, int c, xq_chunk *k0,
	    xq_chunk *k1)
	{
		tile_qs_pair(tile + 256 + 512 * c, p, k0->w, k1->w);
		tile_k_heads(tile, p, c, k0, k1);
	}

	/* the x-block of chunk C's block BLK inside the super-block */
	static __device__ __forceinline__ int
	xblock(int c, int blk)
	{
		return (2 * c + blk);
	}

	/*
	 * Block BLK's values, and its x-block inside the super-block.  The
	 * high block keeps its nibbles in place, 16·q (xq_block_term
	 * divides its exact sum by 16): one operation a word instead of a
	 * shift and a mask.
	 */
	static __device__ __forceinline__ int
	unpack(const xq_chunk &k, int blk, uint32_t q[8])
	{
#pragma unroll
		for (int i = 0; i < 8; i++)
			q[i] = k.w[i] & (blk ? 0xF0F0F0F0u : 0x0F0F0F0Fu);
		return (xblock(k.c, blk));
	}
};

template <> struct xqc<RS_TYPE_Q5_K> {
	static __device__ __forceinline__ void
	load_pair(const uint8_t *tile, int p, int c, xq_chunk *k0,
	    xq_chunk *k1)
	{
		tile_qs_pair(tile + 768 + 512 * c, p, k0->w, k1->w);
		tile_qs_pair(tile + 256, p, k0->h, k1->h);
		tile_k_heads(tile, p, c, k0, k1);
	}

	static __device__ __forceinline__ int
	xblock(int c, int blk)
	{
		return (2 * c + blk);
	}

	/* bit hb of each qh byte becomes bit 4: a rotation of the word */
	static __device__ __forceinline__ int
	unpack(const xq_chunk &k, int blk, uint32_t q[8])
	{
		const int hb = xblock(k.c, blk), rot = (4 - hb) & 31;
#pragma unroll
		for (int i = 0; i < 8; i++)
			q[i] = ((k.w[i] >> (4 * blk)) & 0x0F0F0F0Fu) |
			    (__funnelshift_l(k.h[i], k.h[i], rot) & 0x10101010u);
		return (hb);
	}
};

template <> struct xqc<RS_TYPE_Q6_K> {
	/*
	 * In the tile slot 8i + P holds row P's 4-byte words i and i + 4 (ql
	 * of chunk C, qh of its half), then row P + 8's: put back in place.
	 */
	static __device__ __forceinline__ void
	load_pair(const uint8_t *tile, int p, int c, xq_chunk *k0,
	    xq_chunk *k1)
	{
		const int h = c >> 1, kk = c & 1, s = 8 * h + 2 * kk;
		const uint4 *ql = (const uint4 *)(tile + 288 + 512 * c) + p;
		const uint4 *qh = (const uint4 *)(tile + 2336 + 512 * h) + p;

#pragma unroll
		for (int i = 0; i < 4; i++) {
			const uint4 l = ld_weights(ql + 8 * i);
			const uint4 q = ld_weights(qh + 8 * i);
			k0->w[i] = l.x; k0->w[i + 4] = l.y;
			k1->w[i] = l.z; k1->w[i + 4] = l.w;
			k0->h[i] = q.x; k0->h[i + 4] = q.y;
			k1->h[i] = q.z; k1->h[i + 4] = q.w;
		}
		xq_chunk *k[2] = { k0, k1 };
#pragma unroll
		for (int r = 0; r < 2; r++) {
			const int i = p + 8 * r;
			const float d = half_to_float(__ldg((const unsigned short *)
			    (tile + 256) + i));
			const int8_t *sc = (const int8_t *)tile + 16 * i;
			k[r]->f[0][0] = d * (float)__ldg(sc + s);
			k[r]->f[0][1] = d * (float)__ldg(sc + s + 1);
			k[r]->f[1][0] = d * (float)__ldg(sc + s + 4);
			k[r]->f[1][1] = d * (float)__ldg(sc + s + 5);
			k[r]->c = c;
		}
	}

	static __device__ __forceinline__ int
	xblock(int c, int blk)
	{
		return (4 * (c >> 1) + (c & 1) + 2 * blk);
	}

	/* q' = q − 32 as signed bytes */
	static __device__ __forceinline__ int
	unpack(const xq_chunk &k, int blk, uint32_t q[8])
	{
		const int kk = k.c & 1, rot = (4 - 2 * kk - 4 * blk) & 31;
#pragma unroll
		for (int i = 0; i < 8; i++)
			q[i] = q6_centre((k.w[i] >> (4 * blk)) & 0x0F0F0F0Fu,
			    __funnelshift_l(k.h[i], k.h[i], rot) & 0x30303030u);
		return (xblock(k.c, blk));
	}
};

/*
 * ACC plus one x-block's term of chunk K: block BLK's unpacked values Q
 * against the column's high and low bytes HI, LO and its META.
 */
template <int TYPE>
static __device__ __forceinline__ float
xq_block_term(float acc, const xq_chunk &k, int blk, const uint32_t q[8],
    const uint32_t hi[8], const uint32_t lo[8], float2 meta)
{
	if (TYPE == RS_TYPE_Q6_K) {
		int p[2];
#pragma unroll
		for (int g = 0; g < 2; g++) {
			int sh = 0, sl = 0;
#pragma unroll
			for (int i = 4 * g; i < 4 * g + 4; i++) {
				sh = __dp4a((int)q[i], (int)hi[i], sh);
				sl = __dp4a((int)q[i], (int)lo[i], sl);
			}
			p[g] = 256 * sh + sl;
		}
		return (xq_term_q6(acc, k.f[blk][0], k.f[blk][1], meta.x, p[0],
		    p[1]));
	}
	/* two chains a plane (integer sums: any order gives the same) */
	int sh[2] = { 0, 0 }, sl[2] = { 0, 0 };
#pragma unroll
	for (int i = 0; i < 8; i++) {
		sh[i % 2] = dp4a_us(q[i], (int)hi[i], sh[i % 2]);
		sl[i % 2] = dp4a_us(q[i], (int)lo[i], sl[i % 2]);
	}
	/* Q4_K's high block holds 16·q (xqc::unpack): |16·P| < 2^28, and
	   the shift divides exactly */
	int p = 256 * (sh[0] + sh[1]) + sl[0] + sl[1];
	if (TYPE == RS_TYPE_Q4_K && blk == 1)
		p >>= 4;
	return (xq_term_min(acc, k.f[blk][0], k.f[blk][1], meta, p));
}

/*
 * The x of x-block XB (its index in the column) of columns T0 .. T0 + N −
 * 1 (fewer past NT): high and low bytes and meta.  BS1: consecutive
 * blocks (xq_chunk_dot).
 */
template <int N, int NT, bool BS1 = false>
static __device__ __forceinline__ void
xq_block_x(const xq_at &x, int64_t xb, int t0, uint32_t (&hi)[N][8],
    uint32_t (&lo)[N][8], float2 (&meta)[N])
{
#pragma unroll
	for (int u = 0; u < N; u++) {
		if (t0 + u >= NT)
			break;
		const int64_t at = (BS1 ? xb : xb * x.bs) + (t0 + u) * x.cs;
		const uint4 *hp = (const uint4 *)(x.h + 32 * at);
		const uint4 *lp = (const uint4 *)(x.h + x.lo + 32 * at);
		const uint4 h0 = xq_ld(hp), h1 = xq_ld(hp + 1);
		const uint4 l0 = xq_ld(lp), l1 = xq_ld(lp + 1);

		meta[u] = xq_ld((const float2 *)x.m + at);
		hi[u][0] = h0.x; hi[u][1] = h0.y; hi[u][2] = h0.z;
		hi[u][3] = h0.w; hi[u][4] = h1.x; hi[u][5] = h1.y;
		hi[u][6] = h1.z; hi[u][7] = h1.w;
		lo[u][0] = l0.x; lo[u][1] = l0.y; lo[u][2] = l0.z;
		lo[u][3] = l0.w; lo[u][4] = l1.x; lo[u][5] = l1.y;
		lo[u][6] = l1.z; lo[u][7] = l1.w;
	}
}

/*
 * xq_chunk_dot for more than 4 columns: the rows' values unpacked once,
 * then x 4 columns at a time.  x of every column at once takes 18
 * registers a column, which spilled from 8 columns on (the sm_70 loop:
 * 60 local loads a step at 8 columns, 458 at 16).  Each ACC[r][t] gets
 * the same terms in the same order as there, so the same bits.
 */
template <int TYPE, int NT, int R>
static __device__ __forceinline__ void
xq_chunk_dot_wide(const xq_chunk (&k)[R], const xq_at &x, int64_t bi,
    float (&acc)[R][NT])
{
	constexpr int CG = 4;

#pragma unroll
	for (int blk = 0; blk < 2; blk++) {
		uint32_t q[R][8];
		int64_t xb = 0;

#pragma unroll
		for (int r = 0; r < R; r++)
			xb = bi * 8 + xqc<TYPE>::unpack(k[r], blk, q[r]);
#pragma unroll
		for (int t0 = 0; t0 < NT; t0 += CG) {
			uint32_t hi[CG][8], lo[CG][8];
			float2 meta[CG];

			xq_block_x<CG, NT>(x, xb, t0, hi, lo, meta);
#pragma unroll
			for (int r = 0; r < R; r++)
#pragma unroll
				for (int u = 0; u < CG; u++)
					if (t0 + u < NT)
						acc[r][t0 + u] =
						    xq_block_term<TYPE>(
						    acc[r][t0 + u], k[r], blk,
						    q[r], hi[u], lo[u],
						    meta[u]);
		}
	}
}

/*
 * ACC[r][t] plus the terms of chunk K[r] (chunk c of super-block BI of R
 * rows: the same x-blocks) against the NT quantized columns at X (N
 * values each): low block, then high block, in the
 * canonical form.  Each x-block is loaded once for the R rows (x is 2
 * bytes a value against the weights' 0.56-0.82), and once for all NT
 * columns before the rows' values are unpacked one row at a time, which
 * keeps fewer registers live (docs/perf-log.md).  BS1: X's blocks are
 * consecutive slots (x.bs is 1), which spares the decode kernel a
 * multiplication a block and keeps its addressing as it was before the
 * batch strides (session 8 in perf-log).
 */
template <int TYPE, int NT, int R, bool BS1>
static __device__ __forceinline__ void
xq_chunk_dot_narrow(const xq_chunk (&k)[R], const xq_at &x, int64_t bi,
    float (&acc)[R][NT])
{
#pragma unroll
	for (int blk = 0; blk < 2; blk++) {
		uint32_t hi[NT][8], lo[NT][8];
		float2 meta[NT];
		uint32_t q[8];
		const int64_t xb = bi * 8 + xqc<TYPE>::unpack(k[0], blk, q);

		/* the block's x for every column first, then row by row */
		xq_block_x<NT, NT, BS1>(x, xb, 0, hi, lo, meta);
#pragma unroll
		for (int r = 0; r < R; r++) {
			if (r > 0)
				(void)xqc<TYPE>::unpack(k[r], blk, q);
#pragma unroll
			for (int t = 0; t < NT; t++)
				acc[r][t] = xq_block_term<TYPE>(acc[r][t], k[r],
				    blk, q, hi[t], lo[t], meta[t]);
		}
	}
}

/* the terms of chunk K[r] into ACC[r][t]: _narrow up to 4 columns,
   _wide above */
template <int TYPE, int NT, int R, bool BS1 = false>
static __device__ __forceinline__ void
xq_chunk_dot(const xq_chunk (&k)[R], const xq_at &x, int64_t bi,
    float (&acc)[R][NT])
{
	if constexpr (NT > 4)
		xq_chunk_dot_wide<TYPE, NT, R>(k, x, bi, acc);
	else
		xq_chunk_dot_narrow<TYPE, NT, R, BS1>(k, x, bi, acc);
}

#endif /* RS_MATVEC_XQ_CUH */
