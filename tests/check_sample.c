/*
 * check_sample.c - the sampler and the stop conditions.
 *
 * Distributions are checked against the analytic distribution of the
 * documented chain, computed here in double from the definitions, with a
 * chi-square goodness-of-fit test at significance 0.001 (fixed seeds, so
 * the outcome is deterministic).  The critical value is computed from the
 * chi-square distribution (regularized incomplete gamma function), and
 * that function is itself checked against printed table values.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_buf.h"
#include "rs_rng.h"
#include "rs_sample.h"
#include "rs_stop.h"

#define V	10
#define N_DRAWS	100000
#define ALPHA	0.001

/* Sorted from the largest down, so top-k is a prefix. */
static const float L[V] = { 3.0f, 2.5f, 2.0f, 1.5f, 1.0f, 0.5f, 0.0f,
	-0.5f, -1.0f, -2.0f };

/* ---- chi-square distribution ---- */

/* Regularized lower incomplete gamma P(a, x), series or continued fraction. */
static double
gamma_p(double a, double x)
{
	double	lead, sum, term, b, c, d, h, an, del;
	int	i;

	if (x <= 0)
		return (0);
	lead = exp(-x + a * log(x) - lgamma(a));
	if (x < a + 1) {
		/* P = lead * sum_n x^n / (a (a+1) ... (a+n)) */
		sum = term = 1 / a;
		for (i = 1; i < 1000 && fabs(term) > fabs(sum) * 1e-16; i++) {
			term *= x / (a + i);
			sum += term;
		}
		return (lead * sum);
	}
	/* Q = lead / (x + 1 - a - 1(1-a) / (x + 3 - a - 2(2-a) / ...)),
	 * evaluated with the modified Lentz method */
	b = x + 1 - a;
	c = 1 / 1e-300;
	d = 1 / b;
	h = d;
	for (i = 1; i < 1000; i++) {
		an = -i * (i - a);
		b += 2;
		d = an * d + b;
		d = fabs(d) < 1e-300 ? 1e-300 : d;
		c = b + an / c;
		c = fabs(c) < 1e-300 ? 1e-300 : c;
		d = 1 / d;
		del = d * c;
		h *= del;
		if (fabs(del - 1) < 1e-16)
			break;
	}
	return (1 - lead * h);
}

/* The Q-quantile of chi-square with DF degrees of freedom, by bisection. */
static double
chi2_quantile(int df, double q)
{
	double	lo = 0, hi = 1000, mid;

	for (int i = 0; i < 200; i++) {
		mid = (lo + hi) / 2;
		if (gamma_p(df / 2.0, mid / 2) < q)
			lo = mid;
		else
			hi = mid;
	}
	return ((lo + hi) / 2);
}

START_TEST(chi2_table)
{
	/* NIST/SEMATECH e-Handbook, table 1.3.6.7.4 */
	ck_assert_double_eq_tol(chi2_quantile(1, 0.999), 10.828, 1e-3);
	ck_assert_double_eq_tol(chi2_quantile(3, 0.95), 7.815, 1e-3);
	ck_assert_double_eq_tol(chi2_quantile(9, 0.999), 27.877, 1e-3);
	ck_assert_double_eq_tol(chi2_quantile(40, 0.999), 73.402, 1e-3);
}
END_TEST

/* Candidates of LOGITS sorted by logit then id (reference for big vocabs). */
static const float	*ref_logits;	/* what by_logit() sorts by */

static int
by_logit(const void *a, const void *b)
{
	const float	*l = ref_logits;
	int		 x = *(const int *)a, y = *(const int *)b;

	if (l[x] != l[y])
		return (l[x] > l[y] ? -1 : 1);
	return (x - y);
}

/* ---- analytic distribution of the chain ---- */

struct cfg {
	const char	*name;
	float		 temperature;
	int		 top_k;
	float		 top_p, min_p;
	int		 n_bias;
	struct rs_logit_bias bias[2];
};

