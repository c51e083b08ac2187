/*
 * check_gen.c - the generation loop (rs_gen.h) on the tiny model.
 *
 * Expected values come from tiny/reference.json (the greedy continuation
 * of the reference implementation) and from the tokenizer applied to it
 * (the text those tokens decode to); the rest are invariants: same seed,
 * same tokens; reused cache, same tokens as a fresh state; streamed
 * events concatenate to the result; a stop leaks nothing; a cancelled run
 * runs no further token.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_buf.h"
#include "rs_gen.h"
#include "rs_pyjson.h"
#include "t_ref.h"
#include "t_tok.h"
#include "t_util.h"

#define F16	"tiny/model-f16.gguf"
#define IM_END	"<|im_end|>"

/* A generator over the tiny model: engine, state, tokenizer. */
struct gx {
	struct rs_model		*m;
	struct rs_engine	*e;
	struct rs_state		*st;
	struct rs_tok		*tok;
	struct rs_gen		*g;
};

/* What the callback saw. */
struct col {
	struct rs_buf	 content, reasoning, args, names, ids;
	size_t		 n_tokens, n_calls, n_progress, n_finish;
	size_t		 n_lp;		/* LOGPROB events */
	int32_t		 lp_token;	/* the last one's token, -1: none
					   since the last TOKEN */
	int32_t		 tokens[512];
	size_t		 cancel_at;	/* cancel on TOKEN event k (1-based) */
	int		 cancel_progress;
	size_t		 after_cancel;	/* events after asking to cancel */
	int		 cancelled;
	enum rs_gen_finish finish;
};

static void
gx_open(struct gx *x, const char *fixture, int32_t n_ctx, int ckpt,
    const struct rs_gen_opts *o)
{
	struct rs_err		 err = { 0 };
	struct rs_engine_opts	 eo = { .backend = RS_BACKEND_CPU,
				    .n_threads = 2 };
	struct rs_state_opts	 so = { .n_ctx = n_ctx, .checkpoint = ckpt };

	/* drafting needs a snapshot per verified token */
	if (o != NULL && o->draft != RS_DRAFTER_NONE)
		so.n_snap = o->draft_max + 1;

	memset(x, 0, sizeof(*x));
	ck_assert_msg(rs_model_open(&x->m, t_fixture(fixture), &err) == RS_OK,
	    "%s", err.msg);
	ck_assert_msg(rs_engine_new(&x->e, x->m, &eo, &err) == RS_OK, "%s",
	    err.msg);
	ck_assert_msg(rs_engine_state_new(x->e, &so, &x->st, &err) == RS_OK,
	    "%s", err.msg);
	x->tok = t_tok_load(fixture, RS_TOK_NORM_DEFAULT);
	ck_assert_msg(rs_gen_new(&x->g, x->e, x->st, x->tok, o, &err) ==
	    RS_OK, "%s", err.msg);
}

static void
gx_close(struct gx *x)
{
	rs_gen_free(x->g);
	rs_tok_free(x->tok);
	rs_state_free(x->st);
	rs_engine_free(x->e);
	rs_model_close(x->m);
}

static void
col_init(struct col *c)
{
	memset(c, 0, sizeof(*c));
	c->lp_token = -1;
	rs_buf_init(&c->content);
	rs_buf_init(&c->reasoning);
	rs_buf_init(&c->args);
	rs_buf_init(&c->names);
	rs_buf_init(&c->ids);
}

static void
col_cleanup(struct col *c)
{
	rs_buf_cleanup(&c->content);
	rs_buf_cleanup(&c->reasoning);
	rs_buf_cleanup(&c->args);
	rs_buf_cleanup(&c->names);
	rs_buf_cleanup(&c->ids);
}

static int
on_event(const struct rs_gen_event *ev, void *arg)
{
	struct col	*c = arg;

	if (c->cancelled) {
		c->after_cancel++;
		return (1);
	}
	ck_assert(ev->kind == RS_GEN_EV_PROGRESS ||
	    ev->kind == RS_GEN_EV_TOKEN || ev->kind == RS_GEN_EV_FINISH ||
	    ev->kind == RS_GEN_EV_LOGPROB || ev->len > 0);
	switch (ev->kind) {
	case RS_GEN_EV_PROGRESS:
		c->n_progress++;
		c->cancelled = c->cancel_progress;
		break;
	case RS_GEN_EV_CONTENT:
		rs_buf_add(&c->content, ev->text, ev->len);
		break;
	case RS_GEN_EV_REASONING:
		rs_buf_add(&c->reasoning, ev->text, ev->len);
		break;
	case RS_GEN_EV_TOOL_CALL:
		c->n_calls++;
		rs_buf_add(&c->names, ev->text, ev->len);
		rs_buf_adds(&c->ids, ev->id);
		break;
	case RS_GEN_EV_TOOL_ARGS:
		rs_buf_add(&c->args, ev->text, ev->len);
		break;
	case RS_GEN_EV_LOGPROB:
		/* one per token, before that token's TOKEN event */
		ck_assert_int_eq(c->lp_token, -1);
		c->lp_token = ev->lp->token;
		c->n_lp++;
		break;
	case RS_GEN_EV_TOKEN:
		ck_assert(c->lp_token == -1 || c->lp_token == ev->token);
		c->lp_token = -1;
		if (c->n_tokens < 512)
			c->tokens[c->n_tokens] = ev->token;
		c->n_tokens++;
		c->cancelled = c->n_tokens == c->cancel_at;
		break;
	case RS_GEN_EV_FINISH:
		c->n_finish++;
		c->finish = ev->finish;
		break;
	}
	return (c->cancelled);
}

/*
 * Parse BODY into R (initialised by the caller), reading it as the
 * servers do (rs_pyjson_parse: numbers past rs_json's range too); status
 * of the parse.
 */
static enum rs_status
parse_body(struct gx *x, struct rs_gen_req *r, const char *body,
    struct rs_gen_error *ge)
{
	struct rs_json	*j;
	struct rs_err	 err = { 0 };
	enum rs_status	 st;

	ck_assert_msg(rs_pyjson_parse(body, strlen(body), &j, &err) == RS_OK,
	    "test body: %s", err.msg);
	st = rs_gen_req_parse(x->g, r, j, ge);
	rs_json_free(j);
	return (st);
}

/* Run BODY to completion; C may be NULL. */
static void
run_body(struct gx *x, const char *body, struct rs_gen_result *res,
    struct col *c)
{
	struct rs_gen_req	r;
	struct rs_gen_error	ge = { 0 };

	rs_gen_req_init(&r, x->g);
	ck_assert_msg(parse_body(x, &r, body, &ge) == RS_OK, "%s: %s", body,
	    ge.err.msg);
	ck_assert_msg(rs_gen_run(x->g, &r, c != NULL ? on_event : NULL, c,
	    res, &ge) == RS_OK, "%s: %s", body, ge.err.msg);
	rs_gen_req_cleanup(&r);
}

/* {"tokens": [prompt 5 of reference.json], ...EXTRA} */
static char *
greedy_body(const struct t_ref *ref, const char *extra)
{
	struct rs_buf	 b;
	int		 p = ref->greedy_prompt;

	rs_buf_init(&b);
	rs_buf_adds(&b, "{\"tokens\": [");
	for (int32_t i = 0; i < ref->len[p]; i++)
		rs_buf_addf(&b, i > 0 ? ",%d" : "%d", (int)ref->prompt[p][i]);
	rs_buf_addf(&b, "], \"temperature\": 0%s%s}", extra[0] != '\0' ?
	    ", " : "", extra);
	ck_assert(!b.oom);
	return (rs_buf_release(&b, NULL));
}

/* The text the tokenizer makes of the first N greedy tokens. */
static char *
greedy_text(const struct gx *x, const struct t_ref *ref, size_t n,
    size_t *len)
{
	char		*s;
	struct rs_err	 err = { 0 };

	ck_assert(rs_tok_decode(x->tok, ref->greedy, n, 0, &s, len, &err) ==
	    RS_OK);
	return (s);
}

/* ---- speculative decoding with prompt-lookup drafts ---- */

/*
 * The prompt holds the reference greedy sequence and then its prompt
 * again, so lookup drafts come up often; greedy and seeded sampling must
 * give the same result with drafts (4 a pass) as without, on a cold cache
 * and with prefix reuse, and a stop string or max_tokens must end both in
 * the same place, for every drafter (_i).  The logprobs of a token taken
 * as an accepted draft come from the verification pass's row for its
 * position: the engine is batch-invariant on the CPU, so they equal plain
 * decoding's bit for bit.
 */
START_TEST(draft_equal)
{
	static const enum rs_drafter_kind kinds[] = { RS_DRAFTER_NGRAM,
	    RS_DRAFTER_MTP, RS_DRAFTER_MTP_NGRAM };
	static const char *const extras[] = {
		"\"temperature\": 0, \"max_tokens\": 60, \"logprobs\": 3",
		"\"temperature\": 1, \"seed\": 7, \"max_tokens\": 60",
		"\"temperature\": 0.7, \"top_k\": 5, \"seed\": 3, "
		    "\"max_tokens\": 23, \"logprobs\": 0",
	};
	struct t_ref	ref;
	struct gx	plain, spec;
	struct rs_gen_opts o;
	struct rs_buf	b;
	int		p;
	int64_t		drafted = 0, accepted = 0, accepted_lp = 0;

	t_ref_load(&ref);
	p = ref.greedy_prompt;
	rs_gen_opts_init(&o);
	gx_open(&plain, "tiny/model-q8_0.gguf", 1024, 1, &o);
	o.draft = kinds[_i];
	o.draft_max = 4;
	gx_open(&spec, "tiny/model-q8_0.gguf", 1024, 1, &o);
	for (size_t e = 0; e < sizeof(extras) / sizeof(extras[0]); e++)
		for (int rep = 0; rep < 2; rep++) {	/* cold, then reused */
			struct rs_gen_result a, c;
			rs_buf_init(&b);
			rs_buf_adds(&b, "{\"tokens\": [");
			for (int32_t i = 0; i < ref.n_seq; i++)
				rs_buf_addf(&b, "%d,", (int)ref.seq[i]);
			for (int32_t i = 0; i < ref.len[p]; i++)
				rs_buf_addf(&b, i > 0 ? ",%d" : "%d",
				    (int)ref.prompt[p][i]);
			rs_buf_addf(&b, "], %s}", extras[e]);
			char *body = rs_buf_release(&b, NULL);
			run_body(&plain, body, &a, NULL);
			run_body(&spec, body, &c, NULL);
			ck_assert_int_eq(c.n_tokens, a.n_tokens);
			ck_assert_msg(memcmp(c.tokens, a.tokens, a.n_tokens *
			    sizeof(int32_t)) == 0, "extra %zu: drafts changed "
			    "the output", e);
			ck_assert_int_eq(c.finish, a.finish);
			ck_assert_uint_eq(c.n_logprobs, a.n_logprobs);
			if (strstr(extras[e], "logprobs") != NULL) {
				/* raw mode: every token but an ending EOG */
				ck_assert_uint_eq(a.n_logprobs, a.n_tokens -
				    (a.finish == RS_GEN_FINISH_STOP));
				accepted_lp += c.timings.draft_n_accepted;
			}
			for (size_t i = 0; i < a.n_logprobs; i++) {
				const struct rs_logprob *x = &a.logprobs[i];
				const struct rs_logprob *y = &c.logprobs[i];

				ck_assert_int_eq(x->token, a.tokens[i]);
				ck_assert_int_eq(y->token, x->token);
				ck_assert_msg(y->logprob == x->logprob,
				    "extra %zu, token %zu: logprob %.17g with "
				    "drafts, %.17g without", e, i, y->logprob,
				    x->logprob);
				ck_assert_int_eq(y->n_top, x->n_top);
				for (int j = 0; j < x->n_top; j++) {
					ck_assert_int_eq(y->top[j].token,
					    x->top[j].token);
					ck_assert(y->top[j].logprob ==
					    x->top[j].logprob);
				}
			}
			ck_assert_int_eq(a.timings.draft_n, 0);
			drafted += c.timings.draft_n;
			accepted += c.timings.draft_n_accepted;
			rs_gen_result_cleanup(&a);
			rs_gen_result_cleanup(&c);
			free(body);
		}
	printf("gen drafts (%s): %lld verified, %lld taken\n",
	    rs_drafter_kind_name(kinds[_i]), (long long)drafted,
	    (long long)accepted);
	ck_assert_int_gt(drafted, 0);
	/* the tiny model's MTP head has random weights: its drafts are
	   rejected (drafters_200 below has a trained one) */
	if (kinds[_i] != RS_DRAFTER_MTP) {
		ck_assert_int_gt(accepted, 0);
		ck_assert_int_gt(accepted_lp, 0);	/* logprobs of drafts */
	}
	gx_close(&plain);
	gx_close(&spec);
	t_ref_free(&ref);
}
END_TEST

/*
 * The trained demo model, 200 tokens after its first prompt, greedy and
 * sampled (the demo's own suggestion, temperature 0.7, top_p 0.95, and
 * the model's default chain) with a seed: every drafter, adaptive K up to
 * 6, gives plain decoding's tokens, and drafts are accepted.
 */
