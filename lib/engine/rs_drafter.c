/*
 * rs_drafter.c - none, n-gram, MTP and mtp+ngram drafters with the MTP
 * catch-up and the adaptive draft count (rs_drafter.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rs_cpu.h"
#include "rs_draft.h"
#include "rs_drafter.h"
#include "rs_rng.h"
#include "rs_state.h"
#include "rs_time.h"

/* Where a round's drafts came from (its statistics). */
enum src {
	SRC_NONE,
	SRC_MTP,
	SRC_NGRAM
};

struct rs_drafter {
	struct rs_engine	*e;		/* borrowed */
	struct rs_drafter_opts	 o;
	/* round[k − 1]: a round of k drafts (drafting and its pass) in
	   decode steps, the adaptive rule's denominator */
	double			 round[RS_DRAFTER_K_MAX];
	int64_t			 d, v;		/* n_embd, n_vocab */
	int			 mtp;		/* the kind uses the MTP block */
	struct rs_top		 top;		/* one draft step's argmax
						   (rs_engine_mtp_top, k = 1) */
	const struct rs_gguf_tensor *head;	/* the MTP head, reduced
						   drafting only */
	rs_to_float_fn		 row;		/* its row decoder */
	float			*wrow;		/* (d) a decoded head row */
	float			*h[2];		/* (d) draft steps' h_out */
	float			*h_star;	/* (d) trunk hn at h_pos */
	int32_t			 h_pos;		/* -1: no h* */
	int32_t			 h_tok;		/* the token at h_pos */
	float			*h_in;		/* (rows, d) catch-up inputs */
	int32_t			*toks;		/* (rows) catch-up tokens */
	int32_t			 rows;
	int32_t			 mtp_ok;	/* MTP entries [0, mtp_ok)
						   are exact */
	double			 succ, fail;	/* decayed counts for alpha */
	int			 k;		/* drafts of the next round */
	int			 idle;		/* rounds in a row at k 0 */
	enum src		 src;		/* the last round's */
	struct rs_drafter_stats	 stats;
	const int32_t		*oseq;		/* oracle mode */
	int32_t			 on;
	double			 oalpha;
	struct rs_rng		 orng;
};

static const char *const kind_names[] = {
	[RS_DRAFTER_NONE] = "none",
	[RS_DRAFTER_NGRAM] = "ngram",
	[RS_DRAFTER_MTP] = "mtp",
	[RS_DRAFTER_MTP_NGRAM] = "mtp+ngram",
	[RS_DRAFTER_AUTO] = "auto",
};

#define N_KINDS	(sizeof(kind_names) / sizeof(kind_names[0]))

const char *
rs_drafter_kind_name(enum rs_drafter_kind k)
{
	if ((unsigned)k >= N_KINDS)
		return ("unknown");
	return (kind_names[k]);
}

enum rs_drafter_kind
rs_drafter_resolve(enum rs_drafter_kind kind, const struct rs_model *m)
{
	if (kind != RS_DRAFTER_AUTO)
		return (kind);
	return (m->hp.n_nextn > 0 ? RS_DRAFTER_MTP_NGRAM : RS_DRAFTER_NGRAM);
}

enum rs_status
rs_drafter_parse(const char *s, enum rs_drafter_kind *kind, int *k,
    struct rs_err *err)
{
	char	*end;
	long	 n;

	for (size_t i = 0; i < N_KINDS; i++)
		if (strcmp(s, kind_names[i]) == 0) {
			*kind = (enum rs_drafter_kind)i;
			*k = 0;
			return (RS_OK);
		}
	/* a bare number: the flag's first meaning, n-gram with K = N */
	if (*s >= '0' && *s <= '9') {
		n = strtol(s, &end, 10);
		if (*end == '\0' && n >= 0 && n <= RS_DRAFTER_K_MAX) {
			*kind = n == 0 ? RS_DRAFTER_NONE : RS_DRAFTER_NGRAM;
			*k = (int)n;
			return (RS_OK);
		}
	}
	return (rs_errf(err, RS_ERR_INVALID_ARG, "'%.40s' is not none, ngram, "
	    "mtp, mtp+ngram, auto or a draft count in [0, %d]", s,
	    RS_DRAFTER_K_MAX));
}