static const struct cfg cfgs[] = {
	{ "plain", 1.0f, 0, 1.0f, 0.0f, 0, { { 0, 0 } } },
	{ "temperature", 0.7f, 0, 1.0f, 0.0f, 0, { { 0, 0 } } },
	{ "hot", 1.8f, 0, 1.0f, 0.0f, 0, { { 0, 0 } } },
	{ "top_k", 1.0f, 4, 1.0f, 0.0f, 0, { { 0, 0 } } },
	{ "top_p", 1.0f, 0, 0.8f, 0.0f, 0, { { 0, 0 } } },
	{ "min_p", 1.0f, 0, 1.0f, 0.2f, 0, { { 0, 0 } } },
	{ "all", 1.3f, 6, 0.9f, 0.05f, 0, { { 0, 0 } } },
	{ "bias", 1.2f, 5, 0.95f, 0.0f, 2, { { 1, -INFINITY }, { 9, 5.25f } } },
	/* top_k above the candidates left: every one stays, in id order */
	{ "top_k_wide", 1.1f, V, 0.9f, 0.0f, 2,
	    { { 2, -INFINITY }, { 5, -INFINITY } } },
};

#define N_CFGS	(sizeof(cfgs) / sizeof(cfgs[0]))

/* P(token) under C, from the definitions in rs_sample.h. */
static void
analytic(const struct cfg *c, double p[V])
{
	double	l[V], w[V], sum = 0, cum = 0;
	int	id[V], n = 0, keep, i, j;

	for (i = 0; i < V; i++)
		l[i] = L[i];
	for (i = 0; i < c->n_bias; i++)
		l[c->bias[i].token] += c->bias[i].bias;
	/* candidates by logit, then id (insertion sort) */
	for (i = 0; i < V; i++) {
		if (isinf(l[i]))
			continue;
		for (j = n; j > 0 && l[id[j - 1]] < l[i]; j--)
			id[j] = id[j - 1];
		id[j] = i;
		n++;
	}
	keep = c->top_k > 0 && c->top_k < n ? c->top_k : n;
	if (c->top_p < 1) {
		for (i = 0; i < keep; i++)
			sum += exp(l[id[i]]);
		for (i = 0; i < keep; i++) {
			cum += exp(l[id[i]]) / sum;
			if (cum >= c->top_p)
				break;
		}
		keep = i < keep ? i + 1 : keep;
	}
	if (c->min_p > 0) {
		/* p_i / p_max = exp(l_i - l_max) */
		for (i = 0; i < keep; i++)
			if (exp(l[id[i]] - l[id[0]]) < c->min_p)
				break;
		keep = i;
	}
	memset(p, 0, V * sizeof(double));
	sum = 0;
	for (i = 0; i < keep; i++)
		sum += w[i] = exp(l[id[i]] / c->temperature);
	for (i = 0; i < keep; i++)
		p[id[i]] = w[i] / sum;
}

static struct rs_sampler *
sampler_for(const struct cfg *c, uint64_t seed)
{
	struct rs_sample_params	 p;
	struct rs_sampler	*s = NULL;
	struct rs_err		 err = { 0 };

	rs_sample_params_init(&p);
	p.temperature = c->temperature;
	p.top_k = c->top_k;
	p.top_p = c->top_p;
	p.min_p = c->min_p;
	p.bias = c->bias;
	p.n_bias = (size_t)c->n_bias;
	p.seed = seed;
	ck_assert_msg(rs_sample_new(&s, &p, V, &err) == RS_OK, "%s", err.msg);
	return (s);
}

START_TEST(distribution)
{
	const struct cfg	*c = &cfgs[_i];
	struct rs_sampler	*s = sampler_for(c, 20240601 + (uint64_t)_i);
	double			 p[V], stat = 0, e;
	long			 count[V] = { 0 };
	int32_t			 t;
	int			 k = 0;

	analytic(c, p);
	for (int i = 0; i < N_DRAWS; i++) {
		ck_assert_int_eq(rs_sample_next(s, L, &t, NULL), RS_OK);
		ck_assert(t >= 0 && t < V);
		count[t]++;
	}
	for (int i = 0; i < V; i++) {
		e = p[i] * N_DRAWS;
		if (p[i] == 0) {
			ck_assert_msg(count[i] == 0, "%s: token %d filtered "
			    "out but drawn %ld times", c->name, i, count[i]);
			continue;
		}
		stat += (count[i] - e) * (count[i] - e) / e;
		k++;
	}
	if (k > 1)
		ck_assert_msg(stat < chi2_quantile(k - 1, 1 - ALPHA),
		    "%s: chi-square %g with %d degrees of freedom (critical "
		    "%g)", c->name, stat, k - 1, chi2_quantile(k - 1,
		    1 - ALPHA));
	rs_sample_free(s);
}
END_TEST

