/*
 * rs_argtype.c - argument types from a tool's JSON schema, and the
 * conversion of the raw text a model writes for a parameter into JSON
 * (serving.md §3.4; see rs_argtype.h).
 */
#include <string.h>

#include "rs_argtype.h"
#include "rs_pyjson.h"
#include "rs_pystr.h"

/* ---- schema ---- */

static int
str_is(const struct rs_json *j, const char *lit)
{
	const char	*s;
	size_t		 n;

	return (j != NULL && rs_json_as_str(j, &s, &n) == 0 &&
	    n == strlen(lit) && memcmp(s, lit, n) == 0);
}

const struct rs_json *
rs_argtype_tool(const struct rs_json *tools, const char *name, size_t n)
{
	const struct rs_json	*f;
	const char		*s;
	size_t			 k;

	for (size_t i = 0; i < rs_json_arr_len(tools); i++) {
		f = rs_json_get(rs_json_arr_at(tools, i), "function");
		if (rs_json_as_str(rs_json_get(f, "name"), &s, &k) == 0 &&
		    k == n && memcmp(s, name, n) == 0)
			return (f);
	}
	return (NULL);
}

/* The type named by a schema's "type" string. */
static enum rs_argtype_kind
classify(const char *s, size_t n)
{
	char	t[16];
	size_t	i;

	if (n >= sizeof(t))
		return (RS_ARG_UNKNOWN);
	for (i = 0; i < n; i++)
		t[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
	t[n] = '\0';
	if (strncmp(t, "str", 3) == 0 || strcmp(t, "text") == 0 ||
	    strcmp(t, "char") == 0 || strcmp(t, "varchar") == 0 ||
	    strcmp(t, "enum") == 0)
		return (RS_ARG_STRING);
	if (strncmp(t, "int", 3) == 0 || strncmp(t, "uint", 4) == 0 ||
	    strcmp(t, "long") == 0 || strcmp(t, "short") == 0)
		return (RS_ARG_INTEGER);
	if (strncmp(t, "num", 3) == 0 || strcmp(t, "float") == 0 ||
	    strcmp(t, "double") == 0)
		return (RS_ARG_NUMBER);
	if (strncmp(t, "bool", 4) == 0)
		return (RS_ARG_BOOLEAN);
	if (strncmp(t, "dict", 4) == 0 || strncmp(t, "list", 4) == 0 ||
	    strncmp(t, "arr", 3) == 0 || strcmp(t, "object") == 0)
		return (RS_ARG_CONTAINER);
	if (strcmp(t, "null") == 0)
		return (RS_ARG_NULL);
	return (RS_ARG_UNKNOWN);
}

/* Follow "$ref": "#/$defs/X" or "#/definitions/X" within PARAMS. */
static const struct rs_json *
deref(const struct rs_json *params, const struct rs_json *s)
{
	const char	*r;
	size_t		 n;
	char		 key[256];

	for (int hop = 0; hop < 8; hop++) {
		const char *defs = NULL;

		if (rs_json_as_str(rs_json_get(s, "$ref"), &r, &n) != 0)
			return (s);
		if (n > 8 && memcmp(r, "#/$defs/", 8) == 0)
			defs = "$defs", r += 8, n -= 8;
		else if (n > 14 && memcmp(r, "#/definitions/", 14) == 0)
			defs = "definitions", r += 14, n -= 14;
		if (defs == NULL || n >= sizeof(key))
			return (NULL);
		memcpy(key, r, n);
		key[n] = '\0';
		if ((s = rs_json_get(rs_json_get(params, defs), key)) == NULL)
			return (NULL);
	}
	return (NULL);
}

static enum rs_argtype_kind
schema_type(const struct rs_json *params, const struct rs_json *s,
    int *nullable, int depth)
{
	const struct rs_json	*t, *opts, *e;
	enum rs_argtype_kind		 v = RS_ARG_UNKNOWN, ov;
	const char		*ts;
	size_t			 n, i;
	int			 on;

	if ((s = deref(params, s)) == NULL || depth > 8)
		return (RS_ARG_UNKNOWN);
	t = rs_json_get(s, "type");
	if (rs_json_as_str(t, &ts, &n) == 0)
		return (classify(ts, n));
	if (t != NULL && rs_json_kind(t) == RS_JSON_ARRAY) {
		for (i = 0; i < rs_json_arr_len(t); i++) {
			if (str_is(rs_json_arr_at(t, i), "null"))
				*nullable = 1;
			else if (v == RS_ARG_UNKNOWN && rs_json_as_str(
			    rs_json_arr_at(t, i), &ts, &n) == 0)
				v = classify(ts, n);
		}
		return (v == RS_ARG_UNKNOWN && *nullable ? RS_ARG_NULL : v);
	}
	if ((opts = rs_json_get(s, "anyOf")) != NULL ||
	    (opts = rs_json_get(s, "oneOf")) != NULL) {
		for (i = 0; i < rs_json_arr_len(opts); i++) {
			on = 0;
			ov = schema_type(params, rs_json_arr_at(opts, i), &on,
			    depth + 1);
			if (ov == RS_ARG_NULL)
				*nullable = 1;
			else if (v == RS_ARG_UNKNOWN)
				v = ov;
			*nullable |= on;
		}
		return (v);
	}
	if ((e = rs_json_arr_at(rs_json_get(s, "enum"), 0)) != NULL) {
		switch (rs_json_kind(e)) {
		case RS_JSON_STRING: return (RS_ARG_STRING);
		case RS_JSON_INT: return (RS_ARG_INTEGER);
		case RS_JSON_REAL: return (RS_ARG_NUMBER);
		case RS_JSON_WIDE: return (RS_ARG_NUMBER);
		case RS_JSON_BOOL: return (RS_ARG_BOOLEAN);
		case RS_JSON_NULL: return (RS_ARG_NULL);
		default: return (RS_ARG_CONTAINER);
		}
	}
	return (RS_ARG_UNKNOWN);
}

int
rs_argtype_declared(const struct rs_json *params, const char *name)
{
	return (rs_json_get(rs_json_get(params, "properties"), name) != NULL);
}

struct rs_argtype
rs_argtype_of(const struct rs_json *params, const char *name)
{
	const struct rs_json	*s;
	struct rs_argtype	 t = { RS_ARG_UNDECLARED, 0 };

	s = rs_json_get(rs_json_get(params, "properties"), name);
	if (s != NULL)
		t.kind = schema_type(params, s, &t.nullable, 0);
	return (t);
}

/* ---- conversion ---- */

static int
is_null_word(const char *s, size_t n)
{
	return ((n == 4 && memcmp(s, "null", 4) == 0) ||
	    (n == 4 && memcmp(s, "None", 4) == 0));
}

static int
word_ci(const char *s, size_t n, const char *w)
{
	if (n != strlen(w))
		return (0);
	for (size_t i = 0; i < n; i++) {
		char c = s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i];

		if (c != w[i])
			return (0);
	}
	return (1);
}

