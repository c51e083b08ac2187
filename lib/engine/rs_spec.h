/*
 * rs_spec.h - greedy speculative decoding on the engine alone, with any
 * drafter (rs_drafter.h; qwen35-model.md §6.3-§6.5): the loop rs-bench
 * --spec times and the tests hold to plain decoding.  rs_gen (rs_gen.h)
 * runs the same rounds with the sampler, the tokenizer and the API around
 * them.
 *
 * A round, with y0 the last chosen token (not yet in the caches) at
 * position P:
 *
 *   draft     d1..dk from the drafter (K adapted, or fixed)
 *   verify    one trunk pass over [y0, d1..dk] at P..P+k: the argmax of
 *             each of its k+1 rows (rs_engine_forward_top, k = 1: every
 *             logit still checked, only the token comes back) and, for an
 *             MTP drafter, its hidden states
 *   accept    t_i = argmax of row i; keep d_{i+1} while t_i == d_{i+1};
 *             the round yields t_0..t_a (a drafts accepted plus one token
 *             of the model's own)
 *   restore   truncate the trunk to P+a+1 (the state's snapshots make this
 *             one copy, rs_engine_truncate) and let the drafter catch its
 *             MTP cache up over [y0, d1..da] with the trunk's hidden
 *             states (rs_drafter_observe)
 *
 * Because a verification pass gives bit for bit the logits of decoding
 * the same tokens one by one (both backends sum in a fixed order whatever
 * the batch, up to RS_ENGINE_EXACT_MAX tokens), the output equals plain
 * greedy decoding token for token.
 */
#ifndef RS_SPEC_H
#define RS_SPEC_H

#include <stdint.h>

#include "rs_drafter.h"
#include "rs_engine.h"

struct rs_spec_stats {
	int64_t	rounds;		/* verification passes (and plain steps) */
	int64_t	drafted;	/* draft tokens proposed */
	int64_t	accepted;	/* draft tokens kept */
	int64_t	generated;	/* tokens written to OUT */
	double	prefill_ms;	/* prompt and MTP catch-up */
	double	decode_ms;	/* drafting, verification, restore */
	double	verify_ms;	/* of decode_ms, verification passes and
				   rollbacks (plain decoding: the steps) */
	double	draft_ms;	/* of decode_ms, proposing drafts */
	double	catchup_ms;	/* of decode_ms, MTP catch-up */
};

/*
 * Generate N_NEW tokens greedily after the N_PROMPT tokens of PROMPT into
 * OUT, with drafts from D (NULL: plain decoding, one pass per token).  ST
 * must be a fresh state of E's model (position 0) made with n_snap >=
 * k_max + 1 when D drafts.  Fails with RS_ERR_INVALID_ARG (N_PROMPT < 1,
 * N_NEW < 1, ST not fresh), RS_ERR_LIMIT (prompt plus N_NEW + k_max beyond
 * the state's context, or too few snapshots to roll back k_max drafts),
 * RS_ERR_NOMEM, or the engine's statuses.
 */
enum rs_status	rs_spec_greedy(struct rs_engine *e, struct rs_state *st,
		    struct rs_drafter *d, const int32_t *prompt,
		    int32_t n_prompt, int32_t n_new, int32_t *out,
		    struct rs_spec_stats *stats, struct rs_err *err);

#endif /* RS_SPEC_H */
