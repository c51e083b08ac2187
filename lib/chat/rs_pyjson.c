/*
 * rs_pyjson.c - Python-style JSON text (see rs_pyjson.h).
 *
 * Float repr: Python prints the shortest digit string d1 d2 ... dn that
 * reads back as the same double, with decimal exponent decpt (value =
 * 0.d1...dn * 10^decpt), in positional form when -4 < decpt <= 16 and in
 * exponent form otherwise.  We find the shortest digits by printing with
 * %.{p}e for p = 1..17 and keeping the first that strtod() maps back to V:
 * %.{p}e is correctly rounded, so it is the p-digit string nearest to V and
 * round-trips whenever any p-digit string does.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs_pyjson.h"

#define LIT_MAX_DEPTH	128

struct lit {
	const char		*s;
	size_t			 n, i;
	enum rs_pyjson_mode	 mode;
	struct rs_buf		*b;
	int			 depth;
};

static int	lit_value(struct lit *l);

void
rs_pyjson_escape(struct rs_buf *b, const char *s, size_t n)
{
	static const char	hex[] = "0123456789abcdef";
	size_t			i, run = 0;

	for (i = 0; i < n; i++) {
		unsigned char	c = (unsigned char)s[i];
		const char	*e = NULL;
		char		 u[7];

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		rs_buf_add(b, s + run, i - run);
		run = i + 1;
		switch (c) {
		case '"': e = "\\\""; break;
		case '\\': e = "\\\\"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		case '\b': e = "\\b"; break;
		case '\f': e = "\\f"; break;
		default:
			memcpy(u, "\\u00", 4);
			u[4] = hex[c >> 4];
			u[5] = hex[c & 15];
			u[6] = '\0';
			e = u;
		}
		rs_buf_adds(b, e);
	}
	rs_buf_add(b, s + run, n - run);
}

void
rs_pyjson_str(struct rs_buf *b, const char *s, size_t n)
{
	rs_buf_addc(b, '"');
	rs_pyjson_escape(b, s, n);
	rs_buf_addc(b, '"');
}

void
rs_pyjson_real(struct rs_buf *b, double v)
{
	char	buf[40], digits[20];
	int	prec, nd = 0, exp10, decpt, i;
	char	*p;

	if (isnan(v)) {
		rs_buf_adds(b, "NaN");
		return;
	}
	if (isinf(v)) {
		rs_buf_adds(b, v < 0 ? "-Infinity" : "Infinity");
		return;
	}
	if (v == 0) {
		rs_buf_adds(b, signbit(v) ? "-0.0" : "0.0");
		return;
	}
	for (prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*e", prec - 1, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	/* buf is "[-]d[.ddd]e[+-]xx": collect the digits and the exponent */
	p = buf;
	if (*p == '-') {
		rs_buf_addc(b, '-');
		p++;
	}
	for (; *p != 'e'; p++)
		if (*p != '.')
			digits[nd++] = *p;
	exp10 = atoi(p + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	decpt = exp10 + 1;
	if (decpt > -4 && decpt <= 16) {
		if (decpt <= 0) {
			rs_buf_adds(b, "0.");
			for (i = decpt; i < 0; i++)
				rs_buf_addc(b, '0');
			rs_buf_add(b, digits, (size_t)nd);
		} else if (decpt >= nd) {
			rs_buf_add(b, digits, (size_t)nd);
			for (i = nd; i < decpt; i++)
				rs_buf_addc(b, '0');
			rs_buf_adds(b, ".0");
		} else {
			rs_buf_add(b, digits, (size_t)decpt);
			rs_buf_addc(b, '.');
			rs_buf_add(b, digits + decpt, (size_t)(nd - decpt));
		}
		return;
	}
	rs_buf_addc(b, digits[0]);
	if (nd > 1) {
		rs_buf_addc(b, '.');
		rs_buf_add(b, digits + 1, (size_t)(nd - 1));
	}
	rs_buf_addf(b, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
}

void
rs_pyjson_dump(struct rs_buf *b, const struct rs_json *j)
{
	const char	*s, *key;
	struct rs_json	*v;
	void		*it = NULL;
	size_t		 n, i, klen;
	int64_t		 iv;
	double		 dv;
	int		 bv;

	switch (rs_json_kind(j)) {
	case RS_JSON_NULL:
		rs_buf_adds(b, "null");
		break;
	case RS_JSON_BOOL:
		rs_json_as_bool(j, &bv);
		rs_buf_adds(b, bv ? "true" : "false");
		break;
	case RS_JSON_INT:
		rs_json_as_int(j, &iv);
		rs_buf_addf(b, "%lld", (long long)iv);
		break;
	case RS_JSON_REAL:
		rs_json_as_real(j, &dv);
		rs_pyjson_real(b, dv);
		break;
	case RS_JSON_STRING:
		rs_json_as_str(j, &s, &n);
		rs_pyjson_str(b, s, n);
		break;
	case RS_JSON_WIDE:	/* its lexeme (serving.md §6, 46) */
		rs_json_as_wide(j, &s, &n);
		rs_buf_add(b, s, n);
		break;
	case RS_JSON_ARRAY:
		rs_buf_addc(b, '[');
		n = rs_json_arr_len(j);
		for (i = 0; i < n; i++) {
			if (i > 0)
				rs_buf_adds(b, ", ");
			rs_pyjson_dump(b, rs_json_arr_at(j, i));
		}
		rs_buf_addc(b, ']');
		break;
	case RS_JSON_OBJECT:
		rs_buf_addc(b, '{');
		for (i = 0; rs_json_obj_next(j, &it, &key, &klen, &v) == 0;
		    i++) {
			if (i > 0)
				rs_buf_adds(b, ", ");
			rs_pyjson_str(b, key, klen);
			rs_buf_adds(b, ": ");
			rs_pyjson_dump(b, v);
		}
		rs_buf_addc(b, '}');
		break;
	}
}

int
rs_pyjson_pystr(struct rs_buf *b, const struct rs_json *j)
{
	const char	*s;
	size_t		 n;
	int64_t		 iv;
	double		 dv;
	int		 bv;

	switch (rs_json_kind(j)) {
	case RS_JSON_NULL:
		rs_buf_adds(b, "None");
		return (0);
	case RS_JSON_BOOL:
		rs_json_as_bool(j, &bv);
		rs_buf_adds(b, bv ? "True" : "False");
		return (0);
	case RS_JSON_INT:
		rs_json_as_int(j, &iv);
		rs_buf_addf(b, "%lld", (long long)iv);
		return (0);
	case RS_JSON_REAL:
		/* str(float) is repr(float), but inf/nan print as Python does */
		rs_json_as_real(j, &dv);
		if (isnan(dv))
			rs_buf_adds(b, "nan");
		else if (isinf(dv))
			rs_buf_adds(b, dv < 0 ? "-inf" : "inf");
		else
			rs_pyjson_real(b, dv);
		return (0);
	case RS_JSON_STRING:
		rs_json_as_str(j, &s, &n);
		rs_buf_add(b, s, n);
		return (0);
	case RS_JSON_WIDE:
		rs_json_as_wide(j, &s, &n);
		rs_buf_add(b, s, n);
		return (0);
	default:
		return (-1);
	}
}

/* ---- literal normalisation ---- */

int
rs_pyjson_is_number(const char *s, size_t n, int integer)
{
	return (n > 0 && rs_json_number_len(s, n) == n && (!integer ||
	    (memchr(s, '.', n) == NULL && memchr(s, 'e', n) == NULL &&
	    memchr(s, 'E', n) == NULL)));
}

static void
lit_ws(struct lit *l)
{
	while (l->i < l->n && (l->s[l->i] == ' ' || l->s[l->i] == '\t' ||
	    l->s[l->i] == '\n' || l->s[l->i] == '\r'))
		l->i++;
}

static void
put_utf8(struct rs_buf *b, uint32_t cp)
{
	char	u[4];

	if (cp < 0x80) {
		rs_buf_addc(b, (int)cp);
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | cp >> 6);
		u[1] = (char)(0x80 | (cp & 0x3f));
		rs_buf_add(b, u, 2);
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | cp >> 12);
		u[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		rs_buf_add(b, u, 3);
	} else {
		u[0] = (char)(0xf0 | cp >> 18);
		u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		u[2] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		rs_buf_add(b, u, 4);
	}
}

