/*
 * rs_bench.c - engine benchmarks (see rs_bench.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs_bench.h"
#include "rs_sample.h"
#include "rs_state_impl.h"
#include "rs_time.h"
#include "rs_verify.h"

struct bench {
	struct rs_engine	*e;
	struct rs_state		*st;
	const struct rs_bench_opts *o;
	rs_bench_cb		 cb;
	void			*ctx;
	int32_t			*tokens;	/* random, n_ctx of them */
	float			*logits;	/* max group rows */
	double			 probe;		/* GB/s */
	double			 group1_ms;
};

void
rs_bench_defaults(struct rs_bench_opts *o)
{
	static const struct rs_bench_opts d = {
		.decode_tokens = 128, .decode_depth = 16,
		.groups = { 1, 2, 4, 8, 16 }, .n_groups = 5, .verify_reps = 8,
		.prefills = { 512, 4096, 32768 }, .n_prefills = 3,
		.depths = { 4096, 32768 }, .n_depths = 2, .depth_tokens = 32,
		.ttft_tokens = 30000, .seed = 1,
	};

	*o = d;
}

/* Append "what A -> B" to NOTE (CAP bytes) with "; " between items. */
static void
note_add(char *note, size_t cap, const char *what, int64_t from, int64_t to)
{
	size_t	len = strlen(note);

	if (len + 1 >= cap)
		return;
	if (to > 0)
		snprintf(note + len, cap - len, "%s%s %lld -> %lld",
		    len > 0 ? "; " : "", what, (long long)from, (long long)to);
	else
		snprintf(note + len, cap - len, "%s%s %lld dropped",
		    len > 0 ? "; " : "", what, (long long)from);
}

/*
 * Cap one list of sizes: each V[i] + EXTRA must fit N_CTX; a size that does
 * not becomes the largest that does (or goes, when none does or the list
 * already holds it).
 */
static int
fit_list(int *v, int *n, int extra, int32_t n_ctx, const char *what,
    char *note, size_t cap)
{
	int	changed = 0, k = 0;

	for (int i = 0; i < *n; i++) {
		int	x = v[i], dup = 0;

		if ((int64_t)x + extra > n_ctx) {
			x = n_ctx - extra;
			changed++;
		}
		for (int j = 0; j < k; j++)
			dup |= v[j] == x;
		if (x != v[i])
			note_add(note, cap, what, v[i], x > 0 && !dup ? x : 0);
		if (x > 0 && !dup)
			v[k++] = x;
	}
	*n = k;
	return (changed);
}

/* Positions a long-depth row needs past its depth. */
static int
depth_extra(const struct rs_bench_opts *o)
{
	int	extra = o->depth_tokens;

	for (int i = 0; i < o->n_groups && o->depth_verify; i++)
		if (o->groups[i] > extra)
			extra = o->groups[i];
	return (extra);
}

int
rs_bench_fit(struct rs_bench_opts *o, int32_t n_ctx, char *note, size_t cap)
{
	int	changed = 0;

	if (cap > 0)
		note[0] = '\0';
	if ((int64_t)o->decode_depth + o->decode_tokens > n_ctx) {
		int t = n_ctx - o->decode_depth > 0 ? n_ctx - o->decode_depth : 0;
		note_add(note, cap, "decode", o->decode_tokens, t);
		o->decode_tokens = t;
		changed++;
	}
	changed += fit_list(o->groups, &o->n_groups, o->decode_depth, n_ctx,
	    "verify group", note, cap);
	changed += fit_list(o->prefills, &o->n_prefills, 0, n_ctx, "prefill",
	    note, cap);
	if (o->ttft_tokens > 0 && (int64_t)o->ttft_tokens + 1 > n_ctx) {
		note_add(note, cap, "ttft", o->ttft_tokens, n_ctx - 1);
		o->ttft_tokens = n_ctx - 1 > 0 ? n_ctx - 1 : 0;
		changed++;
	}
	changed += fit_list(o->depths, &o->n_depths, depth_extra(o), n_ctx,
	    "depth", note, cap);
	return (changed);
}

/* Weight plus KV bytes one token reads at context DEPTH. */
static double
bytes_per_token(const struct bench *b, int64_t depth)
{
	const struct rs_state *st = b->st;
	double kv = (double)depth * (double)st->n_attn *
	    (double)(st->kv_row + st->kv_row_v) * (double)st->mem->kv_elem;

	return ((double)rs_model_decode_bytes(rs_engine_model(b->e)) + kv);
}

