/*
 * rs_synth.c - synthetic qwen35 GGUF files (see rs_synth.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs_blocks.h"
#include "rs_chat.h"
#include "rs_gguf.h"
#include "rs_gguf_write.h"
#include "rs_half.h"
#include "rs_synth.h"
#include "rs_types.h"

/* How to fill one tensor. */
enum init {
	INIT_MATRIX,	/* N(0, 1/n_in) */
	INIT_NORM,	/* 1 + N(0, 0.1^2): an RMSNorm weight with +1 baked */
	INIT_CONV,	/* N(0, 0.25) taps */
	INIT_SSM_A,	/* A = -exp(N(0, 0.25)) < 0 */
	INIT_SMALL	/* N(0, 0.25): biases */
};

struct synth {
	const struct rs_synth_cfg *cfg;
	enum init	*init;		/* per tensor, in add order */
	int		*type;
	int64_t		(*ne)[2];
	uint64_t	 done, total;	/* tensor bytes made, of the file's */
};

static const char *const specials[] = {
	"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>",
	"<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
};
#define N_SPECIALS	(sizeof(specials) / sizeof(specials[0]))

enum rs_status
rs_synth_preset(const char *name, struct rs_synth_cfg *c, struct rs_err *err)
{
	memset(c, 0, sizeof(*c));
	c->seed = 1;
	c->rope_base = 1e7f;
	c->ssm_conv_kernel = 4;
	c->n_nextn = 1;
	if (strcmp(name, "tiny") == 0) {
		c->n_embd = 256; c->n_ff = 512; c->n_layer = 4;
		c->n_vocab = 512; c->n_ctx = 4096;
		c->n_head = 4; c->n_head_kv = 2; c->head_dim = 64; c->n_rot = 16;
		c->rope_sections[0] = 3; c->rope_sections[1] = 3;
		c->rope_sections[2] = 2;
		c->ssm_n_kh = 4; c->ssm_n_vh = 12; c->ssm_d_state = 64;
		c->mix = RS_SYNTH_Q8_0;
		return (RS_OK);
	}
	if (strcmp(name, "27b") == 0) {
		c->n_embd = 5120; c->n_ff = 17408; c->n_layer = 64;
		c->n_vocab = 248320; c->n_ctx = 262144;
		c->n_head = 24; c->n_head_kv = 4; c->head_dim = 256;
		c->n_rot = 64;
		c->rope_sections[0] = 11; c->rope_sections[1] = 11;
		c->rope_sections[2] = 10;
		c->ssm_n_kh = 16; c->ssm_n_vh = 48; c->ssm_d_state = 128;
		c->mix = RS_SYNTH_Q4_K_M;
		c->random_blocks = 1;
		return (RS_OK);
	}
	return (rs_errf(err, RS_ERR_INVALID_ARG,
	    "unknown preset '%s' (tiny, 27b)", name));
}

/* ---- random numbers: splitmix64, Box-Muller ---- */

static uint64_t
next_u64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (z ^ (z >> 31));
}

static float
gauss(uint64_t *s)
{
	double u1 = ((next_u64(s) >> 11) + 1.0) / 9007199254740993.0;
	double u2 = (next_u64(s) >> 11) / 9007199254740992.0;

	return ((float)(sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2)));
}

/* ---- tensor types (§3.7) ---- */

static int
use_more_bits(uint32_t i, uint32_t n)
{
	return (i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2);
}

/* Type of matrix NAME in block IL (-1: a global) out of N blocks. */
static int
matrix_type(const struct rs_synth_cfg *c, const char *name, uint32_t il,
    uint32_t n)
{
	if (c->mix == RS_SYNTH_F16)
		return (RS_TYPE_F16);
	if (c->mix == RS_SYNTH_Q8_0)
		return (RS_TYPE_Q8_0);
	if (strcmp(name, "output") == 0)
		return (RS_TYPE_Q6_K);
	if (strcmp(name, "attn_v") == 0 || strcmp(name, "attn_qkv") == 0 ||
	    strcmp(name, "ffn_down") == 0)
		return (use_more_bits(il, n) ? RS_TYPE_Q6_K : RS_TYPE_Q4_K);
	return (RS_TYPE_Q4_K);
}

