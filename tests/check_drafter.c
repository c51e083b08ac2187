/*
 * check_drafter.c - the drafters (rs_drafter.h): MTP drafts are the
 * argmax of the MTP logits of llama.cpp (tiny/) and of the float64
 * reference (demo/); the adaptive K converges to the best K for a known
 * acceptance; the trained demo model's acceptance is reported and held to
 * the fixture's own simulation of llama.cpp's draft-mtp.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_drafter.h"
#include "rs_rng.h"
#include "rs_spec.h"
#include "rs_verify.h"
#include "t_ref.h"
#include "t_util.h"

/*
 * A logit margin (top-1 minus top-2 of the reference row) below which the
 * argmax may flip: llama.cpp's f16 activations (tiny) and our f32 sums
 * differ by ~1e-3 relative on logits of magnitude ~5.
 */
#define MARGIN	0.05

static struct rs_drafter *
drafter_v(struct rs_engine *e, enum rs_drafter_kind kind, int k, int fixed,
    double cost, int32_t vocab)
{
	struct rs_drafter_opts	 o;
	struct rs_drafter	*d;
	struct rs_err		 err = { 0 };

	rs_drafter_opts_init(&o);
	o.kind = kind;
	o.k_max = k;
	o.fixed = fixed;
	o.cost = cost;
	o.vocab = vocab;
	ck_assert_msg(rs_drafter_new(&d, e, &o, &err) == RS_OK, "%s",
	    err.msg);
	return (d);
}

static struct rs_drafter *
drafter(struct rs_engine *e, enum rs_drafter_kind kind, int k, int fixed,
    double cost)
{
	return (drafter_v(e, kind, k, fixed, cost, 0));
}

/* Top-1 minus top-2 of a row of V logits. */
static double
margin(const float *row, int64_t v)
{
	float a = -INFINITY, b = -INFINITY;

	for (int64_t i = 0; i < v; i++)
		if (row[i] > a) {
			b = a;
			a = row[i];
		} else if (row[i] > b)
			b = row[i];
	return ((double)a - (double)b);
}

/* What mtp_vs_ref() saw. */
struct cmp {
	int	hard;		/* drafts unlike the reference's argmax where
				   its margin is at least MARGIN */
	int	soft;		/* ... where it is smaller */
	int	outside;	/* reference argmax beyond the draft vocab */
	int	hits;		/* drafts equal to the next token of SEQ */
	int	n;
	double	draft_ms;
};

/*
 * Teacher-force SEQ (N tokens) through the trunk one token at a time and
 * draft one MTP token before each, over the first VOCAB ids (0: all):
 * the draft at P comes from (SEQ[P], hn(P − 1)), the layout of the
 * fixtures' MTP rows.  Compares each with the argmax of REF row P (a
 * reference argmax beyond VOCAB is counted apart) and with SEQ[P + 1].
 */
static void
mtp_vs_ref(struct t_lm *lm, const int32_t *seq, int32_t n, const float *ref,
    int32_t vocab, struct cmp *c)
{
	const int64_t	 v = lm->m->hp.n_vocab, dim = lm->m->hp.n_embd;
	struct rs_drafter *d = drafter_v(lm->e, RS_DRAFTER_MTP, 1, 1, 0, vocab);
	struct rs_drafter_stats s;
	struct rs_state	*st = t_state(lm, 2, 0);
	float		*h = malloc((size_t)dim * sizeof(float));
	struct rs_err	 err = { 0 };
	int		 nd;
	int32_t		 draft, want;

	rs_drafter_begin(d, st);
	for (int32_t p = 0; p < n; p++) {
		const float *row = ref + (int64_t)p * v;
		ck_assert_msg(rs_drafter_propose(d, st, seq[p], seq, p + 1, NULL,
		    0, 1, &draft, &nd, &err) == RS_OK, "%s", err.msg);
		ck_assert_int_eq(nd, 1);
		ck_assert(vocab == 0 || draft < vocab);
		want = rs_logits_argmax(row, v);
		c->n++;
		c->hits += p + 1 < n && draft == seq[p + 1];
		if (vocab > 0 && want >= vocab)
			c->outside++;
		else if (draft != want) {
			if (margin(row, v) >= MARGIN)
				c->hard++;
			else
				c->soft++;
		}
		ck_assert_int_eq(rs_engine_forward(lm->e, st, &seq[p], 1, NULL,
		    RS_LOGITS_NONE, h, &err), RS_OK);
		ck_assert_int_eq(rs_drafter_observe(d, st, &seq[p], 1, p, h,
		    &err), RS_OK);
	}
	rs_drafter_stats(d, &s);
	c->draft_ms += s.draft_ms;
	free(h);
	rs_state_free(st);
	rs_drafter_free(d);
}