START_TEST(drafters_200)
{
	static const enum rs_drafter_kind kinds[] = { RS_DRAFTER_NGRAM,
	    RS_DRAFTER_MTP, RS_DRAFTER_MTP_NGRAM };
	static const char *const extras[] = {
		"\"temperature\": 0",
		"\"temperature\": 0.7, \"top_p\": 0.95, \"seed\": 5",
		"\"seed\": 12",
	};
	struct t_demo	dm;
	struct gx	plain, spec[3];
	struct rs_gen_opts o;
	struct rs_buf	b;

	t_demo_load(&dm);
	rs_gen_opts_init(&o);
	gx_open(&plain, "demo/model-f16.gguf", 512, 0, &o);
	o.draft_max = 6;
	for (int k = 0; k < 3; k++) {
		o.draft = kinds[k];
		gx_open(&spec[k], "demo/model-f16.gguf", 512, 0, &o);
	}
	for (size_t e = 0; e < sizeof(extras) / sizeof(extras[0]); e++) {
		struct rs_gen_result a;

		rs_buf_init(&b);
		rs_buf_adds(&b, "{\"tokens\": [");
		for (int32_t i = 0; i < dm.n_prompt[0]; i++)
			rs_buf_addf(&b, i > 0 ? ",%d" : "%d", (int)dm.seq[0][i]);
		rs_buf_addf(&b, "], \"max_tokens\": 200, "
		    "%s}", extras[e]);
		char *body = rs_buf_release(&b, NULL);
		run_body(&plain, body, &a, NULL);
		ck_assert_uint_eq(a.n_tokens, 200);
		for (int k = 0; k < 3; k++) {
			struct rs_gen_result c;
			const struct rs_gen_timings *t = &c.timings;

			run_body(&spec[k], body, &c, NULL);
			ck_assert_msg(c.n_tokens == a.n_tokens && memcmp(c.tokens,
			    a.tokens, a.n_tokens * sizeof(int32_t)) == 0,
			    "%s, %s: drafts changed the output",
			    rs_drafter_kind_name(kinds[k]), extras[e]);
			ck_assert_str_eq(t->draft, rs_drafter_kind_name(
			    kinds[k]));
			ck_assert_int_gt(t->draft_n_accepted, 0);
			ck_assert_int_ge(t->draft_n_pos, 1);
			printf("gen demo %s, %s: %lld/%lld drafts accepted in "
			    "%lld rounds, first position %.3f, K %d\n",
			    t->draft, extras[e], (long long)t->draft_n_accepted,
			    (long long)t->draft_n, (long long)t->draft_rounds,
			    (double)t->draft_pos_accepted[0] /
			    (double)t->draft_pos_n[0], t->draft_k);
			rs_gen_result_cleanup(&c);
		}
		rs_gen_result_cleanup(&a);
		free(body);
	}
	for (int k = 0; k < 3; k++)
		gx_close(&spec[k]);
	gx_close(&plain);
	t_demo_free(&dm);
}
END_TEST

/* ---- greedy ---- */

START_TEST(greedy_reference)
{
	struct gx		x;
	struct t_ref		ref;
	struct rs_gen_result	res;
	struct col		c;
	char			*body, *text;
	size_t			 len;

	t_ref_load(&ref);
	gx_open(&x, F16, 0, 1, NULL);
	body = greedy_body(&ref, "\"max_tokens\": 40");
	col_init(&c);
	run_body(&x, body, &res, &c);
	ck_assert_uint_eq(res.n_tokens, (size_t)ref.n_greedy);
	for (int32_t i = 0; i < ref.n_greedy; i++)
		ck_assert_msg(res.tokens[i] == ref.greedy[i], "token %d: %d, "
		    "reference %d", i, res.tokens[i], ref.greedy[i]);
	ck_assert_int_eq(res.finish, RS_GEN_FINISH_LENGTH);
	ck_assert_int_eq(c.finish, RS_GEN_FINISH_LENGTH);
	ck_assert_uint_eq(c.n_finish, 1);
	ck_assert_uint_eq(c.n_tokens, 40);
	ck_assert_mem_eq(c.tokens, ref.greedy, 40 * sizeof(int32_t));
	/* not asked for: no logprobs */
	ck_assert_uint_eq(c.n_lp, 0);
	ck_assert_ptr_null(res.logprobs);
	ck_assert_uint_eq(res.n_logprobs, 0);
	/* raw mode: all text is content, the tokenizer's decoding */
	text = greedy_text(&x, &ref, 40, &len);
	ck_assert_uint_eq(res.content_len, len);
	ck_assert_mem_eq(res.content, text, len);
	ck_assert_uint_eq(c.content.len, len);
	ck_assert_mem_eq(c.content.data, text, len);
	ck_assert_str_eq(res.reasoning, "");
	ck_assert_int_eq(res.usage.prompt_tokens, ref.len[ref.greedy_prompt]);
	ck_assert_int_eq(res.usage.completion_tokens, 40);
	ck_assert_int_eq(res.usage.total_tokens,
	    40 + ref.len[ref.greedy_prompt]);
	ck_assert_int_eq(res.usage.cached_tokens, 0);
	ck_assert_int_eq(res.timings.prompt_n, ref.len[ref.greedy_prompt]);
	ck_assert_int_eq(res.timings.predicted_n, 40);
	ck_assert(res.timings.prompt_ms > 0 && res.timings.predicted_ms > 0);
	ck_assert(res.timings.ttft_ms >= res.timings.prompt_ms);
	ck_assert(res.timings.predicted_per_second > 0);
	/* the state holds prompt + output less the last token */
	ck_assert_int_eq(rs_state_pos(x.st), ref.len[ref.greedy_prompt] + 39);
	free(text);
	free(body);
	col_cleanup(&c);
	rs_gen_result_cleanup(&res);
	gx_close(&x);
	t_ref_free(&ref);
}
END_TEST

/* log softmax(ROW)[T] over V logits in double, from the definition. */
static double
ref_logprob(const float *row, int64_t v, int32_t t)
{
	double	m = row[0], sum = 0;

	for (int64_t i = 1; i < v; i++)
		m = row[i] > m ? row[i] : m;
	for (int64_t i = 0; i < v; i++)
		sum += exp(row[i] - m);
	return (row[t] - m - log(sum));
}

/*
 * Logprobs of the greedy run against the float64 reference's logits over
 * the same sequence (ref-greedy-logits.npy: row P − 1 + i predicted output
 * token i), log-softmax computed here.  The engine's logits on the f16
 * file are within T_MAX_REL (relative L2 over the rows) of the reference's,
 * so no logit is off by more than T_MAX_REL × ‖reference rows‖₂; a
 * logprob moves by at most twice the largest logit error (its own logit,
 * and the log-sum-exp, which moves by at most the largest one).  That
 * bound is loose (about 0.06 here; the measured error is printed) but a
 * row off by one position misses by whole units.
 */
START_TEST(logprobs_reference)
{
	struct gx		x;
	struct t_ref		ref;
	struct t_npy		rl;
	struct rs_gen_result	res;
	struct col		c;
	char			*body;
	int64_t			 v, p0;
	double			 worst = 0, lpmax = 0, norm = 0, tol;

	t_ref_load(&ref);
	t_npy_load(t_fixture("tiny/ref-greedy-logits.npy"), &rl);
	v = rl.shape[1];
	p0 = ref.len[ref.greedy_prompt] - 1;
	ck_assert_int_eq(rl.shape[0], p0 + 1 + ref.n_greedy);
	for (int64_t i = p0 * v; i < (p0 + 40) * v; i++)
		norm += (double)rl.data[i] * rl.data[i];
	tol = 2 * T_MAX_REL * sqrt(norm);
	gx_open(&x, F16, 0, 1, NULL);
	body = greedy_body(&ref, "\"max_tokens\": 40, \"logprobs\": 5");
	col_init(&c);
	run_body(&x, body, &res, &c);
	ck_assert_uint_eq(res.n_logprobs, 40);
	ck_assert_uint_eq(c.n_lp, 40);
	for (size_t i = 0; i < res.n_logprobs; i++) {
		const struct rs_logprob	*lp = &res.logprobs[i];
		const float		*row = rl.data + (p0 + (int64_t)i) * v;
		double			 want = ref_logprob(row, v,
					    ref.greedy[i]);

		ck_assert_int_eq(lp->token, ref.greedy[i]);
		ck_assert_int_eq(lp->n_top, 5);
		/* greedy on raw logits: the token is the first of the list */
		ck_assert_int_eq(lp->top[0].token, lp->token);
		ck_assert(lp->top[0].logprob == lp->logprob);
		ck_assert(lp->logprob <= 0);
		for (int j = 0; j < 5; j++) {
			double d = fabs(lp->top[j].logprob - ref_logprob(row,
			    v, lp->top[j].token));

			worst = d > worst ? d : worst;
			if (j > 0)
				ck_assert(lp->top[j].logprob <=
				    lp->top[j - 1].logprob);
		}
		worst = fabs(lp->logprob - want) > worst ?
		    fabs(lp->logprob - want) : worst;
		lpmax = fabs(want) > lpmax ? fabs(want) : lpmax;
	}
	printf("gen logprobs: max |logprob - reference| %.3g, bound %.3g "
	    "(largest |logprob| %.3g)\n", worst, tol, lpmax);
	ck_assert_msg(worst <= tol, "logprobs %.3g from the reference, "
	    "bound %.3g", worst, tol);
	free(body);
	free(rl.data);
	col_cleanup(&c);
	rs_gen_result_cleanup(&res);
	gx_close(&x);
	t_ref_free(&ref);
}
END_TEST

/*
 * Chat: reasoning, markup and content tokens all get an entry, in order,
 * each from before its text; an ending stop token none; the top lists
 * hold no token that chat never samples (padding rows, control tokens).
 */
START_TEST(chat_logprobs)
{
	static const char *const bodies[] = {
		"{\"messages\": [{\"role\": \"user\", \"content\": "
		    "\"hi\"}], \"max_tokens\": 16, \"seed\": 7, "
		    "\"logprobs\": true, \"top_logprobs\": 2}",
		"{\"messages\": [{\"role\": \"user\", \"content\": "
		    "\"hi\"}], \"max_tokens\": 12, \"temperature\": 0, "
		    "\"enable_thinking\": false, \"logprobs\": true, "
		    "\"top_logprobs\": 3}",
		/* the same, ended by a token of that output (stop_tokens) */
		"{\"messages\": [{\"role\": \"user\", \"content\": "
		    "\"hi\"}], \"max_tokens\": 12, \"temperature\": 0, "
		    "\"enable_thinking\": false, \"logprobs\": true, "
		    "\"stop_token_ids\": [%d]}",
	};
	struct gx		x;
	struct rs_gen_result	res;
	struct col		c;
	char			body[512];
	int32_t			stop = -1;
	size_t			k = 0;
	double			greedy[12];

	gx_open(&x, "tiny/model-q8_0.gguf", 0, 1, NULL);
	for (size_t b = 0; b < sizeof(bodies) / sizeof(bodies[0]); b++) {
		snprintf(body, sizeof(body), bodies[b], (int)stop);
		col_init(&c);
		run_body(&x, body, &res, &c);
		if (b < 2)
			ck_assert_int_eq(res.finish, RS_GEN_FINISH_LENGTH);
		else	/* K tokens, then the stop token without an entry */
			ck_assert(res.n_tokens == k + 1 && res.tokens[k] ==
			    stop && res.finish == RS_GEN_FINISH_STOP);
		ck_assert_uint_eq(res.n_logprobs, res.n_tokens - (b == 2));
		ck_assert_uint_eq(c.n_lp, res.n_logprobs);
		for (size_t i = 0; i < res.n_logprobs; i++) {
			const struct rs_logprob *lp = &res.logprobs[i];

			ck_assert_int_eq(lp->token, res.tokens[i]);
			ck_assert_int_eq(lp->n_top, b == 0 ? 2 : b == 1 ? 3 :
			    0);
			ck_assert(lp->logprob <= 0);
			if (lp->n_top > 0)
				ck_assert(lp->top[0].logprob >= lp->logprob &&
				    lp->top[1].logprob <= lp->top[0].logprob);
			/* greedy: the chosen token heads the list, as the
			   tokens chat never samples are left out */
			if (b == 1) {
				ck_assert(lp->top[0].token == lp->token &&
				    lp->top[0].logprob == lp->logprob);
				greedy[i] = lp->logprob;
			}
			if (b == 2)
				ck_assert(lp->logprob == greedy[i]);
			for (int j = 0; j < lp->n_top; j++) {
				int ty = rs_tok_type(x.tok, lp->top[j].token);

				ck_assert_msg(ty == RS_TOK_NORMAL ||
				    ty == RS_TOK_USER_DEFINED ||
				    rs_tok_is_eog(x.tok, lp->top[j].token),
				    "top[%d]: id %d of type %d", j,
				    lp->top[j].token, ty);
			}
		}
		/* the stop token: the first output token after the first
		   that did not come before it */
		for (k = 1; b == 1 && k < res.n_tokens; k++) {
			size_t i = 0;

			while (i < k && res.tokens[i] != res.tokens[k])
				i++;
			if (i == k)
				break;
		}
		if (b == 1) {
			ck_assert_uint_lt(k, res.n_tokens);
			stop = res.tokens[k];
		}
		rs_gen_result_cleanup(&res);
		col_cleanup(&c);
	}
	gx_close(&x);
}
END_TEST

