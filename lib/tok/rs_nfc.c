/*
 * rs_nfc.c - NFC in linear time (rs_nfc.h): utf8proc decomposes and
 * composes, the canonical ordering between the two is ours.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "rs_nfc.h"

/* what utf8proc_map uses for NFC: canonical (de)composition, stable */
#define NFC_OPTS	(UTF8PROC_STABLE | UTF8PROC_COMPOSE)
/* runs of marks up to this long are sorted by insertion, longer by count */
#define NFC_SHORT_RUN	16

static int
ccc(utf8proc_int32_t uc)
{
	return (utf8proc_get_property(uc)->combining_class);
}

/* Stable sort of the RUN of N marks (all of class > 0) by class: insertion. */
static void
order_short(utf8proc_int32_t *run, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		const utf8proc_int32_t uc = run[i];
		const int c = ccc(uc);
		size_t j = i;

		for (; j > 0 && ccc(run[j - 1]) > c; j--)
			run[j] = run[j - 1];
		run[j] = uc;
	}
}

/*
 * The same for a long run, by counting (classes are 1..254): stable, one
 * pass to count, one to place into TMP (room for N), one to copy back.
 */
static void
order_long(utf8proc_int32_t *run, size_t n, utf8proc_int32_t *tmp)
{
	size_t	at[257] = { 0 };

	for (size_t i = 0; i < n; i++)
		at[ccc(run[i]) + 1]++;
	for (int c = 1; c < 257; c++)
		at[c] += at[c - 1];
	for (size_t i = 0; i < n; i++)
		tmp[at[ccc(run[i])]++] = run[i];
	memcpy(run, tmp, n * sizeof(*run));
}

/*
 * Canonical ordering of BUF[0..N): each maximal run of code points of
 * class > 0 sorted stably by class; starters (class 0) stay where they
 * are.  TMP: room for N.
 */
static void
order_marks(utf8proc_int32_t *buf, size_t n, utf8proc_int32_t *tmp)
{
	size_t	i = 0, j;

	while (i < n) {
		if (ccc(buf[i]) == 0) {
			i++;
			continue;
		}
		for (j = i + 1; j < n && ccc(buf[j]) != 0; j++)
			continue;
		if (j - i <= NFC_SHORT_RUN)
			order_short(buf + i, j - i);
		else
			order_long(buf + i, j - i, tmp);
		i = j;
	}
}

/*
 * The canonical decomposition of S[0..N) into *BUF (its length), each
 * code point by utf8proc_decompose_char, no ordering yet.
 */
static long
decompose(const char *s, size_t n, utf8proc_int32_t **buf, size_t *len)
{
	size_t		 cap = n + 16, w = 0, r = 0;
	utf8proc_int32_t *b = malloc(cap * sizeof(*b)), *nb, uc;
	utf8proc_ssize_t k, d;
	int		 bound = 0;

	if (b == NULL)
		return (UTF8PROC_ERROR_NOMEM);
	while (r < n) {
		k = utf8proc_iterate((const utf8proc_uint8_t *)s + r,
		    (utf8proc_ssize_t)(n - r), &uc);
		if (k <= 0 || uc < 0) {
			free(b);
			return (UTF8PROC_ERROR_INVALIDUTF8);
		}
		r += (size_t)k;
		for (;;) {
			d = utf8proc_decompose_char(uc, b + w,
			    (utf8proc_ssize_t)(cap - w), NFC_OPTS, &bound);
			if (d < 0) {
				free(b);
				return (d);
			}
			if ((size_t)d <= cap - w)
				break;
			/* (a code point's decomposition is a few; grow) */
			if (cap > SIZE_MAX / 2 / sizeof(*b) ||
			    (nb = realloc(b, 2 * cap * sizeof(*b))) == NULL) {
				free(b);
				return (UTF8PROC_ERROR_NOMEM);
			}
			b = nb;
			cap *= 2;
		}
		w += (size_t)d;
	}
	*buf = b;
	*len = w;
	return (0);
}

long
rs_nfc_map(const char *s, size_t n, uint8_t **out)
{
	utf8proc_int32_t *buf = NULL, *tmp, *big;
	utf8proc_ssize_t  k;
	size_t		  len = 0;
	long		  st;

	*out = NULL;
	if (n > (size_t)INT32_MAX)
		return (UTF8PROC_ERROR_OVERFLOW);
	if ((st = decompose(s, n, &buf, &len)) != 0)
		return (st);
	if ((tmp = malloc((len + 1) * sizeof(*tmp))) == NULL) {
		free(buf);
		return (UTF8PROC_ERROR_NOMEM);
	}
	order_marks(buf, len, tmp);
	free(tmp);
	/* utf8proc_reencode composes, then writes the UTF-8 over the buffer
	   (at most 4 bytes a code point) and a NUL: one spare byte */
	if ((big = realloc(buf, len * sizeof(*buf) + 1)) == NULL) {
		free(buf);
		return (UTF8PROC_ERROR_NOMEM);
	}
	buf = big;
	k = utf8proc_reencode(buf, (utf8proc_ssize_t)len, NFC_OPTS);
	if (k < 0) {
		free(buf);
		return (k);
	}
	*out = (uint8_t *)buf;
	return (k);
}