START_TEST(mtp_argmax_tiny)
{
	struct t_ref	r;
	struct t_lm	lm;
	struct t_npy	ref;
	struct cmp	c = { 0 };

	t_ref_load(&r);
	t_lm_open(&lm, "tiny/model-f16.gguf", 2, 0, 0, 0);
	t_npy_load(t_fixture("tiny/llamacpp-mtp-logits.npy"), &ref);
	ck_assert(ref.shape[0] == r.n_seq && ref.shape[1] ==
	    lm.m->hp.n_vocab);
	mtp_vs_ref(&lm, r.seq, r.n_seq, ref.data, 0, &c);
	printf("drafter tiny: MTP drafts vs llama.cpp argmax: %d of %d "
	    "differ, %d of them within a %.2g margin\n", c.hard + c.soft,
	    c.n, c.soft, MARGIN);
	ck_assert_int_eq(c.hard, 0);
	free(ref.data);
	t_lm_close(&lm);
	t_ref_free(&r);
}
END_TEST

/*
 * demo/: the full head (_i = 0) and reduced heads of the first 4160 (all
 * rows, through the drafter's own row-by-row argmax), 2048, 1024 and 512
 * ids.  Every draft agrees with the reference's argmax when that lies
 * within the reduced vocabulary; reported: how often it does not, the
 * first-draft acceptance (teacher forced: draft = next greedy token) and
 * the draft time.
 */
START_TEST(mtp_argmax_demo)
{
	static const int32_t vocabs[] = { 0, 4160, 2048, 1024, 512 };
	struct t_demo	dm;
	struct t_lm	lm;
	struct t_npy	ref;
	struct cmp	c = { 0 };
	int64_t		row0 = 0, rows = 0;

	t_demo_load(&dm);
	t_lm_open(&lm, "demo/model-f16.gguf", 2, 0, 0, 0);
	t_npy_load(t_fixture("demo/ref-mtp-logits.npy"), &ref);
	for (int i = 0; i < dm.n; i++)
		rows += dm.n_seq[i];
	ck_assert(ref.shape[0] == rows && ref.shape[1] == lm.m->hp.n_vocab);
	ck_assert_int_eq(lm.m->hp.n_vocab, vocabs[1]);
	for (int i = 0; i < dm.n; i++) {
		mtp_vs_ref(&lm, dm.seq[i], dm.n_seq[i], ref.data + row0 *
		    lm.m->hp.n_vocab, vocabs[_i], &c);
		row0 += dm.n_seq[i];
	}
	printf("drafter demo, MTP head over %s%d ids: drafts vs the float64 "
	    "reference's argmax: %d of %d differ (%d within a %.2g margin), "
	    "%d argmax beyond the vocabulary; first drafts equal to the next "
	    "token %d of %d; %.1f ms drafting\n", _i ? "" : "all ",
	    _i ? vocabs[_i] : vocabs[1], c.hard + c.soft, c.n, c.soft, MARGIN,
	    c.outside, c.hits, c.n - dm.n, c.draft_ms);
	ck_assert_int_eq(c.hard, 0);
	if (_i <= 1)
		ck_assert_int_eq(c.outside, 0);
	free(ref.data);
	t_lm_close(&lm);
	t_demo_free(&dm);
}
END_TEST