/* K hex digits at S into *CP; -1 if any is not a hex digit. */
static int
hexval(const char *s, int k, uint32_t *cp)
{
	uint32_t	v = 0;

	for (int i = 0; i < k; i++) {
		char	c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return (-1);
	}
	*cp = v;
	return (0);
}

/*
 * A \u escape at l->s[l->i] (just after the backslash and 'u'): combines a
 * surrogate pair; a lone surrogate becomes U+FFFD (serving.md §1.7).
 */
static int
lit_u16(struct lit *l, struct rs_buf *out)
{
	uint32_t	hi, lo;

	if (l->i + 4 > l->n || hexval(l->s + l->i, 4, &hi) != 0)
		return (0);
	l->i += 4;
	if (hi >= 0xd800 && hi <= 0xdbff && l->i + 6 <= l->n &&
	    l->s[l->i] == '\\' && l->s[l->i + 1] == 'u' &&
	    hexval(l->s + l->i + 2, 4, &lo) == 0 && lo >= 0xdc00 &&
	    lo <= 0xdfff) {
		l->i += 6;
		put_utf8(out, 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00));
		return (1);
	}
	put_utf8(out, hi >= 0xd800 && hi <= 0xdfff ? 0xfffd : hi);
	return (1);
}

/* One escape after a backslash; 0 if invalid in this mode. */
static int
lit_escape(struct lit *l, struct rs_buf *out)
{
	uint32_t	cp;
	char		c;

	if (l->i >= l->n)
		return (0);
	c = l->s[l->i++];
	switch (c) {
	case '"': case '\\': case '/':
		if (c == '/' && l->mode == RS_PYJSON_PYTHON)
			rs_buf_addc(out, '\\');	/* Python keeps unknown escapes */
		rs_buf_addc(out, c);
		return (1);
	case 'b': rs_buf_addc(out, '\b'); return (1);
	case 'f': rs_buf_addc(out, '\f'); return (1);
	case 'n': rs_buf_addc(out, '\n'); return (1);
	case 'r': rs_buf_addc(out, '\r'); return (1);
	case 't': rs_buf_addc(out, '\t'); return (1);
	case 'u': return (lit_u16(l, out));
	}
	if (l->mode != RS_PYJSON_PYTHON)
		return (0);
	switch (c) {
	case '\'': rs_buf_addc(out, '\''); return (1);
	case 'a': rs_buf_addc(out, '\a'); return (1);
	case 'v': rs_buf_addc(out, '\v'); return (1);
	case 'x':
	case 'U': {
		int	k = c == 'x' ? 2 : 8;

		if (l->i + (size_t)k > l->n || hexval(l->s + l->i, k, &cp) != 0 ||
		    cp > 0x10ffff)
			return (0);
		l->i += (size_t)k;
		put_utf8(out, cp >= 0xd800 && cp <= 0xdfff ? 0xfffd : cp);
		return (1);
	}
	}
	rs_buf_addc(out, '\\');
	rs_buf_addc(out, c);
	return (1);
}

