/*
 * rs_tp.c - tensor parallelism's plan (see rs_tp.h).
 */
#include <string.h>

#include "rs_tp.h"
#include "rs_types.h"

/* Values a row of T (ne[0]) and its rows (the other dimensions). */
static int64_t
row_len(const struct rs_gguf_tensor *t)
{
	return (t->ne[0]);
}

static int64_t
rows_of(const struct rs_gguf_tensor *t)
{
	int64_t	r = 1;

	for (int d = 1; d < t->n_dims; d++)
		r *= t->ne[d];
	return (r);
}

/* Bytes of N values of T's type (N a whole number of its blocks). */
static uint64_t
bytes_of(const struct rs_gguf_tensor *t, int64_t n)
{
	const struct rs_type_traits *tr = rs_type_traits(t->type);

	return ((uint64_t)(n / tr->block_elems) * (uint64_t)tr->block_bytes);
}

void
rs_tp_heads(const struct rs_model *m, int r, int n, struct rs_tp_heads *out)
{
	const struct rs_hparams *hp = &m->hp;

	memset(out, 0, sizeof(*out));
	out->kh = (int)hp->ssm_n_kh / n;
	out->kh0 = r * out->kh;
	out->vh = (int)hp->ssm_n_vh / n;
	out->qh = (int)hp->n_head / n;
	out->q0 = r * out->qh;
	out->kvh = (int)hp->n_head_kv / n;
	out->kv0 = r * out->kvh;
	out->ff = hp->n_ff / n;
	out->ff0 = r * out->ff;
}

static void
add_run(struct rs_tp_share *s, int64_t first, int64_t count)
{
	s->run[s->n_runs].first = first;
	s->run[s->n_runs].count = count;
	s->n_runs++;
	s->n += count;
}

/*
 * The rank's v heads in units of UNIT (rows or values a head), from OFF:
 * one run of kh heads a group (the tiled order, rs_tp.h).
 */
static void
add_v_runs(struct rs_tp_share *s, const struct rs_model *m,
    const struct rs_tp_heads *h, int64_t off, int64_t unit)
{
	const int n_kh = (int)m->hp.ssm_n_kh;
	const int groups = (int)m->hp.ssm_n_vh / n_kh;

	for (int g = 0; g < groups; g++)
		add_run(s, off + (int64_t)(g * n_kh + h->kh0) * unit,
		    (int64_t)h->kh * unit);
}

/* T's share in a GDN block: 1 if T is one of its cut tensors. */
static int
gdn_share(const struct rs_model *m, const struct rs_layer *l,
    const struct rs_gguf_tensor *t, const struct rs_tp_heads *h,
    struct rs_tp_share *s)
{
	const int64_t ds = m->hp.ssm_d_state, n_kh = m->hp.ssm_n_kh;

	if (t == l->qkv || t == l->conv1d) {
		/* q, k, then the v heads: rows of the projection, channels
		   of the convolution, the same indices */
		s->cut = RS_TP_ROWS;
		add_run(s, h->kh0 * ds, h->kh * ds);
		add_run(s, (n_kh + h->kh0) * ds, h->kh * ds);
		add_v_runs(s, m, h, 2 * n_kh * ds, ds);
	} else if (t == l->gate) {
		s->cut = RS_TP_ROWS;
		add_v_runs(s, m, h, 0, ds);
	} else if (t == l->beta || t == l->alpha) {
		s->cut = RS_TP_ROWS;
		add_v_runs(s, m, h, 0, 1);
	} else if (t == l->dt_bias || t == l->ssm_a) {
		s->cut = RS_TP_COLS;
		add_v_runs(s, m, h, 0, 1);
	} else if (t == l->ssm_out) {
		s->cut = RS_TP_COLS;
		add_v_runs(s, m, h, 0, ds);
	} else
		return (0);
	return (1);
}

/* T's share in an attention block: 1 if T is one of its cut tensors. */
static int
attn_share(const struct rs_model *m, const struct rs_layer *l,
    const struct rs_gguf_tensor *t, const struct rs_tp_heads *h,
    struct rs_tp_share *s)
{
	const int64_t hd = m->hp.head_dim, hdv = m->hp.head_dim_v;

	if (t == l->wq) {		/* per head: query, then gate */
		s->cut = RS_TP_ROWS;
		add_run(s, h->q0 * 2 * hd, h->qh * 2 * hd);
	} else if (t == l->wk) {
		s->cut = RS_TP_ROWS;
		add_run(s, h->kv0 * hd, h->kvh * hd);
	} else if (t == l->wv) {
		s->cut = RS_TP_ROWS;
		add_run(s, h->kv0 * hdv, h->kvh * hdv);
	} else if (t == l->wo) {
		s->cut = RS_TP_COLS;
		add_run(s, h->q0 * hdv, h->qh * hdv);
	} else
		return (0);
	return (1);
}

/* T's share in the FFN: 1 if T is one of its tensors. */
static int
ffn_share(const struct rs_layer *l, const struct rs_gguf_tensor *t,
    const struct rs_tp_heads *h, struct rs_tp_share *s)
{
	if (t == l->ffn_gate || t == l->ffn_up)
		s->cut = RS_TP_ROWS;
	else if (t == l->ffn_down)
		s->cut = RS_TP_COLS;
	else
		return (0);
	add_run(s, h->ff0, h->ff);
	return (1);
}

/* T is one of block L's tensors that every rank holds whole. */
static int
whole_in(const struct rs_layer *l, const struct rs_gguf_tensor *t)
{
	const struct rs_gguf_tensor *w[] = { l->attn_norm, l->post_norm,
	    l->ssm_norm, l->q_norm, l->k_norm };

	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		if (w[i] != NULL && w[i] == t)
			return (1);
	return (0);
}

