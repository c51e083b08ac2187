/*
 * rs_synth.h - write synthetic qwen35 models: exact tensor names, shapes and
 * type mix of a real file, random weights.
 *
 * Two presets: "tiny" (the shapes of the tiny test model: 256 hidden, 3 GDN
 * + 1 attention + MTP) and "27b" (Qwen3.8-27B, qwen35-model.md §1, with the
 * Q4_K_M type assignment of §3.7).  Small models get Gaussian weights
 * quantized by our encoders, so the model computes something smooth; large
 * ones get random but valid blocks (finite scales), which takes minutes
 * rather than hours.  The vocabulary is byte-level: the 256 byte tokens,
 * the chat special tokens, then "[PAD<id>]" fillers up to n_vocab.
 */
#ifndef RS_SYNTH_H
#define RS_SYNTH_H

#include <stdint.h>

#include "rs_err.h"

enum rs_synth_mix {
	RS_SYNTH_Q4_K_M,	/* §3.7 rules */
	RS_SYNTH_Q8_0,		/* every matrix q8_0 */
	RS_SYNTH_F16		/* every matrix f16 */
};

struct rs_synth_cfg {
	uint32_t	n_embd, n_ff, n_layer, n_nextn, n_vocab, n_ctx;
	uint32_t	n_head, n_head_kv, head_dim, n_rot;
	uint32_t	rope_sections[4];
	float		rope_base;
	uint32_t	ssm_n_kh, ssm_n_vh, ssm_d_state, ssm_conv_kernel;
	enum rs_synth_mix mix;
	int		random_blocks;	/* 1: random valid blocks, no encoder */
	uint64_t	seed;
	/*
	 * NULL, or called before each tensor is made with the tensor bytes
	 * done so far and the file's total (a 27B file takes minutes);
	 * called from rs_synth_write's thread.
	 */
	void		(*progress)(void *ctx, uint64_t done, uint64_t total);
	void		*progress_ctx;
};

/*
 * Fill *CFG from preset NAME ("tiny", "27b"), no progress callback;
 * RS_ERR_INVALID_ARG if unknown.
 */
enum rs_status	rs_synth_preset(const char *name, struct rs_synth_cfg *cfg,
		    struct rs_err *err);

/* Write the model to PATH (through rs_out: atomically, see rs_out.h). */
enum rs_status	rs_synth_write(const struct rs_synth_cfg *cfg,
		    const char *path, struct rs_err *err);

#endif /* RS_SYNTH_H */
