/*
 * rs_drafter.h - the drafters of speculative decoding behind one interface
 * (qwen35-model.md §6): what proposes the tokens a verification pass
 * checks.  The drafts only change speed: the caller samples every
 * position from the target's own logits and keeps a draft only when the
 * sampler chose it (rs_gen_loop.c, rs_spec.c).
 *
 *   none        no drafts: one forward pass per token
 *   ngram       prompt lookup over prompt and output (rs_draft.h): free
 *               to make, right when the text repeats itself
 *   mtp         the MTP block chained k steps (§6.4): step i feeds back
 *               its own drafted token and its own h_out; the drafts are
 *               the argmax of each step's logits (rs_engine_mtp_top,
 *               k = 1: the GPU selects, only the token comes back).  One
 *               MTP step costs a decoder block and the full LM head
 *   mtp+ngram   the n-gram drafts when the lookup matched at least
 *               RS_DRAFTER_NGRAM_LONG tokens (the text is being copied,
 *               the lookup's guess is long and free), MTP otherwise
 *   auto        mtp+ngram when the model has an MTP block, else ngram:
 *               the commands' default (rs_drafter_resolve)
 *
 * The MTP cache (§6.3).  The MTP block has its own KV cache in the
 * sequence state; entry q must come from (token q, trunk hn at q − 1).
 * The drafter keeps it so: the caller reports every run of the trunk that
 * stays in the state with rs_drafter_observe() (prompt chunks, and after
 * each verification the fed token plus the accepted drafts, with the
 * trunk's hidden rows), and the drafter runs the MTP block over the
 * positions whose entries are not exact yet ("catch-up").  Draft step 0
 * at P computes exactly the entry of P, so a round whose drafts are all
 * rejected needs no catch-up; draft steps 1.. write scratch entries (from
 * the MTP's own h_out) that the catch-up overwrites.  Positions the
 * drafter has no hidden row for (a reused prefix it did not see) get a
 * zero hidden state, as position 0 does: only the quality of later
 * drafts depends on it, never the output.
 *
 * Adaptive K.  Per request the drafter estimates the per-token acceptance
 * alpha from the rounds so far (a round of k drafts that kept a is a
 * successes and, when a < k, one failure: the estimate of a truncated
 * geometric law, unbiased whatever k was; counts decay by
 * RS_DRAFTER_DECAY per round so the estimate follows the text) and drafts
 *
 *   K = argmax over k in [0, k_max] of  E[tokens | k] / R(k),
 *   E[tokens | k] = 1 + alpha + ... + alpha^k
 *                 = (1 − alpha^(k+1)) / (1 − alpha),  R(0) = 1
 *
 * K = 0 (no round of drafts beats a plain step: alpha low where drafting
 * costs much, as on the CPU, 1 + alpha < 1 + c) drafts nothing, but one
 * round in RS_DRAFTER_PROBE drafts one token, so that the estimate, which
 * only rounds that draft move, can see the text turn predictable.
 *
 * where R(k) is the cost of a round of k drafts (drafting them, then
 * the pass of k + 1 tokens) in plain decode steps.  On the GPU R(k) =
 * V(k + 1) + k·M from the engine's measured pass costs V and MTP step
 * cost M (rs_engine_pass_costs; M = 0 for the n-gram lookup), because V
 * is no line there: on an H200 a pass of 2 tokens costs ~1.06 steps, of
 * 3-4 ~1.15 and of 5 ~1.56 (the products take columns in quads), so the
 * rule drafts 3 at alpha 0.8 where a line would say 1 (docs/perf-log.md,
 * sessions 14 and 23).  Given a cost c (rs_drafter_opts.cost), or on the
 * CPU, R(k) = 1 + c·k.
 *
 * Lifecycle: rs_drafter_new() / rs_drafter_free(); rs_drafter_begin() at
 * each request.  A drafter belongs to one engine and one sequence state at
 * a time; not thread-safe.  Nothing allocates after rs_drafter_new().
 */
#ifndef RS_DRAFTER_H
#define RS_DRAFTER_H

#include <stdint.h>

#include "rs_engine.h"
#include "rs_err.h"

enum rs_drafter_kind {
	RS_DRAFTER_NONE = 0,
	RS_DRAFTER_NGRAM,
	RS_DRAFTER_MTP,
	RS_DRAFTER_MTP_NGRAM,
	RS_DRAFTER_AUTO
};

