/*
 * rs_rng.h - the one pseudo-random generator of the library: xoshiro256**
 * (Blackman and Vigna, 2018), seeded from a 64-bit seed through splitmix64.
 *
 * Why this one: 256 bits of state, period 2^256 - 1, passes BigCrush, a few
 * shifts and rotations per output, and the same sequence on every platform
 * and compiler, so a request's seed reproduces its output anywhere.  The
 * state is plain data in a caller-owned struct: copying it snapshots the
 * stream (a speculative step can copy and restore it).  Not cryptographic.
 */
#ifndef RS_RNG_H
#define RS_RNG_H

#include <stdint.h>

struct rs_rng {
	uint64_t	s[4];	/* never all zero (splitmix64 guarantees it) */
};

/*
 * Fill the state with four successive splitmix64 outputs of SEED, so that
 * nearby seeds (0, 1, 2, ...) still give unrelated streams.
 */
void		rs_rng_seed(struct rs_rng *r, uint64_t seed);
/* Next 64 uniformly distributed bits. */
uint64_t	rs_rng_next(struct rs_rng *r);
/* Uniform double in [0, 1) with 53 random bits (top bits of one output). */
double		rs_rng_uniform(struct rs_rng *r);
/* Uniform integer in [0, N) for N >= 1, without modulo bias (rejection). */
uint64_t	rs_rng_below(struct rs_rng *r, uint64_t n);

#endif /* RS_RNG_H */
