/*
 * rs_engine_cost.c - what a verification pass of n tokens and an MTP draft
 * step cost on this engine, measured (rs_engine_pass_costs, rs_engine.h).
 *
 * Why measure: the drafters pick how many tokens to draft from these
 * costs (rs_drafter.h), and their shape depends on the card and on the
 * kernels far more than on the model.  On the H200 the tensor-core
 * products multiply columns in quads, so a pass of 2-4 tokens costs 1.07
 * decode steps and one of 5-8 about 1.5 (docs/perf-log.md, session 13): a
 * straight line through the costs of 1 and 4 tokens predicts neither, and
 * the line the drafter used before (0.6 a token, from when a pass of 4
 * cost 2.6 steps) made it draft 1-2 tokens where 3 is best.  A V100
 * (dp4a at every column count) has another curve again.
 *
 * How: a scratch state of the engine's (a pass's worth of positions, no
 * snapshots), each pass size run once to warm up (the CUDA backend
 * captures a graph per size) and then timed three times from a reset
 * state, the fastest kept; the MTP step likewise.  The costs are relative
 * to the one-token pass of the same measurement.
 */
#include <stdlib.h>
#include <string.h>

#include "rs_engine_impl.h"
#include "rs_state.h"
#include "rs_time.h"

#define COST_REPS	3	/* timed runs a size, the fastest kept */

/* Scratch for one measurement: tokens, candidates, hidden rows. */
struct cost_run {
	struct rs_engine	*e;
	struct rs_state		*st;
	int32_t			 tok[RS_ENGINE_EXACT_MAX];
	struct rs_top		 top[RS_ENGINE_EXACT_MAX];
	float			*hidden;	/* (EXACT_MAX, n_embd) */
};

/* Milliseconds of a verification-shaped pass of N tokens from position 0. */
static enum rs_status
time_pass(struct cost_run *r, int n, double *ms, struct rs_err *err)
{
	enum rs_status	s;
	double		t;

	rs_state_reset(r->st);
	t = rs_time_ms();
	s = rs_engine_forward_top(r->e, r->st, r->tok, n, RS_LOGITS_ALL, 1, 0,
	    r->top, r->hidden, err);
	*ms = rs_time_ms() - t;
	return (s);
}

/* Milliseconds of an MTP draft step at position 0. */
static enum rs_status
time_mtp(struct cost_run *r, double *ms, struct rs_err *err)
{
	const int64_t	d = r->e->model->hp.n_embd;
	enum rs_status	s;
	double		t;

	t = rs_time_ms();
	s = rs_engine_mtp_top(r->e, r->st, r->tok[0], 0, r->hidden, 1, r->top,
	    r->hidden + d, err);
	*ms = rs_time_ms() - t;
	return (s);
}

/* The fastest of a warm-up and COST_REPS runs of size N (0: MTP). */
static enum rs_status
fastest(struct cost_run *r, int n, double *best, struct rs_err *err)
{
	enum rs_status	s;
	double		ms;

	*best = 0.0;
	for (int i = 0; i <= COST_REPS; i++) {
		s = n > 0 ? time_pass(r, n, &ms, err) : time_mtp(r, &ms, err);
		if (s != RS_OK)
			return (s);
		if (i == 1 || (i > 1 && ms < *best))
			*best = ms;
	}
	return (RS_OK);
}

static enum rs_status
measure(struct cost_run *r, int n_max, struct rs_err *err)
{
	struct rs_engine *e = r->e;
	const int	 has_mtp = e->model->hp.n_nextn > 0;
	double		 ms[RS_ENGINE_EXACT_MAX], mtp = 0.0;
	enum rs_status	 s;

	for (int n = 1; n <= n_max; n++)
		if ((s = fastest(r, n, &ms[n - 1], err)) != RS_OK)
			return (s);
	if (has_mtp) {
		/* a zero hidden row in, as at position 0 */
		memset(r->hidden, 0, (size_t)e->model->hp.n_embd *
		    sizeof(float));
		rs_state_reset(r->st);
		if ((s = fastest(r, 0, &mtp, err)) != RS_OK)
			return (s);
	}
	/* a clock too coarse for the one-token pass: no ratios */
	if (!(ms[0] > 0.0))
		return (rs_errf(err, RS_ERR_LIMIT, "a one-token pass took "
		    "%g ms: too short to time", ms[0]));
	for (int n = 0; n < n_max; n++)
		e->pass_cost[n] = ms[n] / ms[0];
	e->mtp_cost = mtp / ms[0];
	e->n_pass_cost = n_max;
	return (RS_OK);
}

enum rs_status
rs_engine_pass_costs(struct rs_engine *e, int n_max, double *cost,
    double *mtp, struct rs_err *err)
{
	const struct rs_state_opts so = { .n_ctx = RS_ENGINE_EXACT_MAX + 1 };
	struct cost_run	 r = { .e = e };
	enum rs_status	 s;

	if (n_max < 1 || n_max > RS_ENGINE_EXACT_MAX)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "pass costs up to %d "
		    "tokens: expected 1 .. %d", n_max, RS_ENGINE_EXACT_MAX));
	if (e->n_pass_cost < n_max) {
		for (int i = 0; i < RS_ENGINE_EXACT_MAX; i++)
			r.tok[i] = (int32_t)((i + 1) % e->model->hp.n_vocab);
		r.hidden = malloc((size_t)RS_ENGINE_EXACT_MAX *
		    (size_t)e->model->hp.n_embd * sizeof(float));
		if (r.hidden == NULL)
			return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
		s = rs_engine_state_new(e, &so, &r.st, err);
		if (s == RS_OK)
			s = measure(&r, n_max, err);
		rs_state_free(r.st);
		free(r.hidden);
		if (s != RS_OK)
			return (s);
	}
	memcpy(cost, e->pass_cost, (size_t)n_max * sizeof(double));
	if (mtp != NULL)
		*mtp = e->mtp_cost;
	return (RS_OK);
}
