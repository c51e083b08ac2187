/*
 * rs_model.c - bind a GGUF's keys and tensors to the qwen35 layout and check
 * every shape against the hyperparameters (qwen35-model.md §2.2-§3.4).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs_model.h"
#include "rs_types.h"
#include "rs_utf8.h"

#define BIND_OPTIONAL	0x1	/* absent is fine: the view stays NULL */
#define BIND_F32	0x2	/* must be f32 (vectors, conv taps) */

static enum rs_status read_hparams(struct rs_model *, struct rs_err *);
static enum rs_status bind_layers(struct rs_model *, struct rs_err *);
static enum rs_status check_no_scales(const struct rs_gguf *,
		    struct rs_err *);

void
rs_model_close(struct rs_model *m)
{
	if (m == NULL)
		return;
	rs_gguf_close(m->gguf);
	free(m->layers);
	free(m);
}

enum rs_status
rs_model_open(struct rs_model **out, const char *path, struct rs_err *err)
{
	struct rs_gguf	*g;
	enum rs_status	 st;

	if ((st = rs_gguf_open(&g, path, err)) != RS_OK)
		return (st);
	return (rs_model_from_gguf(out, g, err));
}

enum rs_status
rs_model_from_gguf(struct rs_model **out, struct rs_gguf *g,
    struct rs_err *err)
{
	struct rs_model	*m;
	enum rs_status	 st;

	if ((m = calloc(1, sizeof(*m))) == NULL) {
		rs_gguf_close(g);
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	}
	m->gguf = g;
	if ((st = read_hparams(m, err)) != RS_OK ||
	    (st = bind_layers(m, err)) != RS_OK ||
	    (st = check_no_scales(g, err)) != RS_OK) {
		rs_model_close(m);
		return (st);
	}
	*out = m;
	return (RS_OK);
}

/* ---- hyperparameters ---- */

/*
 * KEY as u32; per-layer keys may also be arrays, which we accept only when
 * every block has the same value (the qwen35 family never varies them).
 */
static enum rs_status
get_uniform_u32(const struct rs_gguf *g, const char *key, uint32_t *out,
    int opt, struct rs_err *err)
{
	const struct rs_gguf_kv *kv = rs_gguf_find_kv(g, key);

	if (kv == NULL || kv->type != RS_GGUF_ARRAY)
		return (opt ? rs_gguf_get_u32_opt(g, key, out, err) :
		    rs_gguf_get_u32(g, key, out, err));
	if (kv->arr_len == 0 || kv->arr_type == RS_GGUF_STRING ||
	    kv->arr_type == RS_GGUF_F32 || kv->arr_type == RS_GGUF_F64)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "key '%s' must be u32 or a non-empty integer array", key));
	int64_t v0 = rs_gguf_arr_int(kv, 0);
	for (uint64_t i = 1; i < kv->arr_len; i++)
		if (rs_gguf_arr_int(kv, i) != v0)
			return (rs_errf(err, RS_ERR_UNSUPPORTED,
			    "key '%s' varies per layer, which qwen35 never does",
			    key));
	if (v0 < 0 || v0 > UINT32_MAX)
		return (rs_errf(err, RS_ERR_FORMAT, "key '%s' is %lld", key,
		    (long long)v0));
	*out = (uint32_t)v0;
	return (RS_OK);
}

static enum rs_status
check_arch(const struct rs_gguf *g, struct rs_err *err)
{
	struct rs_gguf_str arch;
	enum rs_status	st;
	char		q[RS_UTF8_QUOTE_SIZE];

	if ((st = rs_gguf_get_str(g, "general.architecture", &arch, err)) != RS_OK)
		return (st);
	if (arch.len == strlen(RS_MODEL_ARCH) &&
	    memcmp(arch.ptr, RS_MODEL_ARCH, arch.len) == 0)
		return (RS_OK);
	return (rs_errf(err, RS_ERR_UNSUPPORTED,
	    "architecture '%s' is not supported (only %s)",
	    rs_utf8_quote(arch.ptr, (size_t)arch.len, q), RS_MODEL_ARCH));
}

