/*
 * rs_half.h - exact conversions between f32 and IEEE binary16 / bfloat16.
 *
 * Written with integer arithmetic so the result does not depend on the
 * compiler or on F16C: f16 -> f32 is exact, f32 -> f16 rounds to nearest even
 * (overflow to infinity, subnormals kept), f32 -> bf16 rounds to nearest even.
 */
#ifndef RS_HALF_H
#define RS_HALF_H

#include <stdint.h>
#include <string.h>

static inline float
rs_bits_f32(uint32_t u)
{
	float	f;

	memcpy(&f, &u, sizeof(f));
	return (f);
}

static inline uint32_t
rs_f32_bits(float f)
{
	uint32_t	u;

	memcpy(&u, &f, sizeof(u));
	return (u);
}

static inline float
rs_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;

	if (exp == 0x1f)		/* inf / nan */
		return (rs_bits_f32(sign | 0x7f800000u | (man << 13)));
	if (exp == 0) {
		if (man == 0)
			return (rs_bits_f32(sign));
		/* subnormal: man * 2^-24 */
		float v = (float)man * (1.0f / 16777216.0f);
		return (sign ? -v : v);
	}
	return (rs_bits_f32(sign | ((exp + 112) << 23) | (man << 13)));
}

static inline uint16_t
rs_f32_to_f16(float f)
{
	uint32_t u = rs_f32_bits(f);
	uint32_t sign = (u >> 16) & 0x8000;
	uint32_t aexp = (u >> 23) & 0xff, man = u & 0x7fffff;
	int32_t	 e;

	if (aexp == 0xff)		/* inf / nan (keep a quiet nan) */
		return ((uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0)));
	e = (int32_t)aexp - 127 + 15;
	if (e >= 0x1f)
		return ((uint16_t)(sign | 0x7c00));
	if (e <= 0) {
		/* subnormal or zero: shift the implicit-1 mantissa right */
		if (e < -10)
			return ((uint16_t)sign);
		man |= 0x800000;
		uint32_t shift = (uint32_t)(14 - e);
		uint32_t half = man >> shift;
		uint32_t rem = man & ((1u << shift) - 1);
		uint32_t mid = 1u << (shift - 1);
		if (rem > mid || (rem == mid && (half & 1)))
			half++;
		return ((uint16_t)(sign | half));
	}
	uint32_t h = ((uint32_t)e << 10) | (man >> 13);
	uint32_t rem = man & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
		h++;			/* may carry into the exponent: correct */
	return ((uint16_t)(sign | h));
}

static inline float
rs_bf16_to_f32(uint16_t b)
{
	return (rs_bits_f32((uint32_t)b << 16));
}

static inline uint16_t
rs_f32_to_bf16(float f)
{
	uint32_t u = rs_f32_bits(f);

	if ((u & 0x7fffffff) > 0x7f800000)	/* nan: keep it quiet */
		return ((uint16_t)((u >> 16) | 0x40));
	u += 0x7fff + ((u >> 16) & 1);
	return ((uint16_t)(u >> 16));
}

#endif /* RS_HALF_H */
