/*
 * rs_cpu_forward.c - the CPU backend: the qwen35 trunk (qwen35-model.md
 * §4.2-§4.8) and the MTP block (§6.1) on a chunk of T tokens of one
 * sequence, activations (T, width) in f32.
 *
 *   x = token_embd[tokens]                                    (T, n_embd)
 *   per trunk block: x += GDN(rmsnorm(x)) or ATTN(rmsnorm(x))
 *                    x += FFN(rmsnorm(x))
 *   hn = rmsnorm(x, output_norm);  logits = output · hn
 *
 * Matmuls go through rs_cpu_matmul (all T tokens per decoded weight row,
 * split by rows over the thread pool); the delta-rule recurrence runs over
 * the T tokens in order, split by value head; attention is split by
 * (token, head).  Every per-token result is computed in the same order
 * whatever T, the chunking or the thread count, so a batch equals T decode
 * steps bit for bit, which is what makes rollback by snapshot exact.
 * This file is the oracle of its CUDA twin, kernels/cuda_forward.cu, which
 * keeps the same structure and operation order (tests/check_cuda.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rs_cpu.h"
#include "rs_engine_impl.h"
#include "rs_pool.h"
#include "rs_time.h"
#include "rs_types.h"

struct cpu {
	struct rs_pool	*pool;
	/* activations, (max_batch, width) */
	float	*x;		/* residual stream, n_embd */
	float	*h;		/* normed input of a sub-block, n_embd */
	float	*y;		/* sub-block output, n_embd */
	float	*mixed;		/* GDN qkv projection, channels */
	float	*u;		/* GDN conv output, channels */
	float	*z;		/* GDN output gate input, d_inner */
	float	*bb, *aa;	/* GDN beta / alpha inputs, n_vh */
	float	*mix;		/* GDN gated-norm output / attention output,
				   max(d_inner, n_head·head_dim_v) */
	float	*qg;		/* attention q|gate, 2·n_head·head_dim */
	float	*kk, *vv;	/* attention k / v, n_head_kv·head_dim(_v) */
	float	*fg, *fu;	/* FFN gate / up, n_ff */
	float	*cat;		/* MTP [enorm(e); hnorm(h)], 2·n_embd */
	float	*rcos, *rsin;	/* RoPE angles, (max_batch, n_rot/2) */
	float	*mm;		/* rs_cpu_matmul scratch */
	uint64_t scratch_bytes;	/* all of the above */
};

/* ---- small helpers ---- */

static const float *
f32(const struct rs_gguf_tensor *t)
{
	return (t->data);
}

static void
matmul1(struct cpu *c, const struct rs_gguf_tensor *w, const float *x,
    int64_t n, float *y)
{
	struct rs_cpu_mm mm = { w, x, y, w->ne[1] };

	rs_cpu_matmul(c->pool, &mm, 1, n, c->mm);
}

static void
rmsnorm_rows(const struct rs_engine *e, const float *x,
    const struct rs_gguf_tensor *w, int64_t n, float *y)
{
	const int64_t d = e->model->hp.n_embd;

	for (int64_t t = 0; t < n; t++)
		rs_cpu_rmsnorm_ref(x + t * d, f32(w), d, e->model->hp.rms_eps,
		    y + t * d);
}

static void
add_rows(float *x, const float *y, int64_t count)
{
	for (int64_t i = 0; i < count; i++)
		x[i] += y[i];
}

/* x[t] = W[tokens[t]]: one decoded row per token (§4.2). */
static void
embed(const struct rs_gguf_tensor *w, const int32_t *tokens, int64_t n,
    float *x)
{
	const struct rs_type_traits *tt = rs_type_traits(w->type);
	const rs_to_float_fn decode = rs_cpu_row_decoder(w->type);
	const int64_t	d = w->ne[0];
	const size_t	rb = (size_t)(d / tt->block_elems) *
	    (size_t)tt->block_bytes;

	for (int64_t t = 0; t < n; t++)
		decode((const uint8_t *)w->data + (size_t)tokens[t] * rb,
		    x + t * d, d);
}