static enum rs_status
read_keys(const struct rs_gguf *g, struct rs_hparams *hp, struct rs_err *err)
{
	enum rs_status	st;
	int64_t		sec[4];
	size_t		nsec = 0;

#define U32(k, f)	if ((st = rs_gguf_get_u32(g, "qwen35." k, &hp->f, err)) != RS_OK) return (st)
#define U32_OPT(k, f)	if ((st = rs_gguf_get_u32_opt(g, "qwen35." k, &hp->f, err)) != RS_OK) return (st)
#define UNI(k, f, o)	if ((st = get_uniform_u32(g, "qwen35." k, &hp->f, o, err)) != RS_OK) return (st)
	U32("block_count", n_layer_all);
	U32_OPT("nextn_predict_layers", n_nextn);
	U32("context_length", n_ctx_train);
	U32("embedding_length", n_embd);
	UNI("feed_forward_length", n_ff, 0);
	UNI("attention.head_count", n_head, 0);
	hp->n_head_kv = hp->n_head;
	UNI("attention.head_count_kv", n_head_kv, 1);
	U32("attention.key_length", head_dim);
	U32("attention.value_length", head_dim_v);
	hp->n_rot = hp->head_dim;
	U32_OPT("rope.dimension_count", n_rot);
	hp->full_attn_interval = 4;
	U32_OPT("full_attention_interval", full_attn_interval);
	U32("ssm.conv_kernel", ssm_conv_kernel);
	U32("ssm.state_size", ssm_d_state);
	U32("ssm.group_count", ssm_n_kh);
	U32("ssm.time_step_rank", ssm_n_vh);
	U32("ssm.inner_size", ssm_d_inner);
#undef U32
#undef U32_OPT
#undef UNI
	if ((st = rs_gguf_get_f32(g, "qwen35.attention.layer_norm_rms_epsilon",
	    &hp->rms_eps, err)) != RS_OK)
		return (st);
	hp->rope_base = 10000.0f;
	if ((st = rs_gguf_get_f32_opt(g, "qwen35.rope.freq_base",
	    &hp->rope_base, err)) != RS_OK)
		return (st);
	if ((st = rs_gguf_get_int_array(g, "qwen35.rope.dimension_sections",
	    sec, 4, &nsec, err)) != RS_OK)
		return (st);
	for (size_t i = 0; i < 4; i++) {
		if (i < nsec && (sec[i] < 0 || sec[i] > 4096))
			return (rs_errf(err, RS_ERR_FORMAT,
			    "rope section %zu is %lld", i, (long long)sec[i]));
		hp->rope_sections[i] = i < nsec ? (uint32_t)sec[i] : 0;
	}
	return (RS_OK);
}