/* ---- the tensor table ---- */

struct table {
	struct rs_gguf_writer *w;
	struct synth	*s;
	int64_t		 n, cap;
};

static enum rs_status
add(struct table *tb, const char *name, int type, int64_t ne0, int64_t ne1,
    enum init init, struct rs_err *err)
{
	int64_t	ne[2] = { ne0, ne1 };
	enum rs_status st;

	if (tb->n == tb->cap) {
		tb->cap = tb->cap * 2 + 128;
		tb->s->init = realloc(tb->s->init, (size_t)tb->cap * sizeof(enum init));
		tb->s->type = realloc(tb->s->type, (size_t)tb->cap * sizeof(int));
		tb->s->ne = realloc(tb->s->ne, (size_t)tb->cap * sizeof(*tb->s->ne));
		if (!tb->s->init || !tb->s->type || !tb->s->ne)
			return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	}
	if ((st = rs_gguf_writer_tensor(tb->w, name, type, ne1 ? 2 : 1, ne,
	    err)) != RS_OK)
		return (st);
	tb->s->init[tb->n] = init;
	tb->s->type[tb->n] = type;
	tb->s->ne[tb->n][0] = ne0;
	tb->s->ne[tb->n][1] = ne1 ? ne1 : 1;
	tb->n++;
	return (RS_OK);
}

#define ADD(nm, ty, a, b, in)	do {					\
	snprintf(name, sizeof(name), "blk.%u." nm, il);			\
	if ((st = add(tb, name, ty, a, b, in, err)) != RS_OK)		\
		return (st);						\
} while (0)
#define MAT(nm, a, b)	ADD(nm ".weight", matrix_type(c, nm, il, nb), a, b, INIT_MATRIX)
#define VEC(nm, a, in)	ADD(nm, RS_TYPE_F32, a, 0, in)

static enum rs_status
add_attn(struct table *tb, const struct rs_synth_cfg *c, uint32_t il,
    uint32_t nb, struct rs_err *err)
{
	char	name[96];
	enum rs_status st;
	int64_t	e = c->n_embd, hd = c->head_dim;

	MAT("attn_q", e, 2 * c->n_head * hd);
	MAT("attn_k", e, c->n_head_kv * hd);
	MAT("attn_v", e, c->n_head_kv * hd);
	MAT("attn_output", c->n_head * hd, e);
	VEC("attn_q_norm.weight", hd, INIT_NORM);
	VEC("attn_k_norm.weight", hd, INIT_NORM);
	return (RS_OK);
}

static enum rs_status
add_block(struct table *tb, const struct rs_synth_cfg *c, uint32_t il,
    struct rs_err *err)
{
	char	 name[96];
	enum rs_status st;
	uint32_t nb = c->n_layer + c->n_nextn;
	int64_t	 e = c->n_embd;
	int64_t	 kd = (int64_t)c->ssm_n_kh * c->ssm_d_state;
	int64_t	 vd = (int64_t)c->ssm_n_vh * c->ssm_d_state;

