/*
 * rs_parse.c - incremental output parser (serving.md §3; see rs_parse.h).
 *
 * A state machine over the unconsumed input in[pos..avail).  Each state's
 * step either consumes a decided prefix (emitting events) or changes state,
 * and returns 1; it returns 0 when nothing can be decided without more
 * input.  "Decided" is what makes the output independent of how the text
 * was split: a step never consumes text whose meaning a continuation could
 * change, so it sees the same decisions whether the bytes came one by one
 * or all at once.  At the end (finish) every undecided case resolves.
 *
 *   THINK_START -> REASON --</think>--> AFTER_THINK -> CONTENT
 *                    \--<tool_call>--> HEAD            |  \
 *   OFF_START ------------------------------------->---+   <tool_call>,
 *                                                          <function= at a line start
 *   HEAD --<function=NAME>--> BODY <--> PNAME -> VALUE   (malformed: JUNK)
 *   BODY --</function>--> TAIL --</tool_call>--> BETWEEN -> HEAD or CONTENT
 *
 * A failed HEAD turns its consumed text into content and continues in
 * CONTENT with the byte that failed it, so that byte can start a call.
 */
#include <stdlib.h>
#include <string.h>

#include "rs_buf.h"
#include "rs_parse.h"
#include "rs_pyjson.h"
#include "rs_pystr.h"
#include "rs_rng.h"

/* Longest tool or parameter name we wait for before calling it malformed. */
#define NAME_MAX_LEN	256

#define T_THINK		"<think>"
#define T_THINK_END	"</think>"
#define T_CALL		"<tool_call>"
#define T_CALL_END	"</tool_call>"
#define T_FUNC		"<function="
#define T_FUNC_END	"</function>"
#define T_PARAM		"<parameter="
#define T_PARAM_END	"</parameter>"

enum state {
	S_THINK_START,	/* reasoning start: drop white space, one <think> */
	S_REASON,
	S_AFTER_THINK,	/* drop white space, then content */
	S_OFF_START,	/* not thinking: maybe an empty <think></think> */
	S_CONTENT,
	S_HEAD,		/* <tool_call> seen: white space, <function=NAME> */
	S_BODY,		/* in a call, between parameters */
	S_JUNK,		/* malformed text in a call, up to </function> */
	S_PNAME,	/* <parameter= seen: NAME up to > */
	S_VALUE,
	S_TAIL,		/* </function> seen: </tool_call> */
	S_BETWEEN,	/* after a call: another one, or trailing content */
	S_DONE
};

/* Argument types of §3.4. */
enum vtype {
	V_STRING, V_INTEGER, V_NUMBER, V_BOOLEAN, V_CONTAINER, V_NULL,
	V_UNKNOWN, V_UNDECLARED
};

enum match { M_NO, M_PART, M_FULL };

struct call {
	char			 id[32];
	struct rs_buf		 name;
	struct rs_buf		 args;
	struct rs_buf		 seen;		/* parameter names, NUL-ended */
	const struct rs_json	*params;	/* the tool's parameters */
	size_t			 n_params;
	int			 known, complete;
};

struct ev {
	enum rs_parse_kind	kind;
	size_t			index;
	size_t			off, len;	/* in evtext */
};

struct rs_parse {
	struct rs_parse_opts	 o;
	enum state		 st;
	struct rs_buf		 in;		/* input; in[pos..] unconsumed */
	size_t			 pos, avail;
	int			 finished;
	enum rs_parse_end	 end;
	struct rs_rng		 rng;

	struct rs_buf		 content, reasoning;
	struct call		**calls;
	size_t			 n_calls, cap_calls;
	struct rs_parse_call	*done;		/* result view of complete calls */
	size_t			 n_done;

	struct ev		*evs;		/* this feed's events */
	size_t			 n_evs, cap_evs;
	struct rs_buf		 evtext;
	struct rs_parse_event	*pub;

	int			 think_dropped;	/* THINK_START dropped a <think> */
	int			 line_start;	/* CONTENT: at the start of a line */
	struct rs_buf		 raw;		/* HEAD: consumed header text */
	int			 head_name;	/* HEAD: past "<function=" */
	int			 skip_nl;	/* BODY/VALUE: skip one '\n' */
	enum vtype		 vtype;		/* VALUE: the parameter's type */
	int			 nullable, discard, streaming;
	int			 last_nl;	/* VALUE: last consumed byte '\n' */
	struct rs_buf		 vbuf;		/* VALUE: buffered raw value */
	int			 oom;
};

/* ---- small helpers ---- */

/* How literal LIT relates to the N bytes at S. */
static enum match
match(const char *s, size_t n, const char *lit)
{
	size_t	m = strlen(lit);

	if (n >= m)
		return (memcmp(s, lit, m) == 0 ? M_FULL : M_NO);
	return (memcmp(s, lit, n) == 0 ? M_PART : M_NO);
}

static int
is_ws(char c)
{
	return (c == ' ' || c == '\t' || c == '\n' || c == '\r');
}

