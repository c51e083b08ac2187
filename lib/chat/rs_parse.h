/*
 * rs_parse.h - incremental parser of the model's output text into
 * reasoning, content and OpenAI-style tool calls (serving.md §3).
 *
 * The model writes, after the generation prompt,
 *
 *   [reasoning "</think>"] [content] ["<tool_call>\n<function=NAME>\n"
 *   ("<parameter=P>\n" VALUE "\n</parameter>\n")* "</function>\n</tool_call>"]*
 *
 * and the parser turns the decoded text, fed in pieces as it streams (after
 * UTF-8 assembly and stop-string hold-back), into events:
 *
 *   RS_PARSE_REASONING  a piece of reasoning_content
 *   RS_PARSE_CONTENT    a piece of content
 *   RS_PARSE_CALL       tool call INDEX starts: its ID and NAME
 *   RS_PARSE_ARGS       a piece of call INDEX's arguments (JSON text)
 *
 * Streaming invariant (§3.5): the events' concatenations are the same for
 * any split of the same text (one byte at a time, token by token, all at
 * once), because the parser only decides on text that no continuation can
 * change; it holds back the longest suffix that could still begin a
 * delimiter, reasoning's trailing white space, and an incomplete UTF-8
 * sequence.  Every event text is valid UTF-8 when the input is, and never
 * empty.  Arguments stream as JSON: "{", then "\"P\": " per parameter,
 * string values escaped piece by piece between quotes, other values whole
 * once they end (converted by the tool's JSON schema, §3.4), then "}".
 *
 * Tolerated deviations (§3.1): <tool_call> before </think> ends reasoning;
 * <function= at a line start without <tool_call>; missing newlines; missing
 * </parameter> (the next declared, unseen <parameter= at a line start, or a
 * </function> followed by </tool_call> or the end, closes the value); a
 * </parameter> inside a value (it closes only when followed, after white
 * space, by <parameter=, </function>, </tool_call> or the end); text after
 * the calls (content, less the white space before it); a repeated leading
 * <think>.  A call whose header is malformed (no <function=, a NAME that is
 * empty or holds white space, quotes, <, >, { or }) is not a call: its raw
 * text becomes content, so nothing is lost.  Text between parameters that
 * fits no rule is skipped up to </function>, keeping the parameters found
 * so far (§3.3).
 *
 * Lifecycle: rs_parse_new(), rs_parse_feed() for each piece, then
 * rs_parse_finish() once; after each feed/finish, rs_parse_events() lists
 * that call's events; rs_parse_result() gives the whole message at any
 * time.  One parser per response; not thread-safe.
 */
#ifndef RS_PARSE_H
#define RS_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "rs_err.h"
#include "rs_json.h"

struct rs_parse;

struct rs_parse_opts {
	/*
	 * The request's tools (array of {"type":"function","function":{name,
	 * parameters}}), borrowed for the parser's lifetime, or NULL: with no
	 * tools (or tool_choice "none") tool-call markup is ordinary content.
	 */
	const struct rs_json	*tools;
	/* 1: the prompt ended in "<think>\n", so output starts as reasoning */
	int			 thinking;
	/* drop a leading "<think>" ws "</think>" ws when not thinking (§3.2) */
	int			 strip_empty_think;
	/* seeds the call ids (call_ + 24 of [A-Za-z0-9]); ids need only be
	   unique within a response, so any per-response value will do */
	uint64_t		 id_seed;
};

enum rs_parse_kind {
	RS_PARSE_REASONING,
	RS_PARSE_CONTENT,
	RS_PARSE_CALL,
	RS_PARSE_ARGS
};

struct rs_parse_event {
	enum rs_parse_kind	 kind;
	size_t			 index;	/* CALL, ARGS: the call, 0-based */
	const char		*text;	/* the piece; CALL: the name */
	size_t			 len;	/* bytes of TEXT, > 0 */
	const char		*id;	/* CALL: "call_..."; else NULL */
};

/* How generation ended, for rs_parse_finish(). */
enum rs_parse_end {
	RS_PARSE_END_STOP,	/* end-of-generation token or stop string */
	RS_PARSE_END_LENGTH	/* max_tokens or context full */
};

struct rs_parse_call {
	const char	*id;		/* "call_" + 24 alphanumerics */
	const char	*name;
	const char	*args;		/* JSON object text, ARGS_LEN bytes */
	size_t		 args_len;
	int		 known;		/* NAME is one of the request's tools */
};

struct rs_parse_result {
	const char			*content;	/* CONTENT_LEN bytes */
	size_t				 content_len;
	const char			*reasoning;	/* trimmed */
	size_t				 reasoning_len;
	const struct rs_parse_call	*calls;		/* complete calls */
	size_t				 n_calls;
};

/* Defaults: no tools, not thinking, strip_empty_think on, seed 0. */
void		rs_parse_opts_init(struct rs_parse_opts *o);

/*
 * A parser for one response.  RS_ERR_INVALID_ARG when O->tools is given
 * but is not an array; RS_ERR_NOMEM.  Free with rs_parse_free().
 */
enum rs_status	rs_parse_new(struct rs_parse **out,
		    const struct rs_parse_opts *o, struct rs_err *err);
void		rs_parse_free(struct rs_parse *p);

/*
 * Feed the next N bytes of output text.  RS_ERR_INVALID_ARG after
 * rs_parse_finish(); RS_ERR_NOMEM (the parser is then unusable).
 */
enum rs_status	rs_parse_feed(struct rs_parse *p, const char *text, size_t n,
		    struct rs_err *err);

/*
 * End of output: flush what was held back.  With RS_PARSE_END_STOP an open
 * call is closed (its value and object completed, so its arguments are
 * valid JSON) and kept, and an unfinished call header becomes content;
 * with RS_PARSE_END_LENGTH an open call stays as streamed but is left out
 * of the result, and an unfinished header is dropped (§3.3, §3.5, §3.6).
 */
enum rs_status	rs_parse_finish(struct rs_parse *p, enum rs_parse_end how,
		    struct rs_err *err);

/*
 * The events of the last feed or finish, in order; *N gets their count.
 * Borrowed: valid until the next feed, finish or free.
 */
const struct rs_parse_event *rs_parse_events(const struct rs_parse *p,
		    size_t *n);

/*
 * The message so far: the concatenated content and reasoning events, and
 * the calls that are complete (after rs_parse_finish(STOP), every call).
 * Borrowed: valid until the next feed, finish or free.
 */
void		rs_parse_result(const struct rs_parse *p,
		    struct rs_parse_result *out);

/*
 * 1 while the text fed so far leaves the parser in reasoning (before
 * "</think>" or an implicit end), for counting reasoning tokens (§4.8).
 */
int		rs_parse_in_reasoning(const struct rs_parse *p);

#endif /* RS_PARSE_H */