static int
emit(struct bench *b, struct rs_bench_row *r)
{
	if (r->ms > 0.0 && r->bytes_per_tok > 0.0) {
		r->gb_s = r->bytes_per_tok * r->tok_s / 1e9;
		r->eff = b->probe > 0.0 ? r->gb_s / b->probe : 0.0;
	}
	return (b->cb(r, b->ctx));
}

/* Reset and run the first N tokens untimed (in max_batch chunks). */
static enum rs_status
fill(struct bench *b, int64_t n, struct rs_err *err)
{
	rs_state_reset(b->st);
	if (n == 0)
		return (RS_OK);
	return (rs_engine_forward(b->e, b->st, b->tokens, (int32_t)n, NULL,
	    RS_LOGITS_NONE, NULL, err));
}

/*
 * One untimed call of G tokens at DEPTH (logits of every row, or with
 * TOP_K > 0 only the TOP_K best), undone: what a backend does once for a
 * kind of call (the CUDA backend captures a graph for single tokens)
 * stays out of the timed calls that follow.
 */
static enum rs_status
warm_up(struct bench *b, int64_t depth, int g, int32_t top_k,
    struct rs_err *err)
{
	struct rs_top top[RS_ENGINE_EXACT_MAX * RS_TOP_MAX];
	enum rs_status s;

	if (top_k > 0)
		s = rs_engine_forward_top(b->e, b->st, b->tokens + depth, g,
		    g == 1 ? RS_LOGITS_LAST : RS_LOGITS_ALL, top_k, 0, top,
		    NULL, err);
	else
		s = rs_engine_forward(b->e, b->st, b->tokens + depth, g,
		    b->logits, RS_LOGITS_LAST, NULL, err);
	return (s != RS_OK ? s : rs_engine_truncate(b->e, b->st,
	    (int32_t)depth, err));
}

/* N single-token steps after DEPTH tokens of context. */
static enum rs_status
decode(struct bench *b, int64_t depth, int n, struct rs_err *err)
{
	struct rs_bench_row r = { .test = "decode", .n = 1, .depth = depth };
	enum rs_status s;
	double	t0;

	if ((s = fill(b, depth, err)) != RS_OK ||
	    (s = warm_up(b, depth, 1, 0, err)) != RS_OK)
		return (s);
	t0 = rs_time_ms();
	for (int i = 0; i < n; i++)
		if ((s = rs_engine_forward(b->e, b->st, b->tokens + depth + i,
		    1, b->logits, RS_LOGITS_LAST, NULL, err)) != RS_OK)
			return (s);
	r.ms = (rs_time_ms() - t0) / n;
	r.tok_s = 1e3 / r.ms;
	r.bytes_per_tok = bytes_per_token(b, depth);
	return (emit(b, &r) ? RS_ERR_LIMIT : RS_OK);
}

/*
 * As decode() at the decode depth, with the host sampler choosing each
 * next token, as rs-generate and rs-serve do: TEST "greedy" (temperature
 * 0) or "sampled" (the model's defaults, temperature 1, top-k 20, top-p
 * 0.95; serving.md §0).  Both need only the best tokens of each row
 * (rs_sample_top_need), so only those come back (rs_engine_forward_top:
 * 1 or 20 candidates instead of the row).  The rate a client sees, less
 * detokenisation and HTTP.
 */
static enum rs_status
decode_sampled(struct bench *b, const char *test, struct rs_err *err)
{
	const int64_t depth = b->o->decode_depth;
	const int n = b->o->decode_tokens;
	struct rs_bench_row r = { .test = test, .n = 1, .depth = depth };
	struct rs_sample_params p;
	struct rs_sampler *smp;
	struct rs_top top[RS_TOP_MAX];
	enum rs_status s;
	int32_t	 t = b->tokens[depth];
	double	 t0;

	rs_sample_params_init(&p);
	if (strcmp(test, "greedy") == 0)
		p.temperature = 0.0f;
	else {
		p.top_k = 20;
		p.top_p = 0.95f;
	}
	if ((s = fill(b, depth, err)) != RS_OK || (s = rs_sample_new(&smp, &p,
	    (int32_t)rs_engine_model(b->e)->hp.n_vocab, err)) != RS_OK)
		return (s);
	if ((s = warm_up(b, depth, 1, rs_sample_top_need(smp, NULL), err)) !=
	    RS_OK) {
		rs_sample_free(smp);
		return (s);
	}
	t0 = rs_time_ms();
	for (int i = 0; i < n; i++) {
		/* the best tokens only, when they are all the sampler needs */
		int32_t k = rs_sample_top_need(smp, NULL);
		if (k > 0)
			s = rs_engine_forward_top(b->e, b->st, &t, 1,
			    RS_LOGITS_LAST, k, 0, top, NULL, err);
		else
			s = rs_engine_forward(b->e, b->st, &t, 1, b->logits,
			    RS_LOGITS_LAST, NULL, err);
		if (s != RS_OK || (s = k > 0 ? rs_sample_next_top(smp, top, k,
		    &t, err) : rs_sample_next(smp, b->logits, &t, err)) !=
		    RS_OK || (s = rs_sample_accept(smp, t, err)) != RS_OK)
			break;
	}
	r.ms = (rs_time_ms() - t0) / n;
	rs_sample_free(smp);
	if (s != RS_OK)
		return (s);
	r.tok_s = 1e3 / r.ms;
	r.bytes_per_tok = bytes_per_token(b, depth);
	return (emit(b, &r) ? RS_ERR_LIMIT : RS_OK);
}