/* Length of the complete UTF-8 text in S[0..N): an unfinished tail is held. */
static size_t
utf8_complete(const char *s, size_t n)
{
	const unsigned char	*u = (const unsigned char *)s;
	size_t			 i, need;

	for (i = n; i > 0 && n - i < 3; i--) {
		if ((u[i - 1] & 0xc0) == 0x80)
			continue;	/* continuation byte: keep looking */
		if (u[i - 1] >= 0xf0)
			need = 4;
		else if (u[i - 1] >= 0xe0)
			need = 3;
		else if (u[i - 1] >= 0xc0)
			need = 2;
		else
			return (n);
		return (n - (i - 1) < need ? i - 1 : n);
	}
	return (n);
}

static const char *
cur(const struct rs_parse *p, size_t *n)
{
	*n = p->avail - p->pos;
	return (p->in.data + p->pos);
}

static void
consume(struct rs_parse *p, size_t n)
{
	p->pos += n;
}

static struct call *
open_call(const struct rs_parse *p)
{
	return (p->calls[p->n_calls - 1]);
}

/* ---- events ---- */

static void
emit(struct rs_parse *p, enum rs_parse_kind kind, size_t index,
    const char *s, size_t n)
{
	struct ev	*e;

	if (n == 0)
		return;
	if (kind == RS_PARSE_CONTENT)
		rs_buf_add(&p->content, s, n);
	else if (kind == RS_PARSE_REASONING)
		rs_buf_add(&p->reasoning, s, n);
	else if (kind == RS_PARSE_ARGS)
		rs_buf_add(&p->calls[index]->args, s, n);
	e = p->n_evs > 0 ? &p->evs[p->n_evs - 1] : NULL;
	if (e == NULL || e->kind != kind || e->index != index ||
	    kind == RS_PARSE_CALL) {
		if (p->n_evs == p->cap_evs) {
			size_t	cap = p->cap_evs ? 2 * p->cap_evs : 16;

			if ((e = realloc(p->evs, cap * sizeof(*e))) == NULL) {
				p->oom = 1;
				return;
			}
			p->evs = e;
			p->cap_evs = cap;
		}
		e = &p->evs[p->n_evs++];
		*e = (struct ev){ kind, index, p->evtext.len, 0 };
	}
	e->len += n;
	rs_buf_add(&p->evtext, s, n);
}

static void
emit_args(struct rs_parse *p, const char *s, size_t n)
{
	emit(p, RS_PARSE_ARGS, p->n_calls - 1, s, n);
}

static void
emit_args_s(struct rs_parse *p, const char *s)
{
	emit_args(p, s, strlen(s));
}

/* ---- tool schema (§3.4) ---- */

static int
str_is(const struct rs_json *j, const char *lit)
{
	const char	*s;
	size_t		 n;

	return (j != NULL && rs_json_as_str(j, &s, &n) == 0 &&
	    n == strlen(lit) && memcmp(s, lit, n) == 0);
}

