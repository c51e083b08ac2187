/*
 * rs_parse_impl.h - internal: the output parser's state, shared by
 * rs_parse.c (text, reasoning, call headers, the API) and rs_parse_call.c
 * (inside a call: parameters and their values).  See rs_parse.c for the
 * state machine.
 */
#ifndef RS_PARSE_IMPL_H
#define RS_PARSE_IMPL_H

#include <stddef.h>
#include <string.h>

#include "rs_argtype.h"
#include "rs_buf.h"
#include "rs_parse.h"
#include "rs_rng.h"

/* Longest tool or parameter name we wait for before calling it malformed. */
#define RS_PARSE_NAME_MAX	256

/* The tags of the output format (§3.1). */
#define T_THINK		"<think>"
#define T_THINK_END	"</think>"
#define T_CALL		"<tool_call>"
#define T_CALL_END	"</tool_call>"
#define T_FUNC		"<function="
#define T_FUNC_END	"</function>"
#define T_PARAM		"<parameter="
#define T_PARAM_END	"</parameter>"

enum rs_parse_state {
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

enum match { M_NO, M_PART, M_FULL };

struct rs_pcall {
	char			 id[32];
	struct rs_buf		 name;
	struct rs_buf		 args;
	struct rs_buf		 seen;		/* parameter names, NUL-ended */
	const struct rs_json	*params;	/* the tool's parameters */
	size_t			 n_params;
	int			 known, complete;
};

struct rs_pev {
	enum rs_parse_kind	kind;
	size_t			index;
	size_t			off, len;	/* in evtext */
};

struct rs_parse {
	struct rs_parse_opts	 o;
	enum rs_parse_state	 st;
	struct rs_buf		 in;		/* input; in[pos..] unconsumed */
	size_t			 pos, avail;
	int			 finished;
	enum rs_parse_end	 end;
	struct rs_rng		 rng;

	struct rs_buf		 content, reasoning;
	struct rs_pcall		**calls;
	size_t			 n_calls, cap_calls;
	struct rs_parse_call	*done;		/* result view of complete calls */
	size_t			 n_done;

	struct rs_pev		*evs;		/* this feed's events */
	size_t			 n_evs, cap_evs;
	struct rs_buf		 evtext;
	struct rs_parse_event	*pub;

	int			 think_dropped;	/* THINK_START dropped a <think> */
	int			 line_start;	/* CONTENT: at the start of a line */
	struct rs_buf		 raw;		/* HEAD: consumed header text */
	int			 head_name;	/* HEAD: past "<function=" */
	int			 skip_nl;	/* BODY/VALUE: skip one '\n' */
	struct rs_argtype	 vtype;		/* VALUE: the parameter's type */
	int			 discard, streaming;
	int			 last_nl;	/* VALUE: last consumed byte '\n' */
	struct rs_buf		 vbuf;		/* VALUE: buffered raw value */
	int			 oom;
};

/* ---- small helpers ---- */

/* How literal LIT relates to the N bytes at S. */
static inline enum match
match(const char *s, size_t n, const char *lit)
{
	size_t	m = strlen(lit);

	if (n >= m)
		return (m == 0 || memcmp(s, lit, m) == 0 ? M_FULL : M_NO);
	/* S may be NULL when N is 0 (an empty answer) */
	return (n == 0 || memcmp(s, lit, n) == 0 ? M_PART : M_NO);
}

static inline int
is_ws(char c)
{
	return (c == ' ' || c == '\t' || c == '\n' || c == '\r');
}

static inline const char *
cur(const struct rs_parse *p, size_t *n)
{
	*n = p->avail - p->pos;
	/* nothing fed yet: no buffer, and NULL + 0 is undefined */
	return (p->in.data != NULL ? p->in.data + p->pos : "");
}

static inline void
consume(struct rs_parse *p, size_t n)
{
	p->pos += n;
}

static inline struct rs_pcall *
open_call(const struct rs_parse *p)
{
	return (p->calls[p->n_calls - 1]);
}

/* ---- rs_parse.c ---- */

/* Add piece S (N bytes) to the result and to this round's events. */
void	rs_parse_emit(struct rs_parse *p, enum rs_parse_kind kind,
	    size_t index, const char *s, size_t n);
/* The same for the open call's arguments (N bytes, or a C string). */
void	rs_parse_emit_args(struct rs_parse *p, const char *s, size_t n);
void	rs_parse_emit_args_s(struct rs_parse *p, const char *s);
/*
 * Scan a name up to '>' in S[0..N): the index of '>' (*END), or of the byte
 * that makes the name malformed (*BAD: one of BAD_CHARS, white space inside
 * the name, or RS_PARSE_NAME_MAX bytes without '>').  1 when decided.
 */
int	rs_parse_scan_name(const char *s, size_t n, const char *bad_chars,
	    size_t *end, int *bad);
/*
 * The first '<' in S[0..N) where one of LITS matches fully or is cut by the
 * end of the input (*HOW, *WHICH), or N with *HOW = M_NO.
 */
size_t	rs_parse_find_delim(const char *s, size_t n,
	    const char *const *lits, size_t nlits, int *which,
	    enum match *how);

/* ---- rs_parse_call.c: one step of a state inside a call ---- */

int	rs_parse_step_body(struct rs_parse *p);
int	rs_parse_step_junk(struct rs_parse *p);
int	rs_parse_step_pname(struct rs_parse *p);
int	rs_parse_step_value(struct rs_parse *p);
int	rs_parse_step_tail(struct rs_parse *p);

#endif /* RS_PARSE_IMPL_H */