/*
 * Groups of G drafts verified after DEPTH tokens, rolled back each time.
 * A greedy verification needs the argmax of every row, which is what comes
 * back (rs_engine_forward_top, K = 1): the pass a speculative round pays.
 * The cost is relative to the last group of 1 timed (at the same depth:
 * the groups run in order, 1 first).
 */
static enum rs_status
verify(struct bench *b, int g, int64_t depth, struct rs_err *err)
{
	struct rs_bench_row r = { .test = "verify", .n = g, .depth = depth };
	struct rs_top top[RS_ENGINE_EXACT_MAX];
	enum rs_status s;
	double	t0, total = 0.0;

	if (g > RS_ENGINE_EXACT_MAX)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "verify group %d: "
		    "at most %d", g, RS_ENGINE_EXACT_MAX));
	if ((s = fill(b, depth, err)) != RS_OK ||
	    (s = warm_up(b, depth, g, 1, err)) != RS_OK)
		return (s);
	for (int rep = 0; rep < b->o->verify_reps; rep++) {
		t0 = rs_time_ms();
		if ((s = rs_engine_forward_top(b->e, b->st, b->tokens + depth,
		    g, RS_LOGITS_ALL, 1, 0, top, NULL, err)) != RS_OK)
			return (s);
		total += rs_time_ms() - t0;
		if ((s = rs_engine_truncate(b->e, b->st, (int32_t)depth,
		    err)) != RS_OK)
			return (s);
	}
	r.ms = total / b->o->verify_reps;
	r.tok_s = g * 1e3 / r.ms;
	/* the weights are read once for the whole group */
	r.bytes_per_tok = bytes_per_token(b, depth) / g;
	if (g == 1)
		b->group1_ms = r.ms;
	r.rel_cost = b->group1_ms > 0.0 ? r.ms / b->group1_ms : 0.0;
	return (emit(b, &r) ? RS_ERR_LIMIT : RS_OK);
}

/*
 * A prompt of N tokens from an empty state: "prefill" times the forward
 * pass (the last row's logits copied back), "ttft" also the greedy choice
 * of the first token, what a client waits for before the first byte.
 */
static enum rs_status
prefill(struct bench *b, const char *test, int64_t n, struct rs_err *err)
{
	struct rs_bench_row r = { .test = test, .n = n, .depth = 0 };
	enum rs_status s;
	double	t0;

	/* untimed, one chunk: the first calls of a shape load kernels and
	   pick cuBLAS algorithms */
	if ((s = fill(b, n < rs_engine_max_batch(b->e) ? n :
	    rs_engine_max_batch(b->e), err)) != RS_OK)
		return (s);
	rs_state_reset(b->st);
	t0 = rs_time_ms();
	if ((s = rs_engine_forward(b->e, b->st, b->tokens, (int32_t)n,
	    b->logits, RS_LOGITS_LAST, NULL, err)) != RS_OK)
		return (s);
	if (strcmp(test, "ttft") == 0)
		(void)rs_logits_argmax(b->logits,
		    rs_engine_model(b->e)->hp.n_vocab);
	r.ms = rs_time_ms() - t0;
	r.tok_s = (double)n * 1e3 / r.ms;
	/* compute-bound: no bytes-per-token model, no efficiency */
	return (emit(b, &r) ? RS_ERR_LIMIT : RS_OK);
}