/* The same greedy run from a fresh state and through the reused cache. */
START_TEST(greedy_prefix_reuse)
{
	struct gx		x;
	struct t_ref		ref;
	struct rs_gen_result	a, b;
	char			*body;

	t_ref_load(&ref);
	gx_open(&x, F16, 0, 1, NULL);
	body = greedy_body(&ref, "\"max_tokens\": 12");
	run_body(&x, body, &a, NULL);
	run_body(&x, body, &b, NULL);
	ck_assert_int_eq(b.usage.cached_tokens, ref.len[ref.greedy_prompt] -
	    1);
	ck_assert_int_eq(b.timings.prompt_n, 1);
	ck_assert_uint_eq(a.n_tokens, b.n_tokens);
	ck_assert_mem_eq(a.tokens, ref.greedy, 12 * sizeof(int32_t));
	ck_assert_mem_eq(b.tokens, ref.greedy, 12 * sizeof(int32_t));
	free(body);
	rs_gen_result_cleanup(&a);
	rs_gen_result_cleanup(&b);
	gx_close(&x);
	t_ref_free(&ref);
}
END_TEST

/* The prepared request {"tokens": TOKS (N of them)} against X's state. */
static int32_t
common_prefix_of(struct gx *x, const int32_t *toks, int32_t n)
{
	struct rs_gen_req	 r;
	struct rs_gen_error	 ge = { 0 };
	struct rs_buf		 b;
	int32_t			 l;

	rs_buf_init(&b);
	rs_buf_adds(&b, "{\"tokens\": [");
	for (int32_t i = 0; i < n; i++)
		rs_buf_addf(&b, i > 0 ? ",%d" : "%d", (int)toks[i]);
	rs_buf_adds(&b, "]}");
	ck_assert(!b.oom);
	rs_gen_req_init(&r, x->g);
	ck_assert(parse_body(x, &r, b.data, &ge) == RS_OK);
	ck_assert_msg(rs_gen_prepare(x->g, &r, &ge) == RS_OK, "%s",
	    ge.err.msg);
	l = rs_gen_common_prefix(x->g, &r);
	rs_gen_req_cleanup(&r);
	rs_buf_cleanup(&b);
	return (l);
}

/*
 * rs_gen_common_prefix after a greedy run of 12 tokens, whose state holds
 * the prompt (P tokens) and the first 11 of them: the same prompt (P − 1:
 * the last must run), the prompt and 5 of the output plus one more (all
 * but that one), a prompt that differs at position 3 (3), and after a
 * reset (0).
 */
START_TEST(common_prefix)
{
	struct gx		x;
	struct t_ref		ref;
	struct rs_gen_result	a;
	char			*body;
	int32_t			 p, toks[256];

	t_ref_load(&ref);
	p = ref.len[ref.greedy_prompt];
	ck_assert_int_le(p + 6, 256);
	gx_open(&x, F16, 0, 1, NULL);
	body = greedy_body(&ref, "\"max_tokens\": 12");
	run_body(&x, body, &a, NULL);
	ck_assert_mem_eq(a.tokens, ref.greedy, 12 * sizeof(int32_t));
	memcpy(toks, ref.seq, (size_t)(p + 5) * sizeof(int32_t));
	ck_assert_int_eq(common_prefix_of(&x, toks, p), p - 1);
	toks[p + 5] = ref.greedy[7];
	ck_assert_int_eq(common_prefix_of(&x, toks, p + 6), p + 5);
	toks[3] = toks[3] == 0 ? 1 : 0;
	ck_assert_int_eq(common_prefix_of(&x, toks, p), 3);
	rs_gen_reset(x.g);
	ck_assert_int_eq(common_prefix_of(&x, ref.seq, p), 0);
	free(body);
	rs_gen_result_cleanup(&a);
	gx_close(&x);
	t_ref_free(&ref);
}
END_TEST

/* ---- sampling ---- */

START_TEST(seeded)
{
	struct gx		x;
	struct rs_gen_result	a, b, c, d;
	const char		*b1 = "{\"prompt\": \"Once upon a time\", "
				    "\"max_tokens\": 24, \"seed\": 42, "
				    "\"top_k\": 0, \"top_p\": 1}";
	const char		*b2 = "{\"prompt\": \"Once upon a time\", "
				    "\"max_tokens\": 24, \"seed\": 43, "
				    "\"top_k\": 0, \"top_p\": 1}";

	gx_open(&x, "tiny/model-q8_0.gguf", 0, 1, NULL);
	run_body(&x, b1, &a, NULL);
	run_body(&x, b1, &b, NULL);	/* through the cache */
	rs_gen_reset(x.g);
	run_body(&x, b1, &c, NULL);	/* from a fresh state */
	run_body(&x, b2, &d, NULL);
	ck_assert_uint_eq(a.n_tokens, 24);
	ck_assert_uint_eq(b.n_tokens, 24);
	ck_assert_uint_eq(c.n_tokens, 24);
	ck_assert_mem_eq(a.tokens, b.tokens, 24 * sizeof(int32_t));
	ck_assert_mem_eq(a.tokens, c.tokens, 24 * sizeof(int32_t));
	ck_assert_msg(memcmp(a.tokens, d.tokens, 24 * sizeof(int32_t)) != 0,
	    "seeds 42 and 43 gave the same 24 tokens");
	ck_assert_int_gt(b.usage.cached_tokens, 0);
	rs_gen_result_cleanup(&a);
	rs_gen_result_cleanup(&b);
	rs_gen_result_cleanup(&c);
	rs_gen_result_cleanup(&d);
	gx_close(&x);
}
END_TEST

/* ---- stop conditions ---- */

/*
 * A stop string cut from the middle of the greedy text: generation ends
 * with "stop" and the text is exactly what precedes its first occurrence,
 * streamed and in the result.
 */
START_TEST(stop_string)
{
	struct gx		x;
	struct t_ref		ref;
	struct rs_gen_result	res;
	struct col		c;
	char			*text, *body, extra[128], stop[4];
	const char		*at;
	size_t			 len, k, want;

	t_ref_load(&ref);
	gx_open(&x, F16, 0, 1, NULL);
	text = greedy_text(&x, &ref, 40, &len);
	/* three printable ASCII bytes past the middle */
	for (k = len / 2; k + 3 <= len; k++)
		if (text[k] > ' ' && text[k] < 0x7f && text[k] != '"' &&
		    text[k] != '\\' && text[k + 1] > ' ' && text[k + 1] <
		    0x7f && text[k + 1] != '"' && text[k + 1] != '\\' &&
		    text[k + 2] > ' ' && text[k + 2] < 0x7f &&
		    text[k + 2] != '"' && text[k + 2] != '\\')
			break;
	ck_assert_msg(k + 3 <= len, "no plain stop string in the greedy text");
	memcpy(stop, text + k, 3);
	stop[3] = '\0';
	at = memmem(text, len, stop, 3);
	want = (size_t)(at - text);
	snprintf(extra, sizeof(extra), "\"max_tokens\": 40, \"stop\": "
	    "[\"zzzz\", \"%s\"]", stop);
	body = greedy_body(&ref, extra);
	col_init(&c);
	run_body(&x, body, &res, &c);
	ck_assert_int_eq(res.finish, RS_GEN_FINISH_STOP);
	ck_assert_int_eq(c.finish, RS_GEN_FINISH_STOP);
	ck_assert_uint_eq(res.content_len, want);
	ck_assert_mem_eq(res.content, text, want);
	ck_assert_uint_eq(c.content.len, want);
	ck_assert(want == 0 || memcmp(c.content.data, text, want) == 0);
	ck_assert_uint_eq(res.raw_len, want);
	ck_assert_uint_lt(res.n_tokens, 40);
	ck_assert_mem_eq(res.tokens, ref.greedy, res.n_tokens *
	    sizeof(int32_t));
	free(body);
	free(text);
	col_cleanup(&c);
	rs_gen_result_cleanup(&res);
	gx_close(&x);
	t_ref_free(&ref);
}
END_TEST

/* A stop token id: generation ends on it; its text is not shown. */
START_TEST(stop_token)
{
	struct gx		x;
	struct t_ref		ref;
	struct rs_gen_result	res;
	char			*text, *body, extra[96];
	size_t			 len;
	int32_t			 j = 10;

	t_ref_load(&ref);
	gx_open(&x, F16, 0, 1, NULL);
	for (int32_t i = 0; i < j; i++)
		if (ref.greedy[i] == ref.greedy[j])
			j++, i = -1;	/* take the first fresh id from 10 on */
	ck_assert_int_lt(j, ref.n_greedy);
	snprintf(extra, sizeof(extra), "\"max_tokens\": 40, "
	    "\"stop_token_ids\": [%d]", (int)ref.greedy[j]);
	body = greedy_body(&ref, extra);
	run_body(&x, body, &res, NULL);
	text = greedy_text(&x, &ref, (size_t)j, &len);
	ck_assert_int_eq(res.finish, RS_GEN_FINISH_STOP);
	ck_assert_uint_eq(res.n_tokens, (size_t)j + 1);
	ck_assert_mem_eq(res.tokens, ref.greedy, ((size_t)j + 1) *
	    sizeof(int32_t));
	ck_assert_uint_eq(res.content_len, len);
	ck_assert_mem_eq(res.content, text, len);
	ck_assert_int_eq(res.usage.completion_tokens, j + 1);
	free(body);
	free(text);
	rs_gen_result_cleanup(&res);
	gx_close(&x);
	t_ref_free(&ref);
}
END_TEST

/* An end-of-generation token ends a raw request too, and is counted. */
START_TEST(stop_eog)
{
	struct gx		x;
	struct rs_gen_result	res;
	char			body[160];
	int32_t			eog;

	gx_open(&x, F16, 0, 1, NULL);
	eog = rs_tok_find(x.tok, IM_END, strlen(IM_END));
	ck_assert(eog >= 0 && rs_tok_is_eog(x.tok, eog));
	snprintf(body, sizeof(body), "{\"prompt\": \"Hi\", \"max_tokens\": "
	    "9, \"logit_bias\": {\"%d\": 100}, \"temperature\": 0}", eog);
	run_body(&x, body, &res, NULL);
	ck_assert_int_eq(res.finish, RS_GEN_FINISH_STOP);
	ck_assert_uint_eq(res.n_tokens, 1);
	ck_assert_int_eq(res.tokens[0], eog);
	ck_assert_uint_eq(res.content_len, 0);
	rs_gen_result_cleanup(&res);
	gx_close(&x);
}
END_TEST

/* The context end: at most n_ctx − P tokens, finish "length". */
START_TEST(context_end)
{
	struct gx		x;
	struct t_ref		ref;
	struct rs_gen_result	res;
	struct rs_gen_req	r;
	struct rs_gen_error	ge;
	char			*body;
	int32_t			 p;

	t_ref_load(&ref);
	p = ref.len[ref.greedy_prompt];
	gx_open(&x, F16, p + 11, 1, NULL);
	body = greedy_body(&ref, "\"max_tokens\": 1000");
	run_body(&x, body, &res, NULL);
	ck_assert_int_eq(res.finish, RS_GEN_FINISH_LENGTH);
	ck_assert_uint_eq(res.n_tokens, 11);
	ck_assert_mem_eq(res.tokens, ref.greedy, 11 * sizeof(int32_t));
	rs_gen_result_cleanup(&res);
	free(body);
	gx_close(&x);
	/* P = n_ctx − 1: refused, with both phrasings and the counts */
	gx_open(&x, F16, p + 1, 1, NULL);
	body = greedy_body(&ref, "");
	rs_gen_req_init(&r, x.g);
	ck_assert(parse_body(&x, &r, body, &ge) == RS_OK);
	ck_assert_int_eq(rs_gen_run(x.g, &r, NULL, NULL, &res, &ge),
	    RS_ERR_LIMIT);
	ck_assert_str_eq(ge.type, "exceed_context_size_error");
	ck_assert_int_eq(ge.code, 400);
	ck_assert_int_eq(ge.n_prompt_tokens, p);
	ck_assert_int_eq(ge.n_ctx, p + 1);
	ck_assert_ptr_nonnull(strstr(ge.err.msg, "maximum context length"));
	ck_assert_ptr_nonnull(strstr(ge.err.msg,
	    "exceeds the available context size"));
	/* the prompt fits: the message says what refuses it (it read as
	   p tokens exceeding p + 1) */
	ck_assert_ptr_nonnull(strstr(ge.err.msg, "Leave 2 positions free."));
	ck_assert_uint_eq(res.n_tokens, 0);
	rs_gen_req_cleanup(&r);
	free(body);
	gx_close(&x);
	t_ref_free(&ref);
}
END_TEST

/* ---- cancellation ---- */

START_TEST(cancel_token)
{
	struct gx		x;
	struct t_ref		ref;
	struct rs_gen_result	res;
	struct col		c;
	char			*body;
	int32_t			 p;

	t_ref_load(&ref);
	p = ref.len[ref.greedy_prompt];
	gx_open(&x, F16, 0, 1, NULL);
	body = greedy_body(&ref, "\"max_tokens\": 40");
	col_init(&c);
	c.cancel_at = 5;
	run_body(&x, body, &res, &c);
	ck_assert_int_eq(res.finish, RS_GEN_FINISH_CANCELLED);
	ck_assert_uint_eq(res.n_tokens, 5);
	ck_assert_uint_eq(c.after_cancel, 0);
	ck_assert_uint_eq(c.n_finish, 0);
	/* no token ran after the cancelling one */
	ck_assert_int_eq(rs_state_pos(x.st), p + 4);
	ck_assert_mem_eq(res.tokens, ref.greedy, 5 * sizeof(int32_t));
	rs_gen_result_cleanup(&res);
	col_cleanup(&c);
	/* during the prefill: nothing is generated */
	col_init(&c);
	c.cancel_progress = 1;
	rs_gen_reset(x.g);
	run_body(&x, body, &res, &c);
	ck_assert_int_eq(res.finish, RS_GEN_FINISH_CANCELLED);
	ck_assert_uint_eq(res.n_tokens, 0);
	ck_assert_uint_eq(c.n_progress, 1);
	ck_assert_uint_eq(c.after_cancel, 0);
	rs_gen_result_cleanup(&res);
	col_cleanup(&c);
	/* the next request still runs, and the cache serves it */
	run_body(&x, body, &res, NULL);
	ck_assert_mem_eq(res.tokens, ref.greedy, 40 * sizeof(int32_t));
	rs_gen_result_cleanup(&res);
	free(body);
	gx_close(&x);
	t_ref_free(&ref);
}
END_TEST