/* The tool named NAME (N bytes) in TOOLS, or NULL. */
static const struct rs_json *
find_tool(const struct rs_json *tools, const char *name, size_t n)
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
static enum vtype
classify(const char *s, size_t n)
{
	char	t[16];
	size_t	i;

	if (n >= sizeof(t))
		return (V_UNKNOWN);
	for (i = 0; i < n; i++)
		t[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
	t[n] = '\0';
	if (strncmp(t, "str", 3) == 0 || strcmp(t, "text") == 0 ||
	    strcmp(t, "char") == 0 || strcmp(t, "varchar") == 0 ||
	    strcmp(t, "enum") == 0)
		return (V_STRING);
	if (strncmp(t, "int", 3) == 0 || strncmp(t, "uint", 4) == 0 ||
	    strcmp(t, "long") == 0 || strcmp(t, "short") == 0)
		return (V_INTEGER);
	if (strncmp(t, "num", 3) == 0 || strcmp(t, "float") == 0 ||
	    strcmp(t, "double") == 0)
		return (V_NUMBER);
	if (strncmp(t, "bool", 4) == 0)
		return (V_BOOLEAN);
	if (strncmp(t, "dict", 4) == 0 || strncmp(t, "list", 4) == 0 ||
	    strncmp(t, "arr", 3) == 0 || strcmp(t, "object") == 0)
		return (V_CONTAINER);
	if (strcmp(t, "null") == 0)
		return (V_NULL);
	return (V_UNKNOWN);
}

/* Follow "$ref": "#/$defs/X" or "#/definitions/X" within PARAMS. */
static const struct rs_json *
deref(const struct rs_json *params, const struct rs_json *s)
{
	const char	*r;
	size_t		 n;
	char		 key[NAME_MAX_LEN];

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

static enum vtype
schema_type(const struct rs_json *params, const struct rs_json *s,
    int *nullable, int depth)
{
	const struct rs_json	*t, *opts, *e;
	enum vtype		 v = V_UNKNOWN, ov;
	const char		*ts;
	size_t			 n, i;
	int			 on;

	if ((s = deref(params, s)) == NULL || depth > 8)
		return (V_UNKNOWN);
	t = rs_json_get(s, "type");
	if (rs_json_as_str(t, &ts, &n) == 0)
		return (classify(ts, n));
	if (t != NULL && rs_json_kind(t) == RS_JSON_ARRAY) {
		for (i = 0; i < rs_json_arr_len(t); i++) {
			if (str_is(rs_json_arr_at(t, i), "null"))
				*nullable = 1;
			else if (v == V_UNKNOWN && rs_json_as_str(
			    rs_json_arr_at(t, i), &ts, &n) == 0)
				v = classify(ts, n);
		}
		return (v == V_UNKNOWN && *nullable ? V_NULL : v);
	}
	if ((opts = rs_json_get(s, "anyOf")) != NULL ||
	    (opts = rs_json_get(s, "oneOf")) != NULL) {
		for (i = 0; i < rs_json_arr_len(opts); i++) {
			on = 0;
			ov = schema_type(params, rs_json_arr_at(opts, i), &on,
			    depth + 1);
			if (ov == V_NULL)
				*nullable = 1;
			else if (v == V_UNKNOWN)
				v = ov;
			*nullable |= on;
		}
		return (v);
	}
	if ((e = rs_json_arr_at(rs_json_get(s, "enum"), 0)) != NULL) {
		switch (rs_json_kind(e)) {
		case RS_JSON_STRING: return (V_STRING);
		case RS_JSON_INT: return (V_INTEGER);
		case RS_JSON_REAL: return (V_NUMBER);
		case RS_JSON_BOOL: return (V_BOOLEAN);
		case RS_JSON_NULL: return (V_NULL);
		default: return (V_CONTAINER);
		}
	}
	return (V_UNKNOWN);
}

/* The schema of parameter NAME of the open call, or NULL if undeclared. */
static const struct rs_json *
param_schema(const struct call *c, const char *name)
{
	return (rs_json_get(rs_json_get(c->params, "properties"), name));
}

/* ---- values (§3.4) ---- */

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

/* Append the JSON for raw value V (N bytes) of type T to B. */
static void
convert(struct rs_buf *b, enum vtype t, int nullable, const char *v,
    size_t n)
{
	size_t		 lo = rs_pystr_lspace(v, n);
	size_t		 hi = n - rs_pystr_rspace(v + lo, n - lo);
	const char	*s = v + lo;
	size_t		 k = hi - lo;

	switch (t) {
	case V_STRING:
		if (nullable && is_null_word(v, n)) {
			rs_buf_adds(b, "null");
			return;
		}
		break;
	case V_INTEGER:
	case V_NUMBER:
		if (rs_pyjson_is_number(s, k, t == V_INTEGER)) {
			rs_buf_add(b, s, k);
			return;
		}
		if (is_null_word(s, k)) {
			rs_buf_adds(b, "null");
			return;
		}
		break;
	case V_BOOLEAN:
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
	case V_CONTAINER:
		if (rs_pyjson_literal(b, s, k, RS_PYJSON_STRICT) ||
		    rs_pyjson_literal(b, s, k, RS_PYJSON_PYTHON))
			return;
		break;
	case V_NULL:
		rs_buf_adds(b, "null");
		return;
	case V_UNKNOWN:
		if (rs_pyjson_literal(b, s, k, RS_PYJSON_STRICT))
			return;
		break;
	case V_UNDECLARED:
		break;
	}
	rs_pyjson_str(b, v, n);
}

/* ---- calls ---- */

static void
new_id(struct rs_parse *p, char id[32])
{
	static const char	an[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789";
	size_t			i;
	int			dup;

	do {
		memcpy(id, "call_", 5);
		for (i = 5; i < 29; i++)
			id[i] = an[rs_rng_below(&p->rng, sizeof(an) - 1)];
		id[29] = '\0';
		dup = 0;
		for (i = 0; i + 1 < p->n_calls; i++)
			dup |= strcmp(p->calls[i]->id, id) == 0;
	} while (dup);
}

/* Start call NAME (N bytes): the CALL event and the opening "{". */
static void
start_call(struct rs_parse *p, const char *name, size_t n)
{
	const struct rs_json	*tool = find_tool(p->o.tools, name, n);
	struct call		*c, **cs;

	if (p->n_calls == p->cap_calls) {
		size_t	cap = p->cap_calls ? 2 * p->cap_calls : 4;

		if ((cs = realloc(p->calls, cap * sizeof(*cs))) == NULL) {
			p->oom = 1;
			return;
		}
		p->calls = cs;
		p->cap_calls = cap;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		p->oom = 1;
		return;
	}
	p->calls[p->n_calls++] = c;
	rs_buf_init(&c->name);
	rs_buf_init(&c->args);
	rs_buf_init(&c->seen);
	rs_buf_add(&c->name, name, n);
	c->known = tool != NULL;
	c->params = rs_json_get(tool, "parameters");
	new_id(p, c->id);
	emit(p, RS_PARSE_CALL, p->n_calls - 1, name, n);
	emit_args_s(p, "{");
}

static void
complete_call(struct rs_parse *p)
{
	struct call		*c = open_call(p);
	struct rs_parse_call	*d;

	c->complete = 1;
	if ((d = realloc(p->done, p->n_calls * sizeof(*d))) == NULL) {
		p->oom = 1;
		return;
	}
	p->done = d;
	d[p->n_done++] = (struct rs_parse_call){ c->id, c->name.data,
	    c->args.data, c->args.len, c->known };
}

/* End of output inside a call: close it (STOP) or leave it open (LENGTH). */
static int
end_in_call(struct rs_parse *p)
{
	if (p->end == RS_PARSE_END_STOP) {
		emit_args_s(p, "}");
		complete_call(p);
	}
	p->st = S_DONE;
	return (1);
}

/* Whether the open call has seen parameter NAME; records it if not. */
static int
seen_param(struct call *c, const char *name, int record)
{
	for (size_t i = 0; i < c->seen.len; i += strlen(c->seen.data + i) + 1)
		if (strcmp(c->seen.data + i, name) == 0)
			return (1);
	if (record)
		rs_buf_add(&c->seen, name, strlen(name) + 1);
	return (0);
}

/* ---- reasoning and content states ---- */

static int
step_think_start(struct rs_parse *p)
{
	size_t		 n, k;
	const char	*s = cur(p, &n);
	enum match	 m;

	k = rs_pystr_lspace(s, n);
	consume(p, k);
	s += k;
	n -= k;
	if (!p->think_dropped && n > 0 &&
	    (m = match(s, n, T_THINK)) != M_NO) {
		if (m == M_FULL) {
			consume(p, strlen(T_THINK));
			p->think_dropped = 1;
			return (1);
		}
		if (!p->finished)
			return (k > 0);
	}
	if (n == 0 && !p->finished)
		return (k > 0);
	p->st = S_REASON;
	return (1);
}

/* First delimiter (full, or cut by the end of input) at or after a '<'. */
static size_t
find_delim(const char *s, size_t n, const char *const *lits, size_t nlits,
    int *which, enum match *how)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '<')
			continue;
		for (size_t k = 0; k < nlits; k++) {
			enum match m = match(s + i, n - i, lits[k]);

			if (m != M_NO) {
				*which = (int)k;
				*how = m;
				return (i);
			}
		}
	}
	*how = M_NO;
	return (n);
}

