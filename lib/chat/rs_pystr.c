/*
 * rs_pystr.c - Python str.isspace() on UTF-8 (see rs_pystr.h).
 */
#include "rs_pystr.h"

int
rs_pystr_isspace(uint32_t c)
{
	return ((c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) ||
	    c == 0x85 || c == 0xa0 || c == 0x1680 ||
	    (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
	    c == 0x202f || c == 0x205f || c == 0x3000);
}

/*
 * The code point of the sequence at S (N bytes left) and its length in
 * *LEN; an invalid or cut sequence is one byte of "not a space" (U+FFFD).
 */
static uint32_t
decode(const unsigned char *s, size_t n, size_t *len)
{
	uint32_t	cp;
	size_t		k, i;

	*len = 1;
	if (s[0] < 0x80)
		return (s[0]);
	if ((s[0] & 0xe0) == 0xc0) { k = 2; cp = s[0] & 0x1f; }
	else if ((s[0] & 0xf0) == 0xe0) { k = 3; cp = s[0] & 0x0f; }
	else if ((s[0] & 0xf8) == 0xf0) { k = 4; cp = s[0] & 0x07; }
	else
		return (0xfffd);
	if (k > n)
		return (0xfffd);
	for (i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return (0xfffd);
		cp = cp << 6 | (s[i] & 0x3f);
	}
	*len = k;
	return (cp);
}

size_t
rs_pystr_lspace(const char *s, size_t n)
{
	const unsigned char	*u = (const unsigned char *)s;
	size_t			 i = 0, k;

	while (i < n && rs_pystr_isspace(decode(u + i, n - i, &k)))
		i += k;
	return (i);
}

size_t
rs_pystr_rspace(const char *s, size_t n)
{
	const unsigned char	*u = (const unsigned char *)s;
	size_t			 end = n, j, k;

	while (end > 0) {
		/* back to the lead byte of the last code point (at most 3 steps) */
		for (j = end - 1; j > 0 && end - j < 4 && (u[j] & 0xc0) == 0x80;
		    j--)
			;
		if (!rs_pystr_isspace(decode(u + j, end - j, &k)) ||
		    j + k != end)
			break;
		end = j;
	}
	return (n - end);
}