/*
 * One token comes from the prefill's logits, with no decode step: its
 * timings carry no speed (10^5 tok/s was reported, and rs-serve's log and
 * gauge showed it); two tokens do.
 */
START_TEST(one_token_speed)
{
	struct gx		x;
	struct t_ref		ref;
	struct rs_gen_result	res;
	char			*body;

	t_ref_load(&ref);
	gx_open(&x, F16, 0, 1, NULL);
	for (int n = 1; n <= 2; n++) {
		body = greedy_body(&ref, n == 1 ? "\"max_tokens\": 1" :
		    "\"max_tokens\": 2");
		rs_gen_reset(x.g);
		run_body(&x, body, &res, NULL);
		ck_assert_int_eq(res.timings.predicted_n, n);
		if (n == 1)
			ck_assert(res.timings.predicted_per_second == 0 &&
			    res.timings.predicted_per_token_ms == 0);
		else
			ck_assert(res.timings.predicted_per_second > 0);
		rs_gen_result_cleanup(&res);
		free(body);
	}
	gx_close(&x);
	t_ref_free(&ref);
}
END_TEST

/*
 * A prefill cancelled after its first call reports the tokens it
 * computed (timings.prompt_n: rs-serve's log and /metrics count them),
 * not the whole prompt; usage still counts the prompt.
 */
START_TEST(cancel_prefill_counts)
{
	struct gx		x;
	struct rs_gen_opts	o;
	struct rs_gen_result	res;
	struct rs_buf		b;
	struct col		c;
	int			i;

	rs_gen_opts_init(&o);
	o.prefill_chunk = 256;
	gx_open(&x, F16, 1024, 1, &o);
	rs_buf_init(&b);
	rs_buf_adds(&b, "{\"tokens\": [");
	for (i = 0; i < 600; i++)
		rs_buf_addf(&b, "%s%d", i > 0 ? ", " : "", 100 + i % 900);
	rs_buf_adds(&b, "], \"max_tokens\": 4}");
	col_init(&c);
	c.cancel_progress = 1;
	run_body(&x, b.data, &res, &c);
	ck_assert_int_eq(res.finish, RS_GEN_FINISH_CANCELLED);
	ck_assert_uint_eq(c.n_progress, 1);
	ck_assert_int_eq(rs_state_pos(x.st), 256);
	ck_assert_int_eq(res.usage.prompt_tokens, 600);
	ck_assert_int_eq(res.timings.prompt_n, 256);
	rs_gen_result_cleanup(&res);
	col_cleanup(&c);
	/* not cancelled: every token not cached */
	rs_gen_reset(x.g);
	run_body(&x, b.data, &res, NULL);
	ck_assert_int_eq(res.timings.prompt_n, 600 - res.usage.cached_tokens);
	ck_assert_int_eq(res.timings.cache_n, res.usage.cached_tokens);
	rs_gen_result_cleanup(&res);
	rs_buf_cleanup(&b);
	gx_close(&x);
}
END_TEST

/* ---- chat ---- */

/* Events concatenate to the result; reasoning tokens are counted. */
START_TEST(chat_stream)
{
	struct gx		x;
	struct rs_gen_result	res;
	struct col		c;
	char			body[192];
	int32_t			think_end;

	gx_open(&x, "tiny/model-q8_0.gguf", 0, 1, NULL);
	ck_assert(rs_gen_chat_ok(x.g, NULL));
	col_init(&c);
	think_end = rs_tok_find(x.tok, "</think>", 8);
	snprintf(body, sizeof(body), "{\"messages\": [{\"role\": \"user\", "
	    "\"content\": \"hi\"}], \"max_tokens\": 16, \"seed\": 7, "
	    "\"enable_thinking\": true, \"logit_bias\": {\"%d\": -100}}",
	    think_end);
	run_body(&x, body, &res, &c);
	ck_assert_int_eq(res.finish, RS_GEN_FINISH_LENGTH);
	ck_assert_uint_eq(res.n_tokens, 16);
	ck_assert_uint_eq(c.n_tokens, 16);
	ck_assert_uint_eq(c.content.len, res.content_len);
	ck_assert(res.content_len == 0 || memcmp(c.content.data, res.content,
	    res.content_len) == 0);
	ck_assert_uint_eq(c.reasoning.len, res.reasoning_len);
	ck_assert(res.reasoning_len == 0 || memcmp(c.reasoning.data,
	    res.reasoning, res.reasoning_len) == 0);
	/* the prompt ends in "<think>\n" and </think> is banned: all of it
	   is reasoning */
	ck_assert_ptr_null(memmem(res.raw, res.raw_len, "</think>", 8));
	ck_assert_int_eq(res.usage.reasoning_tokens, 16);
	ck_assert_uint_eq(res.content_len, 0);
	ck_assert_uint_gt(res.reasoning_len, 0);
	rs_gen_result_cleanup(&res);
	col_cleanup(&c);
	/* thinking off: no reasoning tokens */
	run_body(&x, "{\"messages\": [{\"role\": \"user\", \"content\": "
	    "\"hi\"}], \"max_tokens\": 8, \"enable_thinking\": false}", &res,
	    NULL);
	ck_assert_int_eq(res.usage.reasoning_tokens, 0);
	ck_assert_uint_eq(res.reasoning_len, 0);
	rs_gen_result_cleanup(&res);
	gx_close(&x);
}
END_TEST

/* Chat never samples padding rows or non-EOG control tokens (§0). */
START_TEST(chat_bans)
{
	struct gx		x;
	struct rs_gen_result	res;
	int			t;

	gx_open(&x, "tiny/model-q8_0.gguf", 0, 1, NULL);
	run_body(&x, "{\"messages\": [{\"role\": \"user\", \"content\": "
	    "\"hi\"}], \"max_tokens\": 200, \"temperature\": 2, \"top_k\": 0, "
	    "\"top_p\": 1, \"seed\": 1, \"enable_thinking\": false}", &res,
	    NULL);
	for (size_t i = 0; i < res.n_tokens; i++) {
		t = rs_tok_type(x.tok, res.tokens[i]);
		ck_assert_msg(t == RS_TOK_NORMAL || t == RS_TOK_USER_DEFINED ||
		    rs_tok_is_eog(x.tok, res.tokens[i]), "token %zu: id %d "
		    "of type %d sampled", i, res.tokens[i], t);
	}
	rs_gen_result_cleanup(&res);
	gx_close(&x);
}
END_TEST

/* A second turn reuses the first one's cache and gives the same tokens. */
START_TEST(chat_prefix_reuse)
{
	struct gx		x;
	struct rs_gen_result	a, b, c;
	struct rs_buf		body;
	struct rs_json		*s;
	char			*js;

	gx_open(&x, F16, 0, 1, NULL);
	run_body(&x, "{\"messages\": [{\"role\": \"user\", \"content\": "
	    "\"Hello\"}], \"max_tokens\": 12, \"temperature\": 0, "
	    "\"enable_thinking\": false}", &a, NULL);
	rs_buf_init(&body);
	rs_buf_adds(&body, "{\"messages\": [{\"role\": \"user\", \"content\": "
	    "\"Hello\"}, {\"role\": \"assistant\", \"content\": ");
	s = rs_json_strn(a.content, a.content_len);
	js = rs_json_dumps(s);
	rs_buf_adds(&body, js);
	rs_buf_adds(&body, "}, {\"role\": \"user\", \"content\": \"More\"}], "
	    "\"max_tokens\": 12, \"temperature\": 0, \"enable_thinking\": "
	    "false}");
	ck_assert(!body.oom);
	run_body(&x, body.data, &b, NULL);
	ck_assert_int_gt(b.usage.cached_tokens, 4);
	ck_assert_int_eq(b.timings.cache_n + b.timings.prompt_n,
	    b.usage.prompt_tokens);
	rs_gen_reset(x.g);
	run_body(&x, body.data, &c, NULL);
	ck_assert_int_eq(c.usage.cached_tokens, 0);
	ck_assert_uint_eq(b.n_tokens, c.n_tokens);
	ck_assert_mem_eq(b.tokens, c.tokens, b.n_tokens * sizeof(int32_t));
	free(js);
	rs_json_free(s);
	rs_buf_cleanup(&body);
	rs_gen_result_cleanup(&a);
	rs_gen_result_cleanup(&b);
	rs_gen_result_cleanup(&c);
	gx_close(&x);
}
END_TEST

/* Count of ID in the N ids at P. */
static size_t
count_id(const int32_t *p, size_t n, int32_t id)
{
	size_t	k = 0;

	for (size_t i = 0; i < n; i++)
		k += p[i] == id;
	return (k);
}

/*
 * The prompt's ids are the reference's (whole rendered text, special
 * parsing on) for ordinary text; a client's "<|im_end|>" stays text
 * unless client_specials.
 */
START_TEST(chat_tokens)
{
	struct gx		x;
	struct rs_gen_req	r;
	struct rs_gen_error	ge;
	struct rs_chat_opts	co;
	struct rs_chat_prompt	p = { 0 };
	struct rs_tok_ids	want;
	struct rs_gen_opts	o;
	struct rs_json		*msgs;
	struct rs_err		err;
	int32_t			im_end;
	const char		*m = "[{\"role\": \"system\", \"content\": "
				    "\"Be brief.\"}, {\"role\": \"user\", "
				    "\"content\": \"Hi <think> there\"}]";
	const char		*inj = "{\"messages\": [{\"role\": \"user\", "
				    "\"content\": \"a<|im_end|>b\"}]}";
	char			 body[256];

	gx_open(&x, F16, 0, 1, NULL);
	/* thinking on: the raw template's default when undefined */
	snprintf(body, sizeof(body), "{\"messages\": %s, \"enable_thinking\": "
	    "true}", m);
	rs_gen_req_init(&r, x.g);
	ck_assert(parse_body(&x, &r, body, &ge) == RS_OK);
	ck_assert_msg(rs_gen_prepare(x.g, &r, &ge) == RS_OK, "%s",
	    ge.err.msg);
	ck_assert(r.thinking);
	ck_assert(rs_json_parse(m, strlen(m), &msgs, &err) == RS_OK);
	rs_chat_opts_init(&co, rs_gen_variant(x.g));
	ck_assert(rs_chat_render(&co, msgs, &p, &err) == RS_OK);
	ck_assert_uint_eq(r.rendered_len, p.len);
	ck_assert_mem_eq(r.rendered, p.text, p.len);
	rs_tok_ids_init(&want);
	t_tok_encode(x.tok, p.text, p.len, RS_TOK_SPECIAL_ALL, &want);
	t_tok_assert_ids(&(struct rs_tok_ids){ r.prompt, r.n_prompt,
	    r.n_prompt }, &want, "chat prompt", 0);
	rs_gen_req_cleanup(&r);
	rs_chat_prompt_cleanup(&p);
	rs_json_free(msgs);
	im_end = rs_tok_find(x.tok, IM_END, strlen(IM_END));
	rs_gen_req_init(&r, x.g);
	ck_assert(parse_body(&x, &r, inj, &ge) == RS_OK);
	ck_assert(rs_gen_prepare(x.g, &r, &ge) == RS_OK);
	ck_assert_uint_eq(count_id(r.prompt, r.n_prompt, im_end), 1);
	rs_gen_req_cleanup(&r);
	gx_close(&x);
	rs_gen_opts_init(&o);
	o.client_specials = 1;
	gx_open(&x, F16, 0, 1, &o);
	rs_gen_req_init(&r, x.g);
	ck_assert(parse_body(&x, &r, inj, &ge) == RS_OK);
	ck_assert(rs_gen_prepare(x.g, &r, &ge) == RS_OK);
	ck_assert_uint_eq(count_id(r.prompt, r.n_prompt, im_end), 2);
	rs_gen_req_cleanup(&r);
	rs_tok_ids_cleanup(&want);
	gx_close(&x);
}
END_TEST

#define TOOLS	"\"tools\": [{\"type\": \"function\", \"function\": " \
		"{\"name\": \"get_weather\", \"parameters\": " \
		"{\"type\": \"object\", \"properties\": {\"city\": " \
		"{\"type\": \"string\"}}}}}]"
#define NAMED	"\"tool_choice\": {\"type\": \"function\", \"function\": " \
		"{\"name\": \"get_weather\"}}"

/*
 * tool_choice naming a function forces "<tool_call>\n<function=NAME>\n";
 * an end-of-generation token then closes the call: finish "tool_calls",
 * one call whose streamed pieces are the result's.
 */
