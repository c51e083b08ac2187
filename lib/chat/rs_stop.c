/*
 * rs_stop.c - stop tokens and stop strings (see rs_stop.h).
 *
 * The held text never contains a whole stop string (it would have stopped)
 * and is shorter than the longest one unless a feed just added to it, so
 * searching it in full on every feed costs O((held + n) * strings * len)
 * with small constants.
 */
#include <stdlib.h>
#include <string.h>

#include "rs_buf.h"
#include "rs_stop.h"

struct rs_stop {
	int32_t		*ids;
	size_t		 n_ids;
	char		**strs;
	size_t		*lens;
	size_t		 n_strs;
	size_t		 max_len;	/* longest stop string */
	struct rs_buf	 held;	/* text that may begin a stop string */
	struct rs_buf	 out;	/* what the last call released */
	int		 which;	/* matched stop string, or -1 */
};

enum rs_status
rs_stop_new(struct rs_stop **out, const int32_t *ids, size_t n_ids,
    const char *const *strs, size_t n_strs, struct rs_err *err)
{
	struct rs_stop	*s;
	size_t		 i, len;

	if (n_strs > RS_STOP_MAX_STRS)
		return (rs_errf(err, RS_ERR_LIMIT, "%zu stop strings: at most "
		    "%d allowed", n_strs, RS_STOP_MAX_STRS));
	for (i = 0; i < n_strs; i++) {
		if ((len = strlen(strs[i])) == 0)
			return (rs_errf(err, RS_ERR_INVALID_ARG,
			    "stop string %zu is empty", i));
		if (len > RS_STOP_MAX_LEN)
			return (rs_errf(err, RS_ERR_LIMIT, "stop string %zu: "
			    "%zu bytes, at most %d allowed", i, len,
			    RS_STOP_MAX_LEN));
	}
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	s->which = -1;
	rs_buf_init(&s->held);
	rs_buf_init(&s->out);
	s->ids = malloc((n_ids + 1) * sizeof(*s->ids));
	s->strs = calloc(n_strs + 1, sizeof(*s->strs));
	s->lens = malloc((n_strs + 1) * sizeof(*s->lens));
	if (s->ids == NULL || s->strs == NULL || s->lens == NULL)
		goto nomem;
	if (n_ids > 0)
		memcpy(s->ids, ids, n_ids * sizeof(*ids));
	s->n_ids = n_ids;
	for (i = 0; i < n_strs; i++) {
		s->lens[i] = strlen(strs[i]);
		if (s->lens[i] > s->max_len)
			s->max_len = s->lens[i];
		if ((s->strs[i] = strdup(strs[i])) == NULL)
			goto nomem;
		s->n_strs++;
	}
	*out = s;
	return (RS_OK);
nomem:
	rs_stop_free(s);
	return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
}

void
rs_stop_free(struct rs_stop *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n_strs; i++)
		free(s->strs[i]);
	free(s->strs);
	free(s->lens);
	free(s->ids);
	rs_buf_cleanup(&s->held);
	rs_buf_cleanup(&s->out);
	free(s);
}

int
rs_stop_token(const struct rs_stop *s, int32_t id)
{
	for (size_t i = 0; i < s->n_ids; i++)
		if (s->ids[i] == id)
			return (1);
	return (0);
}

/*
 * The first stop string to complete in H[0..n): returns its start and sets
 * *WHICH, or returns n when none occurs.
 */
static size_t
first_match(const struct rs_stop *s, const char *h, size_t n, int *which)
{
	size_t		best_end = (size_t)-1, best = n;
	const char	*p;

	for (size_t i = 0; i < s->n_strs; i++) {
		p = memmem(h, n, s->strs[i], s->lens[i]);
		if (p == NULL)
			continue;
		size_t at = (size_t)(p - h), end = at + s->lens[i];

		if (end < best_end || (end == best_end && at < best)) {
			best_end = end;
			best = at;
			*which = (int)i;
		}
	}
	return (best);
}

/* Start of the longest tail of H[0..n) that is a proper prefix of a stop. */
static size_t
hold_from(const struct rs_stop *s, const char *h, size_t n)
{
	/* only a tail shorter than the longest stop string can be a prefix */
	for (size_t r = n >= s->max_len ? n - s->max_len + 1 : 0; r < n; r++) {
		size_t	tail = n - r;

		for (size_t i = 0; i < s->n_strs; i++)
			if (tail < s->lens[i] && memcmp(h + r, s->strs[i],
			    tail) == 0)
				return (r);
	}
	return (n);
}

/* Move H[0..k) to the output and drop it from the held text. */
static void
release(struct rs_stop *s, size_t k)
{
	rs_buf_add(&s->out, s->held.data, k);
	rs_buf_consume(&s->held, k);
}

enum rs_status
rs_stop_feed(struct rs_stop *s, const char *text, size_t n, const char **out,
    size_t *out_len, int *stopped, struct rs_err *err)
{
	size_t	at;
	int	which = -1;

	*stopped = 0;
	if (s->which >= 0)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "text fed after a stop string matched"));
	rs_buf_reset(&s->out);
	rs_buf_add(&s->held, text, n);
	if (s->held.len > 0) {
		at = first_match(s, s->held.data, s->held.len, &which);
		if (at < s->held.len) {
			release(s, at);
			rs_buf_reset(&s->held);
			s->which = which;
			*stopped = 1;
		} else {
			release(s, hold_from(s, s->held.data, s->held.len));
		}
	}
	if (s->held.oom || s->out.oom)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	*out = s->out.data != NULL ? s->out.data : "";
	*out_len = s->out.len;
	return (RS_OK);
}

void
rs_stop_flush(struct rs_stop *s, const char **out, size_t *out_len)
{
	rs_buf_reset(&s->out);
	release(s, s->held.len);
	*out = s->out.data != NULL ? s->out.data : "";
	*out_len = s->out.oom ? 0 : s->out.len;
}

int
rs_stop_which(const struct rs_stop *s)
{
	return (s->which);
}
