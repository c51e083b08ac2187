/*
 * rs_xq.h - activations quantized to 16-bit integers for the GPU's integer
 * matvec (kernels/xq.cu makes them, kernels/matvec_xq.cuh reads them).
 *
 * Why: a decode token is a product of 27B quantized weights with one
 * activation vector.  In f32 every weight costs a nibble extraction, a
 * conversion and an FMA, and the H200 ran out of instructions at a quarter
 * of its bandwidth (docs/perf-log.md).  With x as integers, four weights
 * meet four activation bytes in one dp4a.  8-bit activations (llama.cpp's
 * q8_1) would add ~0.5 % noise to every product; 16 bits split into two
 * signed bytes keep it near 1e-5 for two dp4a per four weights.
 *
 * A column of N values (N a multiple of 32) is cut into 32-value blocks.
 * Block b has the scale s = amax / V (V = RS_XQ_VMAX, amax = max |x| over
 * the block) and integers v[i] = rint(x[i] · (V / amax)), |v| <= V, so
 * that x̃[i] = s·v[i] approximates x[i] within s/2.  v = 256·hi + lo with
 * hi = (v + 128) >> 8 and lo = v − 256·hi, both signed bytes (lo in
 * −128..127, hi in −127..127: hence V = 127·256 + 127, not 32767).  Both
 * planes signed let one tensor-core product take a high and a low column
 * side by side (matvec_mma.cuh).
 *
 * A batch of NB columns (the tokens of a verification pass) takes
 * RS_XQ_BATCH_BYTES(N, NB) bytes (padded to 16, then RS_XQ_TAIL) in three
 * planes of NB·N/32 slots, block b of column t in slot s:
 *
 *   [0, NB·N)         hi: slot s at 32·s, 32 int8
 *   [NB·N, 2·NB·N)    lo: the same, NB·N further
 *   [2·NB·N, ...)     meta: slot s at 8·s, 2 floats: s and Σ x̃ over the
 *                     block (s times the exact integer Σ v, rounded once)
 *   then up to 15 bytes of padding and the RS_XQ_TAIL bytes, which
 *                     hold no value: a kernel may read them and
 *                     discard what it computes from them (an 8-column
 *                     tensor-core kernel running 5-7 columns reads up to
 *                     3 slots past the last: kernels/matvec.cu; a
 *                     plane's overrun lands in the
 *                     next plane, the meta plane's in the tail)
 *
 * column after column (s = t·N/32 + b), or block-major (BM: s = b·NB + t),
 * where the same block of every column lies side by side: a tensor-core
 * fragment of 4 columns then reads one 128-byte line per plane, not 4 (3-16
 * column products 5-35 % faster; two columns 3-16 %, a two-token pass 10 %
 * faster), while the one-row-per-warp dp4a kernel,
 * whose lanes read a column's blocks 64 bytes apart, would touch twice the
 * lines (two columns 36 % slower, four 50 %): docs/perf-log.md.  Which one a batch
 * uses is the GPU backend's choice (rs_k_xq_block_major).  One column is
 * hi[N], lo[N], meta[N/32] either way.
 *
 * The sum serves the formats whose values carry a minimum (Q4_K, Q5_K):
 * Σ (a·q − m)·x̃ = a·s·Σ q·v − m·Σ x̃.  A block whose amax is below
 * RS_XQ_MIN_AMAX (where V / amax would overflow) is all zeros (s = 0,
 * v = 0); a block holding a NaN or an infinity gets s = NaN and v = 0, so
 * that the fault reaches every output that reads it.
 */
#ifndef RS_XQ_H
#define RS_XQ_H

#include <stdint.h>

#define RS_XQ_BLOCK		32
#define RS_XQ_VMAX		32639	/* the largest |v|: 127·256 + 127 */
#define RS_XQ_MIN_AMAX		0x1p-100f
#define RS_XQ_META_BYTES	8	/* per block: s, Σ x̃ */
/* a column's bytes of data; a batch's bytes; one column's */
#define RS_XQ_DATA_BYTES(n)	\
	(2 * (int64_t)(n) + RS_XQ_META_BYTES * ((int64_t)(n) / 32))
#define RS_XQ_TAIL		32	/* >= 3 slots of meta */
#define RS_XQ_BATCH_BYTES(n, nb)	\
	(((RS_XQ_DATA_BYTES(n) * (int64_t)(nb) + 15) & ~(int64_t)15) + \
	RS_XQ_TAIL)
#define RS_XQ_COL_BYTES(n)	RS_XQ_BATCH_BYTES(n, 1)
/* block B of column T of a batch of NB columns of N values (BM: block-major) */
#define RS_XQ_SLOT(n, nb, bm, t, b)	((bm) ? \
	(int64_t)(b) * (nb) + (t) : (int64_t)(t) * ((n) / RS_XQ_BLOCK) + (b))
#define RS_XQ_HI_AT(n, nb, bm, t, b)	\
	(RS_XQ_SLOT(n, nb, bm, t, b) * RS_XQ_BLOCK)
#define RS_XQ_LO_AT(n, nb, bm, t, b)	\
	((int64_t)(nb) * (n) + RS_XQ_HI_AT(n, nb, bm, t, b))
#define RS_XQ_META_AT(n, nb, bm, t, b)	\
	(2 * (int64_t)(nb) * (n) + RS_XQ_SLOT(n, nb, bm, t, b) * \
	    RS_XQ_META_BYTES)

/* Quantize the N values of X (N a multiple of 32) into OUT. */
void	rs_xq_quantize(const float *x, int64_t n, uint8_t *out);

/* The NB columns of X (LDX apart) as one batch into OUT (BM: block-major). */
void	rs_xq_quantize_batch(const float *x, int64_t ldx, int64_t n, int nb,
	    int bm, uint8_t *out);

/* Column T of the batch XQ (NB columns of N values, BM) as one column. */
void	rs_xq_column(const uint8_t *xq, int64_t n, int nb, int bm, int t,
	    uint8_t *out);

/* x̃[i] of a quantized column XQ of N values. */
float	rs_xq_value(const uint8_t *xq, int64_t n, int64_t i);

/*
 * Oracle of the integer matvec: Σ_i w[i]·x̃[i] in double, W the N decoded
 * weights of one row.
 */
double	rs_xq_dot_ref(const float *w, const uint8_t *xq, int64_t n);

#endif /* RS_XQ_H */
