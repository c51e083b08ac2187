/*
 * rs_logprob.c - log-softmax of one row of logits for the chosen token and
 * the top K (see rs_logprob.h).
 *
 * Two passes over the row (skipped tokens left out of both): the first
 * finds the maximum m, checks that every logit is finite and keeps the K
 * largest by insertion into a sorted list
 * (a logit that does not beat the list's last entry costs one comparison,
 * so the pass is O(N) in practice and O(N K) at worst, K <= 20); the
 * second sums exp(l_j − m) in double.  Then logprob(i) = (l_i − m) − ln sum.
 */
#include <math.h>
#include <stddef.h>

#include "rs_logprob.h"

/*
 * Insert I into TOP (*N of at most K entries, sorted by logit from the
 * largest down, lower id first on ties) if it belongs there.  Ids arrive in
 * increasing order, so an equal logit goes after the entries it ties with.
 */
static void
keep_top(const float *l, int32_t i, int32_t *top, int *n, int k)
{
	int	p;

	if (k == 0 || (*n == k && !(l[i] > l[top[k - 1]])))
		return;
	p = *n < k ? (*n)++ : k - 1;
	while (p > 0 && l[top[p - 1]] < l[i]) {
		top[p] = top[p - 1];
		p--;
	}
	top[p] = i;
}

enum rs_status
rs_logprob_compute(const float *logits, int64_t n, const unsigned char *skip,
    int32_t tok, int k, struct rs_logprob *out, struct rs_err *err)
{
	int32_t	top[RS_LOGPROB_MAX_TOP];
	double	m, sum = 0.0, lse;
	int	n_top = 0;

	if (n < 1 || n > INT32_MAX)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "logprob: %lld logits, "
		    "expected 1 to 2^31 - 1", (long long)n));
	if (tok < 0 || tok >= n)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "logprob: token %d "
		    "outside [0, %lld)", (int)tok, (long long)n));
	if (skip != NULL && skip[tok])
		return (rs_errf(err, RS_ERR_INVALID_ARG, "logprob: token %d "
		    "is left out of the softmax", (int)tok));
	if (k < 0 || k > RS_LOGPROB_MAX_TOP)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "logprob: top %d "
		    "outside [0, %d]", k, RS_LOGPROB_MAX_TOP));
	m = logits[tok];
	for (int64_t i = 0; i < n; i++) {
		if (skip != NULL && skip[i])
			continue;
		if (!isfinite(logits[i]))
			return (rs_errf(err, RS_ERR_INVALID_ARG, "logprob: "
			    "logit %lld is %g, not a finite number",
			    (long long)i, (double)logits[i]));
		if (logits[i] > m)
			m = logits[i];
		keep_top(logits, (int32_t)i, top, &n_top, k);
	}
	/* every term is in (0, 1] and the maximum's is 1: sum in [1, n] */
	for (int64_t i = 0; i < n; i++)
		if (skip == NULL || !skip[i])
			sum += exp((double)logits[i] - m);
	lse = log(sum);
	out->token = tok;
	out->logprob = ((double)logits[tok] - m) - lse;
	out->n_top = n_top;
	for (int j = 0; j < n_top; j++) {
		out->top[j].token = top[j];
		out->top[j].logprob = ((double)logits[top[j]] - m) - lse;
	}
	return (RS_OK);
}
