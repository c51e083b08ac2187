/*
 * rs_stop.h - when generation stops: stop token ids and stop strings
 * (serving.md §0 "End-of-generation set", §1.8 last paragraph, §4.3 stop).
 *
 * Token ids: rs_stop_token() says whether a sampled id ends generation (the
 * EOG set plus any the caller adds); that token is never shown as text.
 *
 * Stop strings are matched on the decoded text as it streams, raw model
 * text included (reasoning, tool-call markup).  A stop string may arrive
 * split over any number of tokens, so the matcher holds back the longest
 * tail of the text that is a proper prefix of some stop string and
 * releases it only once it can no longer start one.  When a stop string
 * completes, the text is cut at its first byte: what comes before it is
 * released, the stop string and everything after it never are.  The first
 * stop string to complete wins (the earliest end; on a tie, the one that
 * starts earlier), which is also what feeding the text in any other pieces
 * gives.
 *
 * Lifecycle: rs_stop_new(); rs_stop_feed() for each decoded piece;
 * rs_stop_flush() when generation ends for another reason, to release the
 * held tail.  One per sequence; not thread-safe.
 */
#ifndef RS_STOP_H
#define RS_STOP_H

#include <stddef.h>
#include <stdint.h>

#include "rs_err.h"

#define RS_STOP_MAX_STRS	64	/* stop strings per request */
#define RS_STOP_MAX_LEN		1024	/* bytes per stop string */

struct rs_stop;

/*
 * IDS (N_IDS token ids) and STRS (N_STRS NUL-terminated UTF-8 strings) are
 * copied.  RS_ERR_INVALID_ARG for an empty stop string, RS_ERR_LIMIT past
 * RS_STOP_MAX_STRS or RS_STOP_MAX_LEN, RS_ERR_NOMEM.
 */
enum rs_status	rs_stop_new(struct rs_stop **out, const int32_t *ids,
		    size_t n_ids, const char *const *strs, size_t n_strs,
		    struct rs_err *err);
void		rs_stop_free(struct rs_stop *s);

/* 1 when token ID ends generation. */
int		rs_stop_token(const struct rs_stop *s, int32_t id);

/*
 * Feed the next N bytes of decoded text.  *OUT / *OUT_LEN get the text that
 * is now safe to pass on (possibly empty; borrowed until the next call).
 * *STOPPED becomes 1 when a stop string completed: *OUT then ends right
 * before it, and further feeds fail with RS_ERR_INVALID_ARG.  RS_ERR_NOMEM.
 */
enum rs_status	rs_stop_feed(struct rs_stop *s, const char *text, size_t n,
		    const char **out, size_t *out_len, int *stopped,
		    struct rs_err *err);

/*
 * Generation ended without a stop string: release the held tail into
 * *OUT / *OUT_LEN (borrowed until the next call).
 */
void		rs_stop_flush(struct rs_stop *s, const char **out,
		    size_t *out_len);

/* Index of the stop string that matched, or -1. */
int		rs_stop_which(const struct rs_stop *s);

#endif /* RS_STOP_H */
