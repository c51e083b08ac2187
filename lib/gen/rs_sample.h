/*
 * rs_sample.h - choosing the next token from a row of logits.
 *
 * The chain, in order (llama.cpp's order; serving.md gives none):
 *
 *   1. penalties, on the tokens recorded so far:
 *        repetition (HF/CTRL): l -> l / r if l > 0, else l * r, once per
 *          distinct token of the prompt and of the generated text;
 *        frequency and presence (OpenAI): l -> l - f * c - p * [c > 0],
 *          c = how often the token was generated (prompt not counted);
 *   2. logit bias: l -> l + b (b = -INFINITY bans a token);
 *   3. temperature 0: greedy, the largest l (the lowest id on ties); stop;
 *   4. top-k: keep the k largest (k <= 0: all);
 *   5. top-p: softmax of the survivors, keep the shortest prefix (largest
 *      first) whose probability reaches top_p (at least one token);
 *   6. min-p: keep p_i >= min_p * p_max, i.e. l_i >= l_max + ln(min_p);
 *   7. temperature T: softmax(l / T) over the survivors;
 *   8. sample by inversion with one uniform draw from the sampler's
 *      xoshiro256** stream (rs_rng.h).
 *
 * Steps 5 and 6 see the distribution at temperature 1, as in llama.cpp;
 * temperature only reshapes what survives.  Ties between equal logits are
 * broken by the lower token id, so the result is a function of the logits,
 * the recorded tokens and the seed alone: the same seed gives the same
 * output.  Each non-greedy sample consumes exactly one draw and greedy
 * none, so sampling rows one by one (speculative verification) consumes
 * the stream exactly as plain decoding does.
 *
 * Lifecycle: rs_sample_new() allocates everything once (about 12 bytes per
 * vocabulary entry); rs_sample_next() never allocates.  One sampler per
 * sequence; not thread-safe.
 */
#ifndef RS_SAMPLE_H
#define RS_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "rs_err.h"
#include "rs_top.h"

struct rs_sampler;

struct rs_logit_bias {
	int32_t	token;
	float	bias;		/* added to the logit; -INFINITY bans */
};

struct rs_sample_params {
	float		 temperature;		/* >= 0; 0 = greedy */
	int32_t		 top_k;			/* <= 0: off */
	float		 top_p;			/* (0, 1]; 1: off */
	float		 min_p;			/* [0, 1]; 0: off */
	float		 presence_penalty;	/* 0: off */
	float		 frequency_penalty;	/* 0: off */
	float		 repetition_penalty;	/* > 0; 1: off */
	uint64_t	 seed;
	const struct rs_logit_bias *bias;	/* N_BIAS entries, copied */
	size_t		 n_bias;
};

/*
 * Neutral parameters: temperature 1, every filter and penalty off, seed 0.
 * (The model's own defaults, temperature 1, top_p 0.95, top_k 20, are the
 * server's to apply, serving.md §0.)
 */
void		rs_sample_params_init(struct rs_sample_params *p);

/*
 * A sampler over the first N_VOCAB logits of each row (pass the number of
 * real tokens to keep padding rows out).  RS_ERR_INVALID_ARG names a bad
 * parameter (out of the ranges above, not finite, a bias token outside
 * [0, N_VOCAB), a bias that is NaN or +INFINITY); RS_ERR_NOMEM.
 */
enum rs_status	rs_sample_new(struct rs_sampler **out,
		    const struct rs_sample_params *p, int32_t n_vocab,
		    struct rs_err *err);
void		rs_sample_free(struct rs_sampler *s);

/*
 * Record the prompt's N tokens (they count for the repetition penalty
 * only).  RS_ERR_INVALID_ARG for a token outside [0, n_vocab).
 */
enum rs_status	rs_sample_prompt(struct rs_sampler *s, const int32_t *toks,
		    size_t n, struct rs_err *err);

/*
 * Record generated token TOK (all penalties count it).  Call it for every
 * token that joins the output, sampled or forced.
 */
enum rs_status	rs_sample_accept(struct rs_sampler *s, int32_t tok,
		    struct rs_err *err);

/*
 * Apply steps 1 and 2 to LOGITS (n_vocab values) in place.  rs_sample_next()
 * does this on its own copy; exposed for logprobs and for tests.
 */
void		rs_sample_penalize(const struct rs_sampler *s, float *logits);

/*
 * Choose the next token from LOGITS (n_vocab values, left unchanged) into
 * *OUT.  Does not record it (call rs_sample_accept()).  RS_ERR_INVALID_ARG
 * when a logit is NaN or every token is banned.
 */
enum rs_status	rs_sample_next(struct rs_sampler *s, const float *logits,
		    int32_t *out, struct rs_err *err);

/*
 * How many best tokens of a row (rs_top.h, selected with the mask SKIP, or
 * none when NULL) rs_sample_next_top() needs to choose exactly as
 * rs_sample_next() would from the whole row: 1 for greedy, top_k for
 * top-k sampling with top_k <= RS_TOP_MAX; 0 when it needs the whole row
 * (a penalty set, a logit bias other than the bans SKIP stands for: the
 * biases must be exactly −∞ on the tokens SKIP flags, each once; top-k off
 * or beyond RS_TOP_MAX).  A function of the parameters alone: it holds for
 * the sampler's lifetime.  O(n_vocab) with SKIP; ask once.
 */
int32_t		rs_sample_top_need(const struct rs_sampler *s,
		    const unsigned char *skip);

/*
 * rs_sample_next() from the K best tokens of the row (rs_engine_forward_top)
 * instead of the row: the same token, the same draw from the stream, when
 * K >= rs_sample_top_need(S, SKIP) > 0 and TOP was selected with SKIP.
 * RS_ERR_INVALID_ARG when K is too small, or TOP holds no token (every
 * logit banned or not finite).
 */
enum rs_status	rs_sample_next_top(struct rs_sampler *s,
		    const struct rs_top *top, int32_t k, int32_t *out,
		    struct rs_err *err);

#endif /* RS_SAMPLE_H */