	VEC("attn_norm.weight", e, INIT_NORM);
	if (il >= c->n_layer) {
		if ((st = add_attn(tb, c, il, nb, err)) != RS_OK)
			return (st);
		MAT("nextn.eh_proj", 2 * e, e);
		VEC("nextn.enorm.weight", e, INIT_NORM);
		VEC("nextn.hnorm.weight", e, INIT_NORM);
		VEC("nextn.shared_head_norm.weight", e, INIT_NORM);
	} else if ((il + 1) % 4 == 0) {
		if ((st = add_attn(tb, c, il, nb, err)) != RS_OK)
			return (st);
	} else {
		MAT("attn_qkv", e, 2 * kd + vd);
		MAT("attn_gate", e, vd);
		MAT("ssm_beta", e, c->ssm_n_vh);
		MAT("ssm_alpha", e, c->ssm_n_vh);
		ADD("ssm_conv1d.weight", RS_TYPE_F32, c->ssm_conv_kernel,
		    2 * kd + vd, INIT_CONV);
		VEC("ssm_dt.bias", c->ssm_n_vh, INIT_SMALL);
		VEC("ssm_a", c->ssm_n_vh, INIT_SSM_A);
		VEC("ssm_norm.weight", c->ssm_d_state, INIT_NORM);
		MAT("ssm_out", vd, e);
	}
	VEC("post_attention_norm.weight", e, INIT_NORM);
	MAT("ffn_gate", e, c->n_ff);
	MAT("ffn_up", e, c->n_ff);
	MAT("ffn_down", c->n_ff, e);
	return (RS_OK);
}

static enum rs_status
add_tensors(struct table *tb, const struct rs_synth_cfg *c, struct rs_err *err)
{
	enum rs_status st;
	int	embd = c->mix == RS_SYNTH_Q4_K_M ? RS_TYPE_Q4_K :
	    matrix_type(c, "token_embd", 0, 1);

	if ((st = add(tb, "token_embd.weight", embd, c->n_embd, c->n_vocab,
	    INIT_MATRIX, err)) != RS_OK ||
	    (st = add(tb, "output_norm.weight", RS_TYPE_F32, c->n_embd, 0,
	    INIT_NORM, err)) != RS_OK ||
	    (st = add(tb, "output.weight", matrix_type(c, "output", 0, 1),
	    c->n_embd, c->n_vocab, INIT_MATRIX, err)) != RS_OK)
		return (st);
	for (uint32_t il = 0; il < c->n_layer + c->n_nextn; il++)
		if ((st = add_block(tb, c, il, err)) != RS_OK)
			return (st);
	return (RS_OK);
}

/* ---- metadata ---- */

/* GPT-2 byte-level alphabet: printable bytes keep their code point. */
static void
byte_token(int b, char *out)
{
	int	cp = b, n = 0;

	if (!((b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) ||
	    (b >= 0xae && b <= 0xff))) {
		/* the k-th unprintable byte maps to U+0100 + k */
		for (int i = 0; i < b; i++)
			if (!((i >= 0x21 && i <= 0x7e) || (i >= 0xa1 && i <= 0xac) ||
			    (i >= 0xae && i <= 0xff)))
				n++;
		cp = 256 + n;
	}
	if (cp < 0x80) {
		out[0] = (char)cp;
		out[1] = '\0';
	} else {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		out[2] = '\0';
	}
}

static enum rs_status
add_vocab(struct rs_gguf_writer *w, const struct rs_synth_cfg *c,
    struct rs_err *err)
{
	char	**toks = calloc(c->n_vocab, sizeof(char *));
	int32_t	 *types = calloc(c->n_vocab, sizeof(int32_t));
	enum rs_status st = RS_OK;