/* RoPE angles of positions P0 .. P0 + N − 1 (text: (p, p, p, 0), §4.5). */
static void
rope_tables(struct rs_engine *e, int32_t p0, int64_t n)
{
	struct cpu *c = e->be;
	const struct rs_hparams *hp = &e->model->hp;
	const int half = (int)hp->n_rot / 2;

	for (int64_t t = 0; t < n; t++) {
		int32_t p = p0 + (int32_t)t;
		int32_t pos4[4] = { p, p, p, 0 };

		rs_cpu_rope_angles(pos4, hp->rope_sections, (int)hp->n_rot,
		    hp->rope_base, c->rcos + t * half, c->rsin + t * half);
	}
}

/* ---- SwiGLU FFN (§4.3): x += W_down·(silu(W_gate·h) ⊙ W_up·h) ---- */

static void
ffn_block(struct rs_engine *e, const struct rs_layer *l, int64_t n)
{
	struct cpu *c = e->be;
	const int64_t ff = e->model->hp.n_ff;
	struct rs_cpu_mm jobs[2] = {
		{ l->ffn_gate, c->h, c->fg, ff },
		{ l->ffn_up, c->h, c->fu, ff },
	};

	rmsnorm_rows(e, c->x, l->post_norm, n, c->h);
	rs_cpu_matmul(c->pool, jobs, 2, n, c->mm);
	for (int64_t i = 0; i < n * ff; i++)
		c->fg[i] = rs_cpu_silu(c->fg[i]) * c->fu[i];
	matmul1(c, l->ffn_down, c->fg, n, c->y);
	add_rows(c->x, c->y, n * e->model->hp.n_embd);
}

/* ---- Gated DeltaNet (§4.6) ---- */

struct gdn_run {
	struct rs_engine	*e;
	struct rs_state		*st;
	const struct rs_layer	*l;
	int32_t			 slot;		/* among the GDN blocks */
	int32_t			 p0, snap_from;
	int64_t			 n;
};

/*
 * Head VH's share of the snapshot ring (rs_state.h) for position P: its
 * recurrent state in full when P is the pass's base, its replay record
 * (v, β, g; k too for the first n_kh heads, one per key head) when P is
 * recorded.  The record's layout is host_gdn_replay's (rs_state.c).
 */
static void
gdn_snap(const struct gdn_run *r, int64_t vh, int32_t p, const float *s,
    const float *k, const float *v, float beta, float g)
{
	const struct rs_hparams *hp = &r->e->model->hp;
	const int64_t	 ds = hp->ssm_d_state;
	const int64_t	 nkh = hp->ssm_n_kh, nvh = hp->ssm_n_vh;

	if (p >= 0 && p == r->st->snap_base)
		memcpy(rs_state_snap_ssm(r->st, p, r->slot) + vh * ds * ds, s,
		    (size_t)(ds * ds) * sizeof(float));
	if (p < r->snap_from || p < r->p0)
		return;
	float *rec = rs_state_snap_rec(r->st, p, r->slot);
	if (vh < nkh)
		memcpy(rec + vh * ds, k, (size_t)ds * sizeof(float));
	memcpy(rec + (nkh + vh) * ds, v, (size_t)ds * sizeof(float));
	rec[(nkh + nvh) * ds + vh] = beta;
	rec[(nkh + nvh) * ds + nvh + vh] = g;
}

/*
 * Value head VH over all tokens in order: gates, delta rule (state in
 * place, the snapshot ring's base and records), gated RMSNorm into c->mix.
 */
