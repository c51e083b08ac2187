/*
 * rs_metrics.h - the server's counters, gauges and histograms, written as
 * Prometheus text (exposition format 0.0.4) for GET /metrics.
 *
 * What is measured (names as exported):
 *
 *   rs_requests_total{route,code}        counter: answered requests
 *   rs_requests_cancelled_total          counter: generations stopped by a
 *                                        client disconnect
 *   rs_prompt_tokens_total               counter: prompt tokens computed
 *                                        (not the cached ones; a
 *                                        cancelled prefill: those done)
 *   rs_completion_tokens_total           counter: sampled tokens
 *   rs_prompt_seconds_total              counter: time spent in prefill
 *   rs_decode_seconds_total              counter: time spent decoding
 *   rs_prompt_tokens_per_second          gauge: prefill speed, last request
 *   rs_decode_tokens_per_second          gauge: decode speed, last request
 *   rs_queue_depth                       gauge: requests waiting for the engine
 *   rs_requests_running                  gauge: requests on the engine (0/1)
 *   rs_time_to_first_token_seconds       histogram: request received to the
 *                                        first content, reasoning or
 *                                        tool-call token (the caller decides;
 *                                        rs-serve: not the role chunk, not
 *                                        markup)
 *
 * With speculative decoding (rs-serve --draft), from each generation's
 * drafter statistics (rs_drafter.h):
 *
 *   rs_draft_tokens_total                counter: draft tokens verified
 *   rs_draft_accepted_tokens_total       counter: of those, kept
 *   rs_draft_seconds_total               counter: drafting and MTP catch-up
 *   rs_draft_position_tokens_total{position}    counter: rounds that
 *                                        drafted a token at POSITION
 *                                        (1-based) ...
 *   rs_draft_position_accepted_total{position}  ... and kept it: the
 *                                        ratio of the two is the
 *                                        acceptance at that position
 *
 * With a checkpoint cache (rs_ckcache.h; rs-serve --cache-mem), from its
 * counters after the last generation:
 *
 *   rs_checkpoint_hits_total             counter: prompts whose prefix came
 *                                        from a checkpoint
 *   rs_checkpoint_misses_total           counter: prompts that found none
 *   rs_checkpoint_tokens_reused_total    counter: positions restored
 *   rs_checkpoint_cross_total            counter: hits restored into another
 *                                        state than their own (KV copied)
 *   rs_checkpoint_saves_total            counter: checkpoints stored
 *   rs_checkpoint_spills_total           counter: moved to host RAM
 *   rs_checkpoint_evictions_total        counter: dropped for room
 *   rs_checkpoint_memory_bytes{where}    gauge: held, where="device" (the
 *                                        states' memory) or "host"
 *   rs_checkpoints{where}                gauge: checkpoints held
 *
 * A rate over time is rate(rs_completion_tokens_total) /
 * rate(rs_decode_seconds_total); the gauges are for a glance.
 *
 * ROUTE is one of a caller-chosen, fixed set of names (the server's route
 * table, never a client's raw path), so the label set stays bounded; at most
 * RS_METRICS_MAX_SERIES (route, code) pairs are kept and later new pairs are
 * folded into route="other".
 *
 * Thread-safety: every function may be called from any thread (one mutex).
 * Lifecycle: rs_metrics_new() / rs_metrics_free().
 */
#ifndef RS_METRICS_H
#define RS_METRICS_H

#include <stdint.h>

#include "rs_buf.h"
#include "rs_ckcache.h"
#include "rs_err.h"

#define RS_METRICS_MAX_SERIES	64
#define RS_METRICS_ROUTE_MAX	48	/* bytes of a route name with NUL */

struct rs_metrics;

/* Fails with RS_ERR_NOMEM or RS_ERR_IO (mutex). */
enum rs_status	rs_metrics_new(struct rs_metrics **out, struct rs_err *err);
void		rs_metrics_free(struct rs_metrics *m);

/* One answered request on ROUTE with HTTP status CODE. */
void		rs_metrics_request(struct rs_metrics *m, const char *route,
		    int code);
void		rs_metrics_cancelled(struct rs_metrics *m);

/*
 * One finished generation: N_PROMPT prompt tokens processed in PROMPT_MS,
 * N_GEN tokens sampled in DECODE_MS (milliseconds).  Rates are only
 * updated when their time is positive.
 */
void		rs_metrics_generation(struct rs_metrics *m, int64_t n_prompt,
		    double prompt_ms, int64_t n_gen, double decode_ms);

/* Time to first token of one request, in seconds. */
/*
 * One generation's drafts: POS_N[j] rounds drafted a (j+1)-th token and
 * POS_ACC[j] of them kept it, for j < N (at most RS_METRICS_MAX_POS
 * positions are kept); SECONDS_MS of drafting and catch-up.
 */
#define RS_METRICS_MAX_POS	16
void		rs_metrics_drafts(struct rs_metrics *m, const int64_t *pos_n,
		    const int64_t *pos_acc, int n, double ms);

void		rs_metrics_ttft(struct rs_metrics *m, double seconds);

/* Current queue depth and running count. */
void		rs_metrics_queue(struct rs_metrics *m, int waiting,
		    int running);

/* The checkpoint cache's counters now (from then on they are exported). */
void		rs_metrics_checkpoints(struct rs_metrics *m,
		    const struct rs_ckcache_stats *s);

/*
 * Append the exposition text to OUT.  Returns -1 when OUT ran out of
 * memory (OUT->oom), else 0.
 */
int		rs_metrics_format(struct rs_metrics *m, struct rs_buf *out);

#endif /* RS_METRICS_H */