/* Relations between the hyperparameters that the forward pass relies on. */
static enum rs_status
check_hparams(const struct rs_hparams *hp, struct rs_err *err)
{
	uint32_t secsum = hp->rope_sections[0] + hp->rope_sections[1] +
	    hp->rope_sections[2] + hp->rope_sections[3];

#define REQUIRE(cond, ...) if (!(cond)) return (rs_errf(err, RS_ERR_FORMAT, __VA_ARGS__))
	REQUIRE(hp->n_nextn <= 1 && hp->n_nextn < hp->n_layer_all,
	    "nextn_predict_layers is %u with block_count %u (expected 0 or 1)",
	    hp->n_nextn, hp->n_layer_all);
	REQUIRE(hp->n_layer_all <= 4096, "block_count %u is implausible",
	    hp->n_layer_all);
	/* the tools' default context: 0 left every one of them refusing,
	   2^31 and more wrapped to a negative size in some, 1 leaves no
	   room to generate */
	REQUIRE(hp->n_ctx_train > 0, "context_length is 0");
	REQUIRE(hp->n_ctx_train >= 2 && hp->n_ctx_train <= RS_CTX_MAX,
	    "context_length %u is outside [2, 2^24] (the largest context "
	    "the engine takes)", hp->n_ctx_train);
	REQUIRE(hp->n_embd > 0 && hp->n_embd <= 65536,
	    "embedding_length %u is outside [1, 65536]", hp->n_embd);
	REQUIRE(hp->n_ff > 0 && hp->n_ff <= 1 << 20,
	    "feed_forward_length %u is outside [1, 2^20]", hp->n_ff);
	REQUIRE(hp->n_head > 0 && hp->n_head_kv > 0 &&
	    hp->n_head % hp->n_head_kv == 0 && hp->n_head <= 1024,
	    "head_count %u must be a positive multiple of head_count_kv %u",
	    hp->n_head, hp->n_head_kv);
	REQUIRE(hp->head_dim > 0 && hp->head_dim <= 1024 &&
	    hp->head_dim_v > 0 && hp->head_dim_v <= 1024,
	    "key_length %u / value_length %u outside [1, 1024]",
	    hp->head_dim, hp->head_dim_v);
	/* the output gate multiplies o element-wise: one width for q, the
	   gate and v (llama.cpp cannot run such a file either) */
	if (hp->head_dim != hp->head_dim_v)
		return (rs_errf(err, RS_ERR_UNSUPPORTED, "key_length %u != "
		    "value_length %u is not supported", hp->head_dim,
		    hp->head_dim_v));
	REQUIRE(hp->n_rot > 0 && hp->n_rot % 2 == 0 && hp->n_rot <= hp->head_dim,
	    "rope.dimension_count %u must be even and at most key_length %u",
	    hp->n_rot, hp->head_dim);
	REQUIRE(secsum > 0, "rope.dimension_sections are all zero");
	REQUIRE(hp->full_attn_interval > 0, "full_attention_interval is 0");
	REQUIRE(hp->ssm_conv_kernel >= 1 && hp->ssm_conv_kernel <= 16,
	    "ssm.conv_kernel %u outside [1, 16]", hp->ssm_conv_kernel);
	REQUIRE(hp->ssm_d_state > 0 && hp->ssm_d_state <= 1024,
	    "ssm.state_size %u outside [1, 1024]", hp->ssm_d_state);
	REQUIRE(hp->ssm_n_kh > 0 && hp->ssm_n_vh > 0 &&
	    hp->ssm_n_vh % hp->ssm_n_kh == 0 && hp->ssm_n_vh <= 1024,
	    "ssm.time_step_rank %u must be a positive multiple of "
	    "ssm.group_count %u", hp->ssm_n_vh, hp->ssm_n_kh);
	REQUIRE(hp->ssm_d_inner == hp->ssm_n_vh * hp->ssm_d_state,
	    "ssm.inner_size %u != time_step_rank %u x state_size %u",
	    hp->ssm_d_inner, hp->ssm_n_vh, hp->ssm_d_state);
	REQUIRE(hp->rms_eps > 0.0f && hp->rms_eps < 1.0f,
	    "layer_norm_rms_epsilon %g outside (0, 1)", (double)hp->rms_eps);
	REQUIRE(hp->rope_base > 1.0f && isfinite(hp->rope_base),
	    "rope.freq_base %g must be finite and exceed 1",
	    (double)hp->rope_base);
#undef REQUIRE
	return (RS_OK);
}

/*
 * Rope keys that llama.cpp applies and the engine does not (qwen35-model.md
 * §2.2: absent for this model), refused unless they change nothing, since
 * the logits would differ without a word: scaling.attn_factor multiplies
 * the rotation's sine and cosine whatever the scaling type; a
 * scaling.factor, or the older scale_linear where it is absent, other than
 * 0 or 1 scales the frequencies (YaRN, linear) unless the type is "none".
 */
static enum rs_status
check_rope_keys(const struct rs_gguf *g, struct rs_err *err)
{
	struct rs_gguf_str	 type;
	const char		*key = "qwen35.rope.scaling.factor";
	float			 f = 1.0f, attn = 1.0f;
	enum rs_status		 st;

	if ((st = rs_gguf_get_f32_opt(g, "qwen35.rope.scaling.attn_factor",
	    &attn, err)) != RS_OK)
		return (st);
	if (attn != 1.0f)
		return (rs_errf(err, RS_ERR_UNSUPPORTED, "rope attention factor "
		    "%g (qwen35.rope.scaling.attn_factor) is not supported",
		    (double)attn));
	if (rs_gguf_find_kv(g, key) == NULL)
		key = "qwen35.rope.scale_linear";
	if ((st = rs_gguf_get_f32_opt(g, key, &f, err)) != RS_OK)
		return (st);
	if (rs_gguf_get_str(g, "qwen35.rope.scaling.type", &type, NULL) ==
	    RS_OK && type.len == 4 && memcmp(type.ptr, "none", 4) == 0)
		return (RS_OK);
	if (f != 0.0f && f != 1.0f)
		return (rs_errf(err, RS_ERR_UNSUPPORTED, "rope scaling by %g "
		    "(%s) is not supported", (double)f, key));
	return (RS_OK);
}

