/*
 * rs_utf8.c - strict UTF-8 classification and the two U+FFFD replacement
 * policies (see rs_utf8.h).
 *
 * A sequence is decided by its lead byte, which fixes the length and the
 * allowed range of the second byte (RFC 3629 §4 table); later bytes are
 * always 80..BF.  The narrowed second-byte ranges are what exclude overlongs
 * (E0, F0), surrogates (ED) and values above U+10FFFF (F4).
 */
#include <string.h>

#include "rs_utf8.h"

/*
 * rs_utf8_seq() of S[0..N), and in *OK the number of leading bytes that are
 * a prefix of some valid sequence (0 when S[0] starts none): the maximal
 * subpart falls out of the same range checks.
 */
static int
scan(const unsigned char *s, size_t n, uint32_t *cp, size_t *ok)
{
	unsigned	c = s[0], lo = 0x80, hi = 0xbf;
	int		len;
	uint32_t	v;

	*ok = 0;
	if (c < 0x80) {
		if (cp != NULL)
			*cp = c;
		return (1);
	}
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0;		/* below: overlong */
		else if (c == 0xed)
			hi = 0x9f;		/* above: surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;		/* below: overlong */
		else if (c == 0xf4)
			hi = 0x8f;		/* above: > U+10FFFF */
	} else
		return (RS_UTF8_INVALID);	/* 80..C1, F5..FF */
	v = c & (0x7f >> len);
	for (int i = 1; i < len; i++) {
		*ok = (size_t)i;
		if ((size_t)i >= n)
			return (RS_UTF8_SHORT);
		if (s[i] < lo || s[i] > hi)
			return (RS_UTF8_INVALID);
		v = v << 6 | (s[i] & 0x3f);
		lo = 0x80;
		hi = 0xbf;
	}
	if (cp != NULL)
		*cp = v;
	return (len);
}

int
rs_utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t	ok;

	return (scan(s, n, cp, &ok));
}

size_t
rs_utf8_subpart(const unsigned char *s, size_t n)
{
	size_t	ok;

	(void)scan(s, n, NULL, &ok);
	return (ok > 0 ? ok : 1);
}

int
rs_utf8_valid(const char *s, size_t n, size_t *bad)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t	i = 0;
	int	k;

	while (i < n) {
		/* ASCII runs are the common case: skip them a byte at a time */
		if (u[i] < 0x80) {
			i++;
			continue;
		}
		if ((k = rs_utf8_seq(u + i, n - i, NULL)) <= 0) {
			if (bad != NULL)
				*bad = i;
			return (0);
		}
		i += (size_t)k;
	}
	return (1);
}

size_t
rs_utf8_sanitize(const char *s, size_t n, enum rs_utf8_policy policy,
    char *out, int final, size_t *used)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t	i = 0, o = 0, ok;
	int	k;

	while (i < n) {
		k = scan(u + i, n - i, NULL, &ok);
		if (k == RS_UTF8_SHORT && !final)
			break;
		if (k <= 0) {
			memcpy(out + o, RS_UTF8_REPL, RS_UTF8_REPL_LEN);
			o += RS_UTF8_REPL_LEN;
			i += policy == RS_UTF8_PER_SUBPART && ok > 0 ? ok : 1;
			continue;
		}
		memcpy(out + o, s + i, (size_t)k);
		o += (size_t)k;
		i += (size_t)k;
	}
	if (used != NULL)
		*used = i;
	return (o);
}

int
rs_utf8_put(uint32_t cp, char *out)
{
	unsigned char *o = (unsigned char *)out;

	if (cp < 0x80) {
		o[0] = (unsigned char)cp;
		return (1);
	}
	if (cp < 0x800) {
		o[0] = (unsigned char)(0xc0 | cp >> 6);
		o[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return (2);
	}
	if (cp < 0x10000) {
		o[0] = (unsigned char)(0xe0 | cp >> 12);
		o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return (3);
	}
	o[0] = (unsigned char)(0xf0 | cp >> 18);
	o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return (4);
}

/*
 * One piece of rs_utf8_quote's output for the bytes at U (N left): its
 * text into OUT (at most 16 bytes), the bytes it stands for in *USED.
 * Escaped as \xHH: control bytes, bytes outside UTF-8, and the characters
 * that would move or hide text on a terminal (C1 controls, the bidi
 * embeddings, overrides and isolates, the marks and separators U+200E,
 * U+200F, U+2028, U+2029) or show as nothing (the soft hyphen, the zero
 * widths U+200B-U+200D and U+2060-U+2064, and U+FEFF: a byte order mark
 * at the start of a line was an invisible culprit); a backslash doubled,
 * so that none of these reads like a file's own "\x00".
 */
static size_t
quote_piece(const unsigned char *u, size_t n, char *out, size_t *used)
{
	static const char hex[] = "0123456789abcdef";
	uint32_t	cp = 0;
	int		len = u[0] < 0x80 ? 1 : rs_utf8_seq(u, n, &cp);
	size_t		k = 0;

	if (u[0] == '\\') {
		*used = 1;
		memcpy(out, "\\\\", 2);
		return (2);
	}
	if (len == 1 && u[0] >= 0x20 && u[0] != 0x7f) {
		*used = 1;
		out[0] = (char)u[0];
		return (1);
	}
	if (len > 1 && !(cp <= 0x9f || cp == 0xad || (cp >= 0x200b &&
	    cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202e) ||
	    (cp >= 0x2060 && cp <= 0x2064) || (cp >= 0x2066 &&
	    cp <= 0x2069) || cp == 0xfeff)) {
		*used = (size_t)len;
		memcpy(out, u, (size_t)len);
		return ((size_t)len);
	}
	*used = len > 1 ? (size_t)len : 1;
	for (size_t i = 0; i < *used; i++) {
		out[k++] = '\\';
		out[k++] = 'x';
		out[k++] = hex[u[i] >> 4];
		out[k++] = hex[u[i] & 15];
	}
	return (k);
}

const char *
rs_utf8_quote(const char *s, size_t n, char *out)
{
	const unsigned char *u = (const unsigned char *)s;
	char		 piece[16];
	size_t		 i = 0, k = 0, used, pl;

	/* whole pieces while they fit: a character is never cut */
	while (i < n) {
		pl = quote_piece(u + i, n - i, piece, &used);
		if (k + pl > RS_UTF8_QUOTE_MAX)
			break;
		memcpy(out + k, piece, pl);
		k += pl;
		i += used;
	}
	if (i < n) {
		memcpy(out + k, "...", 3);
		k += 3;
	}
	out[k] = '\0';
	return (out);
}