void
rs_argtype_convert(struct rs_buf *b, struct rs_argtype type, const char *v,
    size_t n)
{
	enum rs_argtype_kind	 t = type.kind;
	int			 nullable = type.nullable;
	size_t			 lo = rs_pystr_lspace(v, n);
	size_t			 hi = n - rs_pystr_rspace(v + lo, n - lo);
	const char		*s = v + lo;
	size_t			 k = hi - lo;

	switch (t) {
	case RS_ARG_STRING:
		if (nullable && is_null_word(v, n)) {
			rs_buf_adds(b, "null");
			return;
		}
		break;
	case RS_ARG_INTEGER:
	case RS_ARG_NUMBER:
		if (rs_pyjson_is_number(s, k, t == RS_ARG_INTEGER)) {
			rs_buf_add(b, s, k);
			return;
		}
		if (is_null_word(s, k)) {
			rs_buf_adds(b, "null");
			return;
		}
		break;
	case RS_ARG_BOOLEAN:
		if (word_ci(s, k, "true") || word_ci(s, k, "false")) {
			rs_buf_adds(b, word_ci(s, k, "true") ? "true" :
			    "false");
			return;
		}
		if (is_null_word(s, k)) {
			rs_buf_adds(b, "null");
			return;
		}
		break;
	case RS_ARG_CONTAINER:
		if (rs_pyjson_literal(b, s, k, RS_PYJSON_STRICT) ||
		    rs_pyjson_literal(b, s, k, RS_PYJSON_PYTHON))
			return;
		break;
	case RS_ARG_NULL:
		rs_buf_adds(b, "null");
		return;
	case RS_ARG_UNKNOWN:
		if (rs_pyjson_literal(b, s, k, RS_PYJSON_STRICT))
			return;
		break;
	case RS_ARG_UNDECLARED:
		break;
	}
	rs_pyjson_str(b, v, n);
}