#define RS_DRAFTER_K_MAX	16	/* drafts per round, at most */
#define RS_DRAFTER_K_DEFAULT	4	/* --draft-max when not given */
#define RS_DRAFTER_NGRAM_LONG	3	/* mtp+ngram: a lookup this long wins */
#define RS_DRAFTER_DECAY	0.9	/* per-round decay of alpha's counts */
#define RS_DRAFTER_PRIOR_ALPHA	0.7	/* alpha before any round ... */
#define RS_DRAFTER_PRIOR_N	2.0	/* ... worth this many tokens */
#define RS_DRAFTER_PROBE	8	/* at K 0, one round in this many
					   drafts one token */

/* "none", "ngram", "mtp", "mtp+ngram", "auto". */
const char	*rs_drafter_kind_name(enum rs_drafter_kind k);

/*
 * The drafter KIND stands for on model M: RS_DRAFTER_AUTO is mtp+ngram
 * when M has an MTP block (hp.n_nextn > 0), else ngram; any other kind is
 * itself.  rs_drafter_new() resolves "auto" so; callers resolve it
 * themselves only to name the drafter before one exists.
 */
enum rs_drafter_kind rs_drafter_resolve(enum rs_drafter_kind kind,
		    const struct rs_model *m);

/*
 * Parse a --draft value: a drafter name, or a bare number N in [0, 16]
 * (the flag's old meaning: n-gram with K = N; 0 is none).  *KIND gets the
 * drafter; *K the number, or 0 when a name was given (the caller's
 * --draft-max applies).  RS_ERR_INVALID_ARG with the accepted values in
 * the message.
 */
enum rs_status	rs_drafter_parse(const char *s, enum rs_drafter_kind *kind,
		    int *k, struct rs_err *err);

struct rs_drafter_opts {
	enum rs_drafter_kind kind;
	int		 k_max;		/* drafts per round, 1..16 */
	int		 fixed;		/* 1: always k_max (rs-bench's table);
					   0: adapt K per request */
	double		 cost;		/* c above, >= 0; 0: measured on the
					   GPU, else the backend's and
					   kind's default (below) */
	int32_t		 vocab;		/* MTP drafts over token ids
					   [0, vocab) only; 0: the full head
					   (see below) */
};

/*
 * A reduced head for MTP drafts (opts.vocab = N).  An MTP step of the 27B
 * reads one decoder block and eh_proj (~0.3 GB in Q4_K) and the LM head
 * (248,320 x 5120 in Q6_K, ~1.0 GB): the head is most of a draft's cost.
 * Drafting the argmax over N frequent tokens instead reads N/248320 of it.
 * In a byte-level BPE vocabulary the ids follow the merge order, which
 * follows frequency in the tokenizer's training text, so the first N ids
 * are the frequent tokens without a table.  The target still checks every
 * draft; a draft outside the N can never be proposed, so acceptance falls
 * by the share of positions whose argmax lies beyond N.  CPU backend only:
 * the GPU needs a row-range matvec of the head (the engine computes all
 * rows).
 */

/*
 * Default c = the cost of one more row in a verification pass, plus, for
 * MTP kinds, one MTP step, both relative to a decode step.  CPU, measured
 * on demo/ (rs-bench --quick: a pass of 4 tokens costs 1.56 steps; an
 * MTP step 0.35 of a step: one decoder block of 8 plus the head).  GPU:
 * only when the measurement cannot run (no memory for its scratch
 * state); from an H200 on the 27B when passes of 2 and 4 tokens cost 1.7
 * and 2.6 steps (docs/perf-log.md), a pessimistic line today.
 */
#define RS_DRAFTER_VERIFY_CPU	0.2
#define RS_DRAFTER_MTP_CPU	0.35
#define RS_DRAFTER_VERIFY_CUDA	0.6
#define RS_DRAFTER_MTP_CUDA	0.1

void		rs_drafter_opts_init(struct rs_drafter_opts *o);

/* What a request's drafting did (rs_drafter_stats()). */
struct rs_drafter_stats {
	int64_t	rounds;		/* verification passes with >= 1 draft */
	int64_t	drafted;	/* draft tokens verified */
	int64_t	accepted;	/* of those, kept */
	int64_t	mtp_rounds;	/* rounds drafted by MTP */
	int64_t	ngram_rounds;	/* rounds drafted by lookup */
	/* pos_drafted[j]: rounds that drafted a (j+1)-th token;
	   pos_accepted[j]: of those, rounds that kept it (so drafts 1..j+1
	   were all kept): per-position acceptance = the ratio */
	int64_t	pos_drafted[RS_DRAFTER_K_MAX];
	int64_t	pos_accepted[RS_DRAFTER_K_MAX];
	double	draft_ms;	/* proposing: MTP steps, lookups */
	double	catchup_ms;	/* MTP catch-up after verifications */
	int	k;		/* the K the next round would use */
	double	alpha;		/* the current acceptance estimate */
};