void
rs_drafter_opts_init(struct rs_drafter_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->kind = RS_DRAFTER_NONE;
	o->k_max = RS_DRAFTER_K_DEFAULT;
}

int
rs_drafter_best_k(double alpha, const double *round, int k_max)
{
	/* k 0: one token for one step */
	double	e = 1.0, a = 1.0, best = 1.0;
	int	bk = 0;

	for (int k = 1; k <= k_max; k++) {
		a *= alpha;
		e += a;			/* 1 + alpha + ... + alpha^k */
		/* strictly better: a tie keeps the cheaper, smaller k */
		if (e / round[k - 1] > best * (1.0 + 1e-9)) {
			best = e / round[k - 1];
			bk = k;
		}
	}
	return (bk);
}

void
rs_drafter_linear_costs(double c, int k_max, double *round)
{
	for (int k = 1; k <= k_max; k++)
		round[k - 1] = 1.0 + c * k;
}

/*
 * D's round costs (rs_drafter.h, "Adaptive K"): the caller's linear cost,
 * the engine's measured pass costs on the GPU, else the backend's
 * defaults.  A measurement that cannot run (no memory for its scratch
 * state) leaves the defaults; the engine's other failures are returned.
 */
static enum rs_status
resolve_costs(struct rs_drafter *d, struct rs_err *err)
{
	const int	 gpu = rs_engine_backend(d->e) == RS_BACKEND_CUDA;
	double		 v[RS_DRAFTER_K_MAX + 1], m = 0.0, c = d->o.cost;
	enum rs_status	 s;

	if (c == 0.0 && gpu) {
		s = rs_engine_pass_costs(d->e, d->o.k_max + 1, v, &m, err);
		if (s == RS_OK) {
			for (int k = 1; k <= d->o.k_max; k++)
				d->round[k - 1] = v[k] + (d->mtp ? k * m :
				    0.0);
			return (RS_OK);
		}
		if (s != RS_ERR_NOMEM && s != RS_ERR_LIMIT)
			return (s);
	}
	if (c == 0.0)
		c = (gpu ? RS_DRAFTER_VERIFY_CUDA : RS_DRAFTER_VERIFY_CPU) +
		    (d->mtp ? (gpu ? RS_DRAFTER_MTP_CUDA : RS_DRAFTER_MTP_CPU) :
		    0.0);
	rs_drafter_linear_costs(c, d->o.k_max, d->round);
	return (RS_OK);
}

static double
alpha_of(const struct rs_drafter *d)
{
	return ((d->succ + RS_DRAFTER_PRIOR_ALPHA * RS_DRAFTER_PRIOR_N) /
	    (d->succ + d->fail + RS_DRAFTER_PRIOR_N));
}

void
rs_drafter_free(struct rs_drafter *d)
{
	if (d == NULL)
		return;
	free(d->h[0]);
	free(d->h[1]);
	free(d->h_star);
	free(d->h_in);
	free(d->toks);
	free(d->wrow);
	free(d);
}

