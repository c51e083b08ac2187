/*
 * rs_rng.c - xoshiro256** and splitmix64 (see rs_rng.h).
 *
 *   xoshiro256**: out = rotl(s1 * 5, 7) * 9, then the xorshift/rotate state
 *   update below.  splitmix64: x += 0x9e3779b97f4a7c15, then two
 *   multiply-xorshift rounds (a bijection, so distinct counters give
 *   distinct words and never four zeros in a row).
 */
#include "rs_rng.h"

static uint64_t
rotl(uint64_t x, int k)
{
	return ((x << k) | (x >> (64 - k)));
}

static uint64_t
splitmix64(uint64_t *x)
{
	uint64_t	z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (z ^ (z >> 31));
}

void
rs_rng_seed(struct rs_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

uint64_t
rs_rng_next(struct rs_rng *r)
{
	uint64_t	*s = r->s;
	uint64_t	 out = rotl(s[1] * 5, 7) * 9;
	uint64_t	 t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return (out);
}

double
rs_rng_uniform(struct rs_rng *r)
{
	/* the top 53 bits scaled by 2^-53: every double k * 2^-53 equally likely */
	return ((double)(rs_rng_next(r) >> 11) * 0x1.0p-53);
}

uint64_t
rs_rng_below(struct rs_rng *r, uint64_t n)
{
	/* reject the last partial copy of [0, n) in [0, 2^64) */
	uint64_t	lim = -n % n;	/* 2^64 mod n */
	uint64_t	x;

	do
		x = rs_rng_next(r);
	while (x < lim);
	return (x % n);
}
