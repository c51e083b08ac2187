/*
 * rs_json.c - the JSON value API of rs_json.h on top of jansson.  A struct
 * rs_json * is a json_t * (never dereferenced outside this file).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rs_json.h"

#define J(x)	((json_t *)(x))
#define R(x)	((struct rs_json *)(x))

/* The value of 4 hex digits at S, or -1. */
static int
hex4(const char *s)
{
	int	v = 0;

	for (int i = 0; i < 4; i++) {
		int	c = (unsigned char)s[i];

		if (c >= '0' && c <= '9')
			c -= '0';
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			c = (c | 0x20) - 'a' + 10;
		else
			return (-1);
		v = v << 4 | c;
	}
	return (v);
}

/*
 * The offset of the next \uXXXX escape at or after I in TEXT (N bytes)
 * that is an unpaired UTF-16 surrogate, or N.  Strings are tracked from
 * their quotes, so a backslash that is itself escaped ("\\ud83d") is no
 * escape.  For text that is not valid JSON the answer does not matter:
 * the parser rejects it either way.
 */
static size_t
next_lone_surrogate(const char *text, size_t n, size_t i, int *in_str)
{
	while (i < n) {
		char	c = text[i];
		int	u, v;

		if (!*in_str) {
			*in_str = c == '"';
			i++;
			continue;
		}
		if (c == '"') {
			*in_str = 0;
			i++;
			continue;
		}
		if (c != '\\') {
			i++;
			continue;
		}
		if (i + 1 >= n || text[i + 1] != 'u' || i + 6 > n ||
		    (u = hex4(text + i + 2)) < 0xd800 || u > 0xdfff) {
			i += 2;
			continue;
		}
		if (u >= 0xdc00 || i + 12 > n || text[i + 6] != '\\' ||
		    text[i + 7] != 'u' || (v = hex4(text + i + 8)) < 0xdc00 ||
		    v > 0xdfff)
			return (i);	/* a low half, or a high one alone */
		i += 12;		/* a pair */
	}
	return (n);
}

size_t
rs_json_lone_surrogates(const char *text, size_t n)
{
	size_t	k = 0;
	int	in_str = 0;

	/* most texts have no \u escape at all: one memmem, no walk */
	if (memmem(text, n, "\\u", 2) == NULL)
		return (0);
	for (size_t i = 0; (i = next_lone_surrogate(text, n, i, &in_str)) < n;
	    i += 6)
		k++;
	return (k);
}

/* A copy of TEXT with each unpaired surrogate escape written \uFFFD. */
static char *
mend_surrogates(const char *text, size_t n)
{
	char	*t;
	int	 in_str = 0;

	if ((t = malloc(n > 0 ? n : 1)) == NULL)
		return (NULL);
	memcpy(t, text, n);
	for (size_t i = 0; (i = next_lone_surrogate(t, n, i, &in_str)) < n;
	    i += 6)
		memcpy(t + i + 2, "FFFD", 4);
	return (t);
}

enum rs_status
rs_json_parse(const char *text, size_t n, struct rs_json **out,
    struct rs_err *err)
{
	json_error_t	 e;
	json_t		*j;
	char		*mended = NULL;

