/*
 * rs_bench_spec.c - speculative decoding benchmarks (rs_bench_spec.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rs_bench_spec.h"
#include "rs_rng.h"
#include "rs_spec.h"
#include "rs_state.h"

struct bspec {
	struct rs_engine		*e;
	const struct rs_bench_spec_opts	*o;
	rs_bench_spec_cb		 cb;
	void				*ctx;
	int32_t				*seq;	/* prompt + the none run's
						   output */
	int32_t				*out;	/* (gen_tokens) */
	double				 base_tok_s, step_ms;
	/* the oracle table, row-major (alpha, k), and its adaptive row
	   for each alpha */
	struct rs_bench_spec_row	*table;
	struct rs_bench_spec_row	 adapt[RS_BENCH_SPEC_MAX_ALPHA];
	/* the states the runs reuse, as a server reuses a slot's: [0] for
	   plain decoding (no snapshots), [1] for the drafters (snapshots
	   for the longest pass); NULL until the first run needs one */
	struct rs_state			*st[2];
};

void
rs_bench_spec_defaults(struct rs_bench_spec_opts *o)
{
	static const struct rs_bench_spec_opts d = {
		.prompt_tokens = 128, .gen_tokens = 128, .k_max = 4, .only = -1,
		.oracle = RS_DRAFTER_MTP, .oracle_k_max = 8,
		.alphas = { 0.5, 0.6, 0.7, 0.8, 0.9, 1.0 }, .n_alphas = 6,
		.reps = 1, .seed = 1,
	};

	*o = d;
}

static enum rs_status
check_opts(const struct rs_engine *e, const struct rs_bench_spec_opts *o,
    struct rs_err *err)
{
	const struct rs_model *m = rs_engine_model(e);

	if (o->prompt_tokens < 1 || o->gen_tokens < 2)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "spec benchmark needs "
		    "a prompt and at least 2 tokens to generate (got %d, %d)",
		    o->prompt_tokens, o->gen_tokens));
	if (o->k_max < 1 || o->k_max > RS_DRAFTER_K_MAX || (o->oracle !=
	    RS_DRAFTER_NONE && (o->oracle_k_max < 1 || o->oracle_k_max >
	    RS_DRAFTER_K_MAX)))
		return (rs_errf(err, RS_ERR_INVALID_ARG, "draft counts %d and "
		    "%d: both must be in [1, %d]", o->k_max, o->oracle_k_max,
		    RS_DRAFTER_K_MAX));
	if (o->reps < 1 || o->reps > 100)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "%d runs per row is "
		    "outside [1, 100]", o->reps));
	if (o->n_alphas < 0 || o->n_alphas > RS_BENCH_SPEC_MAX_ALPHA)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "%d alphas, at most "
		    "%d", o->n_alphas, RS_BENCH_SPEC_MAX_ALPHA));
	for (int i = 0; i < o->n_alphas; i++)
		if (!(o->alphas[i] >= 0.0 && o->alphas[i] <= 1.0))
			return (rs_errf(err, RS_ERR_INVALID_ARG, "alpha %g is "
			    "outside [0, 1]", o->alphas[i]));
	if ((int64_t)o->prompt_tokens + o->gen_tokens + RS_DRAFTER_K_MAX + 1 >
	    (int64_t)m->hp.n_ctx_train)
		return (rs_errf(err, RS_ERR_LIMIT, "%d prompt + %d generated "
		    "tokens exceed the model's context, %u", o->prompt_tokens,
		    o->gen_tokens, m->hp.n_ctx_train));
	return (RS_OK);
}

/*
 * One generation with drafter KIND (NONE: plain), K drafts at most (always
 * K when FIXED), the oracle's drafts when ALPHA >= 0, into ROW.
 */