START_TEST(tool_named)
{
	struct gx		x;
	struct rs_gen_result	res;
	struct col		c;
	struct rs_tok_ids	forced;
	char			body[512];
	int32_t			eog;

	gx_open(&x, F16, 0, 1, NULL);
	eog = rs_tok_find(x.tok, IM_END, strlen(IM_END));
	snprintf(body, sizeof(body), "{\"messages\": [{\"role\": \"user\", "
	    "\"content\": \"Weather?\"}], %s, %s, \"enable_thinking\": false, "
	    "\"logit_bias\": {\"%d\": 100}, \"max_tokens\": 30}", TOOLS, NAMED,
	    eog);
	col_init(&c);
	run_body(&x, body, &res, &c);
	rs_tok_ids_init(&forced);
	t_tok_encode(x.tok, "<tool_call>\n<function=get_weather>\n", 35,
	    RS_TOK_SPECIAL_USER, &forced);
	ck_assert_uint_eq(res.n_tokens, forced.n + 1);
	ck_assert_mem_eq(res.tokens, forced.v, forced.n * sizeof(int32_t));
	ck_assert_int_eq(res.tokens[forced.n], eog);
	ck_assert_int_eq(res.finish, RS_GEN_FINISH_TOOL_CALLS);
	ck_assert_int_eq(c.finish, RS_GEN_FINISH_TOOL_CALLS);
	ck_assert_uint_eq(res.n_calls, 1);
	ck_assert_str_eq(res.calls[0].name, "get_weather");
	ck_assert_str_eq(res.calls[0].arguments, "{}");
	ck_assert(res.calls[0].known);
	ck_assert_int_eq(strncmp(res.calls[0].id, "call_", 5), 0);
	ck_assert_uint_eq(strlen(res.calls[0].id), 29);
	ck_assert_uint_eq(c.n_calls, 1);
	ck_assert_str_eq(c.names.data, "get_weather");
	ck_assert_str_eq(c.ids.data, res.calls[0].id);
	ck_assert_str_eq(c.args.data, "{}");
	ck_assert_uint_eq(res.content_len, 0);
	/* forced tokens are completion tokens (§4.8) */
	ck_assert_int_eq(res.usage.completion_tokens, (int64_t)forced.n + 1);
	rs_tok_ids_cleanup(&forced);
	col_cleanup(&c);
	rs_gen_result_cleanup(&res);
	gx_close(&x);
}
END_TEST

/*
 * parallel_tool_calls false ends generation at the first </tool_call>;
 * with true, generation goes on.  Thinking on: the forced text follows
 * the sampled </think>.
 */
START_TEST(tool_parallel_and_thinking)
{
	struct gx		x;
	struct rs_gen_result	res;
	struct rs_tok_ids	forced;
	char			body[640];
	int32_t			close, think_end;

	gx_open(&x, F16, 0, 1, NULL);
	close = rs_tok_find(x.tok, "</tool_call>", 12);
	think_end = rs_tok_find(x.tok, "</think>", 8);
	rs_tok_ids_init(&forced);
	t_tok_encode(x.tok, "<tool_call>\n<function=get_weather>\n", 35,
	    RS_TOK_SPECIAL_USER, &forced);
	snprintf(body, sizeof(body), "{\"messages\": [{\"role\": \"user\", "
	    "\"content\": \"Weather?\"}], %s, %s, \"enable_thinking\": false, "
	    "\"logit_bias\": {\"%d\": 100}, \"max_tokens\": 30, "
	    "\"parallel_tool_calls\": false}", TOOLS, NAMED, close);
	run_body(&x, body, &res, NULL);
	ck_assert_uint_eq(res.n_tokens, forced.n + 1);
	ck_assert_int_eq(res.tokens[forced.n], close);
	ck_assert_int_eq(res.finish, RS_GEN_FINISH_TOOL_CALLS);
	ck_assert_uint_eq(res.n_calls, 1);
	rs_gen_result_cleanup(&res);
	/* parallel calls (auto): generation goes on after a </tool_call> */
	snprintf(body, sizeof(body), "{\"messages\": [{\"role\": \"user\", "
	    "\"content\": \"Weather?\"}], %s, \"tool_choice\": \"auto\", "
	    "\"enable_thinking\": false, \"logit_bias\": {\"%d\": 100}, "
	    "\"max_tokens\": 20}", TOOLS, close);
	run_body(&x, body, &res, NULL);
	ck_assert_uint_eq(res.n_tokens, 20);
	ck_assert_int_eq(res.finish, RS_GEN_FINISH_LENGTH);
	rs_gen_result_cleanup(&res);
	/* a named choice is one call: its </tool_call> ends generation */
	snprintf(body, sizeof(body), "{\"messages\": [{\"role\": \"user\", "
	    "\"content\": \"Weather?\"}], %s, %s, \"enable_thinking\": false, "
	    "\"logit_bias\": {\"%d\": 100}, \"max_tokens\": 20}", TOOLS, NAMED,
	    close);
	run_body(&x, body, &res, NULL);
	ck_assert_uint_eq(res.n_tokens, forced.n + 1);
	ck_assert_int_eq(res.finish, RS_GEN_FINISH_TOOL_CALLS);
	ck_assert_uint_eq(res.n_calls, 1);
	rs_gen_result_cleanup(&res);
	/* thinking: </think>, then "\n\n<tool_call>\n<function=NAME>\n" */
	rs_tok_ids_cleanup(&forced);
	rs_tok_ids_init(&forced);
	t_tok_encode(x.tok, "\n\n<tool_call>\n<function=get_weather>\n", 37,
	    RS_TOK_SPECIAL_USER, &forced);
	snprintf(body, sizeof(body), "{\"messages\": [{\"role\": \"user\", "
	    "\"content\": \"Weather?\"}], %s, %s, \"logit_bias\": {\"%d\": "
	    "100}, \"max_tokens\": %zu, \"reasoning_effort\": \"high\"}",
	    TOOLS, NAMED, think_end,
	    forced.n + 2);
	run_body(&x, body, &res, NULL);
	ck_assert_uint_eq(res.n_tokens, forced.n + 2);
	ck_assert_int_eq(res.tokens[0], think_end);
	ck_assert_mem_eq(res.tokens + 1, forced.v, forced.n * sizeof(int32_t));
	ck_assert_int_eq(res.usage.reasoning_tokens, 1);
	rs_gen_result_cleanup(&res);
	rs_tok_ids_cleanup(&forced);
	gx_close(&x);
}
END_TEST

/*
 * A forced tool call's opening must fit in the context (§3.8): with one
 * token less room than it needs, rs_gen_prepare() refuses the request
 * (param tool_choice), so that a server answers 400 before it opens a
 * stream (§4.5); with exactly the room, the run makes the call.
 */
START_TEST(tool_choice_no_room)
{
	static const char	*body = "{\"messages\": [{\"role\": \"user\", "
				    "\"content\": \"Time?\"}], \"tools\": [{\"type\": "
				    "\"function\", \"function\": {\"name\": "
				    "\"get_the_time_of_day_in_a_city\"}}], \"tool_choice\": "
				    "\"required\", \"temperature\": 0}";
	struct gx		 x;
	struct rs_gen_req	 r;
	struct rs_gen_error	 ge = { 0 };
	struct rs_gen_result	 res;
	int32_t			 need;

	/* the prompt and the reservation, measured with room to spare */
	gx_open(&x, F16, 0, 0, NULL);
	rs_gen_req_init(&r, x.g);
	ck_assert(parse_body(&x, &r, body, &ge) == RS_OK);
	ck_assert_msg(rs_gen_prepare(x.g, &r, &ge) == RS_OK, "%s",
	    ge.err.msg);
	ck_assert_uint_gt(r.n_reserve, 2);
	need = (int32_t)(r.n_prompt + r.n_reserve);
	rs_gen_req_cleanup(&r);
	gx_close(&x);

	gx_open(&x, F16, need - 1, 0, NULL);
	rs_gen_req_init(&r, x.g);
	ck_assert(parse_body(&x, &r, body, &ge) == RS_OK);
	ck_assert_int_eq(rs_gen_prepare(x.g, &r, &ge), RS_ERR_INVALID_ARG);
	ck_assert_str_eq(ge.type, "invalid_request_error");
	ck_assert_int_eq(ge.code, 400);
	ck_assert_str_eq(ge.param, "tool_choice");
	ck_assert_ptr_nonnull(strstr(ge.err.msg, "forced tool call needs"));
	rs_gen_req_cleanup(&r);
	gx_close(&x);

	gx_open(&x, F16, need, 0, NULL);
	run_body(&x, body, &res, NULL);
	ck_assert_uint_ge(res.n_calls, 1);
	ck_assert_str_eq(res.calls[0].name, "get_the_time_of_day_in_a_city");
	rs_gen_result_cleanup(&res);
	gx_close(&x);
}
END_TEST

/*
 * tool_choice required or named yields a valid call of a listed tool
 * whatever the model writes (#15): the tiny model's weights are noise, so
 * sampled at temperature 1 it would wander off in reasoning, end early,
 * write a name of its own or run out of max_tokens mid-call.  Every run,
 * thinking or not, with max_tokens too small for the call's opening or
 * not: at least one call, the first one of a listed tool, its arguments a
 * JSON object, the streamed calls the same as the result's.
 */
START_TEST(tool_choice_any_model)
{
	static const char *choice[] = {
		"\"required\"",
		"{\"type\": \"function\", \"function\": {\"name\": "
		    "\"get_time\"}}",
	};
	struct gx		x;
	struct rs_gen_result	res;
	struct col		c;
	struct rs_json		*j;
	struct rs_err		err = { 0 };
	char			body[1024];

	gx_open(&x, F16, 0, 1, NULL);
	for (int k = 0; k < 2; k++)
	for (int think = 0; think < 2; think++)
	for (int mt = 2; mt <= 40; mt += 38)
	for (int seed = 0; seed < 4; seed++) {
		snprintf(body, sizeof(body), "{\"messages\": [{\"role\": "
		    "\"user\", \"content\": \"Weather?\"}], \"tools\": ["
		    "{\"type\": \"function\", \"function\": {\"name\": "
		    "\"get_weather\", \"parameters\": {\"type\": \"object\", "
		    "\"properties\": {\"city\": {\"type\": \"string\"}}}}}, "
		    "{\"type\": \"function\", \"function\": {\"name\": "
		    "\"get_time\"}}], \"tool_choice\": %s, \"enable_thinking\": "
		    "%s, \"temperature\": 1, \"seed\": %d, \"max_tokens\": %d}",
		    choice[k], think ? "true" : "false", seed, mt);
		col_init(&c);
		run_body(&x, body, &res, &c);
		ck_assert_msg(res.n_calls >= 1, "%s: no call", body);
		ck_assert_msg(strcmp(res.calls[0].name, "get_time") == 0 ||
		    (k == 0 && strcmp(res.calls[0].name, "get_weather") == 0),
		    "%s: call %s", body, res.calls[0].name);
		ck_assert(res.calls[0].known);
		for (size_t i = 0; i < res.n_calls; i++) {
			ck_assert_msg(rs_json_parse(res.calls[i].arguments,
			    res.calls[i].args_len, &j, &err) == RS_OK &&
			    rs_json_kind(j) == RS_JSON_OBJECT, "%s: args %s",
			    body, res.calls[i].arguments);
			rs_json_free(j);
		}
		ck_assert_uint_eq(c.n_calls, res.n_calls);
		ck_assert(strncmp(c.names.data, res.calls[0].name,
		    strlen(res.calls[0].name)) == 0);
		if (res.n_calls == 1)
			ck_assert_str_eq(c.args.data, res.calls[0].arguments);
		col_cleanup(&c);
		rs_gen_result_cleanup(&res);
	}
	gx_close(&x);
}
END_TEST

/* ---- bad input ---- */

/* a stop string of 1,024 bytes, rs_stop.h's bound */
#define A16	"aaaaaaaaaaaaaaaa"
#define A256	A16 A16 A16 A16 A16 A16 A16 A16 A16 A16 A16 A16 A16 A16 A16 A16
#define A1024	A256 A256 A256 A256

