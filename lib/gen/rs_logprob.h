/*
 * rs_logprob.h - log-probabilities of tokens from one row of logits, for
 * OpenAI's "logprobs" (serving.md §4.3):
 *
 *   logprob(i) = l_i − m − ln Σ_j exp(l_j − m),   m = max_j l_j,
 *
 * the log-softmax of the N raw logits of one position (temperature 1;
 * before penalties, logit bias and the sampler's filters), in double,
 * over the tokens that can occur: a caller may leave some out (a SKIP
 * mask: tokens that are never produced, such as padding rows), which is
 * the same as giving them the logit −∞.
 * Subtracting the maximum keeps every exponent <= 0, so exp() cannot
 * overflow and the sum lies in [1, N]: its logarithm is exact to a few ulp
 * and a token far below the maximum keeps a finite, accurate logprob
 * (the difference l_i − m is formed directly, never exp() then log()).
 *
 * Alongside the chosen token it gives the K most likely tokens, sorted by
 * logit from the largest down, the lower id first on ties: the greedy
 * sampler's rule (rs_sample.h), so with temperature 0 the chosen token is
 * the first of the list and has its logprob.
 *
 * Pure functions of their arguments; no allocation; thread-safe.
 */
#ifndef RS_LOGPROB_H
#define RS_LOGPROB_H

#include <stdint.h>

#include "rs_err.h"

#define RS_LOGPROB_MAX_TOP	20	/* OpenAI's top_logprobs limit */

struct rs_logprob_top {
	int32_t	token;
	double	logprob;		/* natural log, <= 0 */
};

/* One output token: its logprob and the most likely alternatives. */
struct rs_logprob {
	int32_t			token;
	double			logprob;	/* natural log, <= 0 */
	int			n_top;		/* 0..RS_LOGPROB_MAX_TOP */
	struct rs_logprob_top	top[RS_LOGPROB_MAX_TOP];	/* (n_top)
					   largest first */
};

/*
 * Fill *OUT for token TOK from LOGITS (N values, the row that predicted
 * TOK), with the K most likely tokens (fewer when fewer can occur) in
 * OUT->top.  SKIP is NULL or N flags: a token whose flag is non-zero is
 * left out of the softmax and the list.  Costs one exp() per logit.
 * Fails with RS_ERR_INVALID_ARG, *OUT untouched, for N outside [1,
 * 2^31 − 1], TOK outside [0, N) or left out by SKIP, K outside [0,
 * RS_LOGPROB_MAX_TOP], or a logit that is not finite (NaN or infinite;
 * the message gives its index; skipped logits are not read).
 */
enum rs_status	rs_logprob_compute(const float *logits, int64_t n,
		    const unsigned char *skip, int32_t tok, int k,
		    struct rs_logprob *out, struct rs_err *err);

#endif /* RS_LOGPROB_H */