START_TEST(analytic_sanity)
{
	/* the analytic model itself: hand-checked cases */
	double	p[V];

	analytic(&cfgs[3], p);		/* top_k 4: only the first four */
	ck_assert(p[3] > 0 && p[4] == 0);
	analytic(&cfgs[4], p);		/* top_p 0.8 at T=1: the first 4 */
	ck_assert(p[3] > 0 && p[4] == 0);
	analytic(&cfgs[5], p);		/* min_p 0.2: l >= 3 + ln 0.2 = 1.39 */
	ck_assert(p[3] > 0 && p[4] == 0);
	analytic(&cfgs[7], p);		/* bias: token 9 first, 1 banned */
	ck_assert(p[1] == 0 && p[9] > p[0]);
}
END_TEST

START_TEST(distribution_big)
{
	/*
	 * A vocabulary above the size where top-p stops sorting everything
	 * (rs_sample.c buckets the mass): the draw must still follow the
	 * analytic nucleus distribution.  Tokens 0..7 carry most of the mass;
	 * the chi-square bins are those eight and "the rest of the nucleus".
	 */
	enum { NV = 6000, NB = 9, DRAWS = 20000 };
	static float		 l[NV];
	static int		 ord[NV];
	struct rs_sample_params	 p;
	struct rs_sampler	*s = NULL;
	struct rs_rng		 r;
	double			 total = 0, cum = 0, e[NB] = { 0 }, stat = 0;
	double			 tsum = 0;
	long			 count[NB] = { 0 };
	int			 nucleus, *in = calloc(NV, sizeof(int));
	int32_t			 t;

	rs_rng_seed(&r, 11);
	for (int i = 0; i < NV; i++) {
		l[i] = i < 8 ? 3.0f - 0.4f * (float)i :
		    (float)(-1 - 2 * rs_rng_uniform(&r));
		ord[i] = i;
	}
	ref_logits = l;
	qsort(ord, NV, sizeof(*ord), by_logit);
	for (int i = 0; i < NV; i++)
		total += exp(l[ord[i]] - l[ord[0]]);
	for (nucleus = 0; nucleus < NV; nucleus++) {
		cum += exp(l[ord[nucleus]] - l[ord[0]]) / total;
		if (cum >= 0.9)
			break;
	}
	nucleus++;
	ck_assert_int_gt(nucleus, 8);	/* the "rest" bin is not empty */
	/* temperature 0.8 over the nucleus */
	for (int i = 0; i < nucleus; i++)
		tsum += exp((l[ord[i]] - l[ord[0]]) / 0.8);
	for (int i = 0; i < nucleus; i++) {
		in[ord[i]] = 1;
		e[ord[i] < 8 ? ord[i] : 8] += exp((l[ord[i]] - l[ord[0]]) /
		    0.8) / tsum * DRAWS;
	}
	rs_sample_params_init(&p);
	p.top_p = 0.9f;
	p.temperature = 0.8f;
	p.seed = 3;
	ck_assert_int_eq(rs_sample_new(&s, &p, NV, NULL), RS_OK);
	for (int i = 0; i < DRAWS; i++) {
		ck_assert_int_eq(rs_sample_next(s, l, &t, NULL), RS_OK);
		ck_assert_msg(in[t], "token %d is outside the nucleus", t);
		count[t < 8 ? t : 8]++;
	}
	for (int b = 0; b < NB; b++)
		stat += (count[b] - e[b]) * (count[b] - e[b]) / e[b];
	ck_assert_msg(stat < chi2_quantile(NB - 1, 1 - ALPHA),
	    "chi-square %g with %d degrees of freedom", stat, NB - 1);
	rs_sample_free(s);
	free(in);
}
END_TEST

/* ---- determinism ---- */