/* Per-position acceptance of S into BUF ("0.94 0.88 0.81"). */
static void
per_pos(const struct rs_drafter_stats *s, char *buf, size_t cap)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int j = 0; j < RS_DRAFTER_K_MAX && s->pos_drafted[j] > 0 &&
	    n < cap; j++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%.3f", j ? " " : "",
		    (double)s->pos_accepted[j] / (double)s->pos_drafted[j]);
}

static void
add_stats(struct rs_drafter_stats *sum, const struct rs_drafter_stats *s)
{
	sum->rounds += s->rounds;
	sum->drafted += s->drafted;
	sum->accepted += s->accepted;
	for (int j = 0; j < RS_DRAFTER_K_MAX; j++) {
		sum->pos_drafted[j] += s->pos_drafted[j];
		sum->pos_accepted[j] += s->pos_accepted[j];
	}
	sum->draft_ms += s->draft_ms;
	sum->catchup_ms += s->catchup_ms;
}

/*
 * The demo model's three prompts, greedy, 64 tokens (the reference's
 * continuation, reproduced exactly) with each drafter at 3 drafts a round
 * (llama.cpp's default): the acceptance, reported.  The fixture simulated
 * llama.cpp's draft-mtp (n_max 3) decoding the same sequences
 * (reference.json mtp_chain_greedy): 56 rounds keeping 2.339 drafts each
 * on average, 131 in all; an exact MTP drafter must do the same rounds.
 */
START_TEST(demo_acceptance)
{
	static const enum rs_drafter_kind kinds[] = { RS_DRAFTER_NGRAM,
	    RS_DRAFTER_MTP, RS_DRAFTER_MTP_NGRAM };
	struct t_demo	dm;
	struct t_lm	lm;
	int32_t		out[64];
	char		pp[256];

	t_demo_load(&dm);
	t_lm_open(&lm, "demo/model-f16.gguf", 2, 0, 0, 0);
	for (size_t k = 0; k < 3; k++) {
		struct rs_drafter_stats sum = { 0 }, s;
		struct rs_drafter *d = drafter(lm.e, kinds[k], 3, 1, 0);
		double	ms = 0.0;
		int64_t	gen = 0;

		for (int i = 0; i < dm.n; i++) {
			struct rs_spec_stats ss;
			struct rs_state	*st = t_state(&lm, 4, 0);
			struct rs_err	 err = { 0 };
			int32_t		 n = dm.n_seq[i] - dm.n_prompt[i];

			ck_assert(n <= 64);
			ck_assert_msg(rs_spec_greedy(lm.e, st, d, dm.seq[i],
			    dm.n_prompt[i], n, out, &ss, &err) == RS_OK, "%s",
			    err.msg);
			ck_assert_msg(memcmp(out, dm.seq[i] + dm.n_prompt[i],
			    (size_t)n * sizeof(int32_t)) == 0, "%s, prompt %d: "
			    "not the reference's greedy tokens",
			    rs_drafter_kind_name(kinds[k]), i);
			rs_drafter_stats(d, &s);
			add_stats(&sum, &s);
			ms += ss.decode_ms;
			gen += ss.generated - 1;
			rs_state_free(st);
		}
		per_pos(&sum, pp, sizeof(pp));
		printf("drafter demo %s k=3: %lld/%lld drafts accepted (%.3f), "
		    "per position %s; %.2f tokens per pass; draft %.1f ms, "
		    "catch-up %.1f ms of %.1f ms decoding\n",
		    rs_drafter_kind_name(kinds[k]), (long long)sum.accepted,
		    (long long)sum.drafted, (double)sum.accepted /
		    (double)sum.drafted, pp, (double)gen / (double)sum.rounds,
		    sum.draft_ms, sum.catchup_ms, ms);
		if (kinds[k] == RS_DRAFTER_MTP) {
			ck_assert_int_eq(sum.rounds, 56);
			ck_assert_int_eq(sum.accepted, 131);
		}
		rs_drafter_free(d);
	}
	t_lm_close(&lm);
	t_demo_free(&dm);
}
END_TEST

