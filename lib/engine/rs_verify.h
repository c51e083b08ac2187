/*
 * rs_verify.h - scoring candidate tokens and checking the speculative-
 * verification invariant (qwen35-model.md §6.5) on an engine.
 *
 * Verification runs a prefix plus k candidate tokens in one forward pass;
 * row i of the logits predicts token i + 1.  Under the greedy rule the
 * model accepts the leading candidates that equal the argmax of the row
 * before them.  rs_verify_check_rollback() then proves the state handling:
 * truncating the rejected candidates and continuing must give the logits
 * of a plain token-by-token run over the same sequence.
 *
 * Everything here is stateless apart from the engine passed in (one call
 * at a time per engine, as for rs_engine.h).
 */
#ifndef RS_VERIFY_H
#define RS_VERIFY_H

#include <stdint.h>

#include "rs_engine.h"
#include "rs_err.h"

/*
 * Largest relative difference between the rollback path and the plain run
 * that rs-verify --check-rollback accepts.  The CPU engine computes every
 * token in the same order whatever the batch, so it measures 0; the bound
 * leaves room for backends whose batched kernels round differently.
 */
#define RS_VERIFY_ROLLBACK_TOL	1e-5

/*
 * ‖A − REF‖₂ / ‖REF‖₂ over N values, accumulated in double (‖A − REF‖₂
 * when REF is all zeros): the one metric logits and activations are
 * compared with, here, in the tests (against the fixtures' references and
 * the CPU oracles) and in the kernel playgrounds.
 */
double		rs_verify_rel_err(const float *a, const float *ref, int64_t n);

/* Index of the largest of N logits (the first one on ties). */
int32_t		rs_logits_argmax(const float *logits, int64_t n);

/*
 * log softmax(LOGITS)[TOK] over N logits, in double with the max
 * subtracted first (so e^x cannot overflow).
 */
double		rs_logits_logprob(const float *logits, int64_t n, int32_t tok);

/*
 * Greedy acceptance (§6.5 step 2): how many leading candidates
 * TOKENS[PREFIX + i] (i < N − PREFIX) equal ARGMAX[PREFIX − 1 + i], the
 * model's choice after the tokens before them.  PREFIX >= 1.
 */
int32_t		rs_verify_accept(const int32_t *tokens, const int32_t *argmax,
		    int32_t n, int32_t prefix);

struct rs_rollback_check {
	int32_t	accepted;	/* candidates accepted by the greedy rule */
	int32_t	n_compared;	/* positions compared: prefix + accepted +
				   extra */
	double	rel_err;	/* trunk logits, ‖rollback − plain‖₂ /
				   ‖plain‖₂ over all compared rows */
	double	mtp_rel_err;	/* the same for the MTP logits; −1 when the
				   model has no MTP block */
	double	verify_ms;	/* the verification passes (step 1) */
	double	sequential_ms;	/* the plain run */
};

/*
 * Check the invariant for TOKENS (N tokens, the first PREFIX context, the
 * other k = N − PREFIX >= 1 candidates):
 *
 *  1. the prefix in one call (a prompt), then the k candidates in
 *     verification passes of at most RS_ENGINE_EXACT_MAX tokens (one pass
 *     when k < RS_ENGINE_EXACT_MAX; longer calls are prompts, which a
 *     backend may compute on another path), on a state with k + 1
 *     snapshots, logits of every row, MTP catch-up over the same tokens in
 *     the same calls (hidden rows shifted by one, zeros first: §6.3);
 *  2. accept j candidates by the greedy rule, rs_state_truncate() to
 *     PREFIX + j (this must hit a snapshot);
 *  3. decode EXTRA more tokens greedily from there, one at a time, with
 *     an MTP step each (its input: the previous position's hidden row);
 *  4. run the resulting PREFIX + j + EXTRA tokens on a fresh state, the
 *     prefix in one call as in 1 and the rest one at a time, trunk and
 *     MTP, and compare the logits of every position.
 *
 * States of N_CTX positions (0: the model's context_length) and buffers
 * are allocated here and freed before returning.  Fails with RS_ERR_
 * INVALID_ARG (PREFIX outside [1, N − 1], EXTRA outside [0, 4096]),
 * RS_ERR_LIMIT (the sequence does not fit N_CTX), RS_ERR_NOMEM, or any
 * status of the engine and state calls.
 */
enum rs_status	rs_verify_check_rollback(struct rs_engine *e,
		    const int32_t *tokens, int32_t n, int32_t prefix,
		    int32_t extra, int32_t n_ctx,
		    struct rs_rollback_check *rep, struct rs_err *err);

#endif /* RS_VERIFY_H */