static const struct bad {
	const char	*body;
	const char	*param;		/* expected param ("" none) */
	const char	*word;		/* expected in the message */
} bad[] = {
	{ "[1, 2]", "", "JSON object" },
	{ "{}", "messages", "no input" },
	{ "{\"prompt\": \"a\", \"tokens\": [1]}", "tokens", "only one" },
	{ "{\"prompt\": 5}", "prompt", "string or an array" },
	{ "{\"tokens\": [1, \"x\"]}", "tokens[1]", "integer" },
	{ "{\"tokens\": [1, 99999]}", "tokens[1]", "outside the vocabulary" },
	{ "{\"ids\": [-1]}", "ids[0]", "outside the vocabulary" },
	{ "{\"tokens\": [1], \"max_tokens\": -5}", "max_tokens", "outside" },
	{ "{\"tokens\": [1], \"max_tokens\": 0}", "max_tokens", "outside" },
	{ "{\"tokens\": [1], \"max_tokens\": 1.5}", "max_tokens", "integer" },
	{ "{\"tokens\": [1], \"max_completion_tokens\": \"9\"}",
	    "max_completion_tokens", "integer" },
	{ "{\"tokens\": [1], \"temperature\": 3}", "temperature", "outside" },
	{ "{\"tokens\": [1], \"temperature\": \"hot\"}", "temperature",
	    "number" },
	{ "{\"tokens\": [1], \"top_p\": 0}", "top_p", "outside" },
	/* past the end by less than a float resolves: still refused,
	   named, with the value as sent */
	{ "{\"tokens\": [1], \"top_p\": 1e-320}", "top_p", "32-bit float" },
	{ "{\"tokens\": [1], \"repetition_penalty\": 1e-300}",
	    "repetition_penalty", "32-bit float" },
	{ "{\"tokens\": [1], \"temperature\": 2.0000001}", "temperature",
	    "2.0000001 is outside" },
	{ "{\"tokens\": [1], \"top_k\": -2}", "top_k", "outside" },
	{ "{\"tokens\": [1], \"min_p\": 1.5}", "min_p", "outside" },
	{ "{\"tokens\": [1], \"presence_penalty\": 2.5}", "presence_penalty",
	    "outside" },
	{ "{\"tokens\": [1], \"repetition_penalty\": 0}",
	    "repetition_penalty", "outside" },
	{ "{\"tokens\": [1], \"seed\": \"x\"}", "seed", "integer" },
	{ "{\"tokens\": [1], \"stop\": 5}", "stop", "string" },
	{ "{\"tokens\": [1], \"stop\": [\"\"]}", "stop[0]", "non-empty" },
	/* (refused when the run began, with no param) */
	{ "{\"tokens\": [1], \"stop\": [\"x\", \"" A1024 "b\"]}", "stop[1]",
	    "1025 bytes, at most 1024" },
	{ "{\"tokens\": [1], \"stop\": \"" A1024 "b\"}", "stop",
	    "1025 bytes, at most 1024" },
	{ "{\"tokens\": [1], \"stop\": [\"a\",\"b\",\"c\",\"d\",\"e\",\"f\","
	    "\"g\",\"h\",\"i\",\"j\",\"k\",\"l\",\"m\",\"n\",\"o\",\"p\","
	    "\"q\"]}", "stop", "at most" },
	{ "{\"tokens\": [1], \"stop_token_ids\": [5000]}", "stop_token_ids[0]",
	    "outside" },
	{ "{\"tokens\": [1], \"logit_bias\": {\"abc\": 1}}", "logit_bias.abc",
	    "token id" },
	{ "{\"tokens\": [1], \"logit_bias\": {\"5\": 101}}", "logit_bias.5",
	    "[-100, 100]" },
	{ "{\"tokens\": [1], \"n\": 2}", "n", "n = 1" },
	{ "{\"tokens\": [1], \"logprobs\": true}", "logprobs",
	    "integer in [0, 20]" },
	{ "{\"tokens\": [1], \"logprobs\": 21}", "logprobs", "outside" },
	{ "{\"prompt\": \"x\", \"logprobs\": -1}", "logprobs",
	    "outside" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	    "\"logprobs\": 3}", "logprobs", "true or false" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	    "\"top_logprobs\": 3}", "top_logprobs", "needs logprobs" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	    "\"logprobs\": false, \"top_logprobs\": 0}", "top_logprobs",
	    "needs logprobs" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	    "\"logprobs\": true, \"top_logprobs\": 21}", "top_logprobs",
	    "outside" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	    "\"logprobs\": true, \"top_logprobs\": \"3\"}", "top_logprobs",
	    "integer" },
	{ "{\"tokens\": [1], \"response_format\": {\"type\": \"json_schema\"}}",
	    "response_format", "json_schema" },
	{ "{\"tokens\": [1], \"response_format\": \"json\"}",
	    "response_format", "string 'type'" },
	{ "{\"tokens\": [1], \"response_format\": {}}",
	    "response_format", "string 'type'" },
	{ "{\"messages\": \"hi\"}", "messages", "array" },
	{ "{\"messages\": []}", "messages", "No messages" },
	{ "{\"messages\": [5]}", "messages[0]", "object" },
	{ "{\"messages\": [{\"content\": \"x\"}]}", "messages[0].role",
	    "missing" },
	{ "{\"messages\": [{\"role\": \"function\", \"content\": \"x\"}]}",
	    "messages[0].role", "unexpected role" },
	/* the key quoted in the param too (ESC reached it raw) */
	{ "{\"tokens\": [1], \"logit_bias\": {\"\\u001b[31m\": 1}}",
	    "logit_bias.\\x1b[31m", "'\\x1b[31m' is not a token id" },
	/* a client's string quoted whole: past a NUL (it said 'us'), and
	   cut only between characters */
	{ "{\"messages\": [{\"role\": \"us\\u0000er\", \"content\": "
	    "\"x\"}]}", "messages[0].role", "unexpected role 'us\\x00er'" },
	{ "{\"tools\": [{\"function\": {\"name\": \"f\"}}], \"tool_choice\": "
	    "\"\u20ac\u20ac\u20ac\u20ac\u20ac\u20ac\u20ac\u20ac\u20ac\u20ac"
	    "\u20ac\u20ac\u20ac\u20ac\u20ac\u20ac\u20ac\u20ac\u20ac\u20ac"
	    "\u20ac\u20ac\u20ac\u20ac\", \"messages\": [{\"role\": \"user\", "
	    "\"content\": \"x\"}]}", "tool_choice",
	    "'\u20ac\u20ac\u20ac\u20ac\u20ac\u20ac\u20ac\u20ac\u20ac\u20ac"
	    "\u20ac\u20ac\u20ac\u20ac\u20ac\u20ac\u20ac\u20ac\u20ac\u20ac"
	    "\u20ac...' is not" },
	{ "{\"messages\": [{\"role\": \"user\"}]}", "messages[0].content",
	    "missing" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": 5}]}",
	    "messages[0].content", "string" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": "
	    "\"image_url\"}]}]}", "messages[0].content[0].type",
	    "not supported" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": "
	    "\"blob\"}]}]}", "messages[0].content[0].type", "unsupported" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": [\"x\"]}]}",
	    "messages[0].content[0]", "object" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}, "
	    "{\"role\": \"assistant\", \"tool_calls\": [{\"function\": "
	    "{\"name\": \"f\", \"arguments\": \"[1]\"}}]}]}",
	    "messages[1].tool_calls[0].function.arguments", "JSON object" },
	/* a wide number does not make malformed arguments acceptable */
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}, "
	    "{\"role\": \"assistant\", \"tool_calls\": [{\"function\": "
	    "{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1e400, "
	    "\\\"b\\\": -}\"}}]}]}",
	    "messages[1].tool_calls[0].function.arguments", "JSON object" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}, "
	    "{\"role\": \"assistant\", \"tool_calls\": [{\"function\": "
	    "{\"name\": \"f\", \"arguments\": \"{\\\"a>\\\": 1}\"}}]}]}",
	    "messages[1].tool_calls[0].function.arguments", "argument name" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}, "
	    "{\"role\": \"assistant\", \"tool_calls\": [{\"function\": "
	    "{\"name\": \"a>b\"}}]}]}",
	    "messages[1].tool_calls[0].function.name", "'>'" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}, "
	    "{\"role\": \"tool\", \"content\": \"r\"}]}", "messages[1]",
	    "tool message" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	    "\"tools\": {}}", "tools", "array" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	    "\"tools\": [{\"type\": \"custom\", \"function\": {\"name\": "
	    "\"f\"}}]}", "tools[0].type", "function" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	    "\"tools\": [{\"type\": \"function\", \"function\": {\"name\": "
	    "\"a b\"}}]}", "tools[0].function.name", "white space" },
	/* Unicode white space too (the Jinja probe of session 44) */
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	    "\"tools\": [{\"type\": \"function\", \"function\": {\"name\": "
	    "\"a\\u00a0b\"}}]}", "tools[0].function.name", "white space" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	    "\"tools\": [{\"type\": \"function\", \"function\": {\"name\": "
	    "\"a\\u3000b\"}}]}", "tools[0].function.name", "white space" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	    "\"tools\": [{\"function\": {\"name\": \"f\"}}, {\"function\": "
	    "{\"name\": \"f\"}}]}", "tools[1].function.name", "duplicate" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	    "\"tools\": [{\"function\": {\"name\": \"f\", \"parameters\": "
	    "5}}]}", "tools[0].function.parameters", "schema" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	    "\"tool_choice\": \"auto\"}", "tool_choice", "tools must be set" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	    "\"tools\": [{\"function\": {\"name\": \"f\"}}], \"tool_choice\": "
	    "{\"type\": \"function\", \"function\": {\"name\": \"g\"}}}",
	    "tool_choice.function.name", "does not match" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	    "\"reasoning_effort\": \"ultra\"}", "reasoning_effort",
	    "Accepted" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	    "\"reasoning_effort\": 3}", "reasoning_effort", "Accepted" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	    "\"enable_thinking\": \"yes\"}", "enable_thinking",
	    "true or false" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	    "\"chat_template_kwargs\": {\"enable_thinking\": 1}}",
	    "chat_template_kwargs.enable_thinking", "true or false" },
	{ "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	    "\"continue_final_message\": true}", "continue_final_message",
	    "not supported" },
};

START_TEST(bad_request)
{
	struct gx		 x;
	struct rs_gen_req	 r;
	struct rs_gen_error	 ge;
	const struct bad	*b = &bad[_i];

	gx_open(&x, F16, 64, 0, NULL);
	rs_gen_req_init(&r, x.g);
	memset(&ge, 0, sizeof(ge));
	ck_assert_msg(parse_body(&x, &r, b->body, &ge) == RS_ERR_INVALID_ARG,
	    "%s: accepted", b->body);
	ck_assert_str_eq(ge.type, "invalid_request_error");
	ck_assert_int_eq(ge.code, 400);
	ck_assert_msg(strcmp(ge.param, b->param) == 0, "%s: param '%s', "
	    "expected '%s'", b->body, ge.param, b->param);
	ck_assert_msg(strstr(ge.err.msg, b->word) != NULL, "%s: message '%s' "
	    "lacks '%s'", b->body, ge.err.msg, b->word);
	rs_gen_req_cleanup(&r);
	gx_close(&x);
}
END_TEST

/* Errors found when rendering and tokenizing, and bad generator options. */
/*
 * What OpenAI clients send besides the plain forms (the SDK probe of
 * session 44): a prompt as a batch of one string or one id array (LangChain
 * always sends one: it was "prompt[0]: must be an integer token id"), a
 * batch of two refused as such; counts written as whole floats (5.0), a
 * fraction still refused.
 */
START_TEST(client_forms)
{
	struct gx		 x;
	struct rs_gen_req	 r;
	struct rs_gen_error	 ge;

	gx_open(&x, F16, 64, 0, NULL);
	rs_gen_req_init(&r, x.g);
	ck_assert(parse_body(&x, &r, "{\"prompt\": [\"ab\"], \"max_tokens\": "
	    "5.0, \"seed\": 7.0}", &ge) == RS_OK);
	ck_assert_int_eq(r.kind, RS_GEN_TEXT);
	ck_assert_str_eq(r.text, "ab");
	ck_assert_int_eq(r.max_tokens, 5);
	ck_assert_uint_eq(r.sample.seed, 7);
	rs_gen_req_cleanup(&r);
	rs_gen_req_init(&r, x.g);
	ck_assert(parse_body(&x, &r, "{\"prompt\": [[3, 4, 5]]}", &ge) ==
	    RS_OK);
	ck_assert_int_eq(r.kind, RS_GEN_TOKENS);
	ck_assert_uint_eq(r.n_prompt, 3);
	ck_assert_int_eq(r.prompt[2], 5);
	rs_gen_req_cleanup(&r);
	rs_gen_req_init(&r, x.g);
	ck_assert_int_eq(parse_body(&x, &r, "{\"prompt\": [\"a\", \"b\"]}",
	    &ge), RS_ERR_INVALID_ARG);
	ck_assert_str_eq(ge.param, "prompt");
	ck_assert_ptr_nonnull(strstr(ge.err.msg, "one prompt a request"));
	rs_gen_req_cleanup(&r);
	/* a tool name is 128 characters at most, not bytes (§4.3) */
	for (int k = 0; k < 2; k++) {
		char	body[1024], name[600];
		size_t	o = 0;

		for (int i = 0; i < 128 + k; i++)
			o += (size_t)snprintf(name + o, sizeof(name) - o, "%s",
			    k == 0 ? "\xe5\xb7\xa5" : "a");
		snprintf(body, sizeof(body), "{\"messages\": [{\"role\": "
		    "\"user\", \"content\": \"x\"}], \"tools\": [{\"function\": "
		    "{\"name\": \"%s\"}}]}", name);
		rs_gen_req_init(&r, x.g);
		ck_assert_int_eq(parse_body(&x, &r, body, &ge), k == 0 ? RS_OK :
		    RS_ERR_INVALID_ARG);
		rs_gen_req_cleanup(&r);
	}
	rs_gen_req_init(&r, x.g);
	ck_assert_int_eq(parse_body(&x, &r, "{\"prompt\": \"a\", "
	    "\"max_tokens\": 5.5}", &ge), RS_ERR_INVALID_ARG);
	ck_assert_str_eq(ge.param, "max_tokens");
	rs_gen_req_cleanup(&r);
	gx_close(&x);
}
END_TEST

/*
 * Numbers past rs_json's range render as their lexeme inside a tool's
 * schema and a nested argument, as Jinja's tojson writes Python's int
 * (the Jinja probe of session 44: they were quoted, "maximum":
 * "18446744073709551615"); 1e400 keeps its lexeme (serving.md §6, 46).
 */