/*
 * The adaptive K on simulated rounds with a known per-token acceptance
 * alpha (each draft kept with probability alpha until the first miss):
 * over the last 300 of 600 rounds the estimate averages within 0.05 of
 * alpha, and the K chosen gains at least 97% of what the best K would.
 */
START_TEST(adapt_simulated)
{
	static const double alphas[] = { 0.3, 0.6, 0.8, 0.95 };
	static const double costs[] = { 0.1, 0.5 };
	struct t_lm	lm;
	struct rs_rng	rng;

	t_lm_open(&lm, "tiny/model-q8_0.gguf", 1, 0, 0, 0);
	rs_rng_seed(&rng, 11);
	for (size_t c = 0; c < 2; c++)
		for (size_t a = 0; a < 4; a++) {
			struct rs_drafter *d = drafter(lm.e, RS_DRAFTER_NGRAM, 8,
			    0, costs[c]);
			struct rs_drafter_stats s;
			double	 al = alphas[a], sum_a = 0.0, sum_g = 0.0;
			double	 round[8];
			rs_drafter_linear_costs(costs[c], 8, round);
			int	 best = rs_drafter_best_k(al, round, 8);

			rs_drafter_begin(d, lm.st);
			for (int r = 0; r < 600; r++) {
				int acc = 0;
				rs_drafter_stats(d, &s);
				while (acc < s.k && rs_rng_uniform(&rng) < al)
					acc++;
				rs_drafter_result(d, s.k, acc, 1);
				if (r < 300)
					continue;
				/* gain of K over the best K at the true alpha */
				double ek = (1 - pow(al, s.k + 1)) / (1 - al);
				double eb = (1 - pow(al, best + 1)) / (1 - al);
				sum_g += (ek / (1 + costs[c] * s.k)) /
				    (eb / (1 + costs[c] * best));
				sum_a += s.alpha;
			}
			printf("drafter adapt: alpha %.2f cost %.1f: best K %d, "
			    "mean estimate %.3f, mean gain %.3f of the best\n",
			    al, costs[c], best, sum_a / 300, sum_g / 300);
			ck_assert(fabs(sum_a / 300 - al) <= 0.05);
			ck_assert(sum_g / 300 >= 0.97);
			rs_drafter_free(d);
		}
	t_lm_close(&lm);
}
END_TEST

/*
 * End to end: oracle drafts from a known continuation (plain greedy's own
 * 200 tokens) right with probability alpha, MTP drafter for the cost,
 * adaptive K with c = 0.1: high alpha ends at a long K, low alpha at a
 * short one, and the first position's acceptance is alpha's.
 */