/*
 * A quoted string, as JSON.  KEY: an object key, which must not hold
 * U+0000: JSON allows it ("\u0000"), but our JSON reader (jansson) keeps
 * keys as C strings and refuses it, so such arguments could not be read
 * back when a client returns the call in the next request.
 */
static int
lit_string(struct lit *l, int key)
{
	struct rs_buf	 dec;
	char		 q = l->s[l->i++];
	int		 ok = 0;

	rs_buf_init(&dec);
	while (l->i < l->n) {
		unsigned char c = (unsigned char)l->s[l->i];

		if (c == (unsigned char)q) {
			l->i++;
			ok = 1;
			break;
		}
		if (c == '\\') {
			l->i++;
			if (!lit_escape(l, &dec))
				break;
			continue;
		}
		/* JSON forbids raw control characters; Python only newlines */
		if (c < 0x20 && (l->mode == RS_PYJSON_STRICT || c == '\n'))
			break;
		rs_buf_addc(&dec, c);
		l->i++;
	}
	if (ok && key && dec.len > 0 && memchr(dec.data, '\0', dec.len))
		ok = 0;
	if (ok)
		rs_pyjson_str(l->b, dec.data != NULL ? dec.data : "", dec.len);
	rs_buf_cleanup(&dec);
	return (ok);
}