START_TEST(rng_vectors)
{
	/*
	 * Published outputs: splitmix64 from 0 (the seeded state), and
	 * xoshiro256** from the state {1, 2, 3, 4}.
	 */
	const uint64_t	sm[4] = { 0xe220a8397b1dcdafULL, 0x6e789e6aa1b965f4ULL,
	    0x06c45d188009454fULL, 0xf88bb8a8724c81ecULL };
	const uint64_t	xo[4] = { 11520, 0, 1509978240,
	    1215971899390074240ULL };
	struct rs_rng	r;
	long		count[6] = { 0 };
	double		stat = 0;

	rs_rng_seed(&r, 0);
	for (int i = 0; i < 4; i++)
		ck_assert_uint_eq(r.s[i], sm[i]);
	r = (struct rs_rng){ { 1, 2, 3, 4 } };
	for (int i = 0; i < 4; i++)
		ck_assert_uint_eq(rs_rng_next(&r), xo[i]);
	/* rs_rng_below is uniform: chi-square over 6 faces */
	rs_rng_seed(&r, 9);
	for (int i = 0; i < 60000; i++)
		count[rs_rng_below(&r, 6)]++;
	for (int i = 0; i < 6; i++)
		stat += (count[i] - 10000.0) * (count[i] - 10000.0) / 10000.0;
	ck_assert(stat < chi2_quantile(5, 1 - ALPHA));
	for (int i = 0; i < 1000; i++) {
		double u = rs_rng_uniform(&r);

		ck_assert(u >= 0 && u < 1);
	}
}
END_TEST

/* 300 steps over random logits with every feature on; tokens into OUT. */
static void
generate(uint64_t seed, int32_t out[300])
{
	struct rs_sample_params	 p;
	struct rs_sampler	*s = NULL;
	struct rs_rng		 lr;
	static float		 logits[1000];
	int32_t			 prompt[3] = { 1, 2, 3 };

	rs_sample_params_init(&p);
	p.temperature = 0.8f;
	p.top_k = 50;
	p.top_p = 0.9f;
	p.min_p = 0.02f;
	p.presence_penalty = 0.3f;
	p.frequency_penalty = 0.2f;
	p.repetition_penalty = 1.1f;
	p.seed = seed;
	ck_assert_int_eq(rs_sample_new(&s, &p, 1000, NULL), RS_OK);
	ck_assert_int_eq(rs_sample_prompt(s, prompt, 3, NULL), RS_OK);
	rs_rng_seed(&lr, 99);	/* the same logits for every seed */
	for (int step = 0; step < 300; step++) {
		for (int i = 0; i < 1000; i++)
			logits[i] = (float)(rs_rng_uniform(&lr) * 6 - 3);
		ck_assert_int_eq(rs_sample_next(s, logits, &out[step], NULL),
		    RS_OK);
		ck_assert_int_eq(rs_sample_accept(s, out[step], NULL), RS_OK);
	}
	rs_sample_free(s);
}

START_TEST(reproducible)
{
	int32_t	a[300], b[300], c[300];
	int	diff = 0;

	generate(123, a);
	generate(123, b);
	generate(124, c);
	ck_assert(memcmp(a, b, sizeof(a)) == 0);
	for (int i = 0; i < 300; i++)
		diff += a[i] != c[i];
	ck_assert_int_gt(diff, 100);
}
END_TEST

START_TEST(greedy)
{
	struct rs_sample_params	 p;
	struct rs_sampler	*s = NULL;
	const float		 l[6] = { 1, 5, 2, 5, -INFINITY, 0 };
	int32_t			 t;

	rs_sample_params_init(&p);
	p.temperature = 0;
	ck_assert_int_eq(rs_sample_new(&s, &p, 6, NULL), RS_OK);
	/* a tie goes to the lower id */
	ck_assert_int_eq(rs_sample_next(s, l, &t, NULL), RS_OK);
	ck_assert_int_eq(t, 1);
	rs_sample_free(s);
	/* penalties come first: token 1's 5 becomes 2.5, so 3 wins */
	p.repetition_penalty = 2;
	ck_assert_int_eq(rs_sample_new(&s, &p, 6, NULL), RS_OK);
	ck_assert_int_eq(rs_sample_accept(s, 1, NULL), RS_OK);
	ck_assert_int_eq(rs_sample_next(s, l, &t, NULL), RS_OK);
	ck_assert_int_eq(t, 3);
	rs_sample_free(s);
}
END_TEST

