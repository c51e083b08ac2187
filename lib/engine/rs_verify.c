/*
 * rs_verify.c - greedy acceptance and the rollback check (see rs_verify.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rs_state.h"
#include "rs_time.h"
#include "rs_verify.h"

int32_t
rs_logits_argmax(const float *logits, int64_t n)
{
	int64_t best = 0;

	for (int64_t i = 1; i < n; i++)
		if (logits[i] > logits[best])
			best = i;
	return ((int32_t)best);
}

double
rs_logits_logprob(const float *logits, int64_t n, int32_t tok)
{
	double	mx = logits[0], sum = 0.0;

	for (int64_t i = 1; i < n; i++)
		if (logits[i] > mx)
			mx = logits[i];
	for (int64_t i = 0; i < n; i++)
		sum += exp((double)logits[i] - mx);
	return ((double)logits[tok] - mx - log(sum));
}

int32_t
rs_verify_accept(const int32_t *tokens, const int32_t *argmax, int32_t n,
    int32_t prefix)
{
	int32_t	j = 0;

	while (prefix + j < n && tokens[prefix + j] == argmax[prefix - 1 + j])
		j++;
	return (j);
}

/* ---- the rollback check ---- */

struct buffers {
	float	*lg_spec, *lg_seq;	/* (len, vocab) */
	float	*mtp_spec, *mtp_seq;	/* (len, vocab) or NULL */
	float	*hid;			/* (n + 1, embd): zeros, then rows */
	float	*h_prev, *h_cur;	/* (embd) */
	int32_t	*seq;			/* (len) the final sequence */
};

double
rs_verify_rel_err(const float *a, const float *ref, int64_t n)
{
	double	num = 0.0, den = 0.0;

	for (int64_t i = 0; i < n; i++) {
		double d = (double)a[i] - (double)ref[i];

		num += d * d;
		den += (double)ref[i] * (double)ref[i];
	}
	return (den > 0.0 ? sqrt(num / den) : sqrt(num));
}

static void
free_buffers(struct buffers *b)
{
	free(b->lg_spec);
	free(b->lg_seq);
	free(b->mtp_spec);
	free(b->mtp_seq);
	free(b->hid);
	free(b->h_prev);
	free(b->h_cur);
	free(b->seq);
}

static int
alloc_buffers(struct buffers *b, int64_t len, int64_t n, int64_t vocab,
    int64_t embd, int mtp)
{
	memset(b, 0, sizeof(*b));
	b->lg_spec = calloc((size_t)(len * vocab), sizeof(float));
	b->lg_seq = calloc((size_t)(len * vocab), sizeof(float));
	b->hid = calloc((size_t)((n + 1) * embd), sizeof(float));
	b->h_prev = calloc((size_t)embd, sizeof(float));
	b->h_cur = calloc((size_t)embd, sizeof(float));
	b->seq = calloc((size_t)len, sizeof(int32_t));
	if (mtp) {
		b->mtp_spec = calloc((size_t)(len * vocab), sizeof(float));
		b->mtp_seq = calloc((size_t)(len * vocab), sizeof(float));
	}
	return (b->lg_spec == NULL || b->lg_seq == NULL || b->hid == NULL ||
	    b->h_prev == NULL || b->h_cur == NULL || b->seq == NULL ||
	    (mtp && (b->mtp_spec == NULL || b->mtp_seq == NULL)) ? -1 : 0);
}

/*
 * Tokens FROM .. TO − 1 of TOKENS on ST in calls of at most STEP tokens:
 * logits of every row at LG (row FROM first), hidden rows at HID + embd
 * (row FROM first: HID keeps the zeros of position 0), then the MTP
 * catch-up over the same calls into MTP (row FROM first) when not NULL.
 */
