/*
 * check_tp.c - tensor parallelism's plan (rs_tp.h) without a GPU: on a
 * model with Qwen3.8-27B's shapes and types (tables only, no weights) the
 * ranks' shares of every cut tensor partition it, keep each v head with
 * the q/k head it reads (the tiled order, §3.6) and leave each rank a
 * tiled block again; the counts that do not divide are refused with their
 * name; on the tiny fixture, sliced bytes decode to exactly the values of
 * the rows and columns the plan names, and a GDN block, an attention
 * block and an FFN run per rank on its slices with its head counts add up
 * to the whole ones.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_cpu.h"
#include "rs_model.h"
#include "rs_tp.h"
#include "rs_types.h"
#include "rs_verify.h"
#include "t_util.h"

/* ---- a 27B-shaped model: tables only ---- */

struct fake {
	struct rs_model		 m;
	struct rs_layer		 l[64];
	struct rs_gguf_tensor	 t[64][16];
};

static const struct rs_gguf_tensor *
tensor(struct fake *f, int il, int *k, const char *name, int type,
    int64_t ne0, int64_t ne1)
{
	struct rs_gguf_tensor *t = &f->t[il][(*k)++];
	size_t rb = 0;
	struct rs_err err;

	ck_assert_int_eq(rs_type_row_bytes(type, ne0, &rb, &err), RS_OK);
	t->name = name;
	t->n_dims = ne1 > 1 ? 2 : 1;
	t->ne[0] = ne0;
	t->ne[1] = ne1;
	t->ne[2] = t->ne[3] = 1;
	t->type = type;
	t->nbytes = (uint64_t)rb * (uint64_t)ne1;
	return (t);
}

/* §1's numbers, §3's tensors and §3.7's types (qkv Q6_K every other
   GDN block, ffn_down Q6_K in half the blocks). */
static struct fake *
fake_27b(void)
{
	struct fake *f = calloc(1, sizeof(*f));
	struct rs_hparams *hp = &f->m.hp;
	const int q4 = RS_TYPE_Q4_K, q6 = RS_TYPE_Q6_K, f32 = RS_TYPE_F32;

	ck_assert_ptr_nonnull(f);
	hp->n_layer = hp->n_layer_all = 64;
	hp->n_embd = 5120;
	hp->n_ff = 17408;
	hp->n_head = 24;
	hp->n_head_kv = 4;
	hp->head_dim = hp->head_dim_v = 256;
	hp->ssm_conv_kernel = 4;
	hp->ssm_d_state = 128;
	hp->ssm_n_kh = 16;
	hp->ssm_n_vh = 48;
	hp->ssm_d_inner = 6144;
	f->m.layers = f->l;
	for (int il = 0; il < 64; il++) {
		struct rs_layer *l = &f->l[il];
		int k = 0;

		l->kind = il % 4 == 3 ? RS_LAYER_ATTN : RS_LAYER_GDN;
		l->attn_norm = tensor(f, il, &k, "attn_norm", f32, 5120, 1);
		l->post_norm = tensor(f, il, &k, "post_norm", f32, 5120, 1);
		l->ffn_gate = tensor(f, il, &k, "ffn_gate", q4, 5120, 17408);
		l->ffn_up = tensor(f, il, &k, "ffn_up", q4, 5120, 17408);
		l->ffn_down = tensor(f, il, &k, "ffn_down", il % 2 ? q6 : q4,
		    17408, 5120);
		if (l->kind == RS_LAYER_ATTN) {
			l->wq = tensor(f, il, &k, "attn_q", q4, 5120, 12288);
			l->wk = tensor(f, il, &k, "attn_k", q4, 5120, 1024);
			l->wv = tensor(f, il, &k, "attn_v", q6, 5120, 1024);
			l->wo = tensor(f, il, &k, "attn_output", q4, 6144, 5120);
			l->q_norm = tensor(f, il, &k, "q_norm", f32, 256, 1);
			l->k_norm = tensor(f, il, &k, "k_norm", f32, 256, 1);
			continue;
		}
		l->qkv = tensor(f, il, &k, "attn_qkv", il % 2 ? q6 : q4, 5120,
		    10240);
		l->gate = tensor(f, il, &k, "attn_gate", q4, 5120, 6144);
		l->beta = tensor(f, il, &k, "ssm_beta", q4, 5120, 48);
		l->alpha = tensor(f, il, &k, "ssm_alpha", q4, 5120, 48);
		l->conv1d = tensor(f, il, &k, "ssm_conv1d", f32, 4, 10240);
		l->dt_bias = tensor(f, il, &k, "ssm_dt", f32, 48, 1);
		l->ssm_a = tensor(f, il, &k, "ssm_a", f32, 48, 1);
		l->ssm_norm = tensor(f, il, &k, "ssm_norm", f32, 128, 1);
		l->ssm_out = tensor(f, il, &k, "ssm_out", q4, 6144, 5120);
	}
	return (f);
}

