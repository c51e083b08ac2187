/*
 * rs_cpu_vec.h - 4-lane f32 vectors for the fast CPU paths (internal).
 *
 * GCC/Clang vector extensions of 16 bytes: one SSE register on x86-64
 * (baseline, no -march needed), one NEON register on arm64; wider vectors
 * get split through memory by GCC without AVX, which costs more than it
 * saves.  Lane-wise operations are ordinary IEEE f32 operations, so a vector
 * loop gives the same bits as the scalar loop that keeps one partial sum per
 * lane; only the helpers that combine lanes fix an order.  Loads and stores
 * go through memcpy (no alignment assumption).
 */
#ifndef RS_CPU_VEC_H
#define RS_CPU_VEC_H

#include <stdint.h>
#include <string.h>

#define RS_VEC	4

typedef float		rs_v4f __attribute__((vector_size(16)));
typedef uint32_t	rs_v4u __attribute__((vector_size(16)));
typedef int32_t		rs_v4i __attribute__((vector_size(16)));
typedef uint16_t	rs_v4h __attribute__((vector_size(8)));

static inline rs_v4f
rs_vec_load(const float *p)
{
	rs_v4f	v;

	memcpy(&v, p, sizeof(v));
	return (v);
}

static inline void
rs_vec_store(float *p, rs_v4f v)
{
	memcpy(p, &v, sizeof(v));
}

static inline rs_v4f
rs_vec_splat(float x)
{
	return ((rs_v4f){ x, x, x, x });
}

/* Σ of the 8 lanes of (A, B) as ((a0 + b0) + (a2 + b2)) + ((a1 + b1) +
 * (a3 + b3)): the one order used to finish every 8-way dot product. */
static inline float
rs_vec_hsum2(rs_v4f a, rs_v4f b)
{
	rs_v4f	s = a + b;

	return ((s[0] + s[2]) + (s[1] + s[3]));
}

/*
 * Four IEEE binary16 values to f32, exactly and without branches or
 * subnormal f32 arithmetic (which costs a microcode assist per operation
 * on x86).  Normal numbers: shift exponent and mantissa into place and add
 * the exponent bias difference 127 − 15 = 112; exponent 31 (inf, nan) gets
 * it twice, landing on 255.  Subnormals (exponent 0, zero included) are
 * mantissa · 2^−24, converted from integer.  Lanes are picked by masks.
 */
static inline rs_v4f
rs_vec_from_f16(const uint16_t *p)
{
	rs_v4h	h;
	rs_v4u	u, e, bits, special, sub, tiny;

	memcpy(&h, p, sizeof(h));
	u = __builtin_convertvector(h, rs_v4u);
	e = u & 0x7c00u;
	special = (rs_v4u)((rs_v4i)e == 0x7c00);
	tiny = (rs_v4u)((rs_v4i)e == 0);
	bits = ((u & 0x7fffu) << 13) + (112u << 23);
	bits += special & (112u << 23);
	sub = (rs_v4u)(__builtin_convertvector((rs_v4i)(u & 0x3ffu), rs_v4f) *
	    rs_vec_splat(0x1p-24f));
	bits = (tiny & sub) | (~tiny & bits);
	return ((rs_v4f)(bits | ((u & 0x8000u) << 16)));
}

#endif /* RS_CPU_VEC_H */