START_TEST(adapt_oracle)
{
	static const double alphas[] = { 0.5, 0.9 };
	struct t_ref	r;
	struct t_lm	lm;
	int32_t		seq[256], out[200];

	t_ref_load(&r);
	t_lm_open(&lm, "tiny/model-f16.gguf", 2, 0, 0, 0);
	struct rs_spec_stats ss;
	struct rs_state *st = t_state(&lm, 0, 0);
	struct rs_err	 err = { 0 };
	int32_t		 n = r.len[0];

	ck_assert_msg(rs_spec_greedy(lm.e, st, NULL, r.prompt[0], n, 200, out,
	    &ss, &err) == RS_OK, "%s", err.msg);
	rs_state_free(st);
	memcpy(seq, r.prompt[0], (size_t)n * sizeof(int32_t));
	memcpy(seq + n, out, sizeof(out));
	for (size_t a = 0; a < 2; a++) {
		struct rs_drafter *d = drafter(lm.e, RS_DRAFTER_MTP, 8, 0, 0.1);
		struct rs_drafter_stats s;
		int32_t	got[200];
		double	round[8];

		rs_drafter_linear_costs(0.1, 8, round);
		rs_drafter_set_oracle(d, seq, n + 200, alphas[a], 3);
		st = t_state(&lm, 9, 0);
		ck_assert_msg(rs_spec_greedy(lm.e, st, d, r.prompt[0], n, 200,
		    got, &ss, &err) == RS_OK, "%s", err.msg);
		ck_assert(memcmp(got, out, sizeof(out)) == 0);
		rs_drafter_stats(d, &s);
		double p0 = (double)s.pos_accepted[0] / (double)s.pos_drafted[0];
		printf("drafter oracle: alpha %.1f: K %d (best %d), estimate "
		    "%.3f, first-position acceptance %.3f, %lld rounds\n",
		    alphas[a], s.k, rs_drafter_best_k(alphas[a], round, 8),
		    s.alpha, p0, (long long)s.rounds);
		ck_assert(fabs(p0 - alphas[a]) <= 0.12);
		if (alphas[a] > 0.8)
			ck_assert_int_ge(s.k, 6);
		else
			ck_assert_int_le(s.k, 3);
		rs_state_free(st);
		rs_drafter_free(d);
	}
	t_lm_close(&lm);
	t_ref_free(&r);
}
END_TEST

/*
 * At K 0 a drafter drafts nothing but one round in RS_DRAFTER_PROBE: after
 * rounds whose one draft always fails (c 0.5: no k pays), K is 0, stays 0
 * for RS_DRAFTER_PROBE - 1 rounds without drafts, then is 1 for a round;
 * a kept probe (alpha's estimate back up) lifts it.
 */
START_TEST(probe)
{
	struct t_lm		 lm;
	struct rs_drafter_stats	 s;

	t_lm_open(&lm, "tiny/model-q8_0.gguf", 1, 0, 0, 0);
	struct rs_drafter *d = drafter(lm.e, RS_DRAFTER_NGRAM, 4, 0, 0.5);
	rs_drafter_begin(d, lm.st);
	rs_drafter_stats(d, &s);
	ck_assert_int_ge(s.k, 1);		/* the prior: alpha 0.7 */
	for (int r = 0; r < 20 && s.k > 0; r++) {
		rs_drafter_result(d, 1, 0, 1);
		rs_drafter_stats(d, &s);
	}
	ck_assert_int_eq(s.k, 0);
	for (int round = 0; round < 3; round++) {
		for (int r = 1; r < RS_DRAFTER_PROBE; r++) {
			rs_drafter_result(d, 0, 0, 1);
			rs_drafter_stats(d, &s);
			ck_assert_int_eq(s.k, 0);
		}
		rs_drafter_result(d, 0, 0, 1);
		rs_drafter_stats(d, &s);
		ck_assert_int_eq(s.k, 1);
		rs_drafter_result(d, 1, 0, 1);	/* the probe fails */
		rs_drafter_stats(d, &s);
		ck_assert_int_eq(s.k, 0);
	}
	for (int r = 0; r < 10; r++)		/* probes kept, then more */
		rs_drafter_result(d, 1, 1, 1);
	rs_drafter_stats(d, &s);
	ck_assert_int_ge(s.k, 1);
	rs_drafter_free(d);
	t_lm_close(&lm);
}
END_TEST