/*
 * Keys that change the forward pass, which the engine must not take in
 * part (qwen35-model.md §2.2): attention.recurrent_layers holds one flag a
 * block (a shorter array left the other blocks to the interval rule, a
 * float array read as zeros), and the rope keys above.
 */
static enum rs_status
check_forward_keys(const struct rs_gguf *g, const struct rs_hparams *hp,
    struct rs_err *err)
{
	const struct rs_gguf_kv	*kv;

	kv = rs_gguf_find_kv(g, "qwen35.attention.recurrent_layers");
	if (kv != NULL && (kv->type != RS_GGUF_ARRAY || kv->arr_len !=
	    hp->n_layer_all || kv->arr_type == RS_GGUF_F32 ||
	    kv->arr_type == RS_GGUF_F64 || kv->arr_type == RS_GGUF_STRING ||
	    kv->arr_type == RS_GGUF_ARRAY))
		return (rs_errf(err, RS_ERR_FORMAT, "qwen35.attention."
		    "recurrent_layers is not an array of %u integer flags (one "
		    "a block)", hp->n_layer_all));
	return (check_rope_keys(g, err));
}

/*
 * One shard of a split model (qwen35-model.md §2.1) holds some of the
 * tensors and, past the first, none of the keys: say so before a missing
 * key or tensor is named instead.
 */
static enum rs_status
check_not_split(const struct rs_gguf *g, struct rs_err *err)
{
	const struct rs_gguf_kv	*kv = rs_gguf_find_kv(g, "split.count");
	int64_t			 n;

	if (kv == NULL || rs_gguf_kv_int(kv, &n, NULL) != RS_OK || n <= 1)
		return (RS_OK);
	return (rs_errf(err, RS_ERR_UNSUPPORTED, "one shard of a model split "
	    "into %lld files (split.count): merge them into one file first "
	    "(llama-gguf-split --merge)", (long long)n));
}

static enum rs_status
read_hparams(struct rs_model *m, struct rs_err *err)
{
	enum rs_status	st;

	if ((st = check_not_split(m->gguf, err)) != RS_OK ||
	    (st = check_arch(m->gguf, err)) != RS_OK ||
	    (st = read_keys(m->gguf, &m->hp, err)) != RS_OK)
		return (st);
	m->hp.n_layer = m->hp.n_layer_all - m->hp.n_nextn;
	if ((st = check_hparams(&m->hp, err)) != RS_OK)
		return (st);
	return (check_forward_keys(m->gguf, &m->hp, err));
}

enum rs_layer_kind
rs_model_layer_kind(const struct rs_model *m, uint32_t il)
{
	const struct rs_gguf_kv *kv;

	if (il >= m->hp.n_layer)
		return (RS_LAYER_MTP);
	kv = rs_gguf_find_kv(m->gguf, "qwen35.attention.recurrent_layers");
	if (kv != NULL && kv->type == RS_GGUF_ARRAY && il < kv->arr_len)
		return (rs_gguf_arr_int(kv, il) ? RS_LAYER_GDN : RS_LAYER_ATTN);
	return ((il + 1) % m->hp.full_attn_interval == 0 ?
	    RS_LAYER_ATTN : RS_LAYER_GDN);
}

/* ---- tensors ---- */

/*
 * Per-tensor output scales ("<name>.scale", shape {1}: NVFP4 conversions)
 * multiply a product's output where present (qwen35-model.md §2.2); the
 * engine does not apply them, so a file that has any is refused rather
 * than computed without them.
 */
static enum rs_status
check_no_scales(const struct rs_gguf *g, struct rs_err *err)
{
	for (int64_t i = 0; i < rs_gguf_n_tensors(g); i++) {
		const char	*name = rs_gguf_tensor(g, i)->name;
		size_t		 len = strlen(name);
		char		 q[RS_UTF8_QUOTE_SIZE];

		if (len >= 6 && strcmp(name + len - 6, ".scale") == 0)
			return (rs_errf(err, RS_ERR_UNSUPPORTED, "tensor '%s': "
			    "per-tensor output scales are not supported",
			    rs_utf8_quote(name, len, q)));
	}
	return (RS_OK);
}

/*
 * Bind the tensor NAME (printf format with LAYER) to *OUT and check that it
 * is NE0 x NE1 (NE1 == 0: a vector) and readable.
 */
