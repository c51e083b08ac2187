/*
 * rs_spec.h - greedy speculative decoding with the MTP head
 * (qwen35-model.md §6.3-§6.5): draft, verify in one pass, keep what the
 * model agrees with, restore the state exactly where it does not.
 *
 * A round, with y0 the last chosen token (not yet in the caches) at
 * position P and h* the trunk's hidden state (after output_norm) at P − 1:
 *
 *   draft     d1..dk by k MTP steps: (y0, P, h*) → d1, h1; (d1, P+1, h1)
 *             → d2 ...; each d is the argmax of the MTP logits
 *   verify    one trunk pass over [y0, d1..dk] at P..P+k: k+1 rows of
 *             logits and hidden states
 *   accept    t_i = argmax of row i; keep d_{i+1} while t_i == d_{i+1};
 *             the round yields t_0..t_a (a drafts accepted plus one token
 *             of the model's own)
 *   restore   truncate the trunk to P+a+1 (the state's snapshots make this
 *             one copy, rs_engine_truncate), redo the MTP cache over
 *             [y0, d1..da] with the trunk's hidden states, shifted by one
 *             (the draft steps wrote MTP entries from the MTP's own hidden
 *             states)
 *
 * Because a verification pass gives bit for bit the logits of decoding
 * the same tokens one by one (both backends sum in a fixed order whatever
 * the batch), the output equals plain greedy decoding token for token; the
 * tests check it against reference.json's greedy continuation.
 */
#ifndef RS_SPEC_H
#define RS_SPEC_H

#include <stdint.h>

#include "rs_engine.h"

/*
 * A drafter other than the MTP head (n-gram lookup, tests): propose up to
 * MAX tokens to follow Y0, which sits at position POS, into DRAFTS; return
 * how many (0 makes the round a plain decoding step).
 */
typedef int	(*rs_spec_draft_fn)(void *ctx, int32_t pos, int32_t y0,
		    int32_t *drafts, int max);

struct rs_spec_opts {
	int			 k;		/* drafts per round, 1..16 */
	rs_spec_draft_fn	 draft;		/* NULL: the MTP head */
	void			*draft_ctx;
};

struct rs_spec_stats {
	int64_t	rounds;		/* verification passes */
	int64_t	drafted;	/* draft tokens proposed */
	int64_t	accepted;	/* draft tokens kept */
	int64_t	generated;	/* tokens written to OUT */
	double	prefill_ms;	/* prompt and MTP catch-up */
	double	decode_ms;	/* drafting, verification, restore */
};

/*
 * Generate N_NEW tokens greedily after the N_PROMPT tokens of PROMPT into
 * OUT, drafting up to O->k tokens a round.  ST must be a fresh state of
 * E's model (position 0) made with n_snap >= k + 1.  Fails with
 * RS_ERR_INVALID_ARG (k outside [1, 16], N_PROMPT < 1, N_NEW < 1, ST not
 * fresh), RS_ERR_LIMIT (prompt plus N_NEW + k beyond the state's context,
 * or too few snapshots to roll back k drafts), RS_ERR_UNSUPPORTED (MTP
 * drafting on a model without an MTP block), RS_ERR_NOMEM, or the
 * engine's statuses.
 */
enum rs_status	rs_spec_greedy(struct rs_engine *e, struct rs_state *st,
		    const int32_t *prompt, int32_t n_prompt,
		    const struct rs_spec_opts *o, int32_t n_new, int32_t *out,
		    struct rs_spec_stats *stats, struct rs_err *err);

#endif /* RS_SPEC_H */