START_TEST(wide_render)
{
	struct gx		 x;
	struct rs_gen_req	 r;
	struct rs_gen_error	 ge;

	gx_open(&x, F16, 1024, 0, NULL);
	rs_gen_req_init(&r, x.g);
	ck_assert(parse_body(&x, &r, "{\"messages\": [{\"role\": \"user\", "
	    "\"content\": \"x\"}, {\"role\": \"assistant\", \"content\": "
	    "\"\", \"tool_calls\": [{\"function\": {\"name\": \"f\", "
	    "\"arguments\": {\"id\": {\"v\": 123456789012345678901234567890}, "
	    "\"big\": [1e400]}}}]}, {\"role\": \"tool\", \"content\": "
	    "\"ok\"}], \"tools\": [{\"type\": \"function\", \"function\": "
	    "{\"name\": \"f\", \"parameters\": {\"type\": \"object\", "
	    "\"properties\": {\"n\": {\"type\": \"integer\", \"maximum\": "
	    "18446744073709551615}}}}}]}", &ge) == RS_OK);
	ck_assert_msg(rs_gen_prepare(x.g, &r, &ge) == RS_OK, "%s",
	    ge.err.msg);
	ck_assert_msg(strstr(r.rendered, "\"maximum\": 18446744073709551615}")
	    != NULL, "%s", r.rendered);
	ck_assert_msg(strstr(r.rendered, "{\"v\": "
	    "123456789012345678901234567890}") != NULL, "%s", r.rendered);
	ck_assert_msg(strstr(r.rendered, "[1e400]") != NULL, "%s", r.rendered);
	rs_gen_req_cleanup(&r);
	gx_close(&x);
}
END_TEST

