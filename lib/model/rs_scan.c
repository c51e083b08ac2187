/*
 * rs_scan.c - non-finite values in tensor data (see rs_scan.h).
 *
 * An IEEE value is NaN or ±Inf exactly when its exponent bits are all
 * ones: 0x7c00 in f16, 0x7f80 in bf16 (f32's upper half), which lets the
 * 16-bit formats be checked without converting them.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rs_blocks.h"
#include "rs_scan.h"
#include "rs_types.h"

/* Byte offsets of a block's f16 scales; n = 0: none we know of. */
struct scales {
	int	n;
	size_t	off[2];
};

static struct scales
block_scales(int type)
{
	struct scales s = { 0, { 0, 0 } };

	switch (type) {
	case RS_TYPE_Q4_0:
	case RS_TYPE_Q5_0:
	case RS_TYPE_Q8_0:
	case RS_TYPE_IQ4_NL:
	case RS_TYPE_IQ4_XS:
		s.n = 1;			/* d first */
		break;
	case RS_TYPE_Q4_1:
	case RS_TYPE_Q5_1:
	case RS_TYPE_Q8_1:
	case RS_TYPE_Q4_K:
	case RS_TYPE_Q5_K:
		s.n = 2;			/* d, then m / s / dmin */
		s.off[1] = 2;
		break;
	case RS_TYPE_Q2_K:
		s.n = 2;
		s.off[0] = offsetof(struct rs_block_q2_k, d);
		s.off[1] = offsetof(struct rs_block_q2_k, dmin);
		break;
	case RS_TYPE_Q3_K:
		s.n = 1;
		s.off[0] = offsetof(struct rs_block_q3_k, d);
		break;
	case RS_TYPE_Q6_K:
		s.n = 1;
		s.off[0] = offsetof(struct rs_block_q6_k, d);
		break;
	}
	return (s);
}

/* values rs_scan_f32's fast pass reads as one run of constant length */
#define F32_RUN	64

/*
 * Whether any of the N f32 values at X has an all-ones exponent, which is
 * exactly when (bits & 0x7f800000) + 0x00800000 carries into bit 31 (a
 * smaller exponent sums to at most 0x7f800000).  In runs of a constant
 * length, because gcc -O2 (its cheap cost model) vectorises those and
 * leaves a loop of unknown trip count scalar: a 1 MB logits row in the
 * cache took 24.6 µs here against 30.3 for the scalar loop the engine had
 * (an EPYC development machine, session 37); from memory both wait on it.
 */
static int
any_f32_nonfinite(const uint8_t *x, int64_t n)
{
	uint32_t acc = 0;
	int64_t	 i = 0;

	for (; i + F32_RUN <= n; i += F32_RUN) {
		uint32_t u[F32_RUN];

		memcpy(u, x + 4 * i, sizeof(u));
		for (int j = 0; j < F32_RUN; j++)
			acc |= (u[j] & 0x7f800000u) + 0x00800000u;
	}
	for (; i < n; i++) {
		uint32_t u;

		memcpy(&u, x + 4 * i, sizeof(u));
		acc |= (u & 0x7f800000u) + 0x00800000u;
	}
	return (acc >> 31 != 0);
}

int64_t
rs_scan_f32(const void *x, int64_t n)
{
	const uint8_t *p = x;

	if (n <= 0 || !any_f32_nonfinite(p, n))
		return (-1);
	for (int64_t i = 0; i < n; i++) {
		float f;

		memcpy(&f, p + 4 * i, sizeof(f));
		if (!isfinite(f))
			return (i);
	}
	return (-1);	/* not reached: the fast pass saw one */
}

/* A 16-bit value whose exponent is all ones: NaN if MAN bits are set. */
static const char *
kind16(uint16_t h, uint16_t man)
{
	return ((h & man) != 0 ? "nan" : (h & 0x8000) ? "-inf" : "inf");
}

enum rs_status
rs_scan_tensor(const struct rs_gguf_tensor *t, struct rs_err *err)
{
	const uint8_t	*p = t->data;
	uint16_t	 h;

	if (t->type == RS_TYPE_F32) {
		const int64_t i = rs_scan_f32(p, (int64_t)(t->nbytes / 4));
		float f;

		if (i < 0)
			return (RS_OK);
		memcpy(&f, p + 4 * i, 4);
		return (rs_errf(err, RS_ERR_FORMAT, "tensor '%s': element %lld "
		    "is %s", t->name, (long long)i, isnan(f) ? "nan" : f < 0 ?
		    "-inf" : "inf"));
	}
	if (t->type == RS_TYPE_F16 || t->type == RS_TYPE_BF16) {
		uint16_t exp = t->type == RS_TYPE_F16 ? 0x7c00 : 0x7f80;
		for (uint64_t i = 0; i < t->nbytes / 2; i++) {
			memcpy(&h, p + 2 * i, 2);
			if ((h & exp) == exp)
				return (rs_errf(err, RS_ERR_FORMAT,
				    "tensor '%s': element %llu is %s", t->name,
				    (unsigned long long)i, kind16(h,
				    (uint16_t)(0x7fff & ~exp))));
		}
		return (RS_OK);
	}

	const struct rs_type_traits *tt = rs_type_traits(t->type);
	struct scales	s = block_scales(t->type);

	if (tt == NULL || s.n == 0)
		return (RS_OK);
	for (uint64_t b = 0; b < t->nbytes / (uint64_t)tt->block_bytes; b++)
		for (int k = 0; k < s.n; k++) {
			memcpy(&h, p + b * (uint64_t)tt->block_bytes + s.off[k],
			    2);
			if ((h & 0x7c00) == 0x7c00)
				return (rs_errf(err, RS_ERR_FORMAT,
				    "tensor '%s': block %llu has a%s scale "
				    "(%s)", t->name, (unsigned long long)b,
				    (h & 0x3ff) ? " nan" : "n infinite",
				    k == 0 ? "d" : "min"));
		}
	return (RS_OK);
}
