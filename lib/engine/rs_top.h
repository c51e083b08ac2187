/*
 * rs_top.h - the K best tokens of a row of logits: what greedy decoding
 * (K = 1) and a top-k sampler need from a row, in K·8 bytes instead of
 * n_vocab floats.
 *
 * Order: the larger logit first, the lower id on equal logits (rs_sample.h
 * breaks ties the same way), a total order, so the selection is a function
 * of the row alone.  Non-finite logits are never candidates: a row holding
 * one is an error (rs_engine.c's check), and −∞ would be a banned token.
 * Tokens flagged in a SKIP mask (a chat's control tokens, banned by its
 * sampler) are left out too, though still checked.
 * rs_top_select() is the host reference; the CUDA backend selects on the
 * GPU (kernels/top.cu, checked against it in tests/check_cuda.c "top").
 */
#ifndef RS_TOP_H
#define RS_TOP_H

#include <stdint.h>

/* The most candidates one row can ask for. */
#define RS_TOP_MAX	64

struct rs_top {
	int32_t	id;		/* token; −1 pads a row with fewer candidates */
	float	logit;		/* −∞ with id −1 */
};

/*
 * The K (1 .. RS_TOP_MAX) best of the N logits at X into OUT[0..K), best
 * first, leaving out token i where SKIP (NULL or N flags) has SKIP[i] != 0;
 * slots past the row's candidates get { −1, −∞ }.  Returns the index of
 * the first non-finite logit of the row (skipped or not), or −1 when all
 * are finite.
 */
int64_t		rs_top_select(const float *x, int64_t n, int32_t k,
		    const unsigned char *skip, struct rs_top *out);

#endif /* RS_TOP_H */