static int
step_reason(struct rs_parse *p)
{
	static const char *const lits[] = { T_THINK_END, T_CALL };
	size_t			 n, i, e;
	const char		*s = cur(p, &n);
	enum match		 how;
	int			 which;

	i = find_delim(s, n, lits, p->o.tools != NULL ? 2 : 1, &which, &how);
	if (how == M_FULL) {
		emit(p, RS_PARSE_REASONING, 0, s, i - rs_pystr_rspace(s, i));
		consume(p, i + strlen(lits[which]));
		if (which == 0) {
			p->st = S_AFTER_THINK;
		} else {
			rs_buf_reset(&p->raw);
			rs_buf_adds(&p->raw, T_CALL);
			p->head_name = 0;
			p->st = S_HEAD;
		}
		return (1);
	}
	if (p->finished) {
		emit(p, RS_PARSE_REASONING, 0, s, n - rs_pystr_rspace(s, n));
		consume(p, n);
		p->st = S_DONE;
		return (1);
	}
	/* hold a possible delimiter and the trailing white space */
	e = i - rs_pystr_rspace(s, i);
	emit(p, RS_PARSE_REASONING, 0, s, e);
	consume(p, e);
	return (e > 0);
}

static int
step_after_think(struct rs_parse *p)
{
	size_t		 n, k;
	const char	*s = cur(p, &n);

	k = rs_pystr_lspace(s, n);
	consume(p, k);
	if (k < n) {
		p->st = S_CONTENT;
		p->line_start = 1;
		return (1);
	}
	if (p->finished) {
		p->st = S_DONE;
		return (1);
	}
	return (k > 0);
}

static int
step_off_start(struct rs_parse *p)
{
	size_t		 n, j;
	const char	*s = cur(p, &n);
	enum match	 m = match(s, n, T_THINK);

	if (m == M_FULL) {
		j = strlen(T_THINK);
		j += rs_pystr_lspace(s + j, n - j);
		m = match(s + j, n - j, T_THINK_END);
		if (m == M_FULL) {
			consume(p, j + strlen(T_THINK_END));
			p->st = S_AFTER_THINK;
			return (1);
		}
	}
	if (m == M_PART && !p->finished)
		return (0);
	p->st = S_CONTENT;
	p->line_start = 1;
	return (1);
}