static enum rs_status
run_once(struct bspec *b, enum rs_drafter_kind kind, int k, double alpha,
    int fixed, struct rs_bench_spec_row *row, struct rs_err *err)
{
	const struct rs_bench_spec_opts *o = b->o;
	const int	 drafts = kind != RS_DRAFTER_NONE;
	struct rs_state_opts so = { .n_ctx = o->prompt_tokens + o->gen_tokens +
	    RS_DRAFTER_K_MAX + 1, .n_snap = drafts ? RS_DRAFTER_K_MAX + 1 :
	    0 };
	struct rs_drafter_opts	 dopt;
	struct rs_drafter	*d = NULL;
	struct rs_spec_stats	 s;
	enum rs_status		 r;

	memset(row, 0, sizeof(*row));
	if (b->st[drafts] == NULL && (r = rs_engine_state_new(b->e, &so,
	    &b->st[drafts], err)) != RS_OK)
		return (r);
	rs_state_reset(b->st[drafts]);
	if (drafts) {
		rs_drafter_opts_init(&dopt);
		dopt.kind = kind;
		dopt.k_max = k;
		dopt.fixed = fixed;
		if (kind == RS_DRAFTER_MTP || kind == RS_DRAFTER_MTP_NGRAM)
			dopt.vocab = o->vocab;
		if ((r = rs_drafter_new(&d, b->e, &dopt, err)) != RS_OK)
			return (r);
		if (alpha >= 0.0)
			rs_drafter_set_oracle(d, b->seq, o->prompt_tokens +
			    o->gen_tokens, alpha, o->seed + (uint64_t)k);
	}
	r = rs_spec_greedy(b->e, b->st[drafts], d, b->seq, o->prompt_tokens,
	    o->gen_tokens, b->out, &s, err);
	rs_drafter_free(d);
	if (r != RS_OK)
		return (r);
	row->test = alpha >= 0.0 ? "oracle" : "spec";
	row->drafter = rs_drafter_kind_name(kind);
	row->k = kind != RS_DRAFTER_NONE && (fixed || alpha < 0.0) ? k : 0;
	row->adaptive = kind != RS_DRAFTER_NONE && !fixed;
	row->alpha = alpha;
	row->tokens = s.generated;
	row->rounds = s.rounds;
	row->drafted = s.drafted;
	row->accepted = s.accepted;
	row->ms = s.decode_ms;
	/* the first token comes from the prefill: the rounds made the rest */
	row->tok_s = s.decode_ms > 0 ? 1e3 * (double)(s.generated - 1) /
	    s.decode_ms : 0.0;
	row->verify_ms = s.verify_ms;
	row->draft_ms = s.draft_ms;
	row->catchup_ms = s.catchup_ms;
	if (b->base_tok_s > 0)
		row->speedup = row->tok_s / b->base_tok_s;
	return (RS_OK);
}

/* Speculative output that is not plain decoding's: a broken invariant. */
static enum rs_status
same_error(struct rs_err *err, enum rs_drafter_kind kind, int k, double alpha)
{
	return (rs_errf(err, RS_ERR_FORMAT, "%s, %d drafts%s: the output "
	    "differs from plain greedy decoding's (verification passes are "
	    "not bit-identical to single steps on this backend)",
	    rs_drafter_kind_name(kind), k, alpha >= 0.0 ? ", oracle" : ""));
}

/*
 * run_once() o->reps times, keeping the fastest (the same tokens each
 * time: the oracle's draws are seeded per k), after one untimed run when
 * WARM: a pass size's first call captures its CUDA graph (a few ms), which
 * a server pays once a slot, not once a request.
 */
static enum rs_status
run(struct bspec *b, enum rs_drafter_kind kind, int k, double alpha,
    int fixed, int warm, struct rs_bench_spec_row *row, struct rs_err *err)
{
	struct rs_bench_spec_row	r;
	enum rs_status			st;

	if (warm && (st = run_once(b, kind, k, alpha, fixed, &r, err)) !=
	    RS_OK)
		return (st);
	for (int i = 0; i < b->o->reps; i++) {
		if ((st = run_once(b, kind, k, alpha, fixed, &r, err)) !=
		    RS_OK)
			return (st);
		if (i == 0 || r.ms < row->ms)
			*row = r;
	}
	return (RS_OK);
}

/* The cost model over the finished table (rs_bench_spec.h). */
static void
predict(struct bspec *b)
{
	const struct rs_bench_spec_opts *o = b->o;
	const int	 nk = o->oracle_k_max;
	double		 dm = 0, dn = 0, cm = 0, cn = 0;

	for (int i = 0; i < o->n_alphas * nk; i++) {
		dm += b->table[i].draft_ms;
		dn += (double)b->table[i].drafted;
		cm += b->table[i].catchup_ms;
		cn += (double)b->table[i].accepted;
	}
	for (int k = 1; k <= nk; k++) {
		double vm = 0, vn = 0;
		for (int a = 0; a < o->n_alphas; a++) {
			vm += b->table[a * nk + k - 1].verify_ms;
			vn += (double)b->table[a * nk + k - 1].rounds;
		}
		for (int a = 0; a < o->n_alphas; a++) {
			struct rs_bench_spec_row *r = &b->table[a * nk + k - 1];
			double al = r->alpha, e = 0, p = 1;
			for (int j = 0; j <= k; j++, p *= al)
				e += p;
			r->predicted = e * b->step_ms / (vm / vn + k *
			    (dn > 0 ? dm / dn : 0) + e * (cn > 0 ? cm / cn :
			    0));
		}
	}
}

/* A seeded random prompt (tokens drawn uniformly from the vocabulary). */
static void
prompt(struct bspec *b, int64_t n_vocab)
{
	struct rs_rng rng;

	rs_rng_seed(&rng, b->o->seed);
	for (int32_t i = 0; i < b->o->prompt_tokens; i++)
		b->seq[i] = (int32_t)rs_rng_below(&rng, (uint64_t)n_vocab);
}

