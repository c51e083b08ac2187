/*
 * rs_parse_call.c - the output parser inside a tool call: parameters, their
 * values and the call's end (serving.md §3.1 deviations 3-5, §3.3, §3.5).
 *
 * Arguments stream as JSON text: "{" when the header is complete, then per
 * parameter "\"P\": " and its value, "}" at </function>.  A string value
 * streams escaped between quotes as it becomes safe; any other type is
 * buffered and converted when the value ends (rs_argtype.h).  A value ends
 * at its structural end only, and exactly one '\n' before that end is
 * syntax, so a '\n' right before an undecided point is held back.
 */
#include <stdlib.h>
#include <string.h>

#include "rs_parse_impl.h"
#include "rs_pyjson.h"

/* ---- the call ---- */

/* The open call is whole: it joins the result. */
static void
complete_call(struct rs_parse *p)
{
	struct rs_pcall		*c = open_call(p);
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
		rs_parse_emit_args_s(p, "}");
		complete_call(p);
	}
	p->st = S_DONE;
	return (1);
}

/* Whether the open call has seen parameter NAME; records it if not. */
static int
seen_param(struct rs_pcall *c, const char *name, int record)
{
	for (size_t i = 0; i < c->seen.len; i += strlen(c->seen.data + i) + 1)
		if (strcmp(c->seen.data + i, name) == 0)
			return (1);
	if (record)
		rs_buf_add(&c->seen, name, strlen(name) + 1);
	return (0);
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

int
rs_parse_step_body(struct rs_parse *p)
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
		rs_parse_emit_args_s(p, "}");
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

int
rs_parse_step_junk(struct rs_parse *p)
{
	static const char *const lits[] = { T_FUNC_END, T_CALL_END };
	size_t			 n, i;
	const char		*s = cur(p, &n);
	enum match		 how;
	int			 which;

	i = rs_parse_find_delim(s, n, lits, 2, &which, &how);
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
	struct rs_pcall	*c = open_call(p);

	p->discard = seen_param(c, name, 1);
	p->vtype = rs_argtype_of(c->params, name);
	p->streaming = p->vtype.kind == RS_ARG_STRING && !p->vtype.nullable;
	rs_buf_reset(&p->vbuf);
	p->last_nl = 1;
	p->skip_nl = 1;
	if (p->discard)
		return;
	if (c->n_params++ > 0)
		rs_parse_emit_args_s(p, ", ");
	rs_buf_reset(&p->raw);
	rs_pyjson_str(&p->raw, name, strlen(name));
	rs_buf_adds(&p->raw, p->streaming ? ": \"" : ": ");
	rs_parse_emit_args(p, p->raw.data, p->raw.len);
	rs_buf_reset(&p->raw);
}

int
rs_parse_step_pname(struct rs_parse *p)
{
	size_t		 n, end, lo, hi;
	const char	*s = cur(p, &n);
	char		 name[RS_PARSE_NAME_MAX + 1];
	int		 bad;

	if (!rs_parse_scan_name(s, n, "<\n", &end, &bad))
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
	char		 name[RS_PARSE_NAME_MAX + 1];
	int		 bad;
	struct rs_pcall	*c = open_call(p);

	if (!rs_parse_scan_name(s + k, n - k, "<\n", &end, &bad))
		return (p->finished ? 0 : -1);
	if (bad)
		return (0);
	for (lo = k; lo < k + end && is_ws(s[lo]); lo++)
		;
	for (hi = k + end; hi > lo && is_ws(s[hi - 1]); hi--)
		;
	memcpy(name, s + lo, hi - lo);
	name[hi - lo] = '\0';
	return (hi > lo && rs_argtype_declared(c->params, name) &&
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
	rs_parse_emit_args(p, b->data, b->len);
	rs_buf_reset(b);
}

static void
value_close(struct rs_parse *p)
{
	if (p->discard)
		return;
	if (p->streaming) {
		rs_parse_emit_args_s(p, "\"");
		return;
	}
	rs_buf_reset(&p->raw);
	rs_argtype_convert(&p->raw, p->vtype, p->vbuf.data != NULL ?
	    p->vbuf.data : "", p->vbuf.len);
	rs_parse_emit_args(p, p->raw.data, p->raw.len);
	rs_buf_reset(&p->raw);
}

int
rs_parse_step_value(struct rs_parse *p)
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

int
rs_parse_step_tail(struct rs_parse *p)
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