/* CONTENT: text up to <tool_call> or a line-start <function= (with tools). */
static int
step_content(struct rs_parse *p)
{
	size_t		 n, i, hold;
	const char	*s = cur(p, &n);
	enum match	 m;
	int		 bol, call = 0;

	hold = n;
	for (i = 0; p->o.tools != NULL && i < n && hold == n; i++) {
		if (s[i] != '<')
			continue;
		bol = i == 0 ? p->line_start : s[i - 1] == '\n';
		if ((m = match(s + i, n - i, T_CALL)) == M_FULL)
			call = 1, hold = i;
		else if (m == M_PART && !p->finished)
			hold = i;
		else if (bol && (m = match(s + i, n - i, T_FUNC)) == M_FULL)
			call = 2, hold = i;
		else if (bol && m == M_PART && !p->finished)
			hold = i;
	}
	emit(p, RS_PARSE_CONTENT, 0, s, hold);
	consume(p, hold);
	if (hold > 0)
		p->line_start = s[hold - 1] == '\n';
	if (call) {
		rs_buf_reset(&p->raw);
		if (call == 1) {
			rs_buf_adds(&p->raw, T_CALL);
			consume(p, strlen(T_CALL));
		}
		p->head_name = 0;
		p->st = S_HEAD;
		return (1);
	}
	if (p->finished && hold == n) {
		p->st = S_DONE;
		return (1);
	}
	return (hold > 0);
}

/* ---- call header ---- */

/* Not a call: its consumed text becomes content, the rest is re-read. */
static int
head_fail(struct rs_parse *p, size_t k)
{
	size_t		 n;
	const char	*s = cur(p, &n);

	rs_buf_add(&p->raw, s, k);
	consume(p, k);
	emit(p, RS_PARSE_CONTENT, 0, p->raw.data, p->raw.len);
	p->line_start = p->raw.len > 0 && p->raw.data[p->raw.len - 1] == '\n';
	rs_buf_reset(&p->raw);
	p->st = S_CONTENT;
	return (1);
}

/* End of output in a header: content (STOP) or dropped (LENGTH). */
static int
head_eof(struct rs_parse *p)
{
	size_t		 n;
	const char	*s = cur(p, &n);

	if (p->end == RS_PARSE_END_STOP) {
		emit(p, RS_PARSE_CONTENT, 0, p->raw.data, p->raw.len);
		emit(p, RS_PARSE_CONTENT, 0, s, n);
	}
	consume(p, n);
	p->st = S_DONE;
	return (1);
}

/*
 * Scan a name up to '>' in S[0..N): the index of '>' (*END), or of the byte
 * that makes the name malformed (*BAD).  Returns 1 when decided.
 */
static int
scan_name(const char *s, size_t n, const char *bad_chars, size_t *end,
    int *bad)
{
	int	text = 0, gap = 0;

	for (size_t j = 0; j < n; j++) {
		char	c = s[j];

		if (c == '>') {
			*end = j;
			*bad = 0;
			return (1);
		}
		if (strchr(bad_chars, c) != NULL || j >= NAME_MAX_LEN ||
		    (gap && !is_ws(c))) {
			*end = j;
			*bad = 1;
			return (1);
		}
		if (is_ws(c))
			gap = text;
		else
			text = 1;
	}
	return (0);
}

static int
step_head(struct rs_parse *p)
{
	size_t		 n, k, end, lo, hi;
	const char	*s = cur(p, &n);
	enum match	 m;
	int		 bad;

	if (!p->head_name) {
		for (k = 0; k < n && is_ws(s[k]); k++)
			;
		rs_buf_add(&p->raw, s, k);
		consume(p, k);
		s += k;
		n -= k;
		if ((m = match(s, n, T_FUNC)) == M_NO)
			return (head_fail(p, 0));
		if (m == M_PART || n == 0)
			return (p->finished ? head_eof(p) : k > 0);
		rs_buf_add(&p->raw, s, strlen(T_FUNC));
		consume(p, strlen(T_FUNC));
		p->head_name = 1;
		return (1);
	}
	if (!scan_name(s, n, "<{}\"'", &end, &bad))
		return (p->finished ? head_eof(p) : 0);
	if (bad)
		return (head_fail(p, end));
	for (lo = 0; lo < end && is_ws(s[lo]); lo++)
		;
	for (hi = end; hi > lo && is_ws(s[hi - 1]); hi--)
		;
	if (hi == lo)
		return (head_fail(p, end + 1));
	start_call(p, s + lo, hi - lo);
	consume(p, end + 1);
	rs_buf_reset(&p->raw);
	p->skip_nl = 1;
	p->st = S_BODY;
	return (1);
}

/* ---- call body ---- */

/* Skip one '\n' if SKIP_NL is set; 1 when that decided something. */
static int
skip_newline(struct rs_parse *p)
{
	size_t		 n;
	const char	*s = cur(p, &n);

	if (!p->skip_nl || (n == 0 && !p->finished))
		return (0);
	if (n > 0 && s[0] == '\n')
		consume(p, 1);
	p->skip_nl = 0;
	return (1);
}