START_TEST(penalties)
{
	/*
	 * Hand-computed: prompt {0, 1}, generated 3, 3, 2, 3; repetition 1.5,
	 * frequency 0.25, presence 0.5; bias +2 on 4, ban on 5.
	 *   0: 2.0 / 1.5                         =  1.333333
	 *   1: -1.0 * 1.5                        = -1.5
	 *   2: 0.5 / 1.5 - 0.25 * 1 - 0.5        = -0.416667
	 *   3: 3.0 / 1.5 - 0.25 * 3 - 0.5        =  0.75
	 *   4: -0.5 + 2                          =  1.5
	 *   5: banned                            = -inf
	 *   6: untouched                         =  0.25
	 */
	struct rs_logit_bias	 bias[2] = { { 4, 2.0f }, { 5, -INFINITY } };
	struct rs_sample_params	 p;
	struct rs_sampler	*s = NULL;
	const int32_t		 prompt[2] = { 0, 1 }, gen[4] = { 3, 3, 2, 3 };
	float			 l[7] = { 2.0f, -1.0f, 0.5f, 3.0f, -0.5f, 1.0f,
	    0.25f };
	const double		 want[7] = { 4.0 / 3, -1.5, 0.5 / 1.5 - 0.75,
	    0.75, 1.5, -INFINITY, 0.25 };

	rs_sample_params_init(&p);
	p.repetition_penalty = 1.5f;
	p.frequency_penalty = 0.25f;
	p.presence_penalty = 0.5f;
	p.bias = bias;
	p.n_bias = 2;
	ck_assert_int_eq(rs_sample_new(&s, &p, 7, NULL), RS_OK);
	ck_assert_int_eq(rs_sample_prompt(s, prompt, 2, NULL), RS_OK);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(rs_sample_accept(s, gen[i], NULL), RS_OK);
	rs_sample_penalize(s, l);
	for (int i = 0; i < 7; i++) {
		if (isinf(want[i]))
			ck_assert(l[i] == -INFINITY);
		else
			ck_assert_double_eq_tol(l[i], want[i], 1e-6);
	}
	rs_sample_free(s);
}
END_TEST

START_TEST(big_vocab)
{
	/*
	 * The real vocabulary size: with top_k 20 every draw is one of the
	 * 20 best; with only top_p 0.95 (the partial-sort path) every draw
	 * lies in the nucleus computed here by a full sort.
	 */
	const int		 nv = 248320;
	float			*l = malloc(nv * sizeof(*l));
	int			*ord = malloc(nv * sizeof(*ord));
	struct rs_sample_params	 p;
	struct rs_sampler	*s = NULL;
	struct rs_rng		 r;
	double			 total = 0, cum = 0, lmax;
	int32_t			 t;
	int			 nucleus, *rank = malloc(nv * sizeof(*rank));

	rs_rng_seed(&r, 5);
	for (int i = 0; i < nv; i++) {
		/* a peaked distribution, like a model's */
		double u = rs_rng_uniform(&r);

		l[i] = (float)(-12 * u * u + (i % 97 == 0 ? 4 : 0));
		ord[i] = i;
	}
	ref_logits = l;
	qsort(ord, nv, sizeof(*ord), by_logit);
	lmax = l[ord[0]];
	for (int i = 0; i < nv; i++)
		total += exp(l[ord[i]] - lmax);
	for (nucleus = 0; nucleus < nv; nucleus++) {
		cum += exp(l[ord[nucleus]] - lmax) / total;
		if (cum >= 0.95)
			break;
	}
	nucleus++;
	for (int i = 0; i < nv; i++)
		rank[ord[i]] = i;
	rs_sample_params_init(&p);
	p.top_k = 20;
	p.top_p = 0.95f;
	ck_assert_int_eq(rs_sample_new(&s, &p, nv, NULL), RS_OK);
	for (int i = 0; i < 50; i++) {
		ck_assert_int_eq(rs_sample_next(s, l, &t, NULL), RS_OK);
		ck_assert_int_lt(rank[t], 20);
	}
	rs_sample_free(s);
	p.top_k = 0;
	ck_assert_int_eq(rs_sample_new(&s, &p, nv, NULL), RS_OK);
	for (int i = 0; i < 50; i++) {
		ck_assert_int_eq(rs_sample_next(s, l, &t, NULL), RS_OK);
		ck_assert_int_lt(rank[t], nucleus);
	}
	rs_sample_free(s);
	free(l);
	free(ord);
	free(rank);
}
END_TEST