static enum rs_status
run_calls(struct rs_engine *e, struct rs_state *st, const int32_t *tokens,
    int32_t from, int32_t to, int32_t step, float *lg, float *hid,
    float *mtp, struct rs_err *err)
{
	const int64_t	 vocab = rs_engine_model(e)->hp.n_vocab;
	const int64_t	 embd = rs_engine_model(e)->hp.n_embd;
	enum rs_status	 s;

	for (int32_t i = from; i < to; i += step) {
		int32_t c = to - i < step ? to - i : step;
		int64_t r = i - from;

		if ((s = rs_engine_forward(e, st, tokens + i, c, lg + r * vocab,
		    RS_LOGITS_ALL, hid + (i + 1) * embd, err)) != RS_OK)
			return (s);
		if (mtp != NULL && (s = rs_engine_mtp_batch(e, st, tokens + i, c,
		    i, hid + i * embd, mtp + r * vocab, NULL, err)) != RS_OK)
			return (s);
	}
	return (RS_OK);
}

/*
 * Steps 1-3 on state ST: verify, accept, truncate, continue.  Leaves the
 * final sequence in b->seq and its logits in b->lg_spec / b->mtp_spec.
 */
static enum rs_status
speculative(struct rs_engine *e, struct rs_state *st, const int32_t *tokens,
    int32_t n, int32_t prefix, int32_t extra, struct buffers *b,
    struct rs_rollback_check *rep, struct rs_err *err)
{
	const int64_t	 vocab = rs_engine_model(e)->hp.n_vocab;
	const int64_t	 embd = rs_engine_model(e)->hp.n_embd;
	int32_t		*amax, keep, next;
	enum rs_status	 s;
	double		 t0;