START_TEST(bad_prepare)
{
	struct gx		 x;
	struct rs_gen_req	 r;
	struct rs_gen_error	 ge;
	struct rs_gen_opts	 o;
	struct rs_gen		*g;
	struct rs_err		 err;

	gx_open(&x, F16, 64, 0, NULL);
	/* the template's own errors */
	rs_gen_req_init(&r, x.g);
	ck_assert(parse_body(&x, &r, "{\"messages\": [{\"role\": \"system\", "
	    "\"content\": \"x\"}]}", &ge) == RS_OK);
	ck_assert_int_eq(rs_gen_prepare(x.g, &r, &ge), RS_ERR_INVALID_ARG);
	ck_assert_ptr_nonnull(strstr(ge.err.msg, "No user query"));
	ck_assert_int_eq(ge.code, 400);
	rs_gen_req_cleanup(&r);
	/* an empty prompt */
	rs_gen_req_init(&r, x.g);
	ck_assert(parse_body(&x, &r, "{\"prompt\": \"\"}", &ge) == RS_OK);
	ck_assert_int_eq(rs_gen_prepare(x.g, &r, &ge), RS_ERR_INVALID_ARG);
	ck_assert_ptr_nonnull(strstr(ge.err.msg, "empty"));
	rs_gen_req_cleanup(&r);
	/* the param is the field the prompt came from: a completions prompt
	   of token ids is "prompt" (it said "tokens", a field not sent) */
	static const char *const empty[][2] = {
		{ "{\"prompt\": []}", "prompt" }, { "{\"tokens\": []}", "tokens" },
		{ "{\"ids\": []}", "ids" },
	};
	for (size_t i = 0; i < sizeof(empty) / sizeof(empty[0]); i++) {
		rs_gen_req_init(&r, x.g);
		ck_assert(parse_body(&x, &r, empty[i][0], &ge) == RS_OK);
		ck_assert_int_eq(rs_gen_prepare(x.g, &r, &ge),
		    RS_ERR_INVALID_ARG);
		ck_assert_msg(strcmp(ge.param, empty[i][1]) == 0, "%s: %s",
		    empty[i][0], ge.param);
		rs_gen_req_cleanup(&r);
	}
	/* no input at all */
	rs_gen_req_init(&r, x.g);
	ck_assert_int_eq(rs_gen_prepare(x.g, &r, &ge), RS_ERR_INVALID_ARG);
	rs_gen_req_cleanup(&r);
	/* generator options */
	rs_gen_opts_init(&o);
	o.reasoning_effort = "high";
	ck_assert_int_eq(rs_gen_new(&g, x.e, x.st, x.tok, &o, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert_ptr_nonnull(strstr(err.msg, "effort"));
	rs_gen_opts_init(&o);
	o.sample.top_p = 2;
	ck_assert_int_eq(rs_gen_new(&g, x.e, x.st, x.tok, &o, &err),
	    RS_ERR_INVALID_ARG);
	rs_gen_opts_init(&o);
	o.variant = (enum rs_chat_variant)77;
	ck_assert_int_eq(rs_gen_new(&g, x.e, x.st, x.tok, &o, &err),
	    RS_ERR_UNSUPPORTED);
	gx_close(&x);
}
END_TEST

/*
 * §2.5: the effort and thinking switch resolution, under the server
 * defaults (off; effort xhigh) and under operator defaults (on, or another
 * effort: --default-enable-thinking, --default-reasoning-effort).
 */
START_TEST(thinking_map)
{
	static const struct {
		int		 def_on;	/* server default: thinking */
		const char	*def_effort;	/* server default: effort */
		const char	*fields;
		int		 thinking;
		const char	*effort;
	} c[] = {
		/* the product's rule: off unless the request asks */
		{ 0, "xhigh", "", 0, "xhigh" },
		{ 0, "xhigh", ", \"enable_thinking\": null, "
		    "\"reasoning_effort\": null", 0, "xhigh" },
		{ 0, "xhigh", ", \"reasoning_effort\": \"none\"", 0, "xhigh" },
		{ 0, "xhigh", ", \"reasoning_effort\": \"High\"", 1, "xhigh" },
		{ 0, "xhigh", ", \"reasoning_effort\": \"max\"", 1, "xhigh" },
		{ 0, "xhigh", ", \"reasoning_effort\": \"xhigh\"", 1, "xhigh" },
		{ 0, "xhigh", ", \"reasoning_effort\": \"minimal\"", 1, "low" },
		{ 0, "xhigh", ", \"reasoning_effort\": \"low\"", 1, "low" },
		{ 0, "xhigh", ", \"reasoning_effort\": \"medium\"", 1,
		    "medium" },
		{ 0, "xhigh", ", \"reasoning\": {\"effort\": \"low\"}", 1,
		    "low" },
		{ 0, "xhigh", ", \"chat_template_kwargs\": "
		    "{\"reasoning_effort\": \"medium\"}", 1, "medium" },
		{ 0, "xhigh", ", \"enable_thinking\": true", 1, "xhigh" },
		{ 0, "xhigh", ", \"chat_template_kwargs\": "
		    "{\"enable_thinking\": true}", 1, "xhigh" },
		{ 0, "xhigh", ", \"enable_thinking\": false, "
		    "\"reasoning_effort\": \"low\"", 0, "low" },
		{ 0, "xhigh", ", \"chat_template_kwargs\": "
		    "{\"enable_thinking\": false}, \"enable_thinking\": true",
		    0, "xhigh" },
		{ 0, "xhigh", ", \"chat_template_kwargs\": "
		    "{\"enable_thinking\": true}, \"reasoning_effort\": "
		    "\"none\"", 1, "xhigh" },
		{ 0, "xhigh", ", \"chat_template_kwargs\": "
		    "{\"reasoning_effort\": \"low\"}, \"reasoning_effort\": "
		    "\"max\"", 1, "low" },
		{ 0, "xhigh", ", \"chat_template_kwargs\": "
		    "{\"reasoning_effort\": \"none\"}, \"reasoning_effort\": "
		    "\"max\"", 0, "xhigh" },
		/* an operator's defaults */
		{ 1, "xhigh", "", 1, "xhigh" },
		{ 1, "xhigh", ", \"reasoning_effort\": \"none\"", 0, "xhigh" },
		{ 1, "xhigh", ", \"enable_thinking\": false", 0, "xhigh" },
		{ 1, "low", "", 1, "low" },
		{ 1, "low", ", \"reasoning_effort\": \"high\"", 1, "xhigh" },
		{ 0, "medium", "", 0, "medium" },
		{ 0, "medium", ", \"enable_thinking\": true", 1, "medium" },
		{ 0, "medium", ", \"reasoning_effort\": \"low\"", 1, "low" },
	};
	struct gx		x;
	struct rs_gen_opts	o;
	struct rs_gen_req	r;
	struct rs_gen_error	ge;
	char			body[256];

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		rs_gen_opts_init(&o);
		o.enable_thinking = c[i].def_on;
		o.reasoning_effort = c[i].def_effort;
		gx_open(&x, F16, 64, 0, &o);
		snprintf(body, sizeof(body), "{\"messages\": [{\"role\": "
		    "\"user\", \"content\": \"x\"}]%s}", c[i].fields);
		rs_gen_req_init(&r, x.g);
		ck_assert_msg(parse_body(&x, &r, body, &ge) == RS_OK, "%s: %s",
		    body, ge.err.msg);
		ck_assert_msg(r.enable_thinking == c[i].thinking,
		    "default %d %s: %s", c[i].def_on, c[i].def_effort, body);
		ck_assert_msg(strcmp(r.reasoning_effort, c[i].effort) == 0,
		    "default %d %s: %s: effort %s", c[i].def_on,
		    c[i].def_effort, body, r.reasoning_effort);
		rs_gen_req_cleanup(&r);
		gx_close(&x);
	}
}
END_TEST

/*
 * The prompt a request renders under the Qwen3.8 template is the one real
 * Jinja2 rendered for the template arguments §2.5 maps it to
 * (fixtures/chat/qwen38-template-cases.json, case NAME with its messages).
 * The rows say which case each request must give; no row's expected text
 * comes from our own renderer.
 */
static const struct think_case {
	int		 def_on;	/* --default-enable-thinking */
	const char	*def_effort;	/* --default-reasoning-effort */
	const char	*fields;	/* added to {"messages": ...} */
	const char	*name;		/* the fixture case */
} think_cases[] = {
	/* no effort, no flag: the empty think block (E4) */
	{ 0, "xhigh", "", "thinking_off" },
	{ 0, "xhigh", ", \"reasoning_effort\": \"none\"", "thinking_off" },
	{ 0, "xhigh", ", \"reasoning\": {\"effort\": \"none\"}",
	    "thinking_off" },
	{ 0, "xhigh", ", \"chat_template_kwargs\": {\"enable_thinking\": "
	    "false}, \"reasoning_effort\": \"high\"", "thinking_off" },
	{ 0, "xhigh", ", \"enable_thinking\": false, \"reasoning_effort\": "
	    "\"low\"", "thinking_off_ignores_effort" },
	/* each level, and its aliases */
	{ 0, "xhigh", ", \"reasoning_effort\": \"low\"",
	    "effort_low_with_system" },
	{ 0, "xhigh", ", \"reasoning_effort\": \"minimal\"",
	    "effort_low_with_system" },
	{ 0, "xhigh", ", \"chat_template_kwargs\": {\"reasoning_effort\": "
	    "\"low\"}", "effort_low_with_system" },
	{ 0, "xhigh", ", \"reasoning_effort\": \"medium\"",
	    "effort_medium_with_system" },
	{ 0, "xhigh", ", \"reasoning\": {\"effort\": \"medium\"}",
	    "effort_medium_no_system" },
	{ 0, "xhigh", ", \"reasoning_effort\": \"xhigh\"",
	    "effort_xhigh_explicit" },
	{ 0, "xhigh", ", \"reasoning_effort\": \"high\"",
	    "effort_xhigh_explicit" },
	{ 0, "xhigh", ", \"reasoning_effort\": \"max\"",
	    "effort_xhigh_explicit" },
	/* enable_thinking true alone: xhigh */
	{ 0, "xhigh", ", \"enable_thinking\": true",
	    "thinking_on_explicit_true" },
	{ 0, "xhigh", ", \"chat_template_kwargs\": {\"enable_thinking\": "
	    "true}", "thinking_on_explicit_true" },
	{ 0, "xhigh", ", \"chat_template_kwargs\": {\"enable_thinking\": "
	    "true}, \"reasoning_effort\": \"none\"",
	    "thinking_on_explicit_true" },
	/* the operator's defaults */
	{ 1, "xhigh", "", "default_single_user" },
	{ 1, "xhigh", ", \"enable_thinking\": false", "thinking_off" },
	{ 1, "xhigh", ", \"reasoning_effort\": \"none\"", "thinking_off" },
	{ 1, "low", "", "effort_low_with_system" },
	{ 1, "medium", "", "effort_medium_no_system" },
	{ 0, "medium", "", "thinking_off" },
	{ 0, "medium", ", \"enable_thinking\": true",
	    "effort_medium_with_system" },
	{ 0, "low", ", \"reasoning_effort\": \"xhigh\"",
	    "effort_xhigh_explicit" },
};

/* Case NAME of the Qwen3.8 fixture, in ROOT. */
static const struct rs_json *
qwen38_case(const struct rs_json *root, const char *name)
{
	const struct rs_json	*cases = rs_json_get(root, "cases"), *c;
	const char		*s;
	size_t			 n;

	for (size_t i = 0; i < rs_json_arr_len(cases); i++) {
		c = rs_json_arr_at(cases, i);
		if (rs_json_as_str(rs_json_get(c, "name"), &s, &n) == 0 &&
		    strcmp(s, name) == 0)
			return (c);
	}
	ck_abort_msg("chat/qwen38-template-cases.json: no case '%s'", name);
	return (NULL);
}

START_TEST(thinking_render)
{
	const struct think_case	*tc = &think_cases[_i];
	const struct rs_json	*c, *want;
	struct rs_json		*root;
	struct gx		 x;
	struct rs_gen_opts	 o;
	struct rs_gen_req	 r;
	struct rs_gen_error	 ge;
	struct rs_err		 err = { 0 };
	struct rs_buf		 body;
	const char		*s;
	char			*text, *msgs;
	size_t			 n;

	text = t_read_file(t_fixture("chat/qwen38-template-cases.json"), &n);
	ck_assert_msg(rs_json_parse(text, n, &root, &err) == RS_OK, "%s",
	    err.msg);
	free(text);
	c = qwen38_case(root, tc->name);
	want = rs_json_get(c, "expected");
	ck_assert(rs_json_as_str(want, &s, &n) == 0);
	ck_assert((msgs = rs_json_dumps(rs_json_get(c, "messages"))) != NULL);
	rs_buf_init(&body);
	rs_buf_adds(&body, "{\"messages\": ");
	rs_buf_adds(&body, msgs);
	rs_buf_adds(&body, tc->fields);
	rs_buf_adds(&body, "}");
	rs_buf_addc(&body, '\0');
	ck_assert(!body.oom);
	rs_gen_opts_init(&o);
	o.variant = RS_CHAT_QWEN38;
	o.enable_thinking = tc->def_on;
	o.reasoning_effort = tc->def_effort;
	gx_open(&x, F16, 0, 0, &o);
	rs_gen_req_init(&r, x.g);
	ck_assert_msg(parse_body(&x, &r, body.data, &ge) == RS_OK, "%s: %s",
	    body.data, ge.err.msg);
	ck_assert_msg(rs_gen_prepare(x.g, &r, &ge) == RS_OK, "%s: %s",
	    body.data, ge.err.msg);
	ck_assert_msg(r.rendered_len == n && memcmp(r.rendered, s, n) == 0,
	    "default %d %s, %s -> case %s:\n got: %s\nwant: %s", tc->def_on,
	    tc->def_effort, body.data, tc->name, r.rendered, s);
	/* the output starts as reasoning exactly when the prompt opens a
	   think block for it */
	ck_assert_int_eq(r.thinking, n >= 8 &&
	    memcmp(s + n - 8, "<think>\n", 8) == 0);
	rs_gen_req_cleanup(&r);
	gx_close(&x);
	rs_buf_cleanup(&body);
	free(msgs);
	rs_json_free(root);
}
END_TEST

/*
 * One conversation that alternates with and without thinking: each answer
 * is the one a fresh generator gives (greedy, bit for bit on the CPU), and
 * the cache still serves what the prompts share.  Under Qwen3.5's template
 * the switch changes only the prompt's end; under Qwen3.8's an effort's
 * instruction changes its start (low), or nothing before the end (medium:
 * no instruction), so a cache that kept the wrong tokens would show here.
 */
static void
alternate(enum rs_chat_variant variant, const char *effort, int start_same)
{
	static const char *const think[] = { "", ", \"reasoning_effort\": ",
	    "", ", \"reasoning_effort\": ", "" };
	struct gx		 x, y;
	struct rs_gen_opts	 o;
	struct rs_gen_result	 a, b;
	struct rs_buf		 body;
	char			 eff[32];

	rs_gen_opts_init(&o);
	o.variant = variant;
	gx_open(&x, F16, 0, 1, &o);
	gx_open(&y, F16, 0, 1, &o);
	snprintf(eff, sizeof(eff), "\"%s\"", effort);
	for (size_t i = 0; i < sizeof(think) / sizeof(think[0]); i++) {
		rs_buf_init(&body);
		rs_buf_adds(&body, "{\"messages\": [{\"role\": \"system\", "
		    "\"content\": \"You are terse.\"}, {\"role\": \"user\", "
		    "\"content\": \"Hello\"}");
		/* from the fourth request on: a second turn */
		if (i >= 3)
			rs_buf_adds(&body, ", {\"role\": \"assistant\", "
			    "\"content\": \"Hi.\"}, {\"role\": \"user\", "
			    "\"content\": \"More\"}");
		rs_buf_adds(&body, "], \"max_tokens\": 6, \"temperature\": 0");
		rs_buf_adds(&body, think[i]);
		if (*think[i] != '\0')
			rs_buf_adds(&body, eff);
		rs_buf_adds(&body, "}");
		rs_buf_addc(&body, '\0');
		ck_assert(!body.oom);
		run_body(&x, body.data, &a, NULL);
		rs_gen_reset(y.g);
		run_body(&y, body.data, &b, NULL);
		ck_assert_int_eq(b.usage.cached_tokens, 0);
		ck_assert_msg(a.n_tokens == b.n_tokens && memcmp(a.tokens,
		    b.tokens, a.n_tokens * sizeof(int32_t)) == 0,
		    "request %zu (%s): cached and fresh answers differ", i,
		    body.data);
		ck_assert_int_eq(a.usage.prompt_tokens, b.usage.prompt_tokens);
		ck_assert_int_eq(a.usage.reasoning_tokens,
		    b.usage.reasoning_tokens);
		/* the switch changes only the end: the cache hits */
		if (i > 0 && start_same)
			ck_assert_msg(a.usage.cached_tokens > 4,
			    "request %zu: %d cached", i,
			    (int)a.usage.cached_tokens);
		rs_gen_result_cleanup(&a);
		rs_gen_result_cleanup(&b);
		rs_buf_cleanup(&body);
	}
	gx_close(&x);
	gx_close(&y);
}

START_TEST(thinking_prefix_reuse)
{
	alternate(RS_CHAT_UNKNOWN, "high", 1);	/* tiny's own: Qwen3.5 */
	alternate(RS_CHAT_QWEN38, "medium", 1);
	alternate(RS_CHAT_QWEN38, "low", 0);
}
END_TEST

/* §2.3: system merging, late system, developer, parts, tools rebuilt. */
START_TEST(normalize)
{
	struct gx		 x;
	struct rs_gen_req	 r;
	struct rs_gen_error	 ge;
	char			*s;

	gx_open(&x, F16, 64, 0, NULL);
	rs_gen_req_init(&r, x.g);
	ck_assert(parse_body(&x, &r, "{\"messages\": [{\"role\": "
	    "\"developer\", \"content\": \"A\"}, {\"role\": \"system\", "
	    "\"content\": [{\"type\": \"text\", \"text\": \"B\"}, {\"type\": "
	    "\"text\", \"text\": \"C\", \"cache_control\": {}}]}, {\"role\": "
	    "\"user\", \"content\": \"u\", \"name\": \"n\"}, {\"role\": "
	    "\"system\", \"content\": \"late\"}, {\"role\": \"assistant\", "
	    "\"content\": null, \"reasoning\": \"r\", \"tool_calls\": "
	    "[{\"id\": \"1\", \"function\": {\"name\": \"f\", \"arguments\": "
	    "\" \"}}]}, {\"role\": \"tool\", \"content\": \"ok\"}], \"tools\": "
	    "[{\"type\": \"function\", \"function\": {\"name\": \"f\", "
	    "\"strict\": true}}]}", &ge) == RS_OK);
	s = rs_json_dumps(r.messages);
	ck_assert_str_eq(s, "[{\"role\":\"system\",\"content\":\"A\\n\\nBC\"},"
	    "{\"role\":\"user\",\"content\":\"u\"},{\"role\":\"user\","
	    "\"content\":\"late\"},{\"role\":\"assistant\",\"content\":null,"
	    "\"reasoning_content\":\"r\",\"tool_calls\":[{\"type\":"
	    "\"function\",\"function\":{\"name\":\"f\",\"arguments\":{}}}]},"
	    "{\"role\":\"tool\",\"content\":\"ok\"}]");
	free(s);
	s = rs_json_dumps(r.tools);
	ck_assert_str_eq(s, "[{\"type\":\"function\",\"function\":{\"name\":"
	    "\"f\",\"parameters\":{\"type\":\"object\",\"properties\":{}}}}]");
	free(s);
	ck_assert_int_eq(r.tool_choice, RS_GEN_TOOLS_AUTO);
	rs_gen_req_cleanup(&r);
	/* numbers past rs_json's range, as the model's own calls keep them
	   (serving.md §6, 46), come back as their lexeme (RS_JSON_WIDE,
	   bare numbers in rs_json's dump; "9e999" stays a string) */
	rs_gen_req_init(&r, x.g);
	ck_assert(parse_body(&x, &r, "{\"messages\": [{\"role\": \"user\", "
	    "\"content\": \"u\"}, {\"role\": \"assistant\", \"tool_calls\": "
	    "[{\"function\": {\"name\": \"f\", \"arguments\": \"{\\\"a\\\": "
	    "18446744073709551615, \\\"b\\\": [1e400, -2.5], \\\"c\\\": "
	    "\\\"9e999\\\", \\\"d\\\": 7}\"}}]}]}", &ge) == RS_OK);
	s = rs_json_dumps(r.messages);
	ck_assert_str_eq(s, "[{\"role\":\"user\",\"content\":\"u\"},"
	    "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":"
	    "[{\"type\":\"function\",\"function\":{\"name\":\"f\","
	    "\"arguments\":{\"a\":18446744073709551615,\"b\":[1e400,-2.5],"
	    "\"c\":\"9e999\",\"d\":7}}}]}]");
	free(s);
	rs_gen_req_cleanup(&r);
	/* tool_choice none leaves the tools out; [] is no tools */
	rs_gen_req_init(&r, x.g);
	ck_assert(parse_body(&x, &r, "{\"messages\": [{\"role\": \"user\", "
	    "\"content\": \"x\"}], \"tools\": [{\"function\": {\"name\": "
	    "\"f\"}}], \"tool_choice\": \"none\"}", &ge) == RS_OK);
	ck_assert_ptr_null(r.tools);
	rs_gen_req_cleanup(&r);
	rs_gen_req_init(&r, x.g);
	ck_assert(parse_body(&x, &r, "{\"messages\": [{\"role\": \"user\", "
	    "\"content\": \"x\"}], \"tools\": [], \"max_tokens\": null}", &ge)
	    == RS_OK);
	ck_assert_ptr_null(r.tools);
	ck_assert_int_eq(r.max_tokens, -1);
	rs_gen_req_cleanup(&r);
	gx_close(&x);
}
END_TEST

/* The JSON views: OpenAI shapes. */
START_TEST(json_views)
{
	struct rs_gen_usage	 u = { 10, 4, 6, 2, 16 };
	struct rs_gen_timings	 t = { .cache_n = 4, .prompt_n = 6,
				    .predicted_n = 6 };
	struct rs_gen_error	 ge = { .type = "exceed_context_size_error",
				    .code = 400, .n_prompt_tokens = 9,
				    .n_ctx = 8 };
	struct rs_json		*j;
	char			*s;

	j = rs_gen_usage_json(&u);
	s = rs_json_dumps(j);
	ck_assert_str_eq(s, "{\"prompt_tokens\":10,\"completion_tokens\":6,"
	    "\"total_tokens\":16,\"prompt_tokens_details\":{\"cached_tokens\":"
	    "4},\"completion_tokens_details\":{\"reasoning_tokens\":2}}");
	free(s);
	rs_json_free(j);
	j = rs_gen_timings_json(&t);
	ck_assert_ptr_nonnull(rs_json_get(j, "predicted_per_second"));
	ck_assert_ptr_nonnull(rs_json_get(j, "ttft_ms"));
	rs_json_free(j);
	snprintf(ge.err.msg, sizeof(ge.err.msg), "too long");
	j = rs_gen_error_json(&ge);
	s = rs_json_dumps(j);
	ck_assert_str_eq(s, "{\"message\":\"too long\",\"type\":"
	    "\"exceed_context_size_error\",\"param\":null,\"code\":400,"
	    "\"n_prompt_tokens\":9,\"n_ctx\":8}");
	free(s);
	rs_json_free(j);
}
END_TEST

Suite *
gen_suite(void)
{
	Suite	*s = suite_create("gen");
	TCase	*tc;

	tc = tcase_create("greedy");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, greedy_reference);
	tcase_add_test(tc, logprobs_reference);
	tcase_add_loop_test(tc, draft_equal, 0, 3);
	tcase_add_test(tc, drafters_200);
	tcase_add_test(tc, greedy_prefix_reuse);
	tcase_add_test(tc, common_prefix);
	suite_add_tcase(s, tc);
	tc = tcase_create("sampling");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, seeded);
	suite_add_tcase(s, tc);
	tc = tcase_create("stop");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, stop_string);
	tcase_add_test(tc, stop_token);
	tcase_add_test(tc, stop_eog);
	tcase_add_test(tc, context_end);
	suite_add_tcase(s, tc);
	tc = tcase_create("cancel");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, cancel_token);
	tcase_add_test(tc, cancel_prefill_counts);
	tcase_add_test(tc, one_token_speed);
	suite_add_tcase(s, tc);
	tc = tcase_create("chat");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, chat_stream);
	tcase_add_test(tc, chat_logprobs);
	tcase_add_test(tc, chat_bans);
	tcase_add_test(tc, chat_prefix_reuse);
	tcase_add_test(tc, thinking_prefix_reuse);
	tcase_add_test(tc, chat_tokens);
	tcase_add_test(tc, tool_named);
	tcase_add_test(tc, tool_parallel_and_thinking);
	tcase_add_test(tc, tool_choice_any_model);
	tcase_add_test(tc, tool_choice_no_room);
	suite_add_tcase(s, tc);
	tc = tcase_create("request");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, thinking_map);
	tcase_add_loop_test(tc, thinking_render, 0,
	    sizeof(think_cases) / sizeof(think_cases[0]));
	tcase_add_test(tc, normalize);
	tcase_add_test(tc, json_views);
	suite_add_tcase(s, tc);
	tc = tcase_create("bad_input");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, bad_request, 0, sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, bad_prepare);
	tcase_add_test(tc, client_forms);
	tcase_add_test(tc, wide_render);
	suite_add_tcase(s, tc);
	return (s);
}