	if (toks == NULL || types == NULL) {
		st = rs_errf(err, RS_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < c->n_vocab; i++) {
		if ((toks[i] = malloc(24)) == NULL) {
			st = rs_errf(err, RS_ERR_NOMEM, "out of memory");
			goto out;
		}
		if (i < 256) {
			byte_token((int)i, toks[i]);
			types[i] = 1;		/* normal */
		} else if (i - 256 < N_SPECIALS) {
			snprintf(toks[i], 24, "%s", specials[i - 256]);
			types[i] = toks[i][1] == '|' ? 3 : 4; /* control, user */
		} else {
			snprintf(toks[i], 24, "[PAD%u]", i);
			types[i] = 5;		/* unused */
		}
	}
	if (rs_gguf_writer_str(w, "tokenizer.ggml.model", "gpt2", 4) ||
	    rs_gguf_writer_str(w, "tokenizer.ggml.pre", "qwen35", 6) ||
	    rs_gguf_writer_str_array(w, "tokenizer.ggml.tokens",
	    (const char *const *)toks, c->n_vocab) ||
	    rs_gguf_writer_i32_array(w, "tokenizer.ggml.token_type", types,
	    c->n_vocab) ||
	    rs_gguf_writer_str_array(w, "tokenizer.ggml.merges", NULL, 0) ||
	    rs_gguf_writer_u32(w, "tokenizer.ggml.eos_token_id", 256 + 2) ||
	    rs_gguf_writer_u32(w, "tokenizer.ggml.padding_token_id", 256) ||
	    rs_gguf_writer_str(w, RS_CHAT_VARIANT_KEY, "qwen38", 6))
		st = rs_errf(err, RS_ERR_NOMEM, "out of memory");
out:
	for (uint32_t i = 0; toks != NULL && i < c->n_vocab; i++)
		free(toks[i]);
	free(toks);
	free(types);
	return (st);
}

static enum rs_status
add_keys(struct rs_gguf_writer *w, const struct rs_synth_cfg *c)
{
	int32_t	sec[4] = { (int32_t)c->rope_sections[0],
	    (int32_t)c->rope_sections[1], (int32_t)c->rope_sections[2],
	    (int32_t)c->rope_sections[3] };

	if (rs_gguf_writer_str(w, "general.architecture", "qwen35", 6) ||
	    rs_gguf_writer_str(w, "general.name", "redshift-synthetic", 18) ||
	    rs_gguf_writer_u32(w, "qwen35.block_count", c->n_layer + c->n_nextn) ||
	    rs_gguf_writer_u32(w, "qwen35.nextn_predict_layers", c->n_nextn) ||
	    rs_gguf_writer_u32(w, "qwen35.context_length", c->n_ctx) ||
	    rs_gguf_writer_u32(w, "qwen35.embedding_length", c->n_embd) ||
	    rs_gguf_writer_u32(w, "qwen35.feed_forward_length", c->n_ff) ||
	    rs_gguf_writer_u32(w, "qwen35.attention.head_count", c->n_head) ||
	    rs_gguf_writer_u32(w, "qwen35.attention.head_count_kv", c->n_head_kv) ||
	    rs_gguf_writer_u32(w, "qwen35.attention.key_length", c->head_dim) ||
	    rs_gguf_writer_u32(w, "qwen35.attention.value_length", c->head_dim) ||
	    rs_gguf_writer_f32(w, "qwen35.attention.layer_norm_rms_epsilon", 1e-6f) ||
	    rs_gguf_writer_u32(w, "qwen35.rope.dimension_count", c->n_rot) ||
	    rs_gguf_writer_i32_array(w, "qwen35.rope.dimension_sections", sec, 4) ||
	    rs_gguf_writer_f32(w, "qwen35.rope.freq_base", c->rope_base) ||
	    rs_gguf_writer_u32(w, "qwen35.ssm.conv_kernel", c->ssm_conv_kernel) ||
	    rs_gguf_writer_u32(w, "qwen35.ssm.state_size", c->ssm_d_state) ||
	    rs_gguf_writer_u32(w, "qwen35.ssm.group_count", c->ssm_n_kh) ||
	    rs_gguf_writer_u32(w, "qwen35.ssm.time_step_rank", c->ssm_n_vh) ||
	    rs_gguf_writer_u32(w, "qwen35.ssm.inner_size",
	    c->ssm_n_vh * c->ssm_d_state) ||
	    rs_gguf_writer_u32(w, "qwen35.full_attention_interval", 4))
		return (RS_ERR_NOMEM);
	return (RS_OK);
}

/* ---- data ---- */

static float
init_value(enum init in, int64_t n_in, uint64_t *rng)
{
	switch (in) {
	case INIT_MATRIX: return (gauss(rng) / sqrtf((float)n_in));
	case INIT_NORM: return (1.0f + 0.1f * gauss(rng));
	case INIT_CONV: return (0.5f * gauss(rng));
	case INIT_SSM_A: return (-expf(0.5f * gauss(rng)));
	default: return (0.5f * gauss(rng));
	}
}

/*
 * Random but valid blocks: random code bytes, then every f16 scale field
 * set to a small finite value so that weights have magnitude ~ 1/sqrt(n_in).
 */
static void
random_blocks(int type, int64_t n_in, unsigned char *buf, size_t nbytes,
    uint64_t *rng)
{
	const struct rs_type_traits *tt = rs_type_traits(type);
	uint16_t d = rs_f32_to_f16(0.02f / sqrtf((float)n_in));

	for (size_t i = 0; i < nbytes; i += 8) {
		uint64_t r = next_u64(rng);
		memcpy(buf + i, &r, nbytes - i < 8 ? nbytes - i : 8);
	}
	for (size_t off = 0; off < nbytes; off += (size_t)tt->block_bytes) {
		unsigned char *b = buf + off;
		switch (type) {
		case RS_TYPE_Q4_K: case RS_TYPE_Q5_K:
			memcpy(b, &d, 2);		/* d */
			memcpy(b + 2, &d, 2);		/* dmin */
			break;
		case RS_TYPE_Q6_K:
			memcpy(b + offsetof(struct rs_block_q6_k, d), &d, 2);
			break;
		case RS_TYPE_Q8_0:
			memcpy(b, &d, 2);
			break;
		}
	}
}

static enum rs_status
fill(void *ctx, int64_t i, void *buf, size_t nbytes, struct rs_err *err)
{
	struct synth	*s = ctx;
	int64_t		 n_in = s->ne[i][0], rows = s->ne[i][1];
	uint64_t	 rng = s->cfg->seed * 0x100000001b3ULL + (uint64_t)i;
	size_t		 row_bytes = nbytes / (size_t)rows;
	float		*row;
	enum rs_status	 st = RS_OK;

	if (s->cfg->progress != NULL)
		s->cfg->progress(s->cfg->progress_ctx, s->done, s->total);
	s->done += nbytes;
	if (s->cfg->random_blocks && s->type[i] != RS_TYPE_F32 &&
	    s->type[i] != RS_TYPE_F16) {
		random_blocks(s->type[i], n_in, buf, nbytes, &rng);
		return (RS_OK);
	}
	if ((row = malloc((size_t)n_in * sizeof(float))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	for (int64_t r = 0; r < rows && st == RS_OK; r++) {
		for (int64_t k = 0; k < n_in; k++)
			row[k] = init_value(s->init[i], n_in, &rng);
		st = rs_quant_row(s->type[i], row,
		    (unsigned char *)buf + (size_t)r * row_bytes, n_in, err);
	}
	free(row);
	return (st);
}

enum rs_status
rs_synth_write(const struct rs_synth_cfg *cfg, const char *path,
    struct rs_err *err)
{
	struct rs_gguf_writer *w = NULL;
	struct synth	s = { .cfg = cfg };
	struct table	tb = { .s = &s };
	enum rs_status	st;

	if (cfg->n_vocab < 256 + N_SPECIALS)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "n_vocab %u is below the %zu byte and special tokens",
		    cfg->n_vocab, 256 + N_SPECIALS));
	if ((st = rs_gguf_writer_new(&w, err)) != RS_OK)
		return (st);
	tb.w = w;
	if (add_keys(w, cfg) != RS_OK) {
		st = rs_errf(err, RS_ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((st = add_vocab(w, cfg, err)) != RS_OK ||
	    (st = add_tensors(&tb, cfg, err)) != RS_OK)
		goto out;
	s.total = rs_gguf_writer_data_bytes(w);
	st = rs_gguf_writer_write(w, path, fill, &s, err);
out:
	rs_gguf_writer_free(w);
	free(s.init);
	free(s.type);
	free(s.ne);
	return (st);
}
