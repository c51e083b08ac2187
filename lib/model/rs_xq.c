/*
 * rs_xq.c - the CPU side of the 16-bit activation format (rs_xq.h): the
 * oracle of kernels/xq.cu, bit for bit, and of the integer matvec.
 */
#include <math.h>
#include <string.h>

#include "rs_xq.h"

/* block B of X, column T of a batch of NB (BM: block-major) at OUT */
static void
quantize_block(const float *x, int64_t n, int nb, int bm, int t, int64_t b,
    uint8_t *out)
{
	int8_t	*hi = (int8_t *)out + RS_XQ_HI_AT(n, nb, bm, t, b);
	int8_t	*lo = (int8_t *)out + RS_XQ_LO_AT(n, nb, bm, t, b);
	float	 meta[2];
	float	 amax = 0.0f;
	int	 finite = 1;
	int32_t	 sum = 0;

	x += RS_XQ_BLOCK * b;
	for (int i = 0; i < RS_XQ_BLOCK; i++) {
		finite &= isfinite(x[i]) != 0;
		amax = fmaxf(amax, fabsf(x[i]));
	}
	/* the kernel computes these in the same f32 operations */
	int	 zero = !finite || amax < RS_XQ_MIN_AMAX;
	float	 inv = (float)RS_XQ_VMAX / amax;
	float	 s = !finite ? NAN : zero ? 0.0f : amax / (float)RS_XQ_VMAX;
	for (int i = 0; i < RS_XQ_BLOCK; i++) {
		int32_t v = zero ? 0 : (int32_t)lrintf(x[i] * inv);
		hi[i] = (int8_t)((v + 128) >> 8);
		lo[i] = (int8_t)(v - 256 * hi[i]);
		sum += v;
	}
	meta[0] = s;
	meta[1] = s * (float)sum;
	memcpy(out + RS_XQ_META_AT(n, nb, bm, t, b), meta, sizeof(meta));
}

void
rs_xq_quantize(const float *x, int64_t n, uint8_t *out)
{
	rs_xq_quantize_batch(x, n, n, 1, 0, out);
}

void
rs_xq_quantize_batch(const float *x, int64_t ldx, int64_t n, int nb, int bm,
    uint8_t *out)
{
	for (int t = 0; t < nb; t++)
		for (int64_t b = 0; b < n / RS_XQ_BLOCK; b++)
			quantize_block(x + t * ldx, n, nb, bm, t, b, out);
}

void
rs_xq_column(const uint8_t *xq, int64_t n, int nb, int bm, int t,
    uint8_t *out)
{
	for (int64_t b = 0; b < n / RS_XQ_BLOCK; b++) {
		memcpy(out + RS_XQ_HI_AT(n, 1, 0, 0, b),
		    xq + RS_XQ_HI_AT(n, nb, bm, t, b), RS_XQ_BLOCK);
		memcpy(out + RS_XQ_LO_AT(n, 1, 0, 0, b),
		    xq + RS_XQ_LO_AT(n, nb, bm, t, b), RS_XQ_BLOCK);
		memcpy(out + RS_XQ_META_AT(n, 1, 0, 0, b),
		    xq + RS_XQ_META_AT(n, nb, bm, t, b), RS_XQ_META_BYTES);
	}
}

float
rs_xq_value(const uint8_t *xq, int64_t n, int64_t i)
{
	const int8_t	*q = (const int8_t *)xq;
	int32_t	 v = 256 * (int32_t)q[i] + q[n + i];
	float	s;

	memcpy(&s, xq + 2 * n + RS_XQ_META_BYTES * (i / RS_XQ_BLOCK),
	    sizeof(s));
	return (s * (float)v);
}

double
rs_xq_dot_ref(const float *w, const uint8_t *xq, int64_t n)
{
	double acc = 0.0;

	for (int64_t i = 0; i < n; i++)
		acc += (double)w[i] * (double)rs_xq_value(xq, n, i);
	return (acc);
}
