/*
 * t_ref.c - reference fixtures and engine set-up for the tests (t_ref.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_json.h"
#include "t_ref.h"
#include "t_util.h"

static struct rs_json *
load_json(const char *rel)
{
	struct rs_json	*j;
	struct rs_err	 err;
	size_t		 n;
	char		*text = t_read_file(t_fixture(rel), &n);

	ck_assert_msg(rs_json_parse(text, n, &j, &err) == RS_OK, "%s: %s",
	    rel, err.msg);
	free(text);
	return (j);
}

static int32_t *
int_array(const struct rs_json *a, int32_t *n)
{
	int32_t	*out;
	int64_t	 v;

	ck_assert(a != NULL && rs_json_kind(a) == RS_JSON_ARRAY);
	*n = (int32_t)rs_json_arr_len(a);
	out = calloc((size_t)*n + 1, sizeof(*out));
	ck_assert(out != NULL);
	for (int32_t i = 0; i < *n; i++) {
		ck_assert(rs_json_as_int(rs_json_arr_at(a, i), &v) == 0);
		out[i] = (int32_t)v;
	}
	return (out);
}

void
t_ref_load(struct t_ref *r)
{
	struct rs_json	*j = load_json("tiny/reference.json");
	struct rs_json	*ps = rs_json_get(j, "prompts");
	struct rs_json	*g = rs_json_get(j, "greedy");
	int64_t		 gp;
	int32_t		 plen;

	memset(r, 0, sizeof(*r));
	ck_assert(ps != NULL && g != NULL);
	r->n_prompts = (int)rs_json_arr_len(ps);
	ck_assert(r->n_prompts > 0 && r->n_prompts <= T_REF_MAX_PROMPTS);
	for (int i = 0; i < r->n_prompts; i++) {
		r->prompt[i] = int_array(rs_json_arr_at(ps, i), &r->len[i]);
		r->row0[i] = r->rows;
		r->rows += r->len[i];
	}
	ck_assert(rs_json_as_int(rs_json_get(g, "prompt_index"), &gp) == 0);
	ck_assert(gp >= 0 && gp < r->n_prompts);
	r->greedy_prompt = (int)gp;
	r->greedy = int_array(rs_json_get(g, "tokens"), &r->n_greedy);
	plen = r->len[gp];
	r->n_seq = plen + r->n_greedy;
	r->seq = malloc((size_t)r->n_seq * sizeof(int32_t));
	ck_assert(r->seq != NULL);
	memcpy(r->seq, r->prompt[gp], (size_t)plen * sizeof(int32_t));
	memcpy(r->seq + plen, r->greedy, (size_t)r->n_greedy *
	    sizeof(int32_t));
	rs_json_free(j);
}

void
t_ref_free(struct t_ref *r)
{
	for (int i = 0; i < r->n_prompts; i++)
		free(r->prompt[i]);
	free(r->greedy);
	free(r->seq);
	memset(r, 0, sizeof(*r));
}

int
t_peer_errors(const char *file, double *out, int max)
{
	struct rs_json	*j = load_json("tiny/peer-errors.json");
	struct rs_json	*f = rs_json_get(rs_json_get(j, "files"), file);
	struct rs_json	*a = rs_json_get(f, "rel_err_per_prompt_vs_reference");
	int		 n;

	ck_assert_msg(a != NULL, "peer-errors.json: no entry for %s", file);
	n = (int)rs_json_arr_len(a);
	ck_assert(n <= max);
	for (int i = 0; i < n; i++)
		ck_assert(rs_json_as_real(rs_json_arr_at(a, i), &out[i]) == 0);
	rs_json_free(j);
	return (n);
}

struct rs_state *
t_state(const struct t_lm *lm, int n_snap, int ckpt)
{
	struct rs_state_opts so = { 0, n_snap, ckpt };
	struct rs_state	*st;
	struct rs_err	 err;

	ck_assert_msg(rs_state_new(&st, lm->m, &so, &err) == RS_OK, "%s",
	    err.msg);
	return (st);
}

void
t_lm_open(struct t_lm *lm, const char *fixture, int threads, int max_batch,
    int n_snap, int ckpt)
{
	struct rs_engine_opts eo = { .backend = RS_BACKEND_CPU,
	    .n_threads = threads, .max_batch = max_batch };
	struct rs_err	 err;

	memset(lm, 0, sizeof(*lm));
	ck_assert_msg(rs_model_open(&lm->m, t_fixture(fixture), &err) == RS_OK,
	    "%s: %s", fixture, err.msg);
	ck_assert_msg(rs_engine_new(&lm->e, lm->m, &eo, &err) == RS_OK, "%s",
	    err.msg);
	lm->st = t_state(lm, n_snap, ckpt);
}

void
t_lm_close(struct t_lm *lm)
{
	rs_state_free(lm->st);
	rs_engine_free(lm->e);
	rs_model_close(lm->m);
	memset(lm, 0, sizeof(*lm));
}

void
t_argmax_rows(const float *logits, int64_t n, int64_t v, int32_t *out)
{
	for (int64_t t = 0; t < n; t++) {
		int64_t best = 0;

		for (int64_t i = 1; i < v; i++)
			if (logits[t * v + i] > logits[t * v + best])
				best = i;
		out[t] = (int32_t)best;
	}
}

void
t_eval_load(struct t_eval *ev)
{
	t_npy_load(t_fixture("demo/eval-tokens.npy"), &ev->tok);
	t_npy_load(t_fixture("demo/eval-argmax.npy"), &ev->am);
	ck_assert(ev->tok.ndim == 2 && ev->am.ndim == 3 &&
	    ev->am.shape[0] == 2 && ev->am.shape[1] == ev->tok.shape[0] &&
	    ev->am.shape[2] == ev->tok.shape[1] && ev->tok.shape[1] >= 2);
	ev->windows = ev->tok.shape[0];
	ev->n = ev->tok.shape[1];
}

void
t_eval_free(struct t_eval *ev)
{
	free(ev->tok.data);
	free(ev->am.data);
}

void
t_eval_ids(const struct t_eval *ev, int w, int32_t *ids)
{
	ck_assert(w >= 0 && w < ev->windows);
	for (int64_t p = 0; p < ev->n; p++)
		ids[p] = (int32_t)ev->tok.data[w * ev->n + p];
}

const float *
t_eval_ref(const struct t_eval *ev, int mtp, int w)
{
	return (ev->am.data + ((int64_t)mtp * ev->windows + w) * ev->n);
}

void
t_tally_rows(struct t_tally *t, const float *logits, int64_t n, int64_t v,
    const float *ref, const int32_t *ids, double tie)
{
	for (int64_t p = 0; p < n; p++) {
		const float *row = logits + p * v;
		const int64_t want = (int64_t)ref[p];
		int32_t got;

		t_argmax_rows(row, 1, v, &got);
		t->rows++;
		if (got == want)
			t->agree++;
		else if (want >= 0 && want < v && row[got] - row[want] <= tie)
			t->ties++;
		if (p + 1 < n) {
			t->scored++;
			t->top1 += got == ids[p + 1];
			t->ref_top1 += want == ids[p + 1];
		}
	}
}

void
t_tally_print(const char *what, const struct t_tally *t)
{
	printf("%s: argmax equal at %lld of %lld rows (%.2f %%), %lld more "
	    "at a near-tie; top-1 vs the text %.2f %% (the other %.2f %%)\n",
	    what, (long long)t->agree,
	    (long long)t->rows, 100.0 * (double)t->agree / (double)t->rows,
	    (long long)t->ties, 100.0 * (double)t->top1 / (double)t->scored,
	    100.0 * (double)t->ref_top1 / (double)t->scored);
}

void
t_demo_load(struct t_demo *d)
{
	struct rs_json	*j = load_json("demo/reference.json");
	struct rs_json	*ps = rs_json_get(j, "prompts");

	memset(d, 0, sizeof(*d));
	ck_assert(ps != NULL && rs_json_arr_len(ps) >= 1 &&
	    rs_json_arr_len(ps) <= T_DEMO_MAX);
	d->n = (int)rs_json_arr_len(ps);
	for (int i = 0; i < d->n; i++) {
		const struct rs_json *p = rs_json_arr_at(ps, (size_t)i);
		int32_t	 np, ng, *a, *g;

		a = int_array(rs_json_get(p, "prompt_ids"), &np);
		g = int_array(rs_json_get(p, "greedy_ids"), &ng);
		d->seq[i] = calloc((size_t)(np + ng), sizeof(int32_t));
		ck_assert(d->seq[i] != NULL);
		memcpy(d->seq[i], a, (size_t)np * sizeof(int32_t));
		memcpy(d->seq[i] + np, g, (size_t)ng * sizeof(int32_t));
		d->n_prompt[i] = np;
		d->n_seq[i] = np + ng;
		free(a);
		free(g);
	}
	rs_json_free(j);
}

void
t_demo_free(struct t_demo *d)
{
	for (int i = 0; i < d->n; i++)
		free(d->seq[i]);
	memset(d, 0, sizeof(*d));
}
