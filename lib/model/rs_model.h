/*
 * rs_model.h - a qwen35 model: typed hyperparameters and per-layer weight
 * views on top of a validated GGUF (qwen35-model.md §2-3).
 *
 * rs_model_open() reads the qwen35.* keys, decides each block's kind
 * (§2.3: Gated DeltaNet, full attention, or MTP), binds every tensor the
 * forward pass uses and checks its shape against the hyperparameters and its
 * type against what the engine can read.  Weights are never copied: each
 * tensor is a view (struct rs_gguf_tensor) into the read-only mapping, valid
 * until rs_model_close().  A model is immutable after open and can be shared
 * by threads.
 */
#ifndef RS_MODEL_H
#define RS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "rs_err.h"
#include "rs_gguf.h"

#define RS_MODEL_ARCH	"qwen35"
/* the largest context a state takes (rs_state.h), and so the largest
   context_length a model may declare: it is every command's default */
#define RS_CTX_MAX	(1 << 24)

struct rs_hparams {
	uint32_t	n_layer_all;	/* block_count, MTP blocks included */
	uint32_t	n_layer;	/* trunk blocks = n_layer_all - n_nextn */
	uint32_t	n_nextn;	/* trailing MTP blocks (0 or 1) */
	uint32_t	n_ctx_train;	/* context_length */
	uint32_t	n_embd;		/* hidden size */
	uint32_t	n_ff;		/* SwiGLU width */
	uint32_t	n_vocab;	/* rows of token_embd (padded vocab) */
	/* gated attention (§4.4) */
	uint32_t	n_head;		/* query heads */
	uint32_t	n_head_kv;	/* key/value heads (GQA groups) */
	uint32_t	head_dim;	/* key_length */
	uint32_t	head_dim_v;	/* value_length */
	uint32_t	n_rot;		/* rotated dims per head */
	uint32_t	rope_sections[4]; /* IMRoPE sections (t, h, w, e) */
	float		rope_base;	/* theta base */
	float		rms_eps;	/* every RMSNorm and the L2-norm clamp */
	uint32_t	full_attn_interval;
	/* Gated DeltaNet (§4.6) */
	uint32_t	ssm_conv_kernel; /* conv taps K */
	uint32_t	ssm_d_state;	/* head dim of q, k and v */
	uint32_t	ssm_n_kh;	/* q/k heads (group_count) */
	uint32_t	ssm_n_vh;	/* v heads (time_step_rank) */
	uint32_t	ssm_d_inner;	/* n_vh * d_state */
};

enum rs_layer_kind {
	RS_LAYER_GDN,
	RS_LAYER_ATTN,
	RS_LAYER_MTP
};

/* Weight views of one block; NULL where the kind has no such tensor. */
struct rs_layer {
	enum rs_layer_kind kind;
	const struct rs_gguf_tensor *attn_norm;	/* (n_embd) */
	const struct rs_gguf_tensor *post_norm;	/* (n_embd) */
	const struct rs_gguf_tensor *ffn_gate;	/* (n_embd, n_ff) */
	const struct rs_gguf_tensor *ffn_up;	/* (n_embd, n_ff) */
	const struct rs_gguf_tensor *ffn_down;	/* (n_ff, n_embd) */
	/* GDN */
	const struct rs_gguf_tensor *qkv;	/* (n_embd, 2*kh*ds + d_inner) */
	const struct rs_gguf_tensor *gate;	/* z: (n_embd, d_inner) */
	const struct rs_gguf_tensor *beta;	/* (n_embd, n_vh) */
	const struct rs_gguf_tensor *alpha;	/* (n_embd, n_vh) */
	const struct rs_gguf_tensor *conv1d;	/* f32 (K, channels) */
	const struct rs_gguf_tensor *dt_bias;	/* f32 (n_vh) */
	const struct rs_gguf_tensor *ssm_a;	/* f32 (n_vh), A = -exp(A_log) */
	const struct rs_gguf_tensor *ssm_norm;	/* f32 (d_state), no +1 */
	const struct rs_gguf_tensor *ssm_out;	/* (d_inner, n_embd) */
	/* attention (and MTP) */
	const struct rs_gguf_tensor *wq;	/* (n_embd, 2*n_head*head_dim) */
	const struct rs_gguf_tensor *wk;	/* (n_embd, n_head_kv*head_dim) */
	const struct rs_gguf_tensor *wv;	/* (n_embd, n_head_kv*head_dim_v) */
	const struct rs_gguf_tensor *wo;	/* (n_head*head_dim_v, n_embd) */
	const struct rs_gguf_tensor *q_norm;	/* f32 (head_dim) */
	const struct rs_gguf_tensor *k_norm;	/* f32 (head_dim) */
	/* MTP (§3.4) */
	const struct rs_gguf_tensor *eh_proj;	/* (2*n_embd, n_embd) */
	const struct rs_gguf_tensor *enorm;	/* f32 (n_embd) */
	const struct rs_gguf_tensor *hnorm;	/* f32 (n_embd) */
	const struct rs_gguf_tensor *head_norm;	/* f32 (n_embd); output_norm if absent */
	const struct rs_gguf_tensor *mtp_embd;	/* token_embd if absent */
	const struct rs_gguf_tensor *mtp_head;	/* output if absent */
};

struct rs_model {
	struct rs_gguf		*gguf;		/* owned */
	struct rs_hparams	 hp;
	const struct rs_gguf_tensor *tok_embd;	/* (n_embd, n_vocab) */
	const struct rs_gguf_tensor *output_norm; /* f32 (n_embd) */
	const struct rs_gguf_tensor *output;	/* (n_embd, n_vocab); tok_embd if tied */
	struct rs_layer		*layers;	/* n_layer_all entries */
};

/*
 * Open PATH and bind it as a qwen35 model.  On RS_OK *OUT owns the GGUF.
 * Fails with the rs_gguf_open() statuses, RS_ERR_UNSUPPORTED (another
 * architecture, an unreadable weight type) or RS_ERR_FORMAT (a missing key
 * or tensor, a shape that does not match the hyperparameters).
 */
enum rs_status	rs_model_open(struct rs_model **out, const char *path,
		    struct rs_err *err);

/* The same over an already open GGUF, which the model then owns (also on
 * failure). */
enum rs_status	rs_model_from_gguf(struct rs_model **out, struct rs_gguf *g,
		    struct rs_err *err);

void		rs_model_close(struct rs_model *m);

/* Kind of block IL under §2.3 (or the recurrent_layers override). */
enum rs_layer_kind rs_model_layer_kind(const struct rs_model *m, uint32_t il);

/*
 * Weight bytes read to decode one token: the trunk blocks, output_norm, the
 * LM head and one embedding row (the MTP block and the rest of the
 * embedding table are not read).  §9.
 */
uint64_t	rs_model_decode_bytes(const struct rs_model *m);

/* Weight bytes of the MTP block plus the LM head: one draft step. */
uint64_t	rs_model_mtp_step_bytes(const struct rs_model *m);

#endif /* RS_MODEL_H */
