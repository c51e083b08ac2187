/*
 * rs_buf.h - a growable byte buffer for building text (prompts, JSON,
 * streamed deltas).
 *
 * The caller embeds a struct rs_buf and pairs rs_buf_init() with
 * rs_buf_cleanup().  Appends grow the storage geometrically (amortised O(1)
 * per byte) and keep DATA NUL-terminated, so DATA[0..LEN) may be used as a C
 * string when it holds no NUL bytes.  Out of memory is sticky: the failing
 * append and every later one return -1 and set OOM, so a builder can append
 * freely and test OOM once at the end.  Not thread-safe; one per thread.
 */
#ifndef RS_BUF_H
#define RS_BUF_H

#include <stddef.h>

struct rs_buf {
	char	*data;	/* NULL until the first append; then NUL-terminated */
	size_t	 len;	/* bytes used, not counting the NUL */
	size_t	 cap;	/* bytes allocated */
	int	 oom;	/* an allocation failed; the contents are incomplete */
};

void	 rs_buf_init(struct rs_buf *b);
/* Free the storage and re-initialise B (NULL is fine). */
void	 rs_buf_cleanup(struct rs_buf *b);
/* Forget the contents, keep the storage (OOM is cleared too). */
void	 rs_buf_reset(struct rs_buf *b);

/* Append N bytes at P (which may point into B itself).  0, or -1 on OOM. */
int	 rs_buf_add(struct rs_buf *b, const void *p, size_t n);
int	 rs_buf_adds(struct rs_buf *b, const char *s);	/* a C string */
int	 rs_buf_addc(struct rs_buf *b, int c);		/* one byte */
/* printf-style append. */
int	 rs_buf_addf(struct rs_buf *b, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

/* Drop the first N bytes (N <= LEN), moving the rest to the front. */
void	 rs_buf_consume(struct rs_buf *b, size_t n);
/* Shorten to N bytes (N <= LEN). */
void	 rs_buf_truncate(struct rs_buf *b, size_t n);

/*
 * Hand the contents to the caller as a malloc'd NUL-terminated string
 * (caller frees with free()); *LEN gets its length when LEN is non-NULL.
 * B is re-initialised.  NULL when B is OOM or the final allocation fails
 * (B is then cleaned up as well).
 */
char	*rs_buf_release(struct rs_buf *b, size_t *len);

#endif /* RS_BUF_H */