static enum rs_status
bind(struct rs_model *m, const struct rs_gguf_tensor **out, int flags,
    int64_t ne0, int64_t ne1, struct rs_err *err, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

static enum rs_status
bind(struct rs_model *m, const struct rs_gguf_tensor **out, int flags,
    int64_t ne0, int64_t ne1, struct rs_err *err, const char *fmt, ...)
{
	const struct rs_gguf_tensor *t;
	const struct rs_type_traits *tt;
	char	name[96];
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	*out = NULL;
	if ((t = rs_gguf_find_tensor(m->gguf, name)) == NULL) {
		if (flags & BIND_OPTIONAL)
			return (RS_OK);
		return (rs_errf(err, RS_ERR_FORMAT, "missing tensor '%s'",
		    name));
	}
	int dims = ne1 == 0 ? 1 : 2;
	if (t->ne[0] != ne0 || (dims == 2 && t->ne[1] != ne1) ||
	    (dims == 1 && t->ne[1] != 1) || t->ne[2] != 1 || t->ne[3] != 1) {
		if (dims == 1)
			return (rs_errf(err, RS_ERR_FORMAT,
			    "tensor '%s': shape {%lld, %lld} but the "
			    "hyperparameters need {%lld}", name,
			    (long long)t->ne[0], (long long)t->ne[1],
			    (long long)ne0));
		return (rs_errf(err, RS_ERR_FORMAT,
		    "tensor '%s': shape {%lld, %lld} but the hyperparameters "
		    "need {%lld, %lld}", name, (long long)t->ne[0],
		    (long long)t->ne[1], (long long)ne0, (long long)ne1));
	}
	tt = rs_type_traits(t->type);
	if (tt == NULL || tt->to_float == NULL)
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "tensor '%s': type %s cannot hold weights", name,
		    rs_type_name(t->type)));
	if ((flags & BIND_F32) && t->type != 0)
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "tensor '%s': type %s, expected f32", name,
		    tt->name));
	*out = t;
	return (RS_OK);
}

static enum rs_status
bind_ffn(struct rs_model *m, struct rs_layer *l, uint32_t il,
    struct rs_err *err)
{
	const struct rs_hparams *hp = &m->hp;
	enum rs_status st;

	if ((st = bind(m, &l->attn_norm, BIND_F32, hp->n_embd, 0, err,
	    "blk.%u.attn_norm.weight", il)) != RS_OK ||
	    (st = bind(m, &l->post_norm, BIND_F32, hp->n_embd, 0, err,
	    "blk.%u.post_attention_norm.weight", il)) != RS_OK ||
	    (st = bind(m, &l->ffn_gate, 0, hp->n_embd, hp->n_ff, err,
	    "blk.%u.ffn_gate.weight", il)) != RS_OK ||
	    (st = bind(m, &l->ffn_up, 0, hp->n_embd, hp->n_ff, err,
	    "blk.%u.ffn_up.weight", il)) != RS_OK ||
	    (st = bind(m, &l->ffn_down, 0, hp->n_ff, hp->n_embd, err,
	    "blk.%u.ffn_down.weight", il)) != RS_OK)
		return (st);
	return (RS_OK);
}

static enum rs_status
bind_gdn(struct rs_model *m, struct rs_layer *l, uint32_t il,
    struct rs_err *err)
{
	const struct rs_hparams *hp = &m->hp;
	int64_t	kdim = (int64_t)hp->ssm_n_kh * hp->ssm_d_state;
	int64_t	channels = 2 * kdim + hp->ssm_d_inner;
	enum rs_status st;