static int
lit_number(struct lit *l)
{
	size_t	start = l->i;

	while (l->i < l->n && strchr("+-.eE0123456789", l->s[l->i]) != NULL &&
	    l->s[l->i] != '\0')
		l->i++;
	if (!rs_pyjson_is_number(l->s + start, l->i - start, 0))
		return (0);
	rs_buf_add(l->b, l->s + start, l->i - start);
	return (1);
}

/* A bare word: JSON true/false/null, and in Python mode True/False/None. */
static int
lit_word(struct lit *l)
{
	static const struct { const char *w; const char *out; int py; } words[] = {
		{ "true", "true", 0 }, { "false", "false", 0 },
		{ "null", "null", 0 }, { "True", "true", 1 },
		{ "False", "false", 1 }, { "None", "null", 1 }
	};

	for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++) {
		size_t	len = strlen(words[k].w);

		if (words[k].py && l->mode != RS_PYJSON_PYTHON)
			continue;
		if (l->n - l->i >= len && memcmp(l->s + l->i, words[k].w,
		    len) == 0) {
			l->i += len;
			rs_buf_adds(l->b, words[k].out);
			return (1);
		}
	}
	return (0);
}

static int
is_quote(const struct lit *l)
{
	return (l->i < l->n && (l->s[l->i] == '"' ||
	    (l->mode == RS_PYJSON_PYTHON && l->s[l->i] == '\'')));
}

/* Array or object body after the opening bracket, up to CLOSE. */
static int
lit_container(struct lit *l, char close)
{
	int	first = 1;

	if (++l->depth > LIT_MAX_DEPTH)
		return (0);
	rs_buf_addc(l->b, l->s[l->i++]);
	for (;;) {
		lit_ws(l);
		if (first && l->i < l->n && l->s[l->i] == close)
			break;
		if (!first) {
			if (l->i >= l->n || l->s[l->i] != ',')
				return (0);
			l->i++;
			lit_ws(l);
			/* Python allows one trailing comma */
			if (l->mode == RS_PYJSON_PYTHON && l->i < l->n &&
			    l->s[l->i] == close)
				break;
			rs_buf_adds(l->b, ", ");
		}
		first = 0;
		if (close == '}') {
			if (!is_quote(l) || !lit_string(l, 1))
				return (0);
			lit_ws(l);
			if (l->i >= l->n || l->s[l->i] != ':')
				return (0);
			l->i++;
			lit_ws(l);
			rs_buf_adds(l->b, ": ");
		}
		if (!lit_value(l))
			return (0);
		lit_ws(l);
		if (l->i < l->n && l->s[l->i] == close)
			break;
	}
	l->i++;
	rs_buf_addc(l->b, close);
	l->depth--;
	return (1);
}

static int
lit_value(struct lit *l)
{
	char	c;

	if (l->i >= l->n)
		return (0);
	c = l->s[l->i];
	if (c == '{')
		return (lit_container(l, '}'));
	if (c == '[')
		return (lit_container(l, ']'));
	if (is_quote(l))
		return (lit_string(l, 0));
	if (c == '-' || (c >= '0' && c <= '9'))
		return (lit_number(l));
	return (lit_word(l));
}

int
rs_pyjson_literal(struct rs_buf *b, const char *s, size_t n,
    enum rs_pyjson_mode mode)
{
	struct lit	l = { s, n, 0, mode, b, 0 };
	size_t		start = b->len;

	lit_ws(&l);
	if (lit_value(&l)) {
		lit_ws(&l);
		if (l.i == n)
			return (1);
	}
	rs_buf_truncate(b, start);
	return (0);
}

/* Whether rs_json_parse reads S (N bytes). */
static int
json_reads(const char *s, size_t n)
{
	struct rs_json	*j;

	if (rs_json_parse(s, n, &j, NULL) != RS_OK)
		return (0);
	rs_json_free(j);
	return (1);
}