	/* hid row 0 stays zero: the MTP input of position 0 (§6.2) */
	if ((s = run_calls(e, st, tokens, 0, prefix, prefix, b->lg_spec,
	    b->hid, b->mtp_spec, err)) != RS_OK)
		return (s);
	t0 = rs_time_ms();
	if ((s = run_calls(e, st, tokens, prefix, n, RS_ENGINE_EXACT_MAX,
	    b->lg_spec + prefix * vocab, b->hid, b->mtp_spec == NULL ? NULL :
	    b->mtp_spec + prefix * vocab, err)) != RS_OK)
		return (s);
	rep->verify_ms = rs_time_ms() - t0;
	if ((amax = malloc((size_t)n * sizeof(*amax))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	for (int32_t i = 0; i < n; i++)
		amax[i] = rs_logits_argmax(b->lg_spec + i * vocab, vocab);
	rep->accepted = rs_verify_accept(tokens, amax, n, prefix);
	keep = prefix + rep->accepted;
	next = amax[keep - 1];
	free(amax);
	if ((s = rs_state_truncate(st, keep, err)) != RS_OK)
		return (s);
	memcpy(b->seq, tokens, (size_t)keep * sizeof(int32_t));
	memcpy(b->h_prev, b->hid + keep * embd, (size_t)embd * sizeof(float));
	for (int32_t i = 0; i < extra; i++) {
		int32_t	 p = keep + i;
		float	*lg = b->lg_spec + p * vocab;

		b->seq[p] = next;
		if ((s = rs_engine_forward(e, st, &next, 1, lg, RS_LOGITS_LAST,
		    b->h_cur, err)) != RS_OK)
			return (s);
		if (b->mtp_spec != NULL && (s = rs_engine_mtp(e, st, next, p,
		    b->h_prev, b->mtp_spec + p * vocab, NULL, err)) != RS_OK)
			return (s);
		memcpy(b->h_prev, b->h_cur, (size_t)embd * sizeof(float));
		next = rs_logits_argmax(lg, vocab);
	}
	return (RS_OK);
}

/*
 * Step 4 on a fresh state: the PREFIX first tokens of b->seq in one call
 * (b->hid is free again for its hidden rows), then the rest of the LEN
 * one at a time.
 */
static enum rs_status
sequential(struct rs_engine *e, struct rs_state *st, int32_t prefix,
    int32_t len, struct buffers *b, struct rs_err *err)
{
	const int64_t	 vocab = rs_engine_model(e)->hp.n_vocab;
	const int64_t	 embd = rs_engine_model(e)->hp.n_embd;
	enum rs_status	 s;

	memset(b->hid, 0, (size_t)embd * sizeof(float));
	if ((s = run_calls(e, st, b->seq, 0, prefix, prefix, b->lg_seq, b->hid,
	    b->mtp_seq, err)) != RS_OK)
		return (s);
	memcpy(b->h_prev, b->hid + prefix * embd, (size_t)embd * sizeof(float));
	for (int32_t p = prefix; p < len; p++) {
		if ((s = rs_engine_forward(e, st, &b->seq[p], 1,
		    b->lg_seq + p * vocab, RS_LOGITS_LAST, b->h_cur,
		    err)) != RS_OK)
			return (s);
		if (b->mtp_seq != NULL && (s = rs_engine_mtp(e, st, b->seq[p],
		    p, b->h_prev, b->mtp_seq + p * vocab, NULL, err)) != RS_OK)
			return (s);
		memcpy(b->h_prev, b->h_cur, (size_t)embd * sizeof(float));
	}
	return (RS_OK);
}

enum rs_status
rs_verify_check_rollback(struct rs_engine *e, const int32_t *tokens,
    int32_t n, int32_t prefix, int32_t extra, int32_t n_ctx,
    struct rs_rollback_check *rep, struct rs_err *err)
{
	const struct rs_model *m = rs_engine_model(e);
	const int64_t	 vocab = m->hp.n_vocab, embd = m->hp.n_embd;
	const int	 mtp = m->hp.n_nextn > 0;
	struct rs_state_opts so = { n_ctx, n - prefix + 1, 0 };
	struct rs_state	*spec = NULL, *seq = NULL;
	struct buffers	 b;
	enum rs_status	 s;
	int32_t		 len;
	double		 t0;

	if (prefix < 1 || prefix >= n)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "prefix %d must leave 1 to %d candidates", prefix, n - 1));
	if (extra < 0 || extra > 4096)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "extra tokens %d outside [0, 4096]", extra));
	memset(rep, 0, sizeof(*rep));
	rep->mtp_rel_err = -1.0;
	/* the longest the final sequence can be: all k accepted */
	len = n + extra;
	if ((s = rs_engine_state_new(e, &so, &spec, err)) != RS_OK)
		return (s);
	so.n_snap = 0;
	if ((s = rs_engine_state_new(e, &so, &seq, err)) != RS_OK) {
		rs_state_free(spec);
		return (s);
	}
	if (len > rs_state_n_ctx(spec)) {
		s = rs_errf(err, RS_ERR_LIMIT,
		    "%d tokens plus %d continued exceed the context of %d",
		    n, extra, rs_state_n_ctx(spec));
		goto out;
	}
	if (alloc_buffers(&b, len, n, vocab, embd, mtp) != 0) {
		free_buffers(&b);
		s = rs_errf(err, RS_ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((s = speculative(e, spec, tokens, n, prefix, extra, &b, rep,
	    err)) != RS_OK)
		goto done;
	len = prefix + rep->accepted + extra;
	t0 = rs_time_ms();
	if ((s = sequential(e, seq, prefix, len, &b, err)) != RS_OK)
		goto done;
	rep->sequential_ms = rs_time_ms() - t0;
	rep->n_compared = len;
	rep->rel_err = rs_verify_rel_err(b.lg_spec, b.lg_seq, len * vocab);
	if (mtp)
		rep->mtp_rel_err = rs_verify_rel_err(b.mtp_spec, b.mtp_seq,
		    len * vocab);
done:
	free_buffers(&b);
out:
	rs_state_free(seq);
	rs_state_free(spec);
	return (s);
}
