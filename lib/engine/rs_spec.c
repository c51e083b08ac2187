/*
 * rs_spec.c - greedy speculative decoding with any drafter (rs_spec.h).
 */
#include <stdlib.h>
#include <string.h>

#include "rs_spec.h"
#include "rs_state.h"
#include "rs_time.h"

struct spec {
	struct rs_engine	*e;
	struct rs_state		*st;
	struct rs_drafter	*d;		/* NULL: plain */
	int64_t			 dim;		/* n_embd */
	int			 k;		/* k_max, 0 when plain */
	struct rs_top		*top;		/* (k + 1) each row's argmax
						   (rs_engine_forward_top,
						   k = 1) */
	float			*hidden;	/* (max(chunk, k + 1), dim) or
						   NULL when not wanted */
	int32_t			*toks;		/* (k + 1) y0, d1..dk */
	int32_t			 chunk;		/* prefill tokens per call */
};

/* The prompt through the trunk, each chunk shown to the drafter. */
static enum rs_status
prefill(struct spec *s, const int32_t *p, int32_t n, struct rs_err *err)
{
	enum rs_status st;

	for (int32_t from = 0; from < n; from += s->chunk) {
		int32_t m = n - from < s->chunk ? n - from : s->chunk;
		int last = from + m == n;
		if ((st = last ? rs_engine_forward_top(s->e, s->st, p + from,
		    m, RS_LOGITS_LAST, 1, 0, s->top, s->hidden, err) :
		    rs_engine_forward(s->e, s->st, p + from, m, NULL,
		    RS_LOGITS_NONE, s->hidden, err)) != RS_OK)
			return (st);
		if (s->d != NULL && (st = rs_drafter_observe(s->d, s->st,
		    p + from, m, from, s->hidden, err)) != RS_OK)
			return (st);
	}
	return (RS_OK);
}

static enum rs_status
check_args(const struct rs_state *st, int32_t n_prompt, int k, int32_t n_new,
    struct rs_err *err)
{
	if (n_prompt < 1 || n_new < 1)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "speculative decoding "
		    "needs a prompt (got %d tokens) and tokens to generate "
		    "(got %d)", n_prompt, n_new));
	if (rs_state_pos(st) != 0)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "speculative decoding needs a fresh state"));
	if (k > 0 && rs_state_n_snap(st) < k + 1)
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
 * One round at P with y0 = s->toks[0]: draft (at most MAX), verify,
 * accept, restore.  OUT receives the round's tokens (at most ROOM); the
 * time of the pass and the rollback is added to *VERIFY_MS.
 */
static enum rs_status
spec_round(struct spec *s, const int32_t *prompt, int32_t n_prompt,
    int32_t *gen_out, int32_t gen, int32_t room, int32_t *emitted,
    int *drafted, int *a, double *verify_ms, struct rs_err *err)
{
	const int32_t	 p = rs_state_pos(s->st);
	int32_t		*out = gen_out + gen, t;
	enum rs_status	 st;
	double		 t0;
	int		 kk = 0, max = room - 1 < s->k ? room - 1 : s->k;

	if (s->d != NULL && max > 0 && (st = rs_drafter_propose(s->d, s->st,
	    s->toks[0], prompt, n_prompt, gen_out, gen, max, s->toks + 1, &kk,
	    err)) != RS_OK)
		return (st);
	*drafted = kk;
	t0 = rs_time_ms();
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
	/* keep y0, d1..da */
	if (*a < kk && (st = rs_engine_truncate(s->e, s->st, p + *a + 1,
	    err)) != RS_OK)
		return (st);
	*verify_ms += rs_time_ms() - t0;
	if (s->d != NULL) {
		if ((st = rs_drafter_observe(s->d, s->st, s->toks, *a + 1, p,
		    s->hidden, err)) != RS_OK)
			return (st);
		rs_drafter_result(s->d, kk, *a, 1);
	}
	s->toks[0] = out[*emitted - 1];
	return (RS_OK);
}

enum rs_status
rs_spec_greedy(struct rs_engine *e, struct rs_state *st, struct rs_drafter *d,
    const int32_t *prompt, int32_t n_prompt, int32_t n_new, int32_t *out,
    struct rs_spec_stats *stats, struct rs_err *err)
{
	const struct rs_model *m = rs_engine_model(e);
	struct spec	 s = { .e = e, .st = st, .d = d, .dim = m->hp.n_embd };
	struct rs_drafter_stats ds;
	int32_t		 rows, gen = 0;
	enum rs_status	 r;
	double		 t0 = rs_time_ms(), pre;

	memset(stats, 0, sizeof(*stats));
	if (d != NULL && rs_drafter_kind(d) == RS_DRAFTER_NONE)
		s.d = NULL;
	s.k = s.d != NULL ? rs_drafter_k_max(d) : 0;
	if ((r = check_args(st, n_prompt, s.k, n_new, err)) != RS_OK)
		return (r);
	s.chunk = rs_engine_max_batch(e);
	rows = s.chunk > s.k + 1 ? s.chunk : s.k + 1;
	s.top = malloc((size_t)(s.k + 1) * sizeof(*s.top));
	s.toks = malloc((size_t)(s.k + 1) * sizeof(int32_t));
	if (s.d != NULL && rs_drafter_wants_hidden(s.d))
		s.hidden = malloc((size_t)rows * s.dim * sizeof(float));
	if (!s.top || !s.toks || (s.d != NULL &&
	    rs_drafter_wants_hidden(s.d) && !s.hidden)) {
		r = rs_errf(err, RS_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (s.d != NULL)
		rs_drafter_begin(s.d, st);
	if ((r = prefill(&s, prompt, n_prompt, err)) != RS_OK)
		goto out;
	out[gen++] = s.toks[0] = s.top[0].id;
	stats->prefill_ms = rs_time_ms() - t0;
	ds.catchup_ms = 0.0;
	if (s.d != NULL)
		rs_drafter_stats(s.d, &ds);	/* the prefill's catch-up */
	pre = ds.catchup_ms;
	t0 = rs_time_ms();
	while (gen < n_new) {
		int32_t emitted;
		int	a, kk;

		if ((r = spec_round(&s, prompt, n_prompt, out, gen,
		    n_new - gen, &emitted, &kk, &a, &stats->verify_ms, err)) !=
		    RS_OK)
			goto out;
		stats->rounds++;
		stats->drafted += kk;
		stats->accepted += a;
		gen += emitted;
	}
	stats->generated = gen;
	stats->decode_ms = rs_time_ms() - t0;
	if (s.d != NULL) {
		rs_drafter_stats(s.d, &ds);
		stats->draft_ms = ds.draft_ms;
		stats->catchup_ms = ds.catchup_ms - pre;
	}
out:
	free(s.top);
	free(s.hidden);
	free(s.toks);
	return (r);
}