/* Every cut tensor of block L, each with the extent its cut runs over. */
static int
cut_tensors(const struct rs_layer *l, const struct rs_gguf_tensor **t)
{
	const struct rs_gguf_tensor *all[] = { l->ffn_gate, l->ffn_up,
	    l->ffn_down, l->qkv, l->gate, l->beta, l->alpha, l->conv1d,
	    l->dt_bias, l->ssm_a, l->ssm_out, l->wq, l->wk, l->wv, l->wo };
	int n = 0;

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (all[i] != NULL)
			t[n++] = all[i];
	return (n);
}

static int64_t
extent(const struct rs_gguf_tensor *t, const struct rs_tp_share *s)
{
	return (s->cut == RS_TP_ROWS ? t->ne[1] : t->ne[0]);
}

/* The ranks' shares of T (block IL) cover its extent exactly once, and
   their bytes add up to T's. */
static void
check_partition(const struct rs_model *m, int il,
    const struct rs_gguf_tensor *t, int n)
{
	struct rs_tp_share s;
	struct rs_err err;
	uint64_t bytes = 0;
	unsigned char *seen = NULL;
	int64_t ext = 0;

	for (int r = 0; r < n; r++) {
		ck_assert_int_eq(rs_tp_share_of(m, il, t, r, n, &s, &err),
		    RS_OK);
		ck_assert_msg(s.cut != RS_TP_WHOLE, "%s cut", t->name);
		if (seen == NULL) {
			ext = extent(t, &s);
			seen = calloc((size_t)ext, 1);
		}
		int64_t held = 0;
		for (int k = 0; k < s.n_runs; k++) {
			ck_assert(s.run[k].first >= 0 && s.run[k].first +
			    s.run[k].count <= ext);
			for (int64_t i = 0; i < s.run[k].count; i++)
				seen[s.run[k].first + i]++;
			held += s.run[k].count;
		}
		ck_assert_int_eq(held, s.n);
		bytes += rs_tp_share_bytes(t, &s);
	}
	int64_t bad = -1;	/* (one assertion: each costs a pipe write) */
	for (int64_t i = 0; i < ext && bad < 0; i++)
		if (seen[i] != 1)
			bad = i;
	ck_assert_msg(bad < 0, "block %d %s over %d: index %lld held %d "
	    "times", il, t->name, n, (long long)bad, bad < 0 ? 1 : seen[bad]);
	ck_assert_uint_eq(bytes, t->nbytes);
	free(seen);
}

/*
 * Rank R's v heads, in its local order, read q/k heads that the rank
 * holds, and local v head j reads local q/k head j mod kh: the tiled order
 * of a block with kh q/k heads.
 */
