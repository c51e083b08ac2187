/*
 * rs_spec.c - greedy speculative decoding with MTP drafts (rs_spec.h).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rs_spec.h"
#include "rs_state.h"

struct spec {
	struct rs_engine *e;
	struct rs_state	*st;
	int64_t		 d, v;		/* n_embd, n_vocab */
	int		 k;
	int		 mtp;		/* drafting with the MTP head */
	const struct rs_spec_opts *o;
	struct rs_top	*top;		/* (k + 1) each row's argmax
					   (rs_engine_*_top, k = 1) */
	float		*hidden;	/* (max(chunk, k + 1), d) */
	float		*h_in;		/* (max(chunk, k + 1), d) MTP inputs */
	float		*h_draft;	/* (d) */
	int32_t		*toks;		/* (k + 1) y0, d1..dk */
	int32_t		 chunk;		/* prefill tokens per call */
};

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6);
}

/*
 * MTP catch-up for TOKENS at POS..POS+N−1: row t pairs token t with the
 * trunk hidden state of the position before it, H_PREV for the first and
 * rows 0..N−2 of HIDDEN after (§6.2).
 */
static enum rs_status
catch_up(struct spec *s, const int32_t *tokens, int32_t n, int32_t pos,
    const float *h_prev, const float *hidden, struct rs_err *err)
{
	if (!s->mtp)
		return (RS_OK);
	memcpy(s->h_in, h_prev, (size_t)s->d * sizeof(float));
	memcpy(s->h_in + s->d, hidden, (size_t)((n - 1) * s->d) * sizeof(float));
	return (rs_engine_mtp_batch(s->e, s->st, tokens, n, pos, s->h_in, NULL,
	    NULL, err));
}

/* Prompt through the trunk and the MTP cache; leaves h* in H_PREV. */
static enum rs_status
prefill(struct spec *s, const int32_t *p, int32_t n, float *h_prev,
    struct rs_err *err)
{
	enum rs_status st;

	memset(h_prev, 0, (size_t)s->d * sizeof(float));  /* zeros at 0 */
	for (int32_t from = 0; from < n; from += s->chunk) {
		int32_t m = n - from < s->chunk ? n - from : s->chunk;
		int last = from + m == n;
		if ((st = last ? rs_engine_forward_top(s->e, s->st, p + from,
		    m, RS_LOGITS_LAST, 1, 0, s->top, s->hidden, err) :
		    rs_engine_forward(s->e, s->st, p + from, m, NULL,
		    RS_LOGITS_NONE, s->hidden, err)) != RS_OK ||
		    (st = catch_up(s, p + from, m, from, h_prev, s->hidden,
		    err)) != RS_OK)
			return (st);
		memcpy(h_prev, s->hidden + (int64_t)(m - 1) * s->d,
		    (size_t)s->d * sizeof(float));
	}
	return (RS_OK);
}

/*
 * Up to KK drafts after y0 = s->toks[0] at P (MTP: with h* = H_STAR) into
 * s->toks[1..]; their count into *N.
 */
static enum rs_status
draft(struct spec *s, int32_t p, const float *h_star, int kk, int *n,
    struct rs_err *err)
{
	const float	*h = h_star;
	enum rs_status	 st;

	if (!s->mtp) {
		*n = s->o->draft(s->o->draft_ctx, p, s->toks[0], s->toks + 1,
		    kk);
		*n = *n < 0 ? 0 : *n > kk ? kk : *n;
		return (RS_OK);
	}
	*n = kk;
	for (int i = 0; i < kk; i++) {
		if ((st = rs_engine_mtp_top(s->e, s->st, s->toks[i], p + i, h,
		    1, s->top, s->h_draft, err)) != RS_OK)
			return (st);
		s->toks[i + 1] = s->top[0].id;
		h = s->h_draft;
	}
	return (RS_OK);
}

static enum rs_status
check_args(const struct rs_engine *e, const struct rs_state *st,
    int32_t n_prompt, const struct rs_spec_opts *o, int32_t n_new,
    struct rs_err *err)
{
	const struct rs_model *m = rs_engine_model(e);
	const int k = o->k;