START_TEST(best_k)
{
	double	lin[16], lin5[16];
	/* passes as an H200 times them on the 27B (docs/perf-log.md,
	   session 13: 1.07 steps for 2-4 tokens, ~1.5 for 5-8), plus 0.07
	   a drafted MTP step */
	double	quads[8];
	static const double pass[9] = { 1.0, 1.07, 1.07, 1.07, 1.45, 1.48,
	    1.50, 1.52, 1.90 };

	rs_drafter_linear_costs(0.1, 16, lin);
	rs_drafter_linear_costs(0.5, 16, lin5);
	ck_assert(lin[0] == 1.1 && lin[15] == 1.0 + 0.1 * 16);
	/* k 0 (a plain step, ratio 1) where no round pays: 1 / 1.1 at
	   alpha 0; at 0.2 one draft does, 1.2 / 1.1 */
	ck_assert_int_eq(rs_drafter_best_k(0.0, lin, 8), 0);
	ck_assert_int_eq(rs_drafter_best_k(0.2, lin, 8), 1);
	ck_assert_int_eq(rs_drafter_best_k(1.0, lin, 8), 8);
	/* alpha 0.8, c 0.1: 1.64 2.03 2.27 2.40 2.46 2.47 2.45 ... */
	ck_assert_int_eq(rs_drafter_best_k(0.8, lin, 16), 6);
	ck_assert_int_eq(rs_drafter_best_k(0.8, lin, 4), 4);
	ck_assert_int_eq(rs_drafter_best_k(0.3, lin5, 16), 0);
	ck_assert_int_eq(rs_drafter_best_k(0.6, lin5, 16), 1);
	/* the quad curve: at alpha 0.8 E / R = 1.58 2.02 2.31 1.94 ...;
	   k 4 pays a pass of 5 for 0.41 more tokens; at 0.97 the longest
	   round within the second quad wins (k 7: 7.2 tokens for 2.01
	   steps), not k 8, whose pass takes a third quad */
	for (int k = 1; k <= 8; k++)
		quads[k - 1] = pass[k] + 0.07 * k;
	ck_assert_int_eq(rs_drafter_best_k(0.8, quads, 8), 3);
	ck_assert_int_eq(rs_drafter_best_k(0.5, quads, 8), 3);
	ck_assert_int_eq(rs_drafter_best_k(0.97, quads, 8), 7);
	/* one draft costs 1.14 steps there: 1.1 tokens do not pay it,
	   1.2 do */
	ck_assert_int_eq(rs_drafter_best_k(0.1, quads, 8), 0);
	ck_assert_int_eq(rs_drafter_best_k(0.2, quads, 8), 1);
}
END_TEST

START_TEST(parse)
{
	enum rs_drafter_kind	k;
	struct rs_err		err = { 0 };
	int			n;

	ck_assert_int_eq(rs_drafter_parse("mtp+ngram", &k, &n, &err), RS_OK);
	ck_assert(k == RS_DRAFTER_MTP_NGRAM && n == 0);
	ck_assert_int_eq(rs_drafter_parse("none", &k, &n, &err), RS_OK);
	ck_assert(k == RS_DRAFTER_NONE);
	/* a bare number keeps its old meaning: n-gram with K = N */
	ck_assert_int_eq(rs_drafter_parse("8", &k, &n, &err), RS_OK);
	ck_assert(k == RS_DRAFTER_NGRAM && n == 8);
	ck_assert_int_eq(rs_drafter_parse("0", &k, &n, &err), RS_OK);
	ck_assert(k == RS_DRAFTER_NONE && n == 0);
	for (size_t i = 0; i < 6; i++) {
		static const char *const bad[] = { "17", "-1", "4x", "",
		    "mtp+", "MTP" };
		ck_assert_int_eq(rs_drafter_parse(bad[i], &k, &n, &err),
		    RS_ERR_INVALID_ARG);
		ck_assert(strstr(err.msg, "none, ngram, mtp, mtp+ngram") !=
		    NULL);
	}
	ck_assert_str_eq(rs_drafter_kind_name(RS_DRAFTER_MTP), "mtp");
	ck_assert_int_eq(rs_drafter_parse("auto", &k, &n, &err), RS_OK);
	ck_assert(k == RS_DRAFTER_AUTO && n == 0);
}
END_TEST

