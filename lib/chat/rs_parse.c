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
 *                    \--<tool_call>--> HEAD            |
 *   OFF_START ---------------------------------------->-+
 *   CONTENT --<tool_call>, or <function= at a line start--> HEAD
 *   HEAD --<function=NAME>--> BODY <--> PNAME -> VALUE   (malformed: JUNK)
 *   BODY --</function>--> TAIL --</tool_call>--> BETWEEN -> HEAD or CONTENT
 *
 * rs_parse_call.c holds the states inside a call (BODY to TAIL).
 *
 * A failed HEAD turns its consumed text into content and continues in
 * CONTENT with the byte that failed it, so that byte can start a call.
 */
#include <stdlib.h>
#include <string.h>

#include "rs_parse_impl.h"
#include "rs_pystr.h"

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

/* ---- events ---- */

void
rs_parse_emit(struct rs_parse *p, enum rs_parse_kind kind, size_t index,
    const char *s, size_t n)
{
	struct rs_pev	*e;

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
		*e = (struct rs_pev){ kind, index, p->evtext.len, 0 };
	}
	e->len += n;
	rs_buf_add(&p->evtext, s, n);
}

void
rs_parse_emit_args(struct rs_parse *p, const char *s, size_t n)
{
	rs_parse_emit(p, RS_PARSE_ARGS, p->n_calls - 1, s, n);
}

void
rs_parse_emit_args_s(struct rs_parse *p, const char *s)
{
	rs_parse_emit_args(p, s, strlen(s));
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
	const struct rs_json	*tool;
	struct rs_pcall		*c, **cs;

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
	tool = rs_argtype_tool(p->o.tools, name, n);
	rs_buf_init(&c->name);
	rs_buf_init(&c->args);
	rs_buf_init(&c->seen);
	rs_buf_add(&c->name, name, n);
	c->known = tool != NULL;
	c->params = rs_json_get(tool, "parameters");
	new_id(p, c->id);
	rs_parse_emit(p, RS_PARSE_CALL, p->n_calls - 1, name, n);
	rs_parse_emit_args_s(p, "{");
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
size_t
rs_parse_find_delim(const char *s, size_t n, const char *const *lits,
    size_t nlits, int *which, enum match *how)
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

	i = rs_parse_find_delim(s, n, lits, p->o.tools != NULL ? 2 : 1, &which,
	    &how);
	if (how == M_FULL) {
		rs_parse_emit(p, RS_PARSE_REASONING, 0, s,
		    i - rs_pystr_rspace(s, i));
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
		rs_parse_emit(p, RS_PARSE_REASONING, 0, s,
		    n - rs_pystr_rspace(s, n));
		consume(p, n);
		p->st = S_DONE;
		return (1);
	}
	/* hold a possible delimiter and the trailing white space */
	e = i - rs_pystr_rspace(s, i);
	rs_parse_emit(p, RS_PARSE_REASONING, 0, s, e);
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
	rs_parse_emit(p, RS_PARSE_CONTENT, 0, s, hold);
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
	rs_parse_emit(p, RS_PARSE_CONTENT, 0, p->raw.data, p->raw.len);
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
		rs_parse_emit(p, RS_PARSE_CONTENT, 0, p->raw.data, p->raw.len);
		rs_parse_emit(p, RS_PARSE_CONTENT, 0, s, n);
	}
	consume(p, n);
	p->st = S_DONE;
	return (1);
}

/*
 * Scan a name up to '>' in S[0..N): the index of '>' (*END), or of the byte
 * that makes the name malformed (*BAD).  Returns 1 when decided.
 */
int
rs_parse_scan_name(const char *s, size_t n, const char *bad_chars, size_t *end,
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
		if (strchr(bad_chars, c) != NULL || j >= RS_PARSE_NAME_MAX ||
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
	if (!rs_parse_scan_name(s, n, "<{}\"'", &end, &bad))
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
	case S_BODY: return (rs_parse_step_body(p));
	case S_JUNK: return (rs_parse_step_junk(p));
	case S_PNAME: return (rs_parse_step_pname(p));
	case S_VALUE: return (rs_parse_step_value(p));
	case S_TAIL: return (rs_parse_step_tail(p));
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
		struct rs_pev *e = &p->evs[i];

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

int
rs_parse_in_reasoning(const struct rs_parse *p)
{
	return (p->st == S_THINK_START || p->st == S_REASON);
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