/* The share without the argument checks (R, N valid, IL a trunk block). */
static int
share_in(const struct rs_model *m, int il, const struct rs_gguf_tensor *t,
    int r, int n, struct rs_tp_share *s)
{
	const struct rs_layer *l = &m->layers[il];
	struct rs_tp_heads h;

	memset(s, 0, sizeof(*s));
	rs_tp_heads(m, r, n, &h);
	if ((l->kind == RS_LAYER_GDN && gdn_share(m, l, t, &h, s)) ||
	    (l->kind == RS_LAYER_ATTN && attn_share(m, l, t, &h, s)) ||
	    ffn_share(l, t, &h, s))
		return (1);
	if (!whole_in(l, t))
		return (0);
	s->cut = RS_TP_WHOLE;
	s->n = rows_of(t);
	return (1);
}

enum rs_status
rs_tp_share_of(const struct rs_model *m, int il,
    const struct rs_gguf_tensor *t, int r, int n, struct rs_tp_share *out,
    struct rs_err *err)
{
	if (n < 1 || n > RS_TP_MAX || r < 0 || r >= n || il < -1 ||
	    il >= (int)m->hp.n_layer || t == NULL)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "tensor parallel: "
		    "rank %d of %d, block %d", r, n, il));
	if (il == -1) {
		if (t != m->tok_embd && t != m->output_norm && t != m->output)
			return (rs_errf(err, RS_ERR_INVALID_ARG, "tensor "
			    "parallel: %s is not a global tensor", t->name));
		memset(out, 0, sizeof(*out));
		out->cut = RS_TP_WHOLE;
		out->n = rows_of(t);
		return (RS_OK);
	}
	if (!share_in(m, il, t, r, n, out))
		return (rs_errf(err, RS_ERR_INVALID_ARG, "tensor parallel: "
		    "%s is not a tensor of block %d", t->name, il));
	return (RS_OK);
}

/*
 * The counts that must divide by N, with their names, then every cut
 * input-column run in whole blocks of its tensor's type.
 */
enum rs_status
rs_tp_check(const struct rs_model *m, int n, struct rs_err *err)
{
	const struct rs_hparams *hp = &m->hp;
	const struct {
		const char	*what;
		uint32_t	 v;
	} c[] = {
		{ "q/k heads of the GDN blocks (ssm.group_count)", hp->ssm_n_kh },
		{ "attention heads (attention.head_count)", hp->n_head },
		{ "kv heads (attention.head_count_kv)", hp->n_head_kv },
		{ "the FFN width (feed_forward_length)", hp->n_ff },
	};

	if (n < 1 || n > RS_TP_MAX)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "tensor parallel over "
		    "%d GPUs: 1 to %d", n, RS_TP_MAX));
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (c[i].v % (uint32_t)n != 0)
			return (rs_errf(err, RS_ERR_UNSUPPORTED, "tensor "
			    "parallel over %d GPUs: %s, %u, does not divide "
			    "by %d", n, c[i].what, c[i].v, n));
	for (uint32_t il = 0; il < hp->n_layer; il++) {
		const struct rs_layer *l = &m->layers[il];
		const struct rs_gguf_tensor *cols[] = { l->ssm_out, l->wo,
		    l->ffn_down };

		for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++) {
			const struct rs_gguf_tensor *t = cols[i];
			const int be = t == NULL ? 1 :
			    rs_type_traits(t->type)->block_elems;
			struct rs_tp_share s;

			if (t == NULL || !share_in(m, (int)il, t, 0, n, &s))
				continue;
			for (int k = 0; k < s.n_runs; k++)
				if (s.run[k].first % be != 0 ||
				    s.run[k].count % be != 0)
					return (rs_errf(err,
					    RS_ERR_UNSUPPORTED, "tensor "
					    "parallel over %d GPUs: %s's "
					    "inputs %lld..%lld are not "
					    "whole %s blocks of %d", n,
					    t->name,
					    (long long)s.run[k].first,
					    (long long)(s.run[k].first +
					    s.run[k].count - 1),
					    rs_type_name(t->type), be));
		}
	}
	return (RS_OK);
}

uint64_t
rs_tp_share_bytes(const struct rs_gguf_tensor *t, const struct rs_tp_share *s)
{
	switch (s->cut) {
	case RS_TP_ROWS:
		return ((uint64_t)s->n * bytes_of(t, row_len(t)));
	case RS_TP_COLS:
		return ((uint64_t)rows_of(t) * bytes_of(t, s->n));
	default:
		return (t->nbytes);
	}
}

void
rs_tp_share_copy(const struct rs_gguf_tensor *t, const void *src,
    const struct rs_tp_share *s, void *dst)
{
	const uint8_t	*in = src;
	uint8_t		*out = dst;
	const uint64_t	 rb = bytes_of(t, row_len(t));

	switch (s->cut) {
	case RS_TP_ROWS:
		for (int k = 0; k < s->n_runs; k++) {
			const uint64_t b = (uint64_t)s->run[k].count * rb;
			memcpy(out, in + (uint64_t)s->run[k].first * rb, b);
			out += b;
		}
		break;
	case RS_TP_COLS:
		for (int64_t row = 0; row < rows_of(t); row++)
			for (int k = 0; k < s->n_runs; k++) {
				const uint64_t b = bytes_of(t, s->run[k].count);
				memcpy(out, in + (uint64_t)row * rb +
				    bytes_of(t, s->run[k].first), b);
				out += b;
			}
		break;
	default:
		memcpy(out, in, t->nbytes);
	}
}