static void
check_tiled(const struct rs_model *m, int il, int r, int n)
{
	const struct rs_layer *l = &m->layers[il];
	const int64_t ds = m->hp.ssm_d_state, n_kh = m->hp.ssm_n_kh;
	struct rs_tp_share s;
	struct rs_tp_heads h;
	struct rs_err err;
	int local = 0;

	rs_tp_heads(m, r, n, &h);
	ck_assert_int_eq(rs_tp_share_of(m, il, l->gate, r, n, &s, &err),
	    RS_OK);
	int wrong = -1;
	for (int k = 0; k < s.n_runs; k++)
		for (int64_t row = s.run[k].first; row < s.run[k].first +
		    s.run[k].count; row += ds, local++) {
			const int qk = (int)(row / ds % n_kh);
			if (wrong < 0 && qk - h.kh0 != local % h.kh)
				wrong = local;
		}
	ck_assert_msg(wrong < 0, "block %d rank %d/%d: local v head %d reads "
	    "another q/k head than the tiled order's", il, r, n, wrong);
	ck_assert_int_eq(local, h.vh);
	/* qkv's v rows, beta's rows, ssm_out's columns: the same heads in
	   the same order */
	struct rs_tp_share q, b, o;
	ck_assert_int_eq(rs_tp_share_of(m, il, l->qkv, r, n, &q, &err), RS_OK);
	ck_assert_int_eq(rs_tp_share_of(m, il, l->beta, r, n, &b, &err),
	    RS_OK);
	ck_assert_int_eq(rs_tp_share_of(m, il, l->ssm_out, r, n, &o, &err),
	    RS_OK);
	ck_assert_int_eq(q.n_runs, 2 + s.n_runs);
	ck_assert_int_eq(q.run[0].first, h.kh0 * ds);
	ck_assert_int_eq(q.run[1].first, (n_kh + h.kh0) * ds);
	for (int k = 0; k < s.n_runs; k++) {
		ck_assert_int_eq(q.run[2 + k].first, 2 * n_kh * ds +
		    s.run[k].first);
		ck_assert_int_eq(b.run[k].first * ds, s.run[k].first);
		ck_assert_int_eq(o.run[k].first, s.run[k].first);
	}
}

START_TEST(plan_27b)
{
	struct fake *f = fake_27b();
	const struct rs_model *m = &f->m;
	const struct rs_gguf_tensor *t[16];
	struct rs_err err;

	for (int n = 1; n <= 4; n *= 2) {
		ck_assert_msg(rs_tp_check(m, n, &err) == RS_OK, "%d: %s", n,
		    err.msg);
		for (int il = 0; il < 64; il++) {
			const int k = cut_tensors(&f->l[il], t);
			for (int i = 0; i < k; i++)
				check_partition(m, il, t[i], n);
			for (int r = 0; r < n && f->l[il].kind == RS_LAYER_GDN;
			    r++)
				check_tiled(m, il, r, n);
		}
	}
	/* rank 1 of 2: attention heads 12.., kv heads 2.., FFN 8704.. */
	struct rs_tp_heads h;
	rs_tp_heads(m, 1, 2, &h);
	ck_assert_int_eq(h.q0, 12);
	ck_assert_int_eq(h.kv0, 2);
	ck_assert_int_eq(h.ff0, 8704);
	ck_assert_int_eq(h.kh0, 8);
	ck_assert_int_eq(h.vh, 24);
	/* whole tensors stay whole */
	struct rs_tp_share s;
	ck_assert_int_eq(rs_tp_share_of(m, 0, f->l[0].ssm_norm, 1, 2, &s,
	    &err), RS_OK);
	ck_assert_int_eq(s.cut, RS_TP_WHOLE);
	ck_assert_uint_eq(rs_tp_share_bytes(f->l[0].ssm_norm, &s),
	    f->l[0].ssm_norm->nbytes);
	free(f);
}
END_TEST