/*
 * The first number at or after byte I of the JSON text S (N bytes) that
 * rs_json_parse cannot hold (an integer past 64 bits, a real that
 * overflows, e.g. 1e400): its start (N: none), its end in *END.  Only
 * well-formed number lexemes outside strings count, so that quoting them
 * leaves malformed text malformed.
 */
static size_t
next_wide(const char *s, size_t n, size_t i, size_t *end)
{
	size_t	j;

	while (i < n) {
		if (s[i] == '"') {		/* a string, escapes and all */
			for (j = i + 1; j < n && s[j] != '"'; j++)
				if (s[j] == '\\')
					j++;
			i = j < n ? j + 1 : n;
		} else if (s[i] == '-' || (s[i] >= '0' && s[i] <= '9')) {
			for (j = i; j < n && s[j] != '\0' &&
			    strchr("+-.0123456789eE", s[j]) != NULL; j++)
				;
			if (rs_pyjson_is_number(s + i, j - i, 0) &&
			    !json_reads(s + i, j - i)) {
				*end = j;
				return (i);
			}
			i = j;
		} else
			i++;
	}
	return (n);
}

/* What quote_wide_numbers adds around each number: 14 ASCII characters. */
#define WIDE_ADDED	(sizeof("\"" RS_JSON_WIDE_MARK "\"") - 1)

/* S (N bytes) into B with every wide number (next_wide) a string of its
   lexeme, marked as rs_json.h says. */
static void
quote_wide_numbers(const char *s, size_t n, struct rs_buf *b)
{
	size_t	i = 0, w, end;

	while ((w = next_wide(s, n, i, &end)) < n) {
		rs_buf_add(b, s + i, w - i);
		rs_buf_adds(b, "\"" RS_JSON_WIDE_MARK);
		rs_buf_add(b, s + w, end - w);
		rs_buf_addc(b, '"');
		i = end;
	}
	rs_buf_add(b, s + i, n - i);
}

/*
 * ERR's "line L column C: ..." is a position in the text that
 * quote_wide_numbers made of S: moved back to S, less WIDE_ADDED for
 * each number quoted on line L before column C (columns count
 * characters, as rs_json_parse's do; the quotes add no line).
 */
static void
unshift_column(const char *s, size_t n, struct rs_err *err)
{
	int	 line, col, at = 0, l = 1, c = 1, k = 0;
	size_t	 i = 0, w, end;
	char	 msg[sizeof(err->msg)];

	if (sscanf(err->msg, "line %d column %d: %n", &line, &col, &at) != 2 ||
	    at == 0)
		return;
	while ((w = next_wide(s, n, i, &end)) < n) {
		/* line and column of the number's last byte, in S */
		for (; i < end; i++) {
			if (s[i] == '\n') {
				l++;
				c = 1;
			} else if (((unsigned char)s[i] & 0xc0) != 0x80)
				c++;
		}
		if (l > line)
			break;
		if (l == line) {
			/* the number ends at column c - 1 of S, and its quote
			   at c - 1 + (k + 1)·WIDE_ADDED of the text parsed */
			if (c - 1 + (k + 1) * (int)WIDE_ADDED >= col)
				break;
			k++;
		}
	}
	(void)snprintf(msg, sizeof(msg), "line %d column %d: %s", line,
	    col - k * (int)WIDE_ADDED, err->msg + at);
	memcpy(err->msg, msg, sizeof(msg));
}

enum rs_status
rs_pyjson_parse(const char *s, size_t n, struct rs_json **out,
    struct rs_err *err)
{
	struct rs_buf	b;
	enum rs_status	st;

	if ((st = rs_json_parse(s, n, out, err)) != RS_ERR_LIMIT)
		return (st);
	rs_buf_init(&b);
	quote_wide_numbers(s, n, &b);
	st = b.oom ? rs_errf(err, RS_ERR_NOMEM, "out of memory") :
	    rs_json_parse(b.data, b.len, out, err);
	if (st == RS_ERR_FORMAT && err != NULL)
		unshift_column(s, n, err);
	rs_buf_cleanup(&b);
	return (st);
}