static void
gdn_head(void *arg, int64_t vh, int ith)
{
	const struct gdn_run *r = arg;
	const struct rs_hparams *hp = &r->e->model->hp;
	struct cpu *c = r->e->be;
	const int	 ds = (int)hp->ssm_d_state;
	const int64_t	 kdim = (int64_t)hp->ssm_n_kh * ds;
	const int64_t	 ch = 2 * kdim + hp->ssm_d_inner;
	const int64_t	 di = hp->ssm_d_inner, nvh = hp->ssm_n_vh;
	const float	 scale = 1.0f / sqrtf((float)ds);	/* §8.11 */
	const float	*dt = f32(r->l->dt_bias), *a = f32(r->l->ssm_a);
	/* value head vh reads q/k head vh mod n_kh (tiled, §3.6) */
	const int64_t	 qk = (vh % hp->ssm_n_kh) * ds;
	float		*s = rs_state_ssm(r->st, r->slot) + vh * ds * ds;

	(void)ith;
	/* the state before the first token: position p0 − 1's */
	gdn_snap(r, vh, r->p0 - 1, s, NULL, NULL, 0.0f, 0.0f);
	for (int64_t t = 0; t < r->n; t++) {
		const float *ut = c->u + t * ch;
		float	*o = c->mix + t * di + vh * ds;
		float	 beta = rs_cpu_sigmoid(c->bb[t * nvh + vh]);
		float	 g = rs_cpu_softplus(c->aa[t * nvh + vh] + dt[vh]) *
		    a[vh];
		int32_t	 p = r->p0 + (int32_t)t;

		rs_cpu_deltanet(s, ut + qk, ut + kdim + qk,
		    ut + 2 * kdim + vh * ds, g, beta, ds, ds, scale, o);
		gdn_snap(r, vh, p, s, ut + kdim + qk, ut + 2 * kdim + vh * ds,
		    beta, g);
		rs_cpu_gated_rmsnorm_ref(o, c->z + t * di + vh * ds,
		    f32(r->l->ssm_norm), ds, hp->rms_eps, o);
	}
}

static void
gdn_block(struct rs_engine *e, struct rs_state *st, const struct rs_layer *l,
    int32_t slot, int32_t p0, int64_t n, int32_t snap_from)
{
	const struct rs_hparams *hp = &e->model->hp;
	struct cpu *c = e->be;
	const int	 ds = (int)hp->ssm_d_state;
	const int	 k = (int)hp->ssm_conv_kernel;
	const int64_t	 kdim = (int64_t)hp->ssm_n_kh * ds;
	const int64_t	 ch = 2 * kdim + hp->ssm_d_inner;
	float		*cs = rs_state_conv(st, slot);
	struct rs_cpu_mm jobs[4] = {
		{ l->qkv, c->h, c->mixed, ch },
		{ l->gate, c->h, c->z, hp->ssm_d_inner },
		{ l->beta, c->h, c->bb, hp->ssm_n_vh },
		{ l->alpha, c->h, c->aa, hp->ssm_n_vh },
	};
	struct gdn_run	 run = { e, st, l, slot, p0, snap_from, n };

	rs_cpu_matmul(c->pool, jobs, 4, n, c->mm);
	for (int64_t t = 0; t < n; t++)
		if (p0 + t >= snap_from)
			rs_cpu_conv_state_at(cs, c->mixed, ch, k, t,
			    rs_state_snap_conv(st, p0 + (int32_t)t, slot));
	rs_cpu_conv_ref(cs, f32(l->conv1d), c->mixed, n, ch, k, c->u);
	/* L2-normalise every q and k head (§4.6 step 4) */
	for (int64_t t = 0; t < n; t++)
		for (int64_t m = 0; m < 2 * (int64_t)hp->ssm_n_kh; m++) {
			float *v = c->u + t * ch + m * ds;
			rs_cpu_l2norm_ref(v, ds, hp->rms_eps, v);
		}
	rs_pool_run(c->pool, gdn_head, &run, hp->ssm_n_vh);
	matmul1(c, l->ssm_out, c->mix, n, c->y);
}

/* ---- gated attention (§4.4) ---- */

struct attn_run {
	struct rs_engine	*e;
	const float		*kc, *vc;	/* (n_ctx, kv_row(_v)) */
	int32_t			 p0;
	int64_t			 n;
};

/* Item = (token, head): causal softmax attention, sigmoid gate. */
static void
attn_head(void *arg, int64_t idx, int ith)
{
	const struct attn_run *r = arg;
	const struct rs_hparams *hp = &r->e->model->hp;
	struct cpu *c = r->e->be;
	const int	 hd = (int)hp->head_dim, hdv = (int)hp->head_dim_v;
	const int64_t	 nh = hp->n_head, group = hp->n_head / hp->n_head_kv;
	const int64_t	 ldk = (int64_t)hp->n_head_kv * hd;
	const int64_t	 ldv = (int64_t)hp->n_head_kv * hdv;
	const float	 scale = 1.0f / sqrtf((float)hd);
	const int64_t	 t = idx / nh, i = idx % nh;
	const int64_t	 j = i / group;		/* grouped GQA, §8.6 */
	const float	*q = c->qg + t * 2 * nh * hd + i * 2 * hd;
	const float	*gate = q + hd;
	float		*o = c->mix + t * nh * hdv + i * hdv;

	(void)ith;
	rs_cpu_attn(q, r->kc + j * hd, ldk, r->vc + j * hdv, ldv,
	    r->p0 + t + 1, hd, hdv, scale, o);
	for (int d = 0; d < hdv; d++)
		o[d] *= rs_cpu_sigmoid(gate[d]);
}