/* Positions the run needs; RS_ERR_LIMIT past the model's context. */
static enum rs_status
plan(const struct rs_engine *e, const struct rs_bench_opts *o, int32_t *ctx,
    int *max_group, struct rs_err *err)
{
	int64_t need = o->decode_depth + o->decode_tokens;

	*max_group = 1;
	for (int i = 0; i < o->n_groups; i++) {
		if (o->groups[i] > *max_group)
			*max_group = o->groups[i];
		if (o->decode_depth + o->groups[i] > need)
			need = o->decode_depth + o->groups[i];
	}
	for (int i = 0; i < o->n_prefills; i++)
		if (o->prefills[i] > need)
			need = o->prefills[i];
	if (o->ttft_tokens + 1 > need)
		need = o->ttft_tokens + 1;
	for (int i = 0; i < o->n_depths; i++)
		if ((int64_t)o->depths[i] + depth_extra(o) > need)
			need = (int64_t)o->depths[i] + depth_extra(o);
	if (need > rs_engine_model(e)->hp.n_ctx_train)
		return (rs_errf(err, RS_ERR_LIMIT,
		    "the benchmark needs %lld positions, the model has %u",
		    (long long)need, rs_engine_model(e)->hp.n_ctx_train));
	*ctx = (int32_t)need;
	return (RS_OK);
}

static enum rs_status
run_all(struct bench *b, struct rs_err *err)
{
	const struct rs_bench_opts *o = b->o;
	struct rs_bench_row r = { .test = "probe" };
	enum rs_status s;

	if ((s = rs_engine_probe_bandwidth(b->e, &b->probe, err)) != RS_OK)
		return (s);
	r.gb_s = b->probe;
	r.eff = 1.0;
	if (b->cb(&r, b->ctx))
		return (RS_ERR_LIMIT);
	if (o->decode_tokens > 0 &&
	    ((s = decode(b, o->decode_depth, o->decode_tokens, err)) != RS_OK ||
	    (s = decode_sampled(b, "greedy", err)) != RS_OK ||
	    (s = decode_sampled(b, "sampled", err)) != RS_OK))
		return (s);
	for (int i = 0; i < o->n_groups && o->decode_tokens > 0; i++)
		if ((s = verify(b, o->groups[i], o->decode_depth, err)) !=
		    RS_OK)
			return (s);
	for (int i = 0; i < o->n_prefills; i++)
		if ((s = prefill(b, "prefill", o->prefills[i], err)) != RS_OK)
			return (s);
	if (o->ttft_tokens > 0 &&
	    (s = prefill(b, "ttft", o->ttft_tokens, err)) != RS_OK)
		return (s);
	for (int i = 0; i < o->n_depths; i++) {
		if ((s = decode(b, o->depths[i], o->depth_tokens, err)) != RS_OK)
			return (s);
		for (int k = 0; k < o->n_groups && o->depth_verify; k++)
			if ((s = verify(b, o->groups[k], o->depths[i], err)) !=
			    RS_OK)
				return (s);
	}
	memset(&r, 0, sizeof(r));
	r.test = "memory";
	rs_engine_memory(b->e, &r.mem_weights, &r.mem_scratch);
	r.mem_state = rs_state_bytes(b->st);
	return (b->cb(&r, b->ctx) ? RS_ERR_LIMIT : RS_OK);
}

enum rs_status
rs_bench_run(struct rs_engine *e, const struct rs_bench_opts *o,
    rs_bench_cb cb, void *ctx, struct rs_err *err)
{
	const struct rs_model *m = rs_engine_model(e);
	struct bench	 b = { .e = e, .o = o, .cb = cb, .ctx = ctx };
	struct rs_state_opts so = { 0 };
	uint64_t	 rng = o->seed;
	enum rs_status	 s;
	int		 max_group;

	if ((s = plan(e, o, &so.n_ctx, &max_group, err)) != RS_OK)
		return (s);
	so.n_snap = max_group + 1;
	b.tokens = malloc((size_t)so.n_ctx * sizeof(int32_t));
	b.logits = malloc((size_t)max_group * m->hp.n_vocab * sizeof(float));
	if (b.tokens == NULL || b.logits == NULL) {
		s = rs_errf(err, RS_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (int32_t i = 0; i < so.n_ctx; i++) {
		rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
		b.tokens[i] = (int32_t)((rng >> 33) % m->hp.n_vocab);
	}
	if ((s = rs_engine_state_new(e, &so, &b.st, err)) != RS_OK)
		goto out;
	s = run_all(&b, err);
out:
	rs_state_free(b.st);
	free(b.tokens);
	free(b.logits);
	return (s);
}