START_TEST(bad_params)
{
	struct rs_sample_params	 p;
	struct rs_sampler	*s = NULL;
	struct rs_err		 err = { 0 };
	struct rs_logit_bias	 b = { 7, 1 };
	const float		 nan_l[2] = { 0, NAN }, banned[2] = { -INFINITY,
	    -INFINITY };
	int32_t			 t;

#define BAD(field, value, word) do {					\
	rs_sample_params_init(&p);					\
	p.field = value;						\
	ck_assert_int_eq(rs_sample_new(&s, &p, 2, &err),		\
	    RS_ERR_INVALID_ARG);					\
	ck_assert_ptr_nonnull(strstr(err.msg, word));			\
} while (0)
	BAD(temperature, -0.1f, "temperature");
	BAD(temperature, NAN, "temperature");
	BAD(top_p, 0.0f, "top_p");
	BAD(top_p, 1.5f, "top_p");
	BAD(min_p, -0.1f, "min_p");
	BAD(repetition_penalty, 0.0f, "repetition_penalty");
	BAD(presence_penalty, INFINITY, "penalty");
#undef BAD
	rs_sample_params_init(&p);
	p.n_bias = 1;
	p.bias = &b;
	ck_assert_int_eq(rs_sample_new(&s, &p, 2, &err), RS_ERR_INVALID_ARG);
	ck_assert_ptr_nonnull(strstr(err.msg, "token 7"));
	rs_sample_params_init(&p);
	p.n_bias = 1;
	p.bias = &b;
	b.token = 1;
	b.bias = NAN;
	ck_assert_int_eq(rs_sample_new(&s, &p, 2, &err), RS_ERR_INVALID_ARG);
	rs_sample_params_init(&p);
	ck_assert_int_eq(rs_sample_new(&s, &p, 0, &err), RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_sample_new(&s, &p, 2, &err), RS_OK);
	ck_assert_int_eq(rs_sample_next(s, nan_l, &t, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert_ptr_nonnull(strstr(err.msg, "nan"));
	ck_assert_int_eq(rs_sample_next(s, banned, &t, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert_ptr_nonnull(strstr(err.msg, "banned"));
	ck_assert_int_eq(rs_sample_accept(s, 2, &err), RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_sample_prompt(s, (int32_t[]){ -1 }, 1, &err),
	    RS_ERR_INVALID_ARG);
	rs_sample_free(s);
}
END_TEST

/* ---- stop strings ---- */

/* Feed PIECES in order; the released text goes to OUT; returns stopped. */
static int
feed_pieces(struct rs_stop *st, const char *const *pieces, size_t n,
    struct rs_buf *out)
{
	const char	*o;
	size_t		 len;
	int		 stopped = 0;

	for (size_t i = 0; i < n && !stopped; i++) {
		ck_assert_int_eq(rs_stop_feed(st, pieces[i], strlen(pieces[i]),
		    &o, &len, &stopped, NULL), RS_OK);
		rs_buf_add(out, o, len);
	}
	if (!stopped) {
		rs_stop_flush(st, &o, &len);
		rs_buf_add(out, o, len);
	}
	return (stopped);
}

static struct rs_stop *
stop_new(const char *const *strs, size_t n)
{
	struct rs_stop	*st = NULL;
	const int32_t	 ids[2] = { 248046, 248044 };

	ck_assert_int_eq(rs_stop_new(&st, ids, 2, strs, n, NULL), RS_OK);
	return (st);
}

START_TEST(stop_across_tokens)
{
	const char *const	 stops[] = { "STOP" };
	const char *const	 toks[] = { "Hello wo", "rld! ST", "OP more" };
	struct rs_stop		*st = stop_new(stops, 1);
	const char		*o;
	size_t			 len;
	int			 stopped;

	/* piece by piece: nothing of "STOP" ever leaks */
	ck_assert_int_eq(rs_stop_feed(st, toks[0], strlen(toks[0]), &o, &len,
	    &stopped, NULL), RS_OK);
	ck_assert(len == 8 && memcmp(o, "Hello wo", 8) == 0 && !stopped);
	ck_assert_int_eq(rs_stop_feed(st, toks[1], strlen(toks[1]), &o, &len,
	    &stopped, NULL), RS_OK);
	ck_assert(len == 5 && memcmp(o, "rld! ", 5) == 0 && !stopped);
	ck_assert_int_eq(rs_stop_feed(st, toks[2], strlen(toks[2]), &o, &len,
	    &stopped, NULL), RS_OK);
	ck_assert(len == 0 && stopped);
	ck_assert_int_eq(rs_stop_which(st), 0);
	ck_assert_int_eq(rs_stop_feed(st, "x", 1, &o, &len, &stopped, NULL),
	    RS_ERR_INVALID_ARG);
	ck_assert(rs_stop_token(st, 248046) && !rs_stop_token(st, 5));
	rs_stop_free(st);
}
END_TEST

START_TEST(stop_cases)
{
	static const struct {
		const char	*stops[3];
		const char	*pieces[8];
		const char	*want;
		int		 stopped;
	} c[] = {
		/* multi-byte stop string over single bytes */
		{ { "\xe5\x81\x9c\xe6\xad\xa2" }, { "abc\xe5", "\x81",
		  "\x9c\xe6", "\xad", "\xa2" "def" }, "abc", 1 },
		/* a near miss is released once it cannot match */
		{ { "<|end|>" }, { "a <|", "en", "d is near" },
		  "a <|end is near", 0 },
		/* the first to complete wins, not the first to start */
		{ { "xyzw", "y" }, { "a", "x", "y", "zw" }, "ax", 1 },
		/* same end: the longer (earlier) one */
		{ { "bc", "abc" }, { "za", "bc" }, "z", 1 },
		/* stop at the very start */
		{ { "##" }, { "#", "#x" }, "", 1 },
		/* generation ends while a prefix is held: flushed */
		{ { "STOP" }, { "the ", "ST" }, "the ST", 0 },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		size_t		ns = 0, np = 0;
		struct rs_stop	*st;
		struct rs_buf	 out;

		while (ns < 3 && c[i].stops[ns] != NULL)
			ns++;
		while (np < 8 && c[i].pieces[np] != NULL)
			np++;
		st = stop_new(c[i].stops, ns);
		rs_buf_init(&out);
		ck_assert_int_eq(feed_pieces(st, c[i].pieces, np, &out),
		    c[i].stopped);
		ck_assert_msg(strcmp(out.data != NULL ? out.data : "",
		    c[i].want) == 0, "case %zu: '%s'", i, out.data);
		rs_buf_cleanup(&out);
		rs_stop_free(st);
	}
}
END_TEST

/*
 * Reference: the shortest prefix of TEXT that ends with a stop string;
 * among stop strings ending there the longest.  Returns the cut (TEXT's
 * length and *WHICH = -1 when none).
 */
static size_t
stop_ref(const char *text, const char *const *stops, int n, int *which)
{
	size_t	len = strlen(text);

	for (size_t e = 1; e <= len; e++) {
		size_t	best = (size_t)-1;

		for (int i = 0; i < n; i++) {
			size_t k = strlen(stops[i]);

			if (k <= e && memcmp(text + e - k, stops[i], k) == 0 &&
			    (best == (size_t)-1 || e - k < best)) {
				best = e - k;
				*which = i;
			}
		}
		if (best != (size_t)-1)
			return (best);
	}
	*which = -1;
	return (len);
}

START_TEST(stop_random)
{
	const char *const	 stops[] = { "STOP", "OPS", "aab", "P" };
	const char		 alpha[] = "abSTOP";
	struct rs_rng		 r;
	char			 text[64], piece[64];

	rs_rng_seed(&r, 77);
	for (int round = 0; round < 2000; round++) {
		int		 ns = 1 + (int)rs_rng_below(&r, 4), which = -1;
		size_t		 len = rs_rng_below(&r, 40), cut, at = 0;
		struct rs_stop	*st = stop_new(stops, (size_t)ns);
		struct rs_buf	 out;
		const char	*o;
		size_t		 olen;
		int		 stopped = 0;

		for (size_t i = 0; i < len; i++)
			text[i] = alpha[rs_rng_below(&r, 6)];
		text[len] = '\0';
		cut = stop_ref(text, stops, ns, &which);
		rs_buf_init(&out);
		while (at < len && !stopped) {
			size_t k = 1 + rs_rng_below(&r, 5);

			k = k < len - at ? k : len - at;
			memcpy(piece, text + at, k);
			ck_assert_int_eq(rs_stop_feed(st, piece, k, &o, &olen,
			    &stopped, NULL), RS_OK);
			rs_buf_add(&out, o, olen);
			at += k;
		}
		if (!stopped) {
			rs_stop_flush(st, &o, &olen);
			rs_buf_add(&out, o, olen);
		}
		ck_assert_int_eq(stopped, which >= 0);
		ck_assert_int_eq(rs_stop_which(st), which);
		ck_assert_uint_eq(out.len, cut);
		ck_assert(cut == 0 || memcmp(out.data, text, cut) == 0);
		rs_buf_cleanup(&out);
		rs_stop_free(st);
	}
}
END_TEST

START_TEST(stop_bad_input)
{
	struct rs_stop		*st = NULL;
	struct rs_err		 err = { 0 };
	const char		*many[RS_STOP_MAX_STRS + 1];
	const char *const	 empty[] = { "ok", "" };
	char			*big = malloc(RS_STOP_MAX_LEN + 2);

	for (int i = 0; i <= RS_STOP_MAX_STRS; i++)
		many[i] = "x";
	ck_assert_int_eq(rs_stop_new(&st, NULL, 0, many, RS_STOP_MAX_STRS + 1,
	    &err), RS_ERR_LIMIT);
	ck_assert_int_eq(rs_stop_new(&st, NULL, 0, empty, 2, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert_ptr_nonnull(strstr(err.msg, "stop string 1 is empty"));
	memset(big, 'a', RS_STOP_MAX_LEN + 1);
	big[RS_STOP_MAX_LEN + 1] = '\0';
	ck_assert_int_eq(rs_stop_new(&st, NULL, 0, (const char *const *)&big,
	    1, &err), RS_ERR_LIMIT);
	free(big);
	/* no stop strings at all: text passes straight through */
	ck_assert_int_eq(rs_stop_new(&st, NULL, 0, NULL, 0, &err), RS_OK);
	{
		const char	*o;
		size_t		 len;
		int		 stopped;

		ck_assert_int_eq(rs_stop_feed(st, "abc", 3, &o, &len, &stopped,
		    NULL), RS_OK);
		ck_assert(len == 3 && !stopped);
	}
	rs_stop_free(st);
}
END_TEST

Suite *
sample_suite(void)
{
	Suite	*s = suite_create("sample");
	TCase	*tc;

	tc = tcase_create("distribution");
	tcase_add_test(tc, chi2_table);
	tcase_add_test(tc, analytic_sanity);
	tcase_add_loop_test(tc, distribution, 0, (int)N_CFGS);
	tcase_add_test(tc, distribution_big);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	tc = tcase_create("chain");
	tcase_add_test(tc, rng_vectors);
	tcase_add_test(tc, reproducible);
	tcase_add_test(tc, greedy);
	tcase_add_test(tc, penalties);
	tcase_add_test(tc, big_vocab);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	tc = tcase_create("stop");
	tcase_add_test(tc, stop_across_tokens);
	tcase_add_test(tc, stop_cases);
	tcase_add_test(tc, stop_random);
	suite_add_tcase(s, tc);
	tc = tcase_create("bad_input");
	tcase_add_test(tc, bad_params);
	tcase_add_test(tc, stop_bad_input);
	suite_add_tcase(s, tc);
	return (s);
}