/*
 * h (n, n_embd) at positions P0.. → y, with K/V written to rows P0.. of the
 * caches KC/VC.  Used by the trunk's attention blocks and by the MTP block.
 */
static void
attn_block(struct rs_engine *e, const struct rs_layer *l, float *kc,
    float *vc, int32_t p0, int64_t n)
{
	const struct rs_hparams *hp = &e->model->hp;
	struct cpu *c = e->be;
	const int	 hd = (int)hp->head_dim, hdv = (int)hp->head_dim_v;
	const int	 half = (int)hp->n_rot / 2;
	const int64_t	 nh = hp->n_head, nkv = hp->n_head_kv;
	const int64_t	 qdim = 2 * nh * hd, ldk = nkv * hd, ldv = nkv * hdv;
	const float	 eps = hp->rms_eps;
	struct rs_cpu_mm jobs[3] = {
		{ l->wq, c->h, c->qg, qdim },
		{ l->wk, c->h, c->kk, ldk },
		{ l->wv, c->h, c->vv, ldv },
	};
	struct attn_run	 run = { e, kc, vc, p0, n };

	rs_cpu_matmul(c->pool, jobs, 3, n, c->mm);
	for (int64_t t = 0; t < n; t++) {
		const float *cs = c->rcos + t * half, *sn = c->rsin + t * half;

		/* heads are [q (hd) | gate (hd)] interleaved (§3.3); q and k
		 * are normed per head, then rotated (§8.10) */
		for (int64_t i = 0; i < nh; i++) {
			float *q = c->qg + t * qdim + i * 2 * hd;

			rs_cpu_rmsnorm_ref(q, f32(l->q_norm), hd, eps, q);
			rs_cpu_rope_ref(q, (int)hp->n_rot, cs, sn);
		}
		for (int64_t j = 0; j < nkv; j++) {
			float *k = c->kk + t * ldk + j * hd;

			rs_cpu_rmsnorm_ref(k, f32(l->k_norm), hd, eps, k);
			rs_cpu_rope_ref(k, (int)hp->n_rot, cs, sn);
		}
		memcpy(kc + (p0 + t) * ldk, c->kk + t * ldk,
		    (size_t)ldk * sizeof(float));
		memcpy(vc + (p0 + t) * ldv, c->vv + t * ldv,
		    (size_t)ldv * sizeof(float));
	}
	rs_pool_run(c->pool, attn_head, &run, n * nh);
	matmul1(c, l->wo, c->mix, n, c->y);
}

/* ---- the trunk and the MTP block ---- */

static enum rs_status
cpu_forward(struct rs_engine *e, struct rs_state *st, const int32_t *tokens,
    int32_t n, int32_t snap_from, float *logits, int32_t logits_from,
    float *hidden, struct rs_err *err)
{
	const struct rs_model *m = e->model;
	const int64_t	 d = m->hp.n_embd;
	struct cpu	*c = e->be;
	const int32_t	 p0 = st->pos;

	(void)err;
	/* memmove: a replay passes the history itself */
	memmove(st->tokens + p0, tokens, (size_t)n * sizeof(*tokens));
	embed(m->tok_embd, tokens, n, c->x);
	rope_tables(e, p0, n);
	for (uint32_t il = 0; il < m->hp.n_layer; il++) {
		const struct rs_layer *l = &m->layers[il];
		int32_t slot = st->slot[il];

		rmsnorm_rows(e, c->x, l->attn_norm, n, c->h);
		if (l->kind == RS_LAYER_GDN)
			gdn_block(e, st, l, slot, p0, n, snap_from);
		else
			attn_block(e, l, st->k + (int64_t)slot * st->n_ctx *
			    st->kv_row, st->v + (int64_t)slot * st->n_ctx *
			    st->kv_row_v, p0, n);
		add_rows(c->x, c->y, n * d);
		ffn_block(e, l, n);
	}
	rmsnorm_rows(e, c->x, m->output_norm, n, c->h);
	if (hidden != NULL)
		memcpy(hidden, c->h, (size_t)(n * d) * sizeof(float));
	if (logits != NULL)
		matmul1(c, m->output, c->h + logits_from * d, n - logits_from,
		    logits);
	st->pos = p0 + n;
	return (RS_OK);
}