	if ((st = bind(m, &l->qkv, 0, hp->n_embd, channels, err,
	    "blk.%u.attn_qkv.weight", il)) != RS_OK ||
	    (st = bind(m, &l->gate, 0, hp->n_embd, hp->ssm_d_inner, err,
	    "blk.%u.attn_gate.weight", il)) != RS_OK ||
	    (st = bind(m, &l->beta, 0, hp->n_embd, hp->ssm_n_vh, err,
	    "blk.%u.ssm_beta.weight", il)) != RS_OK ||
	    (st = bind(m, &l->alpha, 0, hp->n_embd, hp->ssm_n_vh, err,
	    "blk.%u.ssm_alpha.weight", il)) != RS_OK ||
	    (st = bind(m, &l->conv1d, BIND_F32, hp->ssm_conv_kernel, channels,
	    err, "blk.%u.ssm_conv1d.weight", il)) != RS_OK ||
	    (st = bind(m, &l->dt_bias, BIND_F32, hp->ssm_n_vh, 0, err,
	    "blk.%u.ssm_dt.bias", il)) != RS_OK ||
	    (st = bind(m, &l->ssm_a, BIND_F32, hp->ssm_n_vh, 0, err,
	    "blk.%u.ssm_a", il)) != RS_OK ||
	    (st = bind(m, &l->ssm_norm, BIND_F32, hp->ssm_d_state, 0, err,
	    "blk.%u.ssm_norm.weight", il)) != RS_OK ||
	    (st = bind(m, &l->ssm_out, 0, hp->ssm_d_inner, hp->n_embd, err,
	    "blk.%u.ssm_out.weight", il)) != RS_OK)
		return (st);
	return (RS_OK);
}

static enum rs_status
bind_attn(struct rs_model *m, struct rs_layer *l, uint32_t il,
    struct rs_err *err)
{
	const struct rs_hparams *hp = &m->hp;
	int64_t	qdim = 2 * (int64_t)hp->n_head * hp->head_dim;
	int64_t	kdim = (int64_t)hp->n_head_kv * hp->head_dim;
	int64_t	vdim = (int64_t)hp->n_head_kv * hp->head_dim_v;
	int64_t	odim = (int64_t)hp->n_head * hp->head_dim_v;
	enum rs_status st;

	if ((st = bind(m, &l->wq, 0, hp->n_embd, qdim, err,
	    "blk.%u.attn_q.weight", il)) != RS_OK ||
	    (st = bind(m, &l->wk, 0, hp->n_embd, kdim, err,
	    "blk.%u.attn_k.weight", il)) != RS_OK ||
	    (st = bind(m, &l->wv, 0, hp->n_embd, vdim, err,
	    "blk.%u.attn_v.weight", il)) != RS_OK ||
	    (st = bind(m, &l->wo, 0, odim, hp->n_embd, err,
	    "blk.%u.attn_output.weight", il)) != RS_OK ||
	    (st = bind(m, &l->q_norm, BIND_F32, hp->head_dim, 0, err,
	    "blk.%u.attn_q_norm.weight", il)) != RS_OK ||
	    (st = bind(m, &l->k_norm, BIND_F32, hp->head_dim, 0, err,
	    "blk.%u.attn_k_norm.weight", il)) != RS_OK)
		return (st);
	return (RS_OK);
}

static enum rs_status
bind_mtp(struct rs_model *m, struct rs_layer *l, uint32_t il,
    struct rs_err *err)
{
	const struct rs_hparams *hp = &m->hp;
	enum rs_status st;

	if ((st = bind_attn(m, l, il, err)) != RS_OK ||
	    (st = bind(m, &l->eh_proj, 0, 2 * (int64_t)hp->n_embd, hp->n_embd,
	    err, "blk.%u.nextn.eh_proj.weight", il)) != RS_OK ||
	    (st = bind(m, &l->enorm, BIND_F32, hp->n_embd, 0, err,
	    "blk.%u.nextn.enorm.weight", il)) != RS_OK ||
	    (st = bind(m, &l->hnorm, BIND_F32, hp->n_embd, 0, err,
	    "blk.%u.nextn.hnorm.weight", il)) != RS_OK ||
	    (st = bind(m, &l->head_norm, BIND_F32 | BIND_OPTIONAL, hp->n_embd,
	    0, err, "blk.%u.nextn.shared_head_norm.weight", il)) != RS_OK ||
	    (st = bind(m, &l->mtp_embd, BIND_OPTIONAL, hp->n_embd, hp->n_vocab,
	    err, "blk.%u.nextn.embed_tokens.weight", il)) != RS_OK ||
	    (st = bind(m, &l->mtp_head, BIND_OPTIONAL, hp->n_embd, hp->n_vocab,
	    err, "blk.%u.nextn.shared_head_head.weight", il)) != RS_OK)
		return (st);
	if (l->head_norm == NULL)
		l->head_norm = m->output_norm;
	if (l->mtp_embd == NULL)
		l->mtp_embd = m->tok_embd;
	if (l->mtp_head == NULL)
		l->mtp_head = m->output;
	return (RS_OK);
}