	/* jansson refuses unpaired surrogate escapes, which clients that cut
	   JavaScript strings send: read as U+FFFD (serving.md §1.7), the
	   same six bytes, so error positions do not move */
	if (rs_json_lone_surrogates(text, n) > 0 &&
	    (mended = mend_surrogates(text, n)) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	j = json_loadb(mended != NULL ? mended : text, n, JSON_DECODE_ANY |
	    JSON_ALLOW_NUL, &e);
	free(mended);
	if (j == NULL) {
		/* jansson reports integers past 64 bits as a range error */
		if (json_error_code(&e) == json_error_numeric_overflow)
			return (rs_errf(err, RS_ERR_LIMIT,
			    "line %d column %d: number beyond 64-bit range",
			    e.line, e.column));
		/* a byte order mark is invisible in jansson's "near '...'" */
		if (n >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
			return (rs_errf(err, RS_ERR_FORMAT, "line 1 column 1: "
			    "a byte order mark (U+FEFF) starts the text; JSON "
			    "text is UTF-8 without one (RFC 8259 section "
			    "8.1)"));
		/* a NUL outside a string stops jansson's view of the token:
		   it then says "end of file expected near end of file" */
		if (e.position >= 1 && (size_t)e.position <= n &&
		    text[e.position - 1] == '\0')
			return (rs_errf(err, RS_ERR_FORMAT,
			    "line %d column %d: a NUL byte (JSON text holds "
			    "none outside a string's \\u0000)", e.line,
			    e.column));
		return (rs_errf(err, RS_ERR_FORMAT, "line %d column %d: %s",
		    e.line, e.column, e.text));
	}
	*out = R(j);
	return (RS_OK);
}

void
rs_json_free(struct rs_json *j)
{
	json_decref(J(j));
}

struct rs_json *
rs_json_ref(struct rs_json *j)
{
	return (R(json_incref(J(j))));
}

struct rs_json *
rs_json_copy(const struct rs_json *j)
{
	return (j == NULL ? NULL : R(json_deep_copy(J(j))));
}

struct rs_json *rs_json_obj(void) { return (R(json_object())); }
struct rs_json *rs_json_arr(void) { return (R(json_array())); }
struct rs_json *rs_json_int(int64_t v) { return (R(json_integer(v))); }
struct rs_json *rs_json_bool(int v) { return (R(json_boolean(v))); }
struct rs_json *rs_json_null(void) { return (R(json_null())); }

struct rs_json *
rs_json_real(double v)
{
	return (R(isfinite(v) ? json_real(v) : json_null()));
}

/* Length of the valid UTF-8 sequence at S (N bytes left), 0 if invalid. */
static size_t
utf8_seq(const unsigned char *s, size_t n)
{
	size_t	len;
	unsigned c = s[0], min;

	if (c < 0x80)
		return (1);
	if (c >= 0xc2 && c <= 0xdf) { len = 2; min = 0x80; }
	else if ((c & 0xf0) == 0xe0) { len = 3; min = 0x800; }
	else if (c >= 0xf0 && c <= 0xf4) { len = 4; min = 0x10000; }
	else
		return (0);
	if (len > n)
		return (0);
	unsigned cp = c & (0x3f >> (len - 1));
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return (0);
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return (0);
	return (len);
}

struct rs_json *
rs_json_strn(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	json_t	*j;
	char	*buf;
	size_t	 i, k, o = 0;

	for (i = 0; i < n; i += k)
		if ((k = utf8_seq(u + i, n - i)) == 0)
			break;
	if (i == n)
		return (R(json_stringn(s, n)));
	/* replace each invalid byte by U+FFFD (3 bytes) */
	if ((buf = malloc(3 * n + 1)) == NULL)
		return (NULL);
	for (i = 0; i < n; i += k) {
		if ((k = utf8_seq(u + i, n - i)) == 0) {
			memcpy(buf + o, "\xef\xbf\xbd", 3);
			o += 3;
			k = 1;
		} else {
			memcpy(buf + o, s + i, k);
			o += k;
		}
	}
	j = json_stringn(buf, o);
	free(buf);
	return (R(j));
}

struct rs_json *
rs_json_str(const char *s)
{
	return (rs_json_strn(s, strlen(s)));
}

int
rs_json_set(struct rs_json *obj, const char *key, struct rs_json *val)
{
	if (val == NULL)
		return (-1);
	return (json_object_set_new(J(obj), key, J(val)));
}

int
rs_json_push(struct rs_json *arr, struct rs_json *val)
{
	if (val == NULL)
		return (-1);
	return (json_array_append_new(J(arr), J(val)));
}

#define DUMP_FLAGS	(JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(9))

size_t
rs_json_number_len(const char *s, size_t n)
{
	size_t	i = 0, d;

#define DIGITS()	for (d = i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
	if (i < n && s[i] == '-')
		i++;
	if (i < n && s[i] == '0')
		i++;
	else {
		DIGITS();
		if (i == d)
			return (0);
	}
	if (i < n && s[i] == '.') {
		i++;
		DIGITS();
		if (i == d)
			return (0);
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		DIGITS();
		if (i == d)
			return (0);
	}
#undef DIGITS
	return (i);
}

/*
 * json_dumps() text S with every wide number (RS_JSON_WIDE: the string
 * "\u0000\u0001LEXEME" as jansson writes it) replaced by its lexeme, in
 * place: the number goes out as it came in.  The scan follows strings and
 * their escapes, so only a string's opening quote can start one.
 */
static char *
unquote_wide(char *s)
{
	static const char mark[] = "\"" RS_JSON_WIDE_MARK;
	const size_t	  ml = sizeof(mark) - 1;
	size_t		  i = 0, o = 0, k;
	int		  in_str = 0;

	if (s == NULL || strstr(s, mark) == NULL)
		return (s);
	while (s[i] != '\0') {
		if (!in_str && strncmp(s + i, mark, ml) == 0 &&
		    (k = rs_json_number_len(s + i + ml, SIZE_MAX)) > 0 &&
		    s[i + ml + k] == '"') {
			memmove(s + o, s + i + ml, k);
			o += k;
			i += ml + k + 1;
			continue;
		}
		if (in_str && s[i] == '\\' && s[i + 1] != '\0') {
			s[o++] = s[i++];
		} else if (s[i] == '"')
			in_str = !in_str;
		s[o++] = s[i++];
	}
	s[o] = '\0';
	return (s);
}

/*
 * Jansson escapes only the C0 controls; DEL and the C1 controls (U+0080 ..
 * U+009F: CSI, U+009B, drives a terminal like ESC [) go out raw, where
 * redshift(7) promises every printed string escaped.  In JSON text those
 * bytes occur only inside strings (0x7F, and C2 80 .. C2 9F, the only
 * encodings of U+0080 .. U+009F, where C2 is always a lead byte), so
 * rewriting them as \u007F and \u0080 .. \u009F (jansson's upper-case
 * hex) keeps every value.  S (from json_dumps) is freed; NULL when out of
 * memory.
 */
static char *
escape_c1(char *s)
{
	size_t	 n = 0, extra = 0, o = 0;
	char	*t;

	if (s == NULL)
		return (NULL);
	for (; s[n] != '\0'; n++)
		if ((unsigned char)s[n] == 0x7F)
			extra += 5;
		else if ((unsigned char)s[n] == 0xC2 &&
		    (unsigned char)s[n + 1] >= 0x80 &&
		    (unsigned char)s[n + 1] <= 0x9F)
			extra += 4;
	if (extra == 0)
		return (s);
	if ((t = malloc(n + extra + 1)) == NULL) {
		free(s);
		return (NULL);
	}
	for (size_t i = 0; i < n; i++) {
		const unsigned char c = (unsigned char)s[i];

		if (c == 0x7F || (c == 0xC2 && (unsigned char)s[i + 1] >=
		    0x80 && (unsigned char)s[i + 1] <= 0x9F)) {
			o += (size_t)sprintf(t + o, "\\u%04X", c == 0x7F ?
			    0x7F : (unsigned char)s[++i]);
			continue;
		}
		t[o++] = (char)c;
	}
	t[o] = '\0';
	free(s);
	return (t);
}

char *
rs_json_dumps(const struct rs_json *j)
{
	return (escape_c1(unquote_wide(json_dumps(J(j), DUMP_FLAGS))));
}

int
rs_json_write_line(const struct rs_json *j, FILE *fp)
{
	char	*s = rs_json_dumps(j);
	int	 bad = s == NULL || fputs(s, fp) == EOF || fputc('\n', fp) ==
	    EOF || fflush(fp) != 0;

	free(s);
	return (bad ? -1 : 0);
}

/* A string that stands for a wide number (rs_json.h, RS_JSON_WIDE). */
static int
is_wide(const json_t *j)
{
	const char	*s = json_string_value(j);
	size_t		 n = json_string_length(j);

	return (n > 2 && s[0] == '\0' && s[1] == '\1' &&
	    rs_json_number_len(s + 2, n - 2) == n - 2);
}

enum rs_json_kind
rs_json_kind(const struct rs_json *j)
{
	switch (json_typeof(J(j))) {
	case JSON_OBJECT: return (RS_JSON_OBJECT);
	case JSON_ARRAY: return (RS_JSON_ARRAY);
	case JSON_STRING: return (is_wide(J(j)) ? RS_JSON_WIDE :
	    RS_JSON_STRING);
	case JSON_INTEGER: return (RS_JSON_INT);
	case JSON_REAL: return (RS_JSON_REAL);
	case JSON_TRUE: case JSON_FALSE: return (RS_JSON_BOOL);
	default: return (RS_JSON_NULL);
	}
}

struct rs_json *
rs_json_get(const struct rs_json *obj, const char *key)
{
	return (R(json_object_get(J(obj), key)));
}

size_t rs_json_arr_len(const struct rs_json *a) { return (json_array_size(J(a))); }
size_t rs_json_obj_len(const struct rs_json *o) { return (json_object_size(J(o))); }

struct rs_json *
rs_json_arr_at(const struct rs_json *arr, size_t i)
{
	return (R(json_array_get(J(arr), i)));
}

int
rs_json_as_int(const struct rs_json *j, int64_t *out)
{
	if (!json_is_integer(J(j)))
		return (-1);
	*out = json_integer_value(J(j));
	return (0);
}

int
rs_json_as_whole(const struct rs_json *j, int64_t *out)
{
	double	d;

	if (rs_json_as_int(j, out) == 0)
		return (0);
	if (!json_is_real(J(j)))
		return (-1);
	d = json_real_value(J(j));
	/* [-2^63, 2^63): every double there converts exactly when whole */
	if (!(d >= -0x1p63 && d < 0x1p63) || d != floor(d))
		return (-1);
	*out = (int64_t)d;
	return (0);
}

int
rs_json_as_real(const struct rs_json *j, double *out)
{
	if (!json_is_number(J(j)))
		return (-1);
	*out = json_number_value(J(j));
	return (0);
}

int
rs_json_as_bool(const struct rs_json *j, int *out)
{
	if (!json_is_boolean(J(j)))
		return (-1);
	*out = json_is_true(J(j));
	return (0);
}

int
rs_json_as_str(const struct rs_json *j, const char **s, size_t *n)
{
	if (!json_is_string(J(j)) || is_wide(J(j)))
		return (-1);
	*s = json_string_value(J(j));
	*n = json_string_length(J(j));
	return (0);
}

int
rs_json_as_wide(const struct rs_json *j, const char **lex, size_t *n)
{
	if (!json_is_string(J(j)) || !is_wide(J(j)))
		return (-1);
	*lex = json_string_value(J(j)) + 2;
	*n = json_string_length(J(j)) - 2;
	return (0);
}

int
rs_json_obj_at(const struct rs_json *obj, size_t i, const char **key,
    struct rs_json **val)
{
	void	*it;
	size_t	 k = 0;

	if (!json_is_object(J(obj)))
		return (-1);
	for (it = json_object_iter(J(obj)); it != NULL;
	    it = json_object_iter_next(J(obj), it), k++) {
		if (k == i) {
			*key = json_object_iter_key(it);
			*val = R(json_object_iter_value(it));
			return (0);
		}
	}
	return (-1);
}

int
rs_json_obj_next(const struct rs_json *obj, void **it, const char **key,
    size_t *klen, struct rs_json **val)
{
	void	*next;

	if (!json_is_object(J(obj)))
		return (-1);
	next = *it == NULL ? json_object_iter(J(obj)) :
	    json_object_iter_next(J(obj), *it);
	if (next == NULL)
		return (-1);
	*it = next;
	*key = json_object_iter_key(next);
#if JANSSON_VERSION_HEX >= 0x020e00
	*klen = json_object_iter_key_len(next);
#else
	*klen = strlen(*key);
#endif
	*val = R(json_object_iter_value(next));
	return (0);
}

const char *
rs_json_lib_version(void)
{
	return ("jansson " JANSSON_VERSION);
}