enum rs_status
rs_drafter_new(struct rs_drafter **out, struct rs_engine *e,
    const struct rs_drafter_opts *o, struct rs_err *err)
{
	const struct rs_model	*m = rs_engine_model(e);
	struct rs_drafter	*d;
	enum rs_drafter_kind	 kind;
	enum rs_status		 s;

	if ((unsigned)o->kind >= N_KINDS)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "unknown drafter %d",
		    (int)o->kind));
	if (o->k_max < 1 || o->k_max > RS_DRAFTER_K_MAX)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "draft count %d is "
		    "outside [1, %d]", o->k_max, RS_DRAFTER_K_MAX));
	if (!(o->cost >= 0.0) || isinf(o->cost))
		return (rs_errf(err, RS_ERR_INVALID_ARG, "draft cost %g is "
		    "not a finite number >= 0", o->cost));
	if (o->vocab < 0 || (uint32_t)o->vocab > m->hp.n_vocab)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "draft vocabulary %d "
		    "is outside [0, %u]", o->vocab, m->hp.n_vocab));
	if (o->vocab > 0 && rs_engine_backend(e) != RS_BACKEND_CPU)
		return (rs_errf(err, RS_ERR_UNSUPPORTED, "drafting over a "
		    "reduced vocabulary runs on the CPU backend only"));
	kind = rs_drafter_resolve(o->kind, m);
	if ((kind == RS_DRAFTER_MTP || kind == RS_DRAFTER_MTP_NGRAM) &&
	    m->hp.n_nextn == 0)
		return (rs_errf(err, RS_ERR_UNSUPPORTED, "the model has no MTP "
		    "block to draft with (use --draft ngram)"));
	if ((d = calloc(1, sizeof(*d))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	d->e = e;
	d->o = *o;
	d->o.kind = kind;
	d->d = m->hp.n_embd;
	d->v = m->hp.n_vocab;
	d->mtp = kind == RS_DRAFTER_MTP || kind == RS_DRAFTER_MTP_NGRAM;
	d->h_pos = -1;
	if (d->mtp) {
		/* catch-up rows per MTP call: a verification's worth at
		   least, a prompt chunk's worth when the engine takes it */
		d->rows = rs_engine_max_batch(e);
		if (d->rows < RS_DRAFTER_K_MAX + 1)
			d->rows = RS_DRAFTER_K_MAX + 1;
		d->h[0] = malloc((size_t)d->d * sizeof(float));
		d->h[1] = malloc((size_t)d->d * sizeof(float));
		d->h_star = malloc((size_t)d->d * sizeof(float));
		d->h_in = malloc((size_t)d->rows * (size_t)d->d *
		    sizeof(float));
		d->toks = malloc((size_t)d->rows * sizeof(int32_t));
		if (o->vocab > 0) {
			d->head = m->layers[m->hp.n_layer].mtp_head;
			if ((d->row = rs_cpu_row_decoder(d->head->type)) ==
			    NULL) {
				rs_drafter_free(d);
				return (rs_errf(err, RS_ERR_UNSUPPORTED, "MTP "
				    "head type %d has no row decoder",
				    d->head->type));
			}
			d->wrow = malloc((size_t)d->d * sizeof(float));
		}
		if (!d->h[0] || !d->h[1] || !d->h_star ||
		    !d->h_in || !d->toks || (o->vocab > 0 && !d->wrow)) {
			rs_drafter_free(d);
			return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
		}
	}
	/* a fixed K needs no costs: no measurement for rs-bench's table */
	if (!o->fixed && o->kind != RS_DRAFTER_NONE &&
	    (s = resolve_costs(d, err)) != RS_OK) {
		rs_drafter_free(d);
		return (s);
	}
	*out = d;
	return (RS_OK);
}

enum rs_drafter_kind
rs_drafter_kind(const struct rs_drafter *d)
{
	return (d->o.kind);
}

int
rs_drafter_k_max(const struct rs_drafter *d)
{
	return (d->o.k_max);
}

int
rs_drafter_wants_hidden(const struct rs_drafter *d)
{
	return (d->mtp);
}

void
rs_drafter_begin(struct rs_drafter *d, struct rs_state *st)
{
	int32_t pos = rs_state_pos(st);

	memset(&d->stats, 0, sizeof(d->stats));
	d->succ = d->fail = 0.0;
	d->idle = 0;
	d->k = d->o.fixed ? d->o.k_max : rs_drafter_best_k(
	    RS_DRAFTER_PRIOR_ALPHA, d->round, d->o.k_max);
	d->src = SRC_NONE;
	/* h* carries over only when the state still ends at the token it
	   came from (a prompt that extends the last one) */
	if (d->h_pos < 0 || d->h_pos != pos - 1 ||
	    rs_state_token(st, d->h_pos) != d->h_tok)
		d->h_pos = -1;
}

/*
 * Make the MTP entries of positions [from, end) exact, FROM =
 * min(mtp_ok, the state's mtp_pos).  Entry q pairs token q with trunk
 * hn(q − 1): row q − 1 − POS of HIDDEN when POS <= q − 1 < POS + N (the
 * tokens just run, TOKENS), h* when q − 1 is its position, zeros
 * otherwise (position 0, or a prefix the drafter did not see).
 */
static enum rs_status
catch_up(struct rs_drafter *d, struct rs_state *st, int32_t end,
    const int32_t *tokens, int32_t pos, int32_t n, const float *hidden,
    struct rs_err *err)
{
	const size_t	row = (size_t)d->d * sizeof(float);
	int32_t		from = d->mtp_ok;
	enum rs_status	s;

	if (rs_state_mtp_pos(st) < from)
		from = rs_state_mtp_pos(st);
	for (int32_t q0 = from; q0 < end; q0 += d->rows) {
		int32_t c = end - q0 < d->rows ? end - q0 : d->rows;

		for (int32_t i = 0; i < c; i++) {
			int32_t	 q = q0 + i;
			float	*h = d->h_in + (int64_t)i * d->d;

			d->toks[i] = q >= pos && q < pos + n ? tokens[q - pos] :
			    rs_state_token(st, q);
			if (q - 1 >= pos && q - 1 < pos + n)
				memcpy(h, hidden + (int64_t)(q - 1 - pos) *
				    d->d, row);
			else if (q >= 1 && q - 1 == d->h_pos)
				memcpy(h, d->h_star, row);
			else
				memset(h, 0, row);
		}
		if ((s = rs_engine_mtp_batch(d->e, st, d->toks, c, q0, d->h_in,
		    NULL, NULL, err)) != RS_OK) {
			d->mtp_ok = q0;
			return (s);
		}
	}
	d->mtp_ok = end > from ? end : from;
	return (RS_OK);
}

enum rs_status
rs_drafter_observe(struct rs_drafter *d, struct rs_state *st,
    const int32_t *tokens, int32_t n, int32_t pos, const float *hidden,
    struct rs_err *err)
{
	double		t0;
	enum rs_status	s;

	if (!d->mtp || n < 1)
		return (RS_OK);
	t0 = rs_time_ms();
	s = catch_up(d, st, pos + n, tokens, pos, n, hidden, err);
	d->stats.catchup_ms += rs_time_ms() - t0;
	if (s != RS_OK) {
		d->h_pos = -1;
		return (s);
	}
	memcpy(d->h_star, hidden + (int64_t)(n - 1) * d->d,
	    (size_t)d->d * sizeof(float));
	d->h_pos = pos + n - 1;
	d->h_tok = tokens[n - 1];
	return (RS_OK);
}

/*
 * The argmax of head · H over rows [0, vocab): the reduced head, one row
 * decoded at a time (f32 sums, as the engine's matmul; ties go to the
 * lower id, as rs_logits_argmax).
 */
static int32_t
reduced_argmax(const struct rs_drafter *d, const float *h)
{
	const size_t	row = (size_t)d->head->nbytes / (size_t)d->head->ne[1];
	const char	*w = d->head->data;
	float		 best = -INFINITY;
	int32_t		 arg = 0;

	for (int32_t t = 0; t < d->o.vocab; t++) {
		float s = 0.0f;
		d->row(w + (size_t)t * row, d->wrow, d->d);
		for (int64_t i = 0; i < d->d; i++)
			s += d->wrow[i] * h[i];
		if (s > best) {
			best = s;
			arg = t;
		}
	}
	return (arg);
}

/* K chained MTP steps from (Y0, P, h*) into OUT (§6.4). */
static enum rs_status
mtp_chain(struct rs_drafter *d, struct rs_state *st, int32_t y0, int k,
    int32_t *out, struct rs_err *err)
{
	const int32_t	 p = rs_state_pos(st);
	const float	*h;
	enum rs_status	 s;
	int32_t		 t = y0;

	/* the entries below P must be exact before step 0 reads them */
	if ((s = catch_up(d, st, p, NULL, 0, 0, NULL, err)) != RS_OK)
		return (s);
	if (d->h_pos == p - 1 && p > 0)
		h = d->h_star;
	else {
		memset(d->h[1], 0, (size_t)d->d * sizeof(float));
		h = d->h[1];
	}
	for (int i = 0; i < k; i++) {
		float *h_out = d->h[i & 1];

		/* the full head: only the argmax comes back (the GPU
		   selects); the reduced one: only h_out, the head on the
		   host */
		if ((s = d->head != NULL ? rs_engine_mtp(d->e, st, t, p + i, h,
		    NULL, h_out, err) : rs_engine_mtp_top(d->e, st, t, p + i,
		    h, 1, &d->top, h_out, err)) != RS_OK)
			return (s);
		out[i] = t = d->head != NULL ? reduced_argmax(d, h_out) :
		    d->top.id;
		h = h_out;
	}
	/* step 0 wrote P's entry from (y0, hn(P − 1)): exact; the later
	   steps' entries came from MTP states and are scratch */
	d->mtp_ok = p + 1;
	return (RS_OK);
}

/* Oracle mode: the drafts become the known continuation, each right
   with probability alpha. */
static int
oracle(struct rs_drafter *d, int32_t p, int k, int32_t *out)
{
	int n = 0;

	for (int32_t q = p + 1; n < k && q < d->on; q++, n++)
		out[n] = rs_rng_uniform(&d->orng) < d->oalpha ? d->oseq[q] :
		    (int32_t)((d->oseq[q] + 1) % d->v);
	return (n);
}

enum rs_status
rs_drafter_propose(struct rs_drafter *d, struct rs_state *st, int32_t y0,
    const int32_t *hist_a, int32_t na, const int32_t *hist_b, int32_t nb,
    int max, int32_t *out, int *n, struct rs_err *err)
{
	double		t0 = rs_time_ms();
	enum rs_status	s = RS_OK;
	int		k = max < d->k ? max : d->k, ng = 0;

	*n = 0;
	d->src = SRC_NONE;
	if (k < 1 || d->o.kind == RS_DRAFTER_NONE)
		return (RS_OK);
	if (d->o.kind == RS_DRAFTER_NGRAM ||
	    d->o.kind == RS_DRAFTER_MTP_NGRAM) {
		*n = rs_draft_lookup(hist_a, na, hist_b, nb, out, k, &ng);
		d->src = *n > 0 ? SRC_NGRAM : SRC_NONE;
	}
	if (d->o.kind == RS_DRAFTER_MTP || (d->o.kind ==
	    RS_DRAFTER_MTP_NGRAM && ng < RS_DRAFTER_NGRAM_LONG)) {
		if ((s = mtp_chain(d, st, y0, k, out, err)) != RS_OK)
			*n = 0;
		else {
			*n = k;
			d->src = SRC_MTP;
		}
	}
	if (s == RS_OK && d->oseq != NULL) {
		*n = oracle(d, rs_state_pos(st), k, out);
		d->src = *n > 0 ? (d->mtp ? SRC_MTP : SRC_NGRAM) : SRC_NONE;
	}
	d->stats.draft_ms += rs_time_ms() - t0;
	return (s);
}

void
rs_drafter_result(struct rs_drafter *d, int drafted, int accepted,
    int complete)
{
	struct rs_drafter_stats *s = &d->stats;

	if (drafted < 1) {
		/* at k 0 a round in RS_DRAFTER_PROBE drafts one token all the
		   same: alpha's estimate moves only on rounds that draft */
		if (d->k == 0 && complete && !d->o.fixed &&
		    ++d->idle >= RS_DRAFTER_PROBE) {
			d->idle = 0;
			d->k = 1;
		}
		return;
	}
	s->rounds++;
	s->drafted += drafted;
	s->accepted += accepted;
	s->mtp_rounds += d->src == SRC_MTP;
	s->ngram_rounds += d->src == SRC_NGRAM;
	for (int j = 0; j < drafted && j < RS_DRAFTER_K_MAX; j++) {
		s->pos_drafted[j]++;
		s->pos_accepted[j] += j < accepted;
	}
	if (!complete || d->o.fixed)
		return;
	d->succ = d->succ * RS_DRAFTER_DECAY + accepted;
	d->fail = d->fail * RS_DRAFTER_DECAY + (accepted < drafted);
	d->k = rs_drafter_best_k(alpha_of(d), d->round, d->o.k_max);
}

void
rs_drafter_stats(const struct rs_drafter *d, struct rs_drafter_stats *out)
{
	*out = d->stats;
	out->k = d->k;
	out->alpha = alpha_of(d);
}

void
rs_drafter_set_oracle(struct rs_drafter *d, const int32_t *seq,
    int32_t n_seq, double alpha, uint64_t seed)
{
	d->oseq = seq;
	d->on = seq != NULL ? n_seq : 0;
	d->oalpha = alpha;
	rs_rng_seed(&d->orng, seed);
}