static enum rs_status
bind_globals(struct rs_model *m, struct rs_err *err)
{
	const struct rs_gguf_tensor *t;
	const struct rs_gguf_kv *toks;
	enum rs_status st;

	if ((t = rs_gguf_find_tensor(m->gguf, "token_embd.weight")) == NULL)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "missing tensor 'token_embd.weight'"));
	if (t->ne[1] <= 0 || t->ne[1] > INT32_MAX)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "tensor 'token_embd.weight': %lld rows", (long long)t->ne[1]));
	m->hp.n_vocab = (uint32_t)t->ne[1];
	toks = rs_gguf_find_kv(m->gguf, "tokenizer.ggml.tokens");
	if (toks != NULL && toks->type == RS_GGUF_ARRAY &&
	    toks->arr_len != m->hp.n_vocab)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "tokenizer has %llu tokens but token_embd has %u rows",
		    (unsigned long long)toks->arr_len, m->hp.n_vocab));
	if ((st = bind(m, &m->tok_embd, 0, m->hp.n_embd, m->hp.n_vocab, err,
	    "token_embd.weight")) != RS_OK ||
	    (st = bind(m, &m->output_norm, BIND_F32, m->hp.n_embd, 0, err,
	    "output_norm.weight")) != RS_OK ||
	    (st = bind(m, &m->output, BIND_OPTIONAL, m->hp.n_embd,
	    m->hp.n_vocab, err, "output.weight")) != RS_OK)
		return (st);
	if (m->output == NULL)
		m->output = m->tok_embd;	/* tied embeddings (§4.7) */
	return (RS_OK);
}

static enum rs_status
bind_layers(struct rs_model *m, struct rs_err *err)
{
	enum rs_status st;

	if ((st = bind_globals(m, err)) != RS_OK)
		return (st);
	m->layers = calloc(m->hp.n_layer_all, sizeof(*m->layers));
	if (m->layers == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	for (uint32_t il = 0; il < m->hp.n_layer_all; il++) {
		struct rs_layer *l = &m->layers[il];
		l->kind = rs_model_layer_kind(m, il);
		if ((st = bind_ffn(m, l, il, err)) != RS_OK)
			return (st);
		switch (l->kind) {
		case RS_LAYER_GDN:
			st = bind_gdn(m, l, il, err);
			break;
		case RS_LAYER_ATTN:
			st = bind_attn(m, l, il, err);
			break;
		case RS_LAYER_MTP:
			st = bind_mtp(m, l, il, err);
			break;
		}
		if (st != RS_OK)
			return (st);
	}
	return (RS_OK);
}

/* ---- sizes ---- */

static uint64_t
layer_bytes(const struct rs_layer *l)
{
	const struct rs_gguf_tensor *const ts[] = {
		l->attn_norm, l->post_norm, l->ffn_gate, l->ffn_up, l->ffn_down,
		l->qkv, l->gate, l->beta, l->alpha, l->conv1d, l->dt_bias,
		l->ssm_a, l->ssm_norm, l->ssm_out, l->wq, l->wk, l->wv, l->wo,
		l->q_norm, l->k_norm, l->eh_proj, l->enorm, l->hnorm,
	};
	uint64_t sum = 0;

	for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
		if (ts[i] != NULL)
			sum += ts[i]->nbytes;
	return (sum);
}

static uint64_t
embd_row_bytes(const struct rs_gguf_tensor *t)
{
	return (t->nbytes / (uint64_t)t->ne[1]);
}

uint64_t
rs_model_decode_bytes(const struct rs_model *m)
{
	uint64_t sum = m->output_norm->nbytes + m->output->nbytes +
	    embd_row_bytes(m->tok_embd);

	for (uint32_t il = 0; il < m->hp.n_layer; il++)
		sum += layer_bytes(&m->layers[il]);
	return (sum);
}

uint64_t
rs_model_mtp_step_bytes(const struct rs_model *m)
{
	uint64_t sum = 0;

	for (uint32_t il = m->hp.n_layer; il < m->hp.n_layer_all; il++) {
		const struct rs_layer *l = &m->layers[il];
		sum += layer_bytes(l) + l->mtp_head->nbytes +
		    embd_row_bytes(l->mtp_embd);
		if (l->head_norm != m->output_norm)
			sum += l->head_norm->nbytes;
	}
	return (sum);
}
