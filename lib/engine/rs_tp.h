/*
 * rs_tp.h - tensor parallelism's plan (issue #19, docs/multi-gpu.md):
 * which heads, rows and input columns of every trunk block rank R of N
 * holds.
 *
 * Every block is cut by heads, so that a rank's share is itself a qwen35
 * block of the same kind, only narrower, and runs the one-GPU kernels
 * unchanged on its own hparams:
 *   GDN        q/k heads r·kh .. r·kh + kh − 1 (kh = n_kh / N) and the v
 *              heads that read them in the tiled order (§3.6: v head n
 *              reads q/k head n mod n_kh): n = g·n_kh + r·kh + i for each
 *              group g < n_vh / n_kh.  Locally v head g·kh + i reads q/k
 *              head i: the tiled order again, with n_kh' = kh and n_vh' =
 *              n_vh / N.  Rows of attn_qkv (its q, k and v parts), of
 *              ssm_conv1d (its channels), attn_gate, ssm_beta and
 *              ssm_alpha; elements of ssm_dt and ssm_a; input columns of
 *              ssm_out.
 *   attention  query heads r·qh .. (qh = n_head / N) with their gates and
 *              kv heads r·kvh .. (kvh = n_head_kv / N): a GQA group never
 *              straddles two ranks.  Rows of attn_q, attn_k, attn_v; input
 *              columns of attn_output.
 *   FFN        n_ff / N columns: rows of ffn_gate and ffn_up, input columns
 *              of ffn_down.
 * Norms (their weights are per head or per model dimension), the
 * embedding and the output head are whole on every rank; the MTP block is
 * not cut (it is not a trunk block: rs_tp_share_of refuses it, and the
 * design runs it whole).  Each rank's attn_output, ssm_out and ffn_down give
 * a partial of the block's output; their sum over the ranks (the
 * all-reduce) is the block's.  Input columns are cut in whole quant blocks
 * (rs_tp_check tests it).
 *
 * Pure functions of the model's tables: no allocation, thread-safe.
 */
#ifndef RS_TP_H
#define RS_TP_H

#include <stddef.h>
#include <stdint.h>

#include "rs_err.h"
#include "rs_model.h"

#define RS_TP_MAX	8	/* ranks */
#define RS_TP_MAX_RUNS	16	/* runs of one share */

/* A rank's heads in one block of each kind (global indices). */
struct rs_tp_heads {
	/* GDN: q/k heads kh0 .. kh0 + kh − 1; v heads: groups of kh, group
	   g starting at g·n_kh + kh0, n_vh / n_kh groups */
	int	kh0, kh, vh;
	/* attention: query heads q0 .., kv heads kv0 .. */
	int	q0, qh, kv0, kvh;
	/* FFN: columns ff0 .. ff0 + ff − 1 */
	int64_t	ff0, ff;
};

enum rs_tp_cut {
	RS_TP_WHOLE,	/* every rank holds all of it */
	RS_TP_ROWS,	/* runs of rows (an output of each) */
	RS_TP_COLS	/* runs of the values of every row (inputs) */
};

struct rs_tp_run {
	int64_t	first, count;
};

/* A rank's share of one tensor: RUN[0 .. N_RUNS − 1] in this order. */
struct rs_tp_share {
	enum rs_tp_cut	 cut;
	int		 n_runs;
	struct rs_tp_run run[RS_TP_MAX_RUNS];
	int64_t		 n;	/* rows (ROWS) or values a row (COLS) held */
};

/*
 * Can M's trunk be cut over N ranks (1 .. RS_TP_MAX)?  Every head count
 * (q/k and v heads of the GDN blocks, query and kv heads of the attention
 * blocks) and n_ff divisible by N, and every input-column run a whole
 * number of its tensor's quant blocks.  RS_ERR_UNSUPPORTED naming the
 * first count or tensor that does not divide; RS_ERR_INVALID_ARG for N.
 */
enum rs_status	rs_tp_check(const struct rs_model *m, int n,
		    struct rs_err *err);

/* Rank R of N's heads (M passed rs_tp_check for N). */
void		rs_tp_heads(const struct rs_model *m, int r, int n,
		    struct rs_tp_heads *out);

/*
 * Rank R of N's share of T, a tensor of trunk block IL (0 .. n_layer − 1)
 * or, for IL −1, a global tensor (token_embd, output_norm, output: whole).
 * RS_ERR_INVALID_ARG if T is not a tensor of that block, or R, N, IL are
 * out of range.
 */
enum rs_status	rs_tp_share_of(const struct rs_model *m, int il,
		    const struct rs_gguf_tensor *t, int r, int n,
		    struct rs_tp_share *out, struct rs_err *err);

/* Bytes of T's share S (rows of ne[0] values; a 1-d tensor is one row). */
uint64_t	rs_tp_share_bytes(const struct rs_gguf_tensor *t,
		    const struct rs_tp_share *s);

/*
 * The share S of T's bytes SRC (T->data, or a copy) into DST
 * (rs_tp_share_bytes): ROWS the runs' rows one after the other, COLS each
 * row's runs one after the other, WHOLE all of it.
 */
void		rs_tp_share_copy(const struct rs_gguf_tensor *t,
		    const void *src, const struct rs_tp_share *s, void *dst);

#endif /* RS_TP_H */