static int
step_body(struct rs_parse *p)
{
	static const char *const lits[] = { T_FUNC_END, T_PARAM, T_CALL_END };
	size_t			 n, k, i;
	const char		*s;
	enum match		 m;
	int			 part = 0;

	if (p->skip_nl)
		return (skip_newline(p));
	s = cur(p, &n);
	for (k = 0; k < n && is_ws(s[k]); k++)
		;
	consume(p, k);
	s += k;
	n -= k;
	for (i = 0; i < 3 && n > 0; i++) {
		if ((m = match(s, n, lits[i])) == M_PART)
			part = 1;
		if (m != M_FULL)
			continue;
		consume(p, strlen(lits[i]));
		if (i == 1) {
			p->st = S_PNAME;
			return (1);
		}
		emit_args_s(p, "}");
		if (i == 0) {
			p->st = S_TAIL;
		} else {
			complete_call(p);
			p->st = S_BETWEEN;
		}
		return (1);
	}
	if (p->finished)
		return (end_in_call(p));
	if (n == 0 || part)
		return (k > 0);
	p->st = S_JUNK;
	return (1);
}

static int
step_junk(struct rs_parse *p)
{
	static const char *const lits[] = { T_FUNC_END, T_CALL_END };
	size_t			 n, i;
	const char		*s = cur(p, &n);
	enum match		 how;
	int			 which;

	i = find_delim(s, n, lits, 2, &which, &how);
	consume(p, i);
	if (how == M_FULL) {
		p->st = S_BODY;
		return (1);
	}
	if (p->finished)
		return (end_in_call(p));
	return (i > 0);
}

/* Begin parameter NAME: its key, and the opening quote of a string. */
static void
start_param(struct rs_parse *p, const char *name)
{
	struct call		*c = open_call(p);
	const struct rs_json	*sch = param_schema(c, name);

	p->discard = seen_param(c, name, 1);
	p->nullable = 0;
	p->vtype = sch == NULL ? V_UNDECLARED :
	    schema_type(c->params, sch, &p->nullable, 0);
	p->streaming = p->vtype == V_STRING && !p->nullable;
	rs_buf_reset(&p->vbuf);
	p->last_nl = 1;
	p->skip_nl = 1;
	if (p->discard)
		return;
	if (c->n_params++ > 0)
		emit_args_s(p, ", ");
	rs_buf_reset(&p->raw);
	rs_pyjson_str(&p->raw, name, strlen(name));
	rs_buf_adds(&p->raw, p->streaming ? ": \"" : ": ");
	emit_args(p, p->raw.data, p->raw.len);
	rs_buf_reset(&p->raw);
}

static int
step_pname(struct rs_parse *p)
{
	size_t		 n, end, lo, hi;
	const char	*s = cur(p, &n);
	char		 name[NAME_MAX_LEN + 1];
	int		 bad;

	if (!scan_name(s, n, "<\n", &end, &bad))
		return (p->finished ? end_in_call(p) : 0);
	if (bad) {
		p->st = S_JUNK;
		return (1);
	}
	for (lo = 0; lo < end && is_ws(s[lo]); lo++)
		;
	for (hi = end; hi > lo && is_ws(s[hi - 1]); hi--)
		;
	consume(p, end + 1);
	if (hi == lo || memchr(s + lo, '\0', hi - lo) != NULL) {
		p->st = S_JUNK;
		return (1);
	}
	memcpy(name, s + lo, hi - lo);
	name[hi - lo] = '\0';
	start_param(p, name);
	p->st = S_VALUE;
	return (1);
}

/* ---- parameter values ---- */

/*
 * After a closing tag, does structure follow?  Skip white space, then 1 if
 * one of LITS (or the end of output) comes, 0 if something else, -1 if the
 * input ends before that is known.
 */
static int
follows(const struct rs_parse *p, const char *s, size_t n,
    const char *const *lits, size_t nlits)
{
	size_t	k, i;
	int	part = 0;

	for (k = 0; k < n && is_ws(s[k]); k++)
		;
	if (k == n)
		return (p->finished ? 1 : -1);
	for (i = 0; i < nlits; i++) {
		enum match m = match(s + k, n - k, lits[i]);

		if (m == M_FULL)
			return (1);
		part |= m == M_PART;
	}
	return (part && !p->finished ? -1 : 0);
}

/* A "<parameter=NAME>" at S that starts the next, not yet seen, parameter. */
static int
next_param(const struct rs_parse *p, const char *s, size_t n)
{
	size_t		 end, lo, hi, k = strlen(T_PARAM);
	char		 name[NAME_MAX_LEN + 1];
	int		 bad;
	struct call	*c = open_call(p);

	if (!scan_name(s + k, n - k, "<\n", &end, &bad))
		return (p->finished ? 0 : -1);
	if (bad)
		return (0);
	for (lo = k; lo < k + end && is_ws(s[lo]); lo++)
		;
	for (hi = k + end; hi > lo && is_ws(s[hi - 1]); hi--)
		;
	memcpy(name, s + lo, hi - lo);
	name[hi - lo] = '\0';
	return (hi > lo && param_schema(c, name) != NULL &&
	    !seen_param(c, name, 0));
}

/*
 * Where the value in S[0..N) ends (§3.1 deviations 4 and 5).  Returns 1
 * with *AT at the end and *CLOSE set when a "</parameter>" must be skipped,
 * or 0 with *AT at the first byte that may belong to a delimiter (N if
 * none).
 */
