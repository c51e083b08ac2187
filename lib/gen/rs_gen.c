/*
 * rs_gen.c - the generator and a run (see rs_gen.h): the generator's
 * fixed parts (template, chat bans, buffers), a run's set-up (sampler,
 * stop matcher, parser), the token loop (rs_gen_loop.c), and the result
 * with its usage and timings (serving.md §4.8).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rs_ckcache.h"
#include "rs_gen_impl.h"

static void	breakdown(const struct rs_gen_job *, struct rs_gen_timings *);

/* ---- the generator ---- */

void
rs_gen_opts_init(struct rs_gen_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->variant = RS_CHAT_UNKNOWN;
	/* serving.md §2.5: off unless a request asks for it; a request
	   that asks without a level gets the template's own, xhigh */
	o->enable_thinking = 0;
	o->reasoning_effort = "xhigh";
	o->preserve_thinking = 1;
	rs_sample_params_init(&o->sample);
	o->sample.temperature = 1.0f;
	o->sample.top_p = 0.95f;
	o->sample.top_k = 20;
}

/* The static spelling of effort E, or NULL when it is not a template one. */
static const char *
effort_static(const char *e)
{
	static const char *const known[] = { "xhigh", "medium", "low" };

	for (size_t i = 0; e != NULL && i < 3; i++)
		if (strcmp(e, known[i]) == 0)
			return (known[i]);
	return (NULL);
}

/*
 * Chat mode never samples a padding row (no vocabulary entry, or UNUSED /
 * UNKNOWN) or a CONTROL token that does not end generation (<|im_start|>,
 * vision and audio tokens): serving.md §0 hardening.  Its logprobs leave
 * them out too (rs_gen.h), through the BANNED flags.
 */