enum rs_status
rs_bench_spec(struct rs_engine *e, const struct rs_bench_spec_opts *o,
    rs_bench_spec_cb cb, void *ctx, struct rs_err *err)
{
	static const enum rs_drafter_kind kinds[] = { RS_DRAFTER_NONE,
	    RS_DRAFTER_NGRAM, RS_DRAFTER_MTP, RS_DRAFTER_MTP_NGRAM };
	const struct rs_model *m = rs_engine_model(e);
	struct bspec	 b = { .e = e, .o = o, .cb = cb, .ctx = ctx };
	struct rs_bench_spec_row row;
	enum rs_drafter_kind oracle = o->oracle;
	enum rs_status	 r;
	int		 nk = o->oracle_k_max;

	if ((r = check_opts(e, o, err)) != RS_OK)
		return (r);
	if (m->hp.n_nextn == 0 && (o->only == RS_DRAFTER_MTP || o->only ==
	    RS_DRAFTER_MTP_NGRAM))
		return (rs_errf(err, RS_ERR_UNSUPPORTED, "the model has no MTP "
		    "block to draft with (use --draft ngram)"));
	/* refused before any row runs, not when the first MTP drafter opens */
	if (o->vocab < 0 || (int64_t)o->vocab > m->hp.n_vocab)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "a draft vocabulary of "
		    "%d ids is outside the model's [1, %lld]", (int)o->vocab,
		    (long long)m->hp.n_vocab));
	/* the oracle pays for a drafter the model has */
	if (m->hp.n_nextn == 0 && (oracle == RS_DRAFTER_MTP || oracle ==
	    RS_DRAFTER_MTP_NGRAM))
		oracle = RS_DRAFTER_NGRAM;
	b.seq = malloc((size_t)(o->prompt_tokens + o->gen_tokens) *
	    sizeof(int32_t));
	b.out = malloc((size_t)o->gen_tokens * sizeof(int32_t));
	b.table = calloc((size_t)(o->n_alphas * nk + 1), sizeof(*b.table));
	if (b.seq == NULL || b.out == NULL || b.table == NULL) {
		r = rs_errf(err, RS_ERR_NOMEM, "out of memory");
		goto out;
	}
	prompt(&b, m->hp.n_vocab);
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (i > 0 && o->only >= 0 && (int)kinds[i] != o->only)
			continue;
		if (o->only < 0 && m->hp.n_nextn == 0 && (kinds[i] ==
		    RS_DRAFTER_MTP || kinds[i] == RS_DRAFTER_MTP_NGRAM))
			continue;
		if ((r = run(&b, kinds[i], o->k_max, -1.0, 0, 1, &row, err)) !=
		    RS_OK)
			goto out;
		if (i > 0 && memcmp(b.out, b.seq + o->prompt_tokens,
		    (size_t)o->gen_tokens * sizeof(int32_t)) != 0) {
			r = same_error(err, kinds[i], o->k_max, -1.0);
			goto out;
		}
		if (kinds[i] == RS_DRAFTER_NONE) {
			/* the baseline, and the continuation the oracle knows */
			b.base_tok_s = row.tok_s;
			b.step_ms = row.ms / (double)(row.tokens - 1);
			row.speedup = 1.0;
			memcpy(b.seq + o->prompt_tokens, b.out,
			    (size_t)o->gen_tokens * sizeof(int32_t));
		}
		if (cb(&row, ctx) != 0)
			goto out;
	}
	if (oracle == RS_DRAFTER_NONE || o->n_alphas == 0)
		goto out;
	for (int a = 0; a < o->n_alphas; a++) {
		for (int i = 1; i <= nk + 1; i++) {
			/* k 1 .. nk fixed, then (k 0) adaptive up to nk */
			const int k = i <= nk ? i : 0;
			struct rs_bench_spec_row *t = k > 0 ?
			    &b.table[a * nk + k - 1] : &b.adapt[a];
			if ((r = run(&b, oracle, k > 0 ? k : nk, o->alphas[a],
			    k > 0, k > 0 && a == 0, t, err)) != RS_OK)
				goto out;
			if (memcmp(b.out, b.seq + o->prompt_tokens,
			    (size_t)o->gen_tokens * sizeof(int32_t)) != 0) {
				r = same_error(err, oracle, k > 0 ? k : nk,
				    o->alphas[a]);
				goto out;
			}
			if (cb(t, ctx) != 0)
				goto out;
		}
	}
	predict(&b);
	for (int i = 0; i < o->n_alphas * nk; i++)
		if (cb(&b.table[i], ctx) != 0)
			goto out;
	for (int a = 0; a < o->n_alphas; a++) {
		b.adapt[a].predicted = -1.0;
		if (cb(&b.adapt[a], ctx) != 0)
			break;
	}
out:
	rs_state_free(b.st[0]);
	rs_state_free(b.st[1]);
	free(b.seq);
	free(b.out);
	free(b.table);
	return (r);
}