static enum rs_status
cpu_mtp(struct rs_engine *e, struct rs_state *st, const int32_t *tokens,
    int32_t n, int32_t pos, const float *h_in, float *logits, float *h_out,
    struct rs_err *err)
{
	const struct rs_model *m = e->model;
	const struct rs_layer *l = &m->layers[m->hp.n_layer];
	const int64_t	 d = m->hp.n_embd;
	const float	 eps = m->hp.rms_eps;
	struct cpu	*c = e->be;

	(void)err;
	/* c = [enorm(embed(x)); hnorm(h_in)], embedding half first (§6.1) */
	embed(l->mtp_embd, tokens, n, c->h);
	for (int64_t t = 0; t < n; t++) {
		rs_cpu_rmsnorm_ref(c->h + t * d, f32(l->enorm), d, eps,
		    c->cat + t * 2 * d);
		rs_cpu_rmsnorm_ref(h_in + t * d, f32(l->hnorm), d, eps,
		    c->cat + t * 2 * d + d);
	}
	matmul1(c, l->eh_proj, c->cat, n, c->x);
	rope_tables(e, pos, n);
	rmsnorm_rows(e, c->x, l->attn_norm, n, c->h);
	attn_block(e, l, st->mtp_k, st->mtp_v, pos, n);
	add_rows(c->x, c->y, n * d);
	ffn_block(e, l, n);
	rmsnorm_rows(e, c->x, l->head_norm, n, c->h);
	if (h_out != NULL)
		memcpy(h_out, c->h, (size_t)(n * d) * sizeof(float));
	if (logits != NULL)
		matmul1(c, l->mtp_head, c->h, n, logits);
	st->mtp_pos = pos + n;
	return (RS_OK);
}

/* ---- lifecycle ---- */

static void
cpu_free(struct rs_engine *e)
{
	struct cpu *c = e->be;

	if (c == NULL)
		return;
	rs_pool_free(c->pool);
	free(c->x);
	free(c->h);
	free(c->y);
	free(c->mixed);
	free(c->u);
	free(c->z);
	free(c->bb);
	free(c->aa);
	free(c->mix);
	free(c->qg);
	free(c->kk);
	free(c->vv);
	free(c->fg);
	free(c->fu);
	free(c->cat);
	free(c->rcos);
	free(c->rsin);
	free(c->mm);
	free(c);
	e->be = NULL;
}

static float *
rows(struct cpu *c, int64_t batch, int64_t width, int *fail)
{
	size_t	 n = (size_t)(batch * (width > 0 ? width : 1));
	float	*p = calloc(n, sizeof(float));

	if (p == NULL)
		*fail = 1;
	c->scratch_bytes += n * sizeof(float);
	return (p);
}

static int64_t
max64(int64_t a, int64_t b)
{
	return (a > b ? a : b);
}

