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
 * side by side (matvec_mma.cuh).  The column's bytes, RS_XQ_COL_BYTES(N)
 * of them (padded to 16 so that every column starts 16-byte aligned):
 *
 *   [0, N)            hi[i]    int8
 *   [N, 2N)           lo[i]    int8
 *   [2N, 2N + N/4)    meta[b]  2 floats per block: s and Σ x̃ over the
 *                              block (s times the exact integer Σ v,
 *                              rounded once)
 *   then up to 15 bytes of padding, which nothing reads
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
/* the bytes that carry data, and the column's stride */
#define RS_XQ_DATA_BYTES(n)	\
	(2 * (int64_t)(n) + RS_XQ_META_BYTES * ((int64_t)(n) / 32))
#define RS_XQ_COL_BYTES(n)	((RS_XQ_DATA_BYTES(n) + 15) & ~(int64_t)15)

/* Quantize the N values of X (N a multiple of 32) into OUT. */
void	rs_xq_quantize(const float *x, int64_t n, uint8_t *out);

/* x̃[i] of a quantized column XQ of N values. */
float	rs_xq_value(const uint8_t *xq, int64_t n, int64_t i);

/*
 * Oracle of the integer matvec: Σ_i w[i]·x̃[i] in double, W the N decoded
 * weights of one row.
 */
double	rs_xq_dot_ref(const float *w, const uint8_t *xq, int64_t n);

#endif /* RS_XQ_H */