struct rs_drafter;

/*
 * A drafter for engine E (which must outlive it).  Fails with
 * RS_ERR_INVALID_ARG (k_max outside [1, 16], a negative cost, an unknown
 * kind), RS_ERR_UNSUPPORTED (an MTP kind on a model without an MTP block:
 * the message says to use ngram), RS_ERR_NOMEM.
 */
enum rs_status	rs_drafter_new(struct rs_drafter **out, struct rs_engine *e,
		    const struct rs_drafter_opts *o, struct rs_err *err);
void		rs_drafter_free(struct rs_drafter *d);

/* The kind it drafts with, resolved (never RS_DRAFTER_AUTO). */
enum rs_drafter_kind rs_drafter_kind(const struct rs_drafter *d);
int		rs_drafter_k_max(const struct rs_drafter *d);

/* 1 when the drafter needs the trunk's hidden rows (MTP kinds). */
int		rs_drafter_wants_hidden(const struct rs_drafter *d);

/*
 * A new request on ST: statistics and the acceptance estimate start over
 * (from a prior of RS_DRAFTER_PRIOR_ALPHA worth RS_DRAFTER_PRIOR_N
 * tokens, so the first rounds draft a few tokens, not k_max).  Call after
 * the prefix reuse and before the prefill.
 */
void		rs_drafter_begin(struct rs_drafter *d, struct rs_state *st);

/*
 * The trunk just ran, and ST keeps, the N tokens TOKENS at positions
 * POS .. POS + N − 1 (POS + N = rs_state_pos(ST)); HIDDEN is their
 * (N, n_embd) post-output_norm rows (NULL only for kinds that do not want
 * them).  MTP kinds bring the MTP cache up to POS + N (catch-up) and keep
 * the last row as h* for the next draft.  Fails with the engine's
 * statuses; the drafter then holds no h* (the next drafts start from
 * zeros) and the output is unaffected.
 */
enum rs_status	rs_drafter_observe(struct rs_drafter *d, struct rs_state *st,
		    const int32_t *tokens, int32_t n, int32_t pos,
		    const float *hidden, struct rs_err *err);

/*
 * Up to MAX drafts (0..16; fewer when K is smaller) for what follows Y0,
 * the token about to be fed at rs_state_pos(ST), into OUT; their count
 * into *N.  HIST_A/NA then HIST_B/NB is the sequence so far (prompt, then
 * output: the n-gram history; Y0 is its last token).  MTP steps write
 * scratch MTP entries from that position on (see above).  Fails with the
 * engine's statuses.
 */
enum rs_status	rs_drafter_propose(struct rs_drafter *d, struct rs_state *st,
		    int32_t y0, const int32_t *hist_a, int32_t na,
		    const int32_t *hist_b, int32_t nb, int max, int32_t *out,
		    int *n, struct rs_err *err);

/*
 * The verification of the last round's DRAFTED drafts kept ACCEPTED of
 * them; COMPLETE is 0 when generation stopped before every kept draft
 * was looked at (then the round only counts, it does not move alpha).
 */
void		rs_drafter_result(struct rs_drafter *d, int drafted,
		    int accepted, int complete);

/* This request's statistics so far. */
void		rs_drafter_stats(const struct rs_drafter *d,
		    struct rs_drafter_stats *out);

/*
 * Oracle mode (rs-bench --spec): the drafter still runs for its cost,
 * then each of its drafts is replaced by SEQ[q] (q the draft's position)
 * with probability ALPHA, else by another token, independently per
 * position, drawn from SEED; past N_SEQ no drafts.  SEQ is borrowed until
 * the next call or rs_drafter_free(); NULL turns the mode off.
 */
void		rs_drafter_set_oracle(struct rs_drafter *d, const int32_t *seq,
		    int32_t n_seq, double alpha, uint64_t seed);

/*
 * The adaptive rule alone (pure, for tests): the K that maximises
 * E[tokens | k] / ROUND[k − 1] over [0, K_MAX] at acceptance ALPHA in
 * [0, 1] (ROUND: K_MAX positive round costs; k 0 is a plain step, ratio
 * 1; a tie keeps the smaller k).
 */
int		rs_drafter_best_k(double alpha, const double *round, int k_max);

/* ROUND[k − 1] = 1 + C·k for k = 1 .. K_MAX: the linear round costs. */
void		rs_drafter_linear_costs(double c, int k_max, double *round);

#endif /* RS_DRAFTER_H */