/* What does not divide is refused, naming the count or the tensor. */
START_TEST(refused)
{
	struct fake *f = fake_27b();
	struct rs_tp_share s;
	struct rs_err err;

	ck_assert_int_eq(rs_tp_check(&f->m, 3, &err), RS_ERR_UNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(err.msg, "q/k heads"));
	ck_assert_int_eq(rs_tp_check(&f->m, 8, &err), RS_ERR_UNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(err.msg, "kv heads"));
	ck_assert_int_eq(rs_tp_check(&f->m, 0, &err), RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_tp_check(&f->m, 9, &err), RS_ERR_INVALID_ARG);
	/* the FFN width sets ffn_down's input shares (the tensors keep
	   their shapes; the check reads only the plan): whole Q4_K/Q6_K
	   blocks pass, a part of one is refused, naming the tensor */
	f->m.hp.n_ff = 17408 - 1024;	/* 16384 / 4 = 4096: whole */
	ck_assert_int_eq(rs_tp_check(&f->m, 4, &err), RS_OK);
	f->m.hp.n_ff = 17408 + 512;	/* 17920 / 2 = 8960 = 35 blocks */
	ck_assert_int_eq(rs_tp_check(&f->m, 2, &err), RS_OK);
	f->m.hp.n_ff = 17408 + 128;	/* 17536 / 2 = 8768: not whole */
	ck_assert_int_eq(rs_tp_check(&f->m, 2, &err), RS_ERR_UNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(err.msg, "ffn_down"));
	/* a tensor that is not the block's, a rank out of range */
	ck_assert_int_eq(rs_tp_share_of(&f->m, 0, f->l[3].wq, 0, 2, &s, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_tp_share_of(&f->m, 0, f->l[0].qkv, 2, 2, &s, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_tp_share_of(&f->m, 64, f->l[0].qkv, 0, 2, &s,
	    &err), RS_ERR_INVALID_ARG);
	free(f);
}
END_TEST

/* ---- the tiny fixture: real bytes ---- */

/*
 * Rank R's slice of T decodes to T's values at the plan's rows (ROWS) or
 * at its columns of every row (COLS), bit for bit.
 */
static void
check_slice(const struct rs_model *m, int il, const struct rs_gguf_tensor *t,
    int r, int n)
{
	const int64_t ne0 = t->ne[0], rows = t->n_dims > 1 ? t->ne[1] : 1;
	struct rs_tp_share s;
	struct rs_err err;

	ck_assert_int_eq(rs_tp_share_of(m, il, t, r, n, &s, &err), RS_OK);
	const uint64_t sb = rs_tp_share_bytes(t, &s);
	uint8_t *slice = malloc(sb);
	rs_tp_share_copy(t, t->data, &s, slice);
	const int64_t sne0 = s.cut == RS_TP_COLS ? s.n : ne0;
	const int64_t srows = s.cut == RS_TP_ROWS ? s.n : rows;
	size_t frb = 0, srb = 0;
	ck_assert_int_eq(rs_type_row_bytes(t->type, ne0, &frb, &err), RS_OK);
	ck_assert_int_eq(rs_type_row_bytes(t->type, sne0, &srb, &err), RS_OK);
	ck_assert_uint_eq(sb, srb * (uint64_t)srows);
	float *full = malloc((size_t)ne0 * 4), *got = malloc((size_t)sne0 * 4);
	int64_t row = 0;
	int k = 0, in_run = 0;
	for (int64_t sr = 0; sr < srows; sr++) {
		/* the source row of slice row SR */
		if (s.cut == RS_TP_ROWS) {
			row = s.run[k].first + in_run;
			if (++in_run == s.run[k].count) {
				k++;
				in_run = 0;
			}
		} else
			row = sr;
		ck_assert_int_eq(rs_dequant_row(t->type, (const uint8_t *)
		    t->data + (uint64_t)row * frb, full, ne0, &err), RS_OK);
		ck_assert_int_eq(rs_dequant_row(t->type, slice + sr * srb, got,
		    sne0, &err), RS_OK);
		if (s.cut != RS_TP_COLS) {
			ck_assert_msg(memcmp(full, got, (size_t)ne0 * 4) == 0,
			    "%s rank %d/%d row %lld", t->name, r, n,
			    (long long)row);
			continue;
		}
		int64_t at = 0;
		for (int j = 0; j < s.n_runs; j++) {
			ck_assert_msg(memcmp(full + s.run[j].first, got + at,
			    (size_t)s.run[j].count * 4) == 0, "%s rank %d/%d "
			    "row %lld run %d", t->name, r, n, (long long)row, j);
			at += s.run[j].count;
		}
	}
	free(full);
	free(got);
	free(slice);
}

START_TEST(slices_tiny)
{
	struct rs_model *m;
	struct rs_err err;
	const struct rs_gguf_tensor *t[16];

	/* q8_0: 32-value blocks, so the tiny model's 128-column shares of
	   ssm_out and attn_output are whole blocks */
	ck_assert_int_eq(rs_model_open(&m, t_fixture("tiny/model-q8_0.gguf"),
	    &err), RS_OK);
	ck_assert_msg(rs_tp_check(m, 2, &err) == RS_OK, "%s", err.msg);
	for (uint32_t il = 0; il < m->hp.n_layer; il++) {
		const int k = cut_tensors(&m->layers[il], t);
		for (int i = 0; i < k; i++)
			for (int r = 0; r < 2; r++)
				check_slice(m, (int)il, t[i], r, 2);
	}
	rs_model_close(m);
	/* Q4_K_M: 256-value super-blocks; a 128-column share is refused */
	ck_assert_int_eq(rs_model_open(&m, t_fixture("tiny/model-q4_k_m.gguf"),
	    &err), RS_OK);
	ck_assert_int_eq(rs_tp_check(m, 2, &err), RS_ERR_UNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(err.msg, "blocks of 256"));
	rs_model_close(m);
}
END_TEST

/* ---- a GDN block per rank (§4.6 with the CPU oracles) ---- */

/* Rank R of N's slice of T in block IL: a view on bytes kept in *KEEP. */
static struct rs_gguf_tensor
slice(const struct rs_model *m, int il, const struct rs_gguf_tensor *t,
    int r, int n, void **keep)
{
	struct rs_gguf_tensor v = *t;
	struct rs_tp_share s;
	struct rs_err err;

	ck_assert_int_eq(rs_tp_share_of(m, il, t, r, n, &s, &err), RS_OK);
	*keep = malloc(rs_tp_share_bytes(t, &s));
	rs_tp_share_copy(t, t->data, &s, *keep);
	v.data = *keep;
	v.nbytes = rs_tp_share_bytes(t, &s);
	v.ne[s.cut == RS_TP_ROWS ? 1 : 0] = s.n;
	return (v);
}


/* The views of one GDN block's tensors and its head counts. */
struct gdn_view {
	struct rs_gguf_tensor	 qkv, gate, beta, alpha, conv1d, dt, ssm_a;
	struct rs_gguf_tensor	 ssm_out;
	const float		*norm;		/* ssm_norm, whole */
	int			 n_kh, n_vh, ds, k;
};

static void
mv(const struct rs_gguf_tensor *w, const float *x, float *y)
{
	const struct rs_cpu_mm mm = { w, x, y, w->ne[1] };
	float *row = malloc((size_t)w->ne[0] * 4);

	rs_cpu_matmul_ref(&mm, 1, row);
	free(row);
}

/*
 * T tokens of H (T, n_embd) through steps 1-8 from a zero state: OUT (T,
 * n_embd) gets ssm_out's product, the block's contribution to x.
 */
static void
gdn_run(const struct gdn_view *v, const float *h, int T, int64_t n_embd,
    float *out)
{
	const int ds = v->ds, n_kh = v->n_kh, n_vh = v->n_vh;
	const int64_t ch = (int64_t)(2 * n_kh + n_vh) * ds;
	float *mixed = malloc((size_t)ch * 4), *u = malloc((size_t)ch * 4);
	float *cs = calloc((size_t)(ch * (v->k - 1)), 4);
	float *S = calloc((size_t)n_vh * ds * ds, 4);
	float *z = malloc((size_t)n_vh * ds * 4), *y = malloc((size_t)n_vh *
	    ds * 4);
	float *q = malloc((size_t)n_kh * ds * 4), *kk = malloc((size_t)n_kh *
	    ds * 4), *o = malloc((size_t)ds * 4);
	float *b = malloc((size_t)n_vh * 4), *a = malloc((size_t)n_vh * 4);
	const float *dt = v->dt.data, *A = v->ssm_a.data;

	for (int t = 0; t < T; t++) {
		mv(&v->qkv, h + t * n_embd, mixed);
		mv(&v->gate, h + t * n_embd, z);
		mv(&v->beta, h + t * n_embd, b);
		mv(&v->alpha, h + t * n_embd, a);
		rs_cpu_conv_ref(cs, v->conv1d.data, mixed, 1, ch, v->k, u);
		for (int m = 0; m < n_kh; m++) {
			rs_cpu_l2norm_ref(u + m * ds, ds, 1e-6f, q + m * ds);
			rs_cpu_l2norm_ref(u + (n_kh + m) * ds, ds, 1e-6f,
			    kk + m * ds);
		}
		for (int n = 0; n < n_vh; n++) {
			const int m = n % n_kh;		/* tiled (§3.6) */
			rs_cpu_deltanet_ref(S + (int64_t)n * ds * ds, q + m * ds,
			    kk + m * ds, u + (2 * n_kh + n) * ds,
			    rs_cpu_softplus(a[n] + dt[n]) * A[n],
			    rs_cpu_sigmoid(b[n]), ds, ds,
			    1.0f / sqrtf((float)ds), o);
			rs_cpu_gated_rmsnorm_ref(o, z + n * ds, v->norm, ds,
			    1e-6f, y + n * ds);
		}
		mv(&v->ssm_out, y, out + t * n_embd);
	}
	free(mixed); free(u); free(cs); free(S); free(z); free(y); free(q);
	free(kk); free(o); free(b); free(a);
}

/* Rank R of N's view of block IL: its slices (malloc'd into *KEEP). */
static void
gdn_rank(const struct rs_model *m, int il, int r, int n,
    struct gdn_view *v, void *keep[8])
{
	const struct rs_layer *l = &m->layers[il];
	const struct rs_gguf_tensor *src[8] = { l->qkv, l->gate, l->beta,
	    l->alpha, l->conv1d, l->dt_bias, l->ssm_a, l->ssm_out };
	struct rs_gguf_tensor *dst[8] = { &v->qkv, &v->gate, &v->beta,
	    &v->alpha, &v->conv1d, &v->dt, &v->ssm_a, &v->ssm_out };
	struct rs_tp_heads h;

	rs_tp_heads(m, r, n, &h);
	v->n_kh = h.kh;
	v->n_vh = h.vh;
	for (int i = 0; i < 8; i++)
		*dst[i] = slice(m, il, src[i], r, n, &keep[i]);
}

START_TEST(gdn_ranks_add_up)
{
	enum { T = 3, N = 2 };
	struct rs_model *m;
	struct rs_err err;

	ck_assert_int_eq(rs_model_open(&m, t_fixture("tiny/model-q8_0.gguf"),
	    &err), RS_OK);
	const struct rs_layer *l = &m->layers[0];
	const int64_t d = m->hp.n_embd;
	ck_assert_int_eq(l->kind, RS_LAYER_GDN);
	struct gdn_view whole = {
		*l->qkv, *l->gate, *l->beta, *l->alpha, *l->conv1d,
		*l->dt_bias, *l->ssm_a, *l->ssm_out, l->ssm_norm->data,
		(int)m->hp.ssm_n_kh, (int)m->hp.ssm_n_vh,
		(int)m->hp.ssm_d_state, (int)m->hp.ssm_conv_kernel };
	float *h = malloc((size_t)(T * d) * 4), *ref = malloc((size_t)(T * d) *
	    4), *sum = calloc((size_t)(T * d), 4), *part = malloc((size_t)(T *
	    d) * 4);

	srand(7);
	for (int64_t i = 0; i < T * d; i++)
		h[i] = (float)rand() / RAND_MAX * 2.0f - 1.0f;
	gdn_run(&whole, h, T, d, ref);
	for (int r = 0; r < N; r++) {
		struct gdn_view v = whole;
		void *keep[8];
		gdn_rank(m, 0, r, N, &v, keep);
		gdn_run(&v, h, T, d, part);
		for (int64_t i = 0; i < T * d; i++)
			sum[i] += part[i];
		for (int i = 0; i < 8; i++)
			free(keep[i]);
	}
	const double e = rs_verify_rel_err(sum, ref, T * d);
	ck_assert_msg(e < 1e-5, "GDN block over %d ranks: rel err %.3g", N, e);
	free(h); free(ref); free(sum); free(part);
	rs_model_close(m);
}
END_TEST

/* ---- an attention block and an FFN per rank ---- */

struct attn_view {
	struct rs_gguf_tensor	 wq, wk, wv, wo;
	const float		*q_norm, *k_norm;
	int			 nh, nkv;
};

/*
 * T tokens of H at positions 0 .. T − 1 through §4.4 from an empty cache:
 * OUT (T, n_embd) gets attn_output's product.
 */
static void
attn_run(const struct rs_model *m, const struct attn_view *v, const float *h,
    int T, float *out)
{
	const struct rs_hparams *hp = &m->hp;
	const int hd = (int)hp->head_dim, hdv = (int)hp->head_dim_v;
	const int64_t d = hp->n_embd, g = v->nh / v->nkv;
	float *qg = malloc((size_t)v->nh * 2 * hd * 4);
	float *K = malloc((size_t)T * v->nkv * hd * 4);
	float *V = malloc((size_t)T * v->nkv * hdv * 4);
	float *o = malloc((size_t)v->nh * hdv * 4), *q = malloc((size_t)hd * 4);
	float *sc = malloc((size_t)T * 4), *cs = malloc((size_t)hd * 4);
	float *sn = malloc((size_t)hd * 4);

	for (int t = 0; t < T; t++) {
		const int32_t pos4[4] = { t, t, t, 0 };
		float *kt = K + (int64_t)t * v->nkv * hd;

		rs_cpu_rope_angles(pos4, hp->rope_sections, (int)hp->n_rot,
		    hp->rope_base, cs, sn);
		mv(&v->wq, h + t * d, qg);
		mv(&v->wk, h + t * d, kt);
		mv(&v->wv, h + t * d, V + (int64_t)t * v->nkv * hdv);
		for (int j = 0; j < v->nkv; j++) {
			rs_cpu_rmsnorm_ref(kt + j * hd, v->k_norm, hd,
			    hp->rms_eps, kt + j * hd);
			rs_cpu_rope_ref(kt + j * hd, (int)hp->n_rot, cs, sn);
		}
		for (int i = 0; i < v->nh; i++) {
			const float *gate = qg + (int64_t)i * 2 * hd + hd;
			const int64_t j = i / g;	/* GQA */
			rs_cpu_rmsnorm_ref(qg + (int64_t)i * 2 * hd, v->q_norm,
			    hd, hp->rms_eps, q);
			rs_cpu_rope_ref(q, (int)hp->n_rot, cs, sn);
			rs_cpu_attn_ref(q, K + j * hd, (int64_t)v->nkv * hd,
			    V + j * hdv, (int64_t)v->nkv * hdv, t + 1, hd, hdv,
			    1.0f / sqrtf((float)hd), o + i * hdv, sc);
			for (int e = 0; e < hdv; e++)
				o[i * hdv + e] *= rs_cpu_sigmoid(gate[e]);
		}
		mv(&v->wo, o, out + t * d);
	}
	free(qg); free(K); free(V); free(o); free(q); free(sc); free(cs);
	free(sn);
}

/* SwiGLU (§4.3): OUT = down · (silu(gate · h) ⊙ (up · h)), T tokens. */
static void
ffn_run(const struct rs_gguf_tensor *gate, const struct rs_gguf_tensor *up,
    const struct rs_gguf_tensor *down, const float *h, int T, int64_t d,
    float *out)
{
	const int64_t ff = gate->ne[1];
	float *a = malloc((size_t)ff * 4), *b = malloc((size_t)ff * 4);

	for (int t = 0; t < T; t++) {
		mv(gate, h + t * d, a);
		mv(up, h + t * d, b);
		for (int64_t i = 0; i < ff; i++)
			a[i] = rs_cpu_silu(a[i]) * b[i];
		mv(down, a, out + t * d);
	}
	free(a);
	free(b);
}

START_TEST(attn_ffn_ranks_add_up)
{
	enum { T = 4, N = 2 };
	struct rs_model *m;
	struct rs_err err;

	ck_assert_int_eq(rs_model_open(&m, t_fixture("tiny/model-q8_0.gguf"),
	    &err), RS_OK);
	int il = 0;
	while (m->layers[il].kind != RS_LAYER_ATTN)
		il++;
	const struct rs_layer *l = &m->layers[il];
	const int64_t d = m->hp.n_embd;
	const struct attn_view whole = { *l->wq, *l->wk, *l->wv, *l->wo,
	    l->q_norm->data, l->k_norm->data, (int)m->hp.n_head,
	    (int)m->hp.n_head_kv };
	const size_t bytes = (size_t)(T * d) * 4;
	float *h = malloc(bytes), *ref = malloc(bytes), *fref = malloc(bytes);
	float *sum = calloc(1, bytes), *fsum = calloc(1, bytes);
	float *part = malloc(bytes);

	srand(11);
	for (int64_t i = 0; i < T * d; i++)
		h[i] = (float)rand() / RAND_MAX * 2.0f - 1.0f;
	attn_run(m, &whole, h, T, ref);
	ffn_run(l->ffn_gate, l->ffn_up, l->ffn_down, h, T, d, fref);
	for (int r = 0; r < N; r++) {
		struct rs_tp_heads hs;
		void *keep[7];
		rs_tp_heads(m, r, N, &hs);
		const struct attn_view v = { slice(m, il, l->wq, r, N, &keep[0]),
		    slice(m, il, l->wk, r, N, &keep[1]),
		    slice(m, il, l->wv, r, N, &keep[2]),
		    slice(m, il, l->wo, r, N, &keep[3]), whole.q_norm,
		    whole.k_norm, hs.qh, hs.kvh };
		attn_run(m, &v, h, T, part);
		for (int64_t i = 0; i < T * d; i++)
			sum[i] += part[i];
		const struct rs_gguf_tensor g = slice(m, il, l->ffn_gate, r, N,
		    &keep[4]), u = slice(m, il, l->ffn_up, r, N, &keep[5]),
		    dn = slice(m, il, l->ffn_down, r, N, &keep[6]);
		ffn_run(&g, &u, &dn, h, T, d, part);
		for (int64_t i = 0; i < T * d; i++)
			fsum[i] += part[i];
		for (int i = 0; i < 7; i++)
			free(keep[i]);
	}
	const double ea = rs_verify_rel_err(sum, ref, T * d);
	const double ef = rs_verify_rel_err(fsum, fref, T * d);
	ck_assert_msg(ea < 1e-5 && ef < 1e-5, "over %d ranks: attention rel "
	    "err %.3g, FFN %.3g", N, ea, ef);
	free(h); free(ref); free(fref); free(sum); free(fsum); free(part);
	rs_model_close(m);
}
END_TEST

Suite *
tp_suite(void)
{
	Suite	*s = suite_create("tp");
	TCase	*c = tcase_create("plan");

	tcase_add_test(c, plan_27b);
	tcase_add_test(c, refused);
	tcase_add_test(c, slices_tiny);
	tcase_add_test(c, gdn_ranks_add_up);
	tcase_add_test(c, attn_ffn_ranks_add_up);
	suite_add_tcase(s, c);
	return (s);
}