static int
value_end(const struct rs_parse *p, const char *s, size_t n, size_t *at,
    int *close)
{
	static const char *const after_param[] = { T_PARAM, T_FUNC_END,
	    T_CALL_END };
	static const char *const after_func[] = { T_CALL_END, T_CALL };

	for (size_t i = 0; i < n; i++) {
		const char	*t = s + i;
		size_t		 m = n - i;
		enum match	 r;
		int		 f;

		if (*t != '<')
			continue;
		*at = i;
		if ((r = match(t, m, T_PARAM_END)) == M_PART && !p->finished)
			return (0);
		if (r == M_FULL && (f = follows(p, t + 12, m - 12, after_param,
		    3)) != 0) {
			*close = 1;
			return (f > 0);
		}
		if ((r = match(t, m, T_FUNC_END)) == M_PART && !p->finished)
			return (0);
		if (r == M_FULL && (f = follows(p, t + 11, m - 11, after_func,
		    2)) != 0) {
			*close = 0;
			return (f > 0);
		}
		if (!(i == 0 ? p->last_nl : s[i - 1] == '\n'))
			continue;
		if ((r = match(t, m, T_PARAM)) == M_PART && !p->finished)
			return (0);
		if (r == M_FULL && (f = next_param(p, t, m)) != 0) {
			*close = 0;
			return (f > 0);
		}
	}
	*at = n;
	return (0);
}

/* Value bytes S[0..N) that are decided to belong to the value. */
static void
value_bytes(struct rs_parse *p, const char *s, size_t n)
{
	struct rs_buf	*b = &p->raw;

	if (p->discard || n == 0)
		return;
	if (!p->streaming) {
		rs_buf_add(&p->vbuf, s, n);
		return;
	}
	rs_buf_reset(b);
	rs_pyjson_escape(b, s, n);
	emit_args(p, b->data, b->len);
	rs_buf_reset(b);
}

static void
value_close(struct rs_parse *p)
{
	if (p->discard)
		return;
	if (p->streaming) {
		emit_args_s(p, "\"");
		return;
	}
	rs_buf_reset(&p->raw);
	convert(&p->raw, p->vtype, p->nullable, p->vbuf.data != NULL ?
	    p->vbuf.data : "", p->vbuf.len);
	emit_args(p, p->raw.data, p->raw.len);
	rs_buf_reset(&p->raw);
}

static int
step_value(struct rs_parse *p)
{
	size_t		 n, at, keep;
	const char	*s;
	int		 close = 0;

	if (p->skip_nl)
		return (skip_newline(p));
	s = cur(p, &n);
	if (value_end(p, s, n, &at, &close) || p->finished) {
		/* the value ends: exactly one '\n' before the end is syntax */
		value_bytes(p, s, at > 0 && s[at - 1] == '\n' ? at - 1 : at);
		consume(p, at + (close ? strlen(T_PARAM_END) : 0));
		if (at < n || !p->finished) {
			value_close(p);
			p->st = S_BODY;
			return (1);
		}
		if (p->end == RS_PARSE_END_STOP)
			value_close(p);
		return (end_in_call(p));
	}
	/* a '\n' right before an undecided point may be the delimiter's */
	keep = at > 0 && s[at - 1] == '\n' ? at - 1 : at;
	value_bytes(p, s, keep);
	consume(p, keep);
	if (keep > 0)
		p->last_nl = s[keep - 1] == '\n';
	return (keep > 0);
}

static int
step_tail(struct rs_parse *p)
{
	size_t		 n, k;
	const char	*s = cur(p, &n);
	enum match	 m;

	for (k = 0; k < n && is_ws(s[k]); k++)
		;
	consume(p, k);
	m = match(s + k, n - k, T_CALL_END);
	if (m == M_FULL)
		consume(p, strlen(T_CALL_END));
	else if ((m == M_PART || k == n) && !p->finished)
		return (k > 0);
	complete_call(p);
	p->st = S_BETWEEN;
	return (1);
}

static int
step_between(struct rs_parse *p)
{
	size_t		 n, k;
	const char	*s = cur(p, &n);
	enum match	 mc, mf;

	k = rs_pystr_lspace(s, n);
	consume(p, k);
	s += k;
	n -= k;
	if (n == 0) {
		if (!p->finished)
			return (k > 0);
		p->st = S_DONE;
		return (1);
	}
	mc = match(s, n, T_CALL);
	mf = match(s, n, T_FUNC);
	if (mc == M_FULL || mf == M_FULL) {
		rs_buf_reset(&p->raw);
		if (mc == M_FULL) {
			rs_buf_adds(&p->raw, T_CALL);
			consume(p, strlen(T_CALL));
		}
		p->head_name = 0;
		p->st = S_HEAD;
		return (1);
	}
	if ((mc == M_PART || mf == M_PART) && !p->finished)
		return (k > 0);
	p->st = S_CONTENT;
	p->line_start = 1;
	return (1);
}