static enum rs_status
cpu_init(struct rs_engine *e, struct rs_err *err)
{
	const struct rs_hparams *hp = &e->model->hp;
	const int64_t	 b = e->max_batch;
	const int64_t	 ch = 2 * (int64_t)hp->ssm_n_kh * hp->ssm_d_state +
	    hp->ssm_d_inner;
	int64_t		 max_in;
	struct cpu	*c;
	enum rs_status	 s;
	int		 fail = 0;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	e->be = c;
	if ((s = rs_pool_new(&c->pool, e->n_threads, err)) != RS_OK)
		return (s);
	c->x = rows(c, b, hp->n_embd, &fail);
	c->h = rows(c, b, hp->n_embd, &fail);
	c->y = rows(c, b, hp->n_embd, &fail);
	c->mixed = rows(c, b, ch, &fail);
	c->u = rows(c, b, ch, &fail);
	c->z = rows(c, b, hp->ssm_d_inner, &fail);
	c->bb = rows(c, b, hp->ssm_n_vh, &fail);
	c->aa = rows(c, b, hp->ssm_n_vh, &fail);
	c->mix = rows(c, b, max64(hp->ssm_d_inner,
	    (int64_t)hp->n_head * hp->head_dim_v), &fail);
	c->qg = rows(c, b, 2 * (int64_t)hp->n_head * hp->head_dim, &fail);
	c->kk = rows(c, b, (int64_t)hp->n_head_kv * hp->head_dim, &fail);
	c->vv = rows(c, b, (int64_t)hp->n_head_kv * hp->head_dim_v, &fail);
	c->fg = rows(c, b, hp->n_ff, &fail);
	c->fu = rows(c, b, hp->n_ff, &fail);
	c->cat = rows(c, b, 2 * (int64_t)hp->n_embd, &fail);
	c->rcos = rows(c, b, hp->n_rot / 2, &fail);
	c->rsin = rows(c, b, hp->n_rot / 2, &fail);
	max_in = max64(max64(2 * (int64_t)hp->n_embd, hp->n_ff),
	    max64(hp->ssm_d_inner, (int64_t)hp->n_head * hp->head_dim_v));
	c->mm = rows(c, 1, (int64_t)rs_cpu_matmul_scratch(max_in, e->n_threads),
	    &fail);
	if (fail)
		return (rs_errf(err, RS_ERR_NOMEM,
		    "out of memory for scratch of %lld tokens", (long long)b));
	return (RS_OK);
}

/* ---- bandwidth probe and memory plan ---- */

#define PROBE_BYTES	((size_t)1 << 30)

struct probe_run {
	const float	*buf;
	int64_t		 chunk;		/* floats per item */
	double		*sums;		/* per item, so the reads are not dead */
};

static void
probe_item(void *arg, int64_t i, int ith)
{
	const struct probe_run *r = arg;
	const float *p = r->buf + i * r->chunk;
	float	acc[8] = { 0 };

	(void)ith;
	for (int64_t k = 0; k < r->chunk; k += 8)
		for (int j = 0; j < 8; j++)
			acc[j] += p[k + j];
	r->sums[i] = acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] +
	    acc[6] + acc[7];
}

/* Threaded sum over a 1 GiB buffer: host memory's read bandwidth. */
static enum rs_status
cpu_probe(struct rs_engine *e, double *gb_s, struct rs_err *err)
{
	struct cpu	*c = e->be;
	const int64_t	 items = 256;
	struct probe_run r = { NULL, (int64_t)(PROBE_BYTES / sizeof(float)) /
	    items, NULL };
	float		*buf = malloc(PROBE_BYTES);
	double		 sums[256], t0;

	if (buf == NULL)
		return (rs_errf(err, RS_ERR_NOMEM,
		    "out of memory for the bandwidth probe"));
	memset(buf, 0, PROBE_BYTES);
	r.buf = buf;
	r.sums = sums;
	rs_pool_run(c->pool, probe_item, &r, items);	/* warm-up */
	t0 = 1e-3 * rs_time_ms();
	for (int rep = 0; rep < 3; rep++)
		rs_pool_run(c->pool, probe_item, &r, items);
	*gb_s = 3.0 * (double)PROBE_BYTES / (1e-3 * rs_time_ms() - t0) / 1e9;
	free(buf);
	return (RS_OK);
}

static void
cpu_memory(const struct rs_engine *e, uint64_t *weights, uint64_t *scratch)
{
	const struct rs_gguf *g = e->model->gguf;
	const struct cpu *c = e->be;

	*weights = 0;
	for (int64_t i = 0; i < rs_gguf_n_tensors(g); i++)
		*weights += rs_gguf_tensor(g, i)->nbytes;
	*scratch = c->scratch_bytes;
}

const struct rs_backend_ops rs_cpu_backend = {
	.name = "cpu",
	.mem = &rs_state_host_mem,
	.init = cpu_init,
	.free = cpu_free,
	.forward = cpu_forward,
	.probe = cpu_probe,
	.memory = cpu_memory,
	.mtp = cpu_mtp,
};