static enum rs_status
build_ban(struct rs_gen *g, struct rs_err *err)
{
	int32_t	n_tok = rs_tok_meta(g->tok)->n_vocab;
	int	t;

	g->ban = malloc((size_t)g->n_vocab * sizeof(*g->ban));
	g->banned = calloc((size_t)g->n_vocab, 1);
	if (g->ban == NULL || g->banned == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	for (int32_t id = 0; id < g->n_vocab; id++) {
		t = id < n_tok ? rs_tok_type(g->tok, id) : 0;
		if (t == RS_TOK_NORMAL || t == RS_TOK_USER_DEFINED ||
		    t == RS_TOK_BYTE || rs_tok_is_eog(g->tok, id))
			continue;
		g->ban[g->n_ban].token = id;
		g->ban[g->n_ban++].bias = -INFINITY;
		g->banned[id] = 1;
	}
	return (RS_OK);
}

/* Which template renders chat requests, and whether the tokens exist. */
static void
find_template(struct rs_gen *g, const struct rs_model *m)
{
	g->chat_ok = 1;
	g->variant = g->o.variant;
	if (g->variant == RS_CHAT_UNKNOWN &&
	    rs_chat_identify_gguf(m->gguf, &g->variant, &g->chat_err) !=
	    RS_OK) {
		g->chat_ok = 0;
		g->variant = RS_CHAT_UNKNOWN;
		return;
	}
	if (rs_tok_check_chat(g->tok, &g->chat_err) != RS_OK)
		g->chat_ok = 0;
}

static int32_t
find_id(const struct rs_tok *tok, const char *text)
{
	return (rs_tok_find(tok, text, strlen(text)));
}

/*
 * The ids of "assistant" (one token in Qwen's vocabulary, several in a
 * byte-level or small one): after "<|im_start|>" they mark an assistant
 * turn, where checkpoints go (rs_gen_set_ckcache).  None when they do not
 * fit g->asst or the encoder fails.
 */
static void
assistant_ids(struct rs_gen *g)
{
	struct rs_tok_ids ids;

	rs_tok_ids_init(&ids);
	if (rs_tok_encode(g->tok, "assistant", 9, RS_TOK_SPECIAL_NONE, &ids,
	    NULL) == RS_OK && ids.n > 0 && ids.n <= sizeof(g->asst) /
	    sizeof(g->asst[0])) {
		memcpy(g->asst, ids.v, ids.n * sizeof(int32_t));
		g->n_asst = (int)ids.n;
	}
	rs_tok_ids_cleanup(&ids);
}

/* The drafter, and the hidden rows an MTP one reads (rs_drafter.h). */
static enum rs_status
make_drafter(struct rs_gen *g, struct rs_err *err)
{
	struct rs_drafter_opts	dop;
	int32_t			rows;
	enum rs_status		rc;

	rs_drafter_opts_init(&dop);
	dop.kind = g->o.draft;
	dop.k_max = g->o.draft_max;
	if ((rc = rs_drafter_new(&g->drafter, g->e, &dop, err)) != RS_OK)
		return (rc);
	if (!rs_drafter_wants_hidden(g->drafter))
		return (RS_OK);
	rows = g->o.prefill_chunk > 1 + g->o.draft_max ? g->o.prefill_chunk :
	    1 + g->o.draft_max;
	if ((g->hidden = malloc((size_t)rows *
	    rs_engine_model(g->e)->hp.n_embd * sizeof(float))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	return (RS_OK);
}

enum rs_status
rs_gen_new(struct rs_gen **out, struct rs_engine *e, struct rs_state *st,
    const struct rs_tok *tok, const struct rs_gen_opts *o, struct rs_err *err)
{
	const struct rs_model	*m = rs_engine_model(e);
	struct rs_gen_opts	 def;
	struct rs_sampler	*s;
	struct rs_gen		*g;
	enum rs_status		 rc;

	if (o == NULL) {
		rs_gen_opts_init(&def);
		o = &def;
	}
	if (rs_state_model(st) != m)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "the state belongs "
		    "to another model than the engine"));
	if ((uint32_t)rs_tok_meta(tok)->n_vocab > m->hp.n_vocab)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "the tokenizer has "
		    "%d tokens, the model only %u rows",
		    rs_tok_meta(tok)->n_vocab, m->hp.n_vocab));
	if (effort_static(o->reasoning_effort) == NULL)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "default reasoning "
		    "effort '%.20s' is not xhigh, medium or low",
		    o->reasoning_effort != NULL ? o->reasoning_effort :
		    "(null)"));
	if (o->variant != RS_CHAT_UNKNOWN && o->variant != RS_CHAT_QWEN35 &&
	    o->variant != RS_CHAT_QWEN36 && o->variant != RS_CHAT_QWEN38)
		return (rs_errf(err, RS_ERR_UNSUPPORTED, "chat template "
		    "variant %d is unknown", (int)o->variant));
	if (o->draft != RS_DRAFTER_NONE && (o->draft_max < 1 ||
	    o->draft_max > RS_DRAFTER_K_MAX))
		return (rs_errf(err, RS_ERR_INVALID_ARG, "draft_max %d is "
		    "outside [1, %d]", o->draft_max, RS_DRAFTER_K_MAX));
	if (o->draft != RS_DRAFTER_NONE && rs_state_n_snap(st) <
	    o->draft_max + 1)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "%d drafts need a "
		    "state with %d snapshots, it has %d", o->draft_max,
		    o->draft_max + 1, rs_state_n_snap(st)));
	if (o->prefill_chunk < 0)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "prefill_chunk %d is "
		    "negative", (int)o->prefill_chunk));
	if (o->checkpoint_min_call < 0)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "checkpoint_min_call "
		    "%d is negative", (int)o->checkpoint_min_call));
	/* the default sampling parameters must make a sampler */
	if ((rc = rs_sample_new(&s, &o->sample, (int32_t)m->hp.n_vocab,
	    err)) != RS_OK)
		return (rc);
	rs_sample_free(s);
	if ((g = calloc(1, sizeof(*g))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	g->e = e;
	g->st = st;
	g->tok = tok;
	g->o = *o;
	g->o.reasoning_effort = effort_static(o->reasoning_effort);
	g->o.sample.bias = NULL;
	g->o.sample.n_bias = 0;
	if (g->o.prefill_chunk == 0)
		g->o.prefill_chunk = rs_engine_max_batch(e) > 256 ?
		    rs_engine_max_batch(e) : 256;
	if (g->o.checkpoint_min_call == 0)
		g->o.checkpoint_min_call = rs_engine_backend(e) ==
		    RS_BACKEND_CUDA ? 256 : 1;
	g->n_ctx = rs_state_n_ctx(st);
	g->n_vocab = (int32_t)m->hp.n_vocab;
	find_template(g, m);
	g->id_im_start = find_id(tok, "<|im_start|>");
	assistant_ids(g);
	g->id_think_end = find_id(tok, "</think>");
	g->id_call_start = find_id(tok, "<tool_call>");
	g->id_call_end = find_id(tok, "</tool_call>");
	g->piece_cap = rs_detok_max(tok);
	if (g->o.draft == RS_DRAFTER_NONE)
		g->o.draft_max = 0;
	g->logits = malloc((size_t)(1 + g->o.draft_max) * g->n_vocab *
	    sizeof(float));
	g->top = malloc((size_t)(1 + g->o.draft_max) * RS_TOP_MAX *
	    sizeof(*g->top));
	g->piece = malloc(g->piece_cap);
	if (g->logits == NULL || g->top == NULL || g->piece == NULL) {
		rs_gen_free(g);
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	}
	if (g->o.draft != RS_DRAFTER_NONE && (rc = make_drafter(g, err)) !=
	    RS_OK) {
		rs_gen_free(g);
		return (rc);
	}
	if ((rc = build_ban(g, err)) != RS_OK ||
	    (rc = rs_engine_set_top_skip(e, g->banned, err)) != RS_OK) {
		rs_gen_free(g);
		return (rc);
	}
	rs_state_reset(st);
	*out = g;
	return (RS_OK);
}

void
rs_gen_free(struct rs_gen *g)
{
	if (g == NULL)
		return;
	free(g->ban);
	free(g->banned);
	free(g->logits);
	free(g->top);
	free(g->piece);
	free(g->hidden);
	rs_drafter_free(g->drafter);
	free(g);
}

void
rs_gen_reset(struct rs_gen *g)
{
	if (g->ckc != NULL)
		rs_ckcache_forget(g->ckc, g->st);
	rs_state_reset(g->st);
}

void
rs_gen_set_ckcache(struct rs_gen *g, struct rs_ckcache *c)
{
	g->ckc = c;
}

int32_t
rs_gen_n_ctx(const struct rs_gen *g)
{
	return (g->n_ctx);
}

enum rs_chat_variant
rs_gen_variant(const struct rs_gen *g)
{
	return (g->variant);
}

int
rs_gen_chat_ok(const struct rs_gen *g, struct rs_err *err)
{
	if (!g->chat_ok && err != NULL)
		*err = g->chat_err;
	return (g->chat_ok);
}

const char *
rs_gen_finish_name(enum rs_gen_finish f)
{
	switch (f) {
	case RS_GEN_FINISH_STOP:	return ("stop");
	case RS_GEN_FINISH_LENGTH:	return ("length");
	case RS_GEN_FINISH_TOOL_CALLS:	return ("tool_calls");
	case RS_GEN_FINISH_CANCELLED:	return ("cancelled");
	}
	return ("?");
}

/* ---- the result ---- */

void
rs_gen_result_cleanup(struct rs_gen_result *res)
{
	if (res == NULL)
		return;
	free(res->content);
	free(res->reasoning);
	for (size_t i = 0; i < res->n_calls; i++) {
		free(res->calls[i].id);
		free(res->calls[i].name);
		free(res->calls[i].arguments);
	}
	free(res->calls);
	free(res->raw);
	free(res->tokens);
	free(res->logprobs);
	memset(res, 0, sizeof(*res));
}

static char *
dup_n(const char *s, size_t n)
{
	char	*d = malloc(n + 1);

	if (d != NULL) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return (d);
}

static enum rs_status
copy_calls(struct rs_gen_result *res, const struct rs_parse_result *pr,
    struct rs_err *err)
{
	if (pr->n_calls == 0)
		return (RS_OK);
	if ((res->calls = calloc(pr->n_calls, sizeof(*res->calls))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	for (size_t i = 0; i < pr->n_calls; i++) {
		struct rs_gen_call	*c = &res->calls[res->n_calls++];

		c->id = strdup(pr->calls[i].id);
		c->name = strdup(pr->calls[i].name);
		c->arguments = dup_n(pr->calls[i].args, pr->calls[i].args_len);
		c->args_len = pr->calls[i].args_len;
		c->known = pr->calls[i].known;
		if (c->id == NULL || c->name == NULL || c->arguments == NULL)
			return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	}
	return (RS_OK);
}

/* The drafter's statistics of the run into T. */
static void
draft_timings(const struct rs_drafter *d, struct rs_gen_timings *t)
{
	struct rs_drafter_stats	s;

	rs_drafter_stats(d, &s);
	t->draft = rs_drafter_kind_name(rs_drafter_kind(d));
	t->draft_n = s.drafted;
	t->draft_n_accepted = s.accepted;
	t->draft_rounds = s.rounds;
	t->draft_ms = s.draft_ms;
	t->draft_catchup_ms = s.catchup_ms;
	t->draft_k = s.k;
	for (int j = 0; j < RS_DRAFTER_K_MAX && s.pos_drafted[j] > 0; j++) {
		t->draft_pos_n[j] = s.pos_drafted[j];
		t->draft_pos_accepted[j] = s.pos_accepted[j];
		t->draft_n_pos = j + 1;
	}
}

/* Texts, calls, tokens, usage and timings into RES. */
static enum rs_status
result(struct rs_gen_job *u, struct rs_gen_result *res)
{
	struct rs_parse_result	 pr = { 0 };
	struct rs_gen_timings	*t = &res->timings;
	struct rs_gen_usage	*us = &res->usage;
	const char		*raw = u->raw.data != NULL ? u->raw.data : "";
	double			 t_end = rs_time_ms();

	if (u->parse != NULL)
		rs_parse_result(u->parse, &pr);
	else {
		pr.content = raw;
		pr.content_len = u->raw.len;
		pr.reasoning = "";
	}
	res->content = dup_n(pr.content, pr.content_len);
	res->content_len = pr.content_len;
	res->reasoning = dup_n(pr.reasoning, pr.reasoning_len);
	res->reasoning_len = pr.reasoning_len;
	res->raw = dup_n(raw, u->raw.len);
	res->raw_len = u->raw.len;
	res->tokens = u->out;
	res->n_tokens = u->n_out;
	u->out = NULL;
	res->logprobs = u->lp;
	res->n_logprobs = u->n_lp;
	u->lp = NULL;
	if (res->content == NULL || res->reasoning == NULL || res->raw == NULL)
		return (rs_errf(&u->err, RS_ERR_NOMEM, "out of memory"));
	if (copy_calls(res, &pr, &u->err) != RS_OK)
		return (RS_ERR_NOMEM);
	if (u->cancelled)
		res->finish = RS_GEN_FINISH_CANCELLED;
	else if (u->end == RS_GEN_END_LENGTH && !u->stopped)
		res->finish = RS_GEN_FINISH_LENGTH;
	else
		res->finish = res->n_calls > 0 ? RS_GEN_FINISH_TOOL_CALLS :
		    RS_GEN_FINISH_STOP;
	us->prompt_tokens = (int64_t)u->r->n_prompt;
	us->cached_tokens = u->cached;
	us->completion_tokens = (int64_t)res->n_tokens;
	us->reasoning_tokens = u->reasoning;
	us->total_tokens = us->prompt_tokens + us->completion_tokens;
	t->cache_n = u->cached;
	t->prompt_n = u->prefilled;
	t->prompt_ms = u->t_prefill - u->t0;
	t->predicted_n = (int64_t)res->n_tokens;
	t->predicted_ms = res->n_tokens > 0 ? t_end - u->t_prefill : 0.0;
	t->ttft_ms = res->n_tokens > 0 ? u->t_first - u->t0 : 0.0;
	if (u->g->drafter != NULL)
		draft_timings(u->g->drafter, t);
	breakdown(u, t);
	if (u->g->ckc != NULL) {
		struct rs_ckcache_stats cs;

		rs_ckcache_stats(u->g->ckc, &cs);
		t->ckcache = 1;
		t->checkpoint_hits = u->ck_hit;
		t->checkpoint_misses = u->ck_miss;
		t->checkpoint_tokens = u->ck_tokens;
		t->checkpoint_saves = u->ck_saves;
		t->checkpoint_mem_bytes = (int64_t)cs.dev_bytes;
		t->checkpoint_host_mem_bytes = (int64_t)cs.host_bytes;
	}
	if (t->prompt_n > 0 && t->prompt_ms > 0) {
		t->prompt_per_token_ms = t->prompt_ms / (double)t->prompt_n;
		t->prompt_per_second = 1e3 * (double)t->prompt_n / t->prompt_ms;
	}
	/* the first token comes from the prefill's logits: one alone had
	   no decode step to time (its "speed" read 10^5 tok/s) */
	if (t->predicted_n > 1 && t->predicted_ms > 0) {
		t->predicted_per_token_ms = t->predicted_ms /
		    (double)t->predicted_n;
		t->predicted_per_second = 1e3 * (double)t->predicted_n /
		    t->predicted_ms;
	}
	return (RS_OK);
}

/* The time-to-first-token breakdown into T (rs_gen.h). */
static void
breakdown(const struct rs_gen_job *u, struct rs_gen_timings *t)
{
	const struct rs_gen_timings *b = &u->bd;

	t->render_ms = u->r->render_ms;
	t->tokenize_ms = u->r->tokenize_ms;
	t->setup_ms = b->setup_ms;
	t->lookup_ms = b->lookup_ms;
	t->restore_ms = b->restore_ms;
	t->restore_from_host = b->restore_from_host;
	t->restore_cross = b->restore_cross;
	t->prefill_calls = b->prefill_calls;
	t->prefill_call_ms = b->prefill_call_ms;
	memcpy(t->call_tokens, b->call_tokens, sizeof(t->call_tokens));
	memcpy(t->call_ms, b->call_ms, sizeof(t->call_ms));
	t->save_ms = b->save_ms;
	t->spills = b->spills;
	t->spill_ms = b->spill_ms;
	t->first_decode_ms = b->first_decode_ms;
	if (u->n_out > 0)
		t->first_token_ms = u->t_first - u->t_prefill;
	if (u->t_text > 0) {
		t->first_text_ms = u->t_text - u->t_prefill;
		t->first_text_tokens = u->n_text;
	}
}

/* ---- a run ---- */

/* The sampler: the request's parameters, plus the chat-mode bans. */
static enum rs_status
make_sampler(struct rs_gen_job *u)
{
	struct rs_gen		*g = u->g;
	struct rs_gen_req	*r = u->r;
	struct rs_sample_params	 p = r->sample;
	struct rs_logit_bias	*b = NULL;
	size_t			 nb = r->n_bias;
	enum rs_status		 st;

	if (r->kind == RS_GEN_CHAT)
		nb += g->n_ban;
	if (nb > 0) {
		if ((b = malloc(nb * sizeof(*b))) == NULL)
			return (rs_errf(&u->err, RS_ERR_NOMEM,
			    "out of memory"));
		if (r->n_bias > 0)
			memcpy(b, r->bias, r->n_bias * sizeof(*b));
		if (nb > r->n_bias)
			memcpy(b + r->n_bias, g->ban, g->n_ban * sizeof(*b));
	}
	p.bias = b;
	p.n_bias = nb;
	st = rs_sample_new(&u->smp, &p, g->n_vocab, &u->err);
	free(b);
	if (st == RS_OK)
		st = rs_sample_prompt(u->smp, r->prompt, r->n_prompt, &u->err);
	return (st);
}

/* Everything a run needs besides the state. */
static enum rs_status
setup(struct rs_gen_job *u)
{
	struct rs_gen		*g = u->g;
	struct rs_gen_req	*r = u->r;
	struct rs_parse_opts	 po;
	int64_t			 room = (int64_t)g->n_ctx -
				    (int64_t)r->n_prompt;
	enum rs_status		 st;

	u->limit = (size_t)(r->max_tokens > 0 && r->max_tokens < room ?
	    r->max_tokens : room);
	/* a forced call's opening always fits (§3.8): max_tokens is raised
	   to it (rs_gen_prepare() refused a context without room for it) */
	if (u->limit < r->n_reserve)
		u->limit = r->n_reserve;
	if (r->n_names > 0 && ((u->cand = malloc(r->n_names)) == NULL ||
	    (u->masked = malloc((size_t)g->n_vocab *
	    sizeof(*u->masked))) == NULL))
		return (rs_errf(&u->err, RS_ERR_NOMEM, "out of memory"));
	if (r->logprobs && (r->top_logprobs < 0 ||
	    r->top_logprobs > RS_LOGPROB_MAX_TOP))
		return (rs_errf(&u->err, RS_ERR_INVALID_ARG, "top_logprobs %d "
		    "is outside [0, %d]", r->top_logprobs,
		    RS_LOGPROB_MAX_TOP));
	if ((u->out = malloc(u->limit * sizeof(*u->out))) == NULL)
		return (rs_errf(&u->err, RS_ERR_NOMEM, "out of memory"));
	if ((st = make_sampler(u)) != RS_OK)
		return (st);
	/* logprobs and a forced call's name mask read whole rows; otherwise
	   the sampler may need less (a chat's bans are the engine's skip
	   mask, set in rs_gen_new) */
	u->top_k = r->logprobs || r->n_names > 0 ? 0 :
	    rs_sample_top_need(u->smp, r->kind == RS_GEN_CHAT ? g->banned :
	    NULL);
	if ((st = rs_stop_new(&u->stop, r->stop_ids, r->n_stop_ids,
	    (const char *const *)r->stop, r->n_stop, &u->err)) != RS_OK)
		return (st);
	rs_detok_init(&u->dt, g->tok, 0);
	if (r->kind != RS_GEN_CHAT)
		return (RS_OK);
	rs_parse_opts_init(&po);
	po.tools = r->tools;
	po.thinking = r->thinking;
	po.id_seed = r->sample.seed ^ (++g->n_runs * 0x9e3779b97f4a7c15ULL);
	return (rs_parse_new(&u->parse, &po, &u->err));
}

static void
teardown(struct rs_gen_job *u)
{
	rs_sample_free(u->smp);
	rs_stop_free(u->stop);
	rs_parse_free(u->parse);
	rs_buf_cleanup(&u->raw);
	free(u->out);
	free(u->lp);
	free(u->cand);
	free(u->masked);
}

enum rs_status
rs_gen_run(struct rs_gen *g, struct rs_gen_req *r, rs_gen_cb cb, void *arg,
    struct rs_gen_result *res, struct rs_gen_error *ge)
{
	struct rs_gen_job		u;
	struct rs_gen_event	ev = { .kind = RS_GEN_EV_FINISH };
	enum rs_status		st;
	int			running = 0;

	memset(res, 0, sizeof(*res));
	if ((st = rs_gen_prepare(g, r, ge)) != RS_OK)
		return (st);
	memset(&u, 0, sizeof(u));
	u.g = g;
	u.r = r;
	u.cb = cb;
	u.arg = arg;
	rs_buf_init(&u.raw);
	u.t0 = rs_time_ms();
	st = setup(&u);
	u.bd.setup_ms = rs_time_ms() - u.t0;
	if (st == RS_OK) {
		running = 1;
		if ((st = rs_gen_prefill(&u)) == RS_OK) {
			u.t_prefill = rs_time_ms();
			if (!u.cancelled)
				st = rs_gen_decode(&u);
		}
	}
	if (st == RS_OK && (st = result(&u, res)) == RS_OK && !u.cancelled) {
		ev.finish = res->finish;
		rs_gen_emit(&u, &ev);
	}
	if (st != RS_OK) {
		/* a request the sampler or the stop matcher refuses is the
		   client's error; anything later is ours */
		rs_gen_result_cleanup(res);
		rs_gen_fail(ge, st, NULL, "%s%s", running ?
		    "generation failed: " : "", u.err.msg);
		if (running) {
			rs_gen_reset(g);
			if (ge != NULL) {
				ge->type = "server_error";
				ge->code = 500;
			}
		}
	}
	teardown(&u);
	return (st);
}
