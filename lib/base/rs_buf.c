/*
 * rs_buf.c - growable byte buffer (see rs_buf.h).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs_buf.h"

/* Make room for N more bytes plus the NUL; -1 (and OOM) on failure. */
static int
reserve(struct rs_buf *b, size_t n)
{
	size_t	 need, cap;
	char	*p;

	if (b->oom)
		return (-1);
	if (n > SIZE_MAX - b->len - 1) {
		b->oom = 1;
		return (-1);
	}
	need = b->len + n + 1;
	if (need <= b->cap)
		return (0);
	cap = b->cap < 64 ? 64 : b->cap;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if ((p = realloc(b->data, cap)) == NULL) {
		b->oom = 1;
		return (-1);
	}
	b->data = p;
	b->cap = cap;
	return (0);
}

void
rs_buf_init(struct rs_buf *b)
{
	b->data = NULL;
	b->len = b->cap = 0;
	b->oom = 0;
}

void
rs_buf_cleanup(struct rs_buf *b)
{
	if (b == NULL)
		return;
	free(b->data);
	rs_buf_init(b);
}

void
rs_buf_reset(struct rs_buf *b)
{
	b->len = 0;
	b->oom = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

int
rs_buf_add(struct rs_buf *b, const void *p, size_t n)
{
	size_t	off = 0;
	int	inside;

	/* P may point into our own storage, which reserve() can move */
	inside = b->data != NULL && (const char *)p >= b->data &&
	    (const char *)p < b->data + b->cap;
	if (inside)
		off = (size_t)((const char *)p - b->data);
	if (reserve(b, n) != 0)
		return (-1);
	if (inside)
		p = b->data + off;
	if (n > 0)
		memmove(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return (0);
}

int
rs_buf_adds(struct rs_buf *b, const char *s)
{
	return (rs_buf_add(b, s, strlen(s)));
}

int
rs_buf_addc(struct rs_buf *b, int c)
{
	char	ch = (char)c;

	return (rs_buf_add(b, &ch, 1));
}

int
rs_buf_addf(struct rs_buf *b, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || reserve(b, (size_t)n) != 0)
		return (b->oom = 1, -1);
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return (0);
}

void
rs_buf_consume(struct rs_buf *b, size_t n)
{
	if (n == 0)
		return;
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
	b->data[b->len] = '\0';
}

void
rs_buf_truncate(struct rs_buf *b, size_t n)
{
	if (b->data == NULL)
		return;
	b->len = n;
	b->data[n] = '\0';
}

char *
rs_buf_release(struct rs_buf *b, size_t *len)
{
	char	*p;

	if (b->oom || reserve(b, 0) != 0) {
		rs_buf_cleanup(b);
		return (NULL);
	}
	b->data[b->len] = '\0';
	p = b->data;
	if (len != NULL)
		*len = b->len;
	rs_buf_init(b);
	return (p);
}