	if (o->draft == NULL && m->hp.n_nextn == 0)
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "the model has no MTP block to draft with"));
	if (k < 1 || k > 16 || n_prompt < 1 || n_new < 1)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "speculative decoding needs 1..16 drafts (got %d), a prompt "
		    "and tokens to generate", k));
	if (rs_state_pos(st) != 0)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "speculative decoding needs a fresh state"));
	if (rs_state_n_snap(st) < k + 1)
		return (rs_errf(err, RS_ERR_LIMIT,
		    "%d drafts need %d recurrent-state snapshots, the state "
		    "has %d", k, k + 1, rs_state_n_snap(st)));
	if ((int64_t)n_prompt + n_new + k > rs_state_n_ctx(st))
		return (rs_errf(err, RS_ERR_LIMIT,
		    "%d prompt tokens + %d new + %d drafts exceed the context "
		    "of %d", n_prompt, n_new, k, rs_state_n_ctx(st)));
	return (RS_OK);
}

/*
 * One round at P: draft, verify, accept, restore.  Returns through
 * *DRAFTED and *A the drafts proposed and accepted.
 */
static enum rs_status
spec_round(struct spec *s, int32_t p, float *h_star, int32_t *out,
    int32_t room, int32_t *emitted, int *drafted, int *a, struct rs_err *err)
{
	enum rs_status st;
	int32_t t;
	int	kk;

	if ((st = draft(s, p, h_star, s->k, &kk, err)) != RS_OK)
		return (st);
	*drafted = kk;
	/* the argmax of each row is all greedy acceptance reads */
	if ((st = rs_engine_forward_top(s->e, s->st, s->toks, kk + 1,
	    RS_LOGITS_ALL, 1, 0, s->top, s->hidden, err)) != RS_OK)
		return (st);
	*a = 0;
	*emitted = 0;
	for (int i = 0; i <= kk && *emitted < room; i++) {
		t = s->top[i].id;
		out[(*emitted)++] = t;
		if (i == kk || t != s->toks[i + 1])
			break;
		(*a)++;
	}
	/* keep y0, d1..da; redo their MTP entries with the trunk's states */
	if ((st = rs_engine_truncate(s->e, s->st, p + *a + 1, err)) != RS_OK ||
	    (st = catch_up(s, s->toks, *a + 1, p, h_star, s->hidden, err)) !=
	    RS_OK)
		return (st);
	memcpy(h_star, s->hidden + (int64_t)*a * s->d,
	    (size_t)s->d * sizeof(float));
	s->toks[0] = out[*emitted - 1];
	return (RS_OK);
}

enum rs_status
rs_spec_greedy(struct rs_engine *e, struct rs_state *st,
    const int32_t *prompt, int32_t n_prompt, const struct rs_spec_opts *o,
    int32_t n_new, int32_t *out, struct rs_spec_stats *stats,
    struct rs_err *err)
{
	const struct rs_model *m = rs_engine_model(e);
	const int	 k = o->k;
	struct spec	 s = { .e = e, .st = st, .d = m->hp.n_embd,
	    .v = m->hp.n_vocab, .k = k, .mtp = o->draft == NULL, .o = o };
	int32_t		 rows, gen = 0, p = n_prompt;
	float		*h_star = NULL;
	enum rs_status	 r;
	double		 t0 = now_ms();

	memset(stats, 0, sizeof(*stats));
	if ((r = check_args(e, st, n_prompt, o, n_new, err)) != RS_OK)
		return (r);
	s.chunk = rs_engine_max_batch(e);
	rows = s.chunk > k + 1 ? s.chunk : k + 1;
	s.top = malloc((size_t)(k + 1) * sizeof(*s.top));
	s.hidden = malloc((size_t)rows * s.d * sizeof(float));
	s.h_in = malloc((size_t)rows * s.d * sizeof(float));
	s.h_draft = malloc((size_t)s.d * sizeof(float));
	s.toks = malloc((size_t)(k + 1) * sizeof(int32_t));
	h_star = malloc((size_t)s.d * sizeof(float));
	if (!s.top || !s.hidden || !s.h_in || !s.h_draft ||
	    !s.toks || !h_star) {
		r = rs_errf(err, RS_ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((r = prefill(&s, prompt, n_prompt, h_star, err)) != RS_OK)
		goto out;
	out[gen++] = s.toks[0] = s.top[0].id;
	stats->prefill_ms = now_ms() - t0;
	t0 = now_ms();
	while (gen < n_new) {
		int32_t emitted;
		int	a, kk;

		if ((r = spec_round(&s, p, h_star, out + gen, n_new - gen,
		    &emitted, &kk, &a, err)) != RS_OK)
			goto out;
		stats->rounds++;
		stats->drafted += kk;
		stats->accepted += a;
		gen += emitted;
		p += a + 1;
	}
	stats->generated = gen;
	stats->decode_ms = now_ms() - t0;
out:
	free(s.top);
	free(s.hidden);
	free(s.h_in);
	free(s.h_draft);
	free(s.toks);
	free(h_star);
	return (r);
}