/* auto: mtp+ngram with an MTP block, ngram without; the others as named */
START_TEST(resolve_auto)
{
	struct t_lm		 lm;
	struct rs_drafter_opts	 o;
	struct rs_drafter	*d = NULL;
	struct rs_err		 err = { 0 };
	struct rs_model		 bare;

	t_lm_open(&lm, "tiny/model-q8_0.gguf", 1, 0, 0, 0);
	ck_assert_uint_eq(lm.m->hp.n_nextn, 1);
	ck_assert_int_eq(rs_drafter_resolve(RS_DRAFTER_AUTO, lm.m),
	    RS_DRAFTER_MTP_NGRAM);
	bare = *lm.m;
	bare.hp.n_nextn = 0;
	ck_assert_int_eq(rs_drafter_resolve(RS_DRAFTER_AUTO, &bare),
	    RS_DRAFTER_NGRAM);
	for (int k = RS_DRAFTER_NONE; k < RS_DRAFTER_AUTO; k++)
		ck_assert_int_eq(rs_drafter_resolve((enum rs_drafter_kind)k,
		    &bare), k);
	rs_drafter_opts_init(&o);
	o.kind = RS_DRAFTER_AUTO;
	o.k_max = 2;
	o.fixed = 1;
	ck_assert_int_eq(rs_drafter_new(&d, lm.e, &o, &err), RS_OK);
	ck_assert_int_eq(rs_drafter_kind(d), RS_DRAFTER_MTP_NGRAM);
	ck_assert_int_eq(rs_drafter_wants_hidden(d), 1);
	rs_drafter_free(d);
	t_lm_close(&lm);
}
END_TEST

START_TEST(bad_input)
{
	struct t_lm		 lm;
	struct rs_drafter_opts	 o;
	struct rs_drafter	*d = NULL;
	struct rs_err		 err = { 0 };

	t_lm_open(&lm, "tiny/model-q8_0.gguf", 1, 0, 0, 0);
	rs_drafter_opts_init(&o);
	o.kind = RS_DRAFTER_MTP;
	o.k_max = 0;
	ck_assert_int_eq(rs_drafter_new(&d, lm.e, &o, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "[1, 16]") != NULL);
	o.k_max = 17;
	ck_assert_int_eq(rs_drafter_new(&d, lm.e, &o, &err),
	    RS_ERR_INVALID_ARG);
	o.k_max = 4;
	o.cost = -1;
	ck_assert_int_eq(rs_drafter_new(&d, lm.e, &o, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "cost") != NULL);
	o.cost = NAN;
	ck_assert_int_eq(rs_drafter_new(&d, lm.e, &o, &err),
	    RS_ERR_INVALID_ARG);
	o.cost = 0;
	o.vocab = 1 << 20;
	ck_assert_int_eq(rs_drafter_new(&d, lm.e, &o, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert(strstr(err.msg, "vocabulary") != NULL);
	o.vocab = 0;
	o.cost = 0;
	o.kind = (enum rs_drafter_kind)7;
	ck_assert_int_eq(rs_drafter_new(&d, lm.e, &o, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert(d == NULL);
	rs_drafter_free(NULL);
	t_lm_close(&lm);
}
END_TEST

Suite *
drafter_suite(void)
{
	Suite	*s = suite_create("drafter");
	TCase	*tc = tcase_create("mtp");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, mtp_argmax_tiny);
	tcase_add_loop_test(tc, mtp_argmax_demo, 0, 5);
	tcase_add_test(tc, demo_acceptance);
	suite_add_tcase(s, tc);
	tc = tcase_create("adapt");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, best_k);
	tcase_add_test(tc, probe);
	tcase_add_test(tc, adapt_simulated);
	tcase_add_test(tc, adapt_oracle);
	suite_add_tcase(s, tc);
	tc = tcase_create("bad_input");
	tcase_add_test(tc, parse);
	tcase_add_test(tc, resolve_auto);
	tcase_add_test(tc, bad_input);
	suite_add_tcase(s, tc);
	return (s);
}