static int
step(struct rs_parse *p)
{
	switch (p->st) {
	case S_THINK_START: return (step_think_start(p));
	case S_REASON: return (step_reason(p));
	case S_AFTER_THINK: return (step_after_think(p));
	case S_OFF_START: return (step_off_start(p));
	case S_CONTENT: return (step_content(p));
	case S_HEAD: return (step_head(p));
	case S_BODY: return (step_body(p));
	case S_JUNK: return (step_junk(p));
	case S_PNAME: return (step_pname(p));
	case S_VALUE: return (step_value(p));
	case S_TAIL: return (step_tail(p));
	case S_BETWEEN: return (step_between(p));
	default: return (0);
	}
}

/* ---- public API ---- */

void
rs_parse_opts_init(struct rs_parse_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->strip_empty_think = 1;
}

enum rs_status
rs_parse_new(struct rs_parse **out, const struct rs_parse_opts *o,
    struct rs_err *err)
{
	struct rs_parse	*p;

	if (o->tools != NULL && rs_json_kind(o->tools) != RS_JSON_ARRAY)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "tools must be an array"));
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	p->o = *o;
	if (o->thinking)
		p->st = S_THINK_START;
	else
		p->st = o->strip_empty_think ? S_OFF_START : S_CONTENT;
	p->line_start = 1;
	rs_rng_seed(&p->rng, o->id_seed);
	rs_buf_init(&p->in);
	rs_buf_init(&p->content);
	rs_buf_init(&p->reasoning);
	rs_buf_init(&p->evtext);
	rs_buf_init(&p->raw);
	rs_buf_init(&p->vbuf);
	*out = p;
	return (RS_OK);
}

void
rs_parse_free(struct rs_parse *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->n_calls; i++) {
		rs_buf_cleanup(&p->calls[i]->name);
		rs_buf_cleanup(&p->calls[i]->args);
		rs_buf_cleanup(&p->calls[i]->seen);
		free(p->calls[i]);
	}
	free(p->calls);
	free(p->done);
	free(p->evs);
	free(p->pub);
	rs_buf_cleanup(&p->in);
	rs_buf_cleanup(&p->content);
	rs_buf_cleanup(&p->reasoning);
	rs_buf_cleanup(&p->evtext);
	rs_buf_cleanup(&p->raw);
	rs_buf_cleanup(&p->vbuf);
	free(p);
}

static int
any_oom(const struct rs_parse *p)
{
	int	oom = p->oom || p->in.oom || p->content.oom ||
	    p->reasoning.oom || p->evtext.oom || p->raw.oom || p->vbuf.oom;

	for (size_t i = 0; i < p->n_calls; i++)
		oom |= p->calls[i]->name.oom || p->calls[i]->args.oom ||
		    p->calls[i]->seen.oom;
	return (oom);
}

/* Run the machine, then publish this round's events. */
static enum rs_status
run(struct rs_parse *p, struct rs_err *err)
{
	struct rs_parse_event	*pub;

	p->n_evs = 0;
	rs_buf_reset(&p->evtext);
	p->avail = p->finished ? p->in.len : utf8_complete(p->in.data,
	    p->in.len);
	while (p->st != S_DONE && !any_oom(p) && step(p))
		;
	rs_buf_consume(&p->in, p->pos);
	p->pos = 0;
	if (any_oom(p)) {
		p->oom = 1;
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	}
	if ((pub = realloc(p->pub, (p->n_evs + 1) * sizeof(*pub))) == NULL) {
		p->oom = 1;
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	}
	p->pub = pub;
	for (size_t i = 0; i < p->n_evs; i++) {
		struct ev *e = &p->evs[i];

		pub[i] = (struct rs_parse_event){ e->kind, e->index,
		    p->evtext.data + e->off, e->len,
		    e->kind == RS_PARSE_CALL ? p->calls[e->index]->id : NULL };
	}
	return (RS_OK);
}

enum rs_status
rs_parse_feed(struct rs_parse *p, const char *text, size_t n,
    struct rs_err *err)
{
	if (p->oom)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	if (p->finished)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "output parser fed after finish"));
	rs_buf_add(&p->in, text, n);
	return (run(p, err));
}

enum rs_status
rs_parse_finish(struct rs_parse *p, enum rs_parse_end how,
    struct rs_err *err)
{
	if (p->oom)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	if (p->finished)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "output parser finished twice"));
	p->finished = 1;
	p->end = how;
	return (run(p, err));
}

const struct rs_parse_event *
rs_parse_events(const struct rs_parse *p, size_t *n)
{
	*n = p->n_evs;
	return (p->pub);
}

void
rs_parse_result(const struct rs_parse *p, struct rs_parse_result *out)
{
	out->content = p->content.data != NULL ? p->content.data : "";
	out->content_len = p->content.len;
	out->reasoning = p->reasoning.data != NULL ? p->reasoning.data : "";
	out->reasoning_len = p->reasoning.len;
	out->calls = p->done;
	out->n_calls = p->n_done;
}
