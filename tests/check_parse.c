/*
 * check_parse.c - the output parser on the worked examples of serving.md
 * §3.7 and the deviations of §3.1, each fed whole, one byte at a time and
 * in seeded random pieces: the events must add up to the expected message
 * every time (expected values are written from the spec's rules by hand).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_buf.h"
#include "rs_json.h"
#include "rs_parse.h"
#include "rs_rng.h"

#define MAX_CALLS	4
#define N_SPLITS	25	/* random splittings per case */

#define WEATHER	"[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"," \
	"\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":" \
	"{\"type\":\"string\"},\"days\":{\"type\":\"integer\"}}}}}]"
#define TOOL1(name, param)	"[{\"type\":\"function\",\"function\":" \
	"{\"name\":\"" name "\",\"parameters\":{\"type\":\"object\"," \
	"\"properties\":{\"" param "\":{\"type\":\"string\"}}}}}]"
#define TYPED	"[{\"type\":\"function\",\"function\":{\"name\":\"f\"," \
	"\"parameters\":{\"type\":\"object\",\"properties\":{" \
	"\"n\":{\"type\":\"integer\"},\"f\":{\"type\":\"boolean\"}," \
	"\"o\":{\"type\":\"object\"},\"x\":{\"type\":[\"string\",\"null\"]}," \
	"\"num\":{\"type\":\"number\"},\"u\":{\"description\":\"any\"}," \
	"\"e\":{\"enum\":[1,2]},\"a\":{\"anyOf\":[{\"type\":\"null\"}," \
	"{\"type\":\"array\"}]},\"r\":{\"$ref\":\"#/$defs/R\"}}," \
	"\"$defs\":{\"R\":{\"type\":\"integer\"}}}}}]"

struct pcase {
	const char		*name;
	const char		*tools;		/* JSON, or NULL */
	int			 thinking;
	const char		*text;
	enum rs_parse_end	 end;
	const char		*content;
	const char		*reasoning;
	int			 n_calls;	/* complete calls in the result */
	const char		*calls[MAX_CALLS][2];	/* name, arguments */
	const char		*streamed_args;	/* an open call's streamed args */
};

static const struct pcase cases[] = {
	{ "P1", NULL, 1,
	  "The user greets me.\n</think>\n\nHello! How can I help?",
	  RS_PARSE_END_STOP, "Hello! How can I help?", "The user greets me.",
	  0, { { NULL } }, NULL },
	{ "P2", WEATHER, 1,
	  "I'll check.\n</think>\n\n<tool_call>\n<function=get_weather>\n"
	  "<parameter=city>\nParis\n</parameter>\n<parameter=days>\n2\n"
	  "</parameter>\n</function>\n</tool_call>",
	  RS_PARSE_END_STOP, "", "I'll check.",
	  1, { { "get_weather", "{\"city\": \"Paris\", \"days\": 2}" } },
	  NULL },
	{ "P3", TOOL1("read_file", "path"), 1,
	  "Need the file first.\n<tool_call>\n<function=read_file>\n"
	  "<parameter=path>\nsrc/a.c\n</parameter>\n</function>\n</tool_call>",
	  RS_PARSE_END_STOP, "", "Need the file first.",
	  1, { { "read_file", "{\"path\": \"src/a.c\"}" } }, NULL },
	{ "P4", TOOL1("run", "cmd"), 1,
	  "</think>\n\nLet me inspect it.\n<tool_call>\n<function=run>\n"
	  "<parameter=cmd>\npwd\n</parameter>\n</function>\n</tool_call>",
	  RS_PARSE_END_STOP, "Let me inspect it.\n", "",
	  1, { { "run", "{\"cmd\": \"pwd\"}" } }, NULL },
	{ "P5", TOOL1("write_file", "text"), 0,
	  "<tool_call>\n<function=write_file>\n<parameter=text>\n"
	  "a</parameter>b\n\n</parameter>\n</function>\n</tool_call>",
	  RS_PARSE_END_STOP, "", "",
	  1, { { "write_file", "{\"text\": \"a</parameter>b\\n\"}" } }, NULL },
	{ "P6", TYPED, 0,
	  "<tool_call>\n<function=f>\n<parameter=n>\n42\n</parameter>\n"
	  "<parameter=f>\nTrue\n</parameter>\n<parameter=o>\n{'a': 1}\n"
	  "</parameter>\n<parameter=x>\nNone\n</parameter>\n</function>\n"
	  "</tool_call>",
	  RS_PARSE_END_STOP, "", "",
	  1, { { "f", "{\"n\": 42, \"f\": true, \"o\": {\"a\": 1}, "
	  "\"x\": null}" } }, NULL },
	{ "P7", TOOL1("write_file", "text"), 0,
	  "<tool_call>\n<function=write_file>\n<parameter=text>\nhello wor",
	  RS_PARSE_END_LENGTH, "", "", 0, { { NULL } },
	  "{\"text\": \"hello wor" },
	/* §3.1 deviation 2: <function= at a line start, no </tool_call> */
	{ "implicit_call", TOOL1("run", "cmd"), 0,
	  "Sure.\n<function=run>\n<parameter=cmd>\nls\n</parameter>\n"
	  "</function>",
	  RS_PARSE_END_STOP, "Sure.\n", "",
	  1, { { "run", "{\"cmd\": \"ls\"}" } }, NULL },
	/* deviation 3 and 4: missing newlines and a missing </parameter> */
	{ "missing_close", WEATHER, 0,
	  "<tool_call><function=get_weather><parameter=city>Paris\n"
	  "<parameter=days>\n2\n</function>\n</tool_call>",
	  RS_PARSE_END_STOP, "", "",
	  1, { { "get_weather", "{\"city\": \"Paris\", \"days\": 2}" } },
	  NULL },
	/* deviation 5: </function> inside a string value */
	{ "embedded_end", TOOL1("write_file", "text"), 0,
	  "<tool_call>\n<function=write_file>\n<parameter=text>\n"
	  "x</function>y\n<parameter=z>\n</parameter>\n</function>\n"
	  "</tool_call>",
	  RS_PARSE_END_STOP, "", "",
	  1, { { "write_file", "{\"text\": \"x</function>y\\n"
	  "<parameter=z>\"}" } }, NULL },
	/* deviation 6: trailing text; parallel calls separated by '\n' */
	{ "parallel_trailing", WEATHER, 0,
	  "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
	  "</parameter>\n</function>\n</tool_call>\n<tool_call>\n"
	  "<function=get_weather>\n<parameter=city>\nLyon\n</parameter>\n"
	  "<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>\n\n"
	  "Done.",
	  RS_PARSE_END_STOP, "Done.", "",
	  2, { { "get_weather", "{\"city\": \"Paris\"}" },
	  { "get_weather", "{\"city\": \"Lyon\", \"days\": 2}" } }, NULL },
	/* deviation 8: a repeated <think>; reasoning trimmed (U+3000) */
	{ "repeated_think", NULL, 1,
	  "<think>\n hmm \xe3\x80\x80\n</think>\n\nHi \n", RS_PARSE_END_STOP,
	  "Hi \n", "hmm", 0, { { NULL } }, NULL },
	{ "empty_think_off", NULL, 0, "<think>\n\n</think>\n\nHi",
	  RS_PARSE_END_STOP, "Hi", "", 0, { { NULL } }, NULL },
	{ "think_text_off", NULL, 0, "<think>x</think>Hi",
	  RS_PARSE_END_STOP, "<think>x</think>Hi", "", 0, { { NULL } }, NULL },
	/* §3.2: ends inside reasoning: all reasoning, no content */
	{ "eog_in_reasoning", WEATHER, 1, "still thinking \n\n",
	  RS_PARSE_END_LENGTH, "", "still thinking", 0, { { NULL } }, NULL },
	{ "think_end_in_content", NULL, 1, "r</think>a</think>b",
	  RS_PARSE_END_STOP, "a</think>b", "r", 0, { { NULL } }, NULL },
	{ "no_tools_markup", NULL, 1,
	  "use <tool_call>\n</think>\n<tool_call>\n<function=f>\n</function>",
	  RS_PARSE_END_STOP, "<tool_call>\n<function=f>\n</function>",
	  "use <tool_call>", 0, { { NULL } }, NULL },
	/* §3.3 item 1: phantom calls are content, nothing is lost */
	{ "phantom", WEATHER, 0,
	  "Use <tool_call> tags, <function=my func> and\n"
	  "<tool_call>\n<function={x}>\nok",
	  RS_PARSE_END_STOP,
	  "Use <tool_call> tags, <function=my func> and\n"
	  "<tool_call>\n<function={x}>\nok", "", 0, { { NULL } }, NULL },
	{ "eog_in_header", WEATHER, 0, "Ok <tool_call>\n<function=get_we",
	  RS_PARSE_END_STOP, "Ok <tool_call>\n<function=get_we", "", 0,
	  { { NULL } }, NULL },
	{ "length_in_header", WEATHER, 0, "Ok <tool_call>\n<function=get_we",
	  RS_PARSE_END_LENGTH, "Ok ", "", 0, { { NULL } }, NULL },
	/* §3.5: at the end of output an open call is closed */
	{ "eog_in_value", WEATHER, 0,
	  "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar\n",
	  RS_PARSE_END_STOP, "", "",
	  1, { { "get_weather", "{\"city\": \"Par\"}" } }, NULL },
	{ "eog_in_int_value", WEATHER, 0,
	  "<tool_call>\n<function=get_weather>\n<parameter=days>\n3",
	  RS_PARSE_END_STOP, "", "",
	  1, { { "get_weather", "{\"days\": 3}" } }, NULL },
	/* §3.3 item 4: a repeated parameter keeps its first value */
	{ "repeat", WEATHER, 0,
	  "<tool_call>\n<function=get_weather>\n<parameter=city>\nA\n"
	  "</parameter>\n<parameter=city>\nB\n</parameter>\n"
	  "<parameter=days>\n1\n</parameter>\n</function>\n</tool_call>",
	  RS_PARSE_END_STOP, "", "",
	  1, { { "get_weather", "{\"city\": \"A\", \"days\": 1}" } }, NULL },
	/* §3.3 item 2: other text ends the call at </function> */
	{ "junk", WEATHER, 0,
	  "<tool_call>\n<function=get_weather>\n<parameter=city>\nA\n"
	  "</parameter>\n<parameter=>\n<parameter=days>\n1\n</parameter>\n"
	  "</function>\n</tool_call>",
	  RS_PARSE_END_STOP, "", "",
	  1, { { "get_weather", "{\"city\": \"A\"}" } }, NULL },
	/* §3.4 conversions, and escaping of string values */
	{ "typed", TYPED, 0,
	  "<tool_call>\n<function=f>\n<parameter=n>\nabc\n</parameter>\n"
	  "<parameter=num>\n 1e400 \n</parameter>\n<parameter=f>\nFALSE\n"
	  "</parameter>\n<parameter=u>\n[1, 2]\n</parameter>\n"
	  "<parameter=e>\n2\n</parameter>\n<parameter=a>\nNone\n</parameter>\n"
	  "<parameter=r>\n-7\n</parameter>\n<parameter=x>\nnull?\n"
	  "</parameter>\n<parameter=extra>\n5\n</parameter>\n<parameter=o>\n"
	  "[1,\n 2]\n</parameter>\n</function>\n</tool_call>",
	  RS_PARSE_END_STOP, "", "",
	  1, { { "f", "{\"n\": \"abc\", \"num\": 1e400, \"f\": false, "
	  "\"u\": [1, 2], \"e\": 2, \"a\": null, \"r\": -7, "
	  "\"x\": \"null?\", \"extra\": \"5\", \"o\": [1, 2]}" } }, NULL },
	{ "escaping", TOOL1("write_file", "text"), 0,
	  "<tool_call>\n<function=write_file>\n<parameter=text>\n"
	  "\"q\" \\ caf\xc3\xa9 \xf0\x9f\xa6\x99\n\tend\n\n</parameter>\n"
	  "</function>\n</tool_call>",
	  RS_PARSE_END_STOP, "", "",
	  1, { { "write_file", "{\"text\": \"\\\"q\\\" \\\\ caf\xc3\xa9 "
	  "\xf0\x9f\xa6\x99\\n\\tend\\n\"}" } }, NULL },
	{ "unknown_tool", WEATHER, 0,
	  "<tool_call>\n<function=other>\n<parameter=k>\n1\n</parameter>\n"
	  "</function>\n</tool_call>",
	  RS_PARSE_END_STOP, "", "",
	  1, { { "other", "{\"k\": \"1\"}" } }, NULL },
};

#define N_CASES	(sizeof(cases) / sizeof(cases[0]))

/* What the events of one run add up to. */
struct outcome {
	struct rs_buf	content, reasoning;
	struct rs_buf	name[MAX_CALLS], args[MAX_CALLS];
	char		id[MAX_CALLS][32];
	size_t		n_calls;
	struct rs_buf	rcontent, rreasoning;	/* rs_parse_result() */
	size_t		r_calls;
	char		rname[MAX_CALLS][64], rargs[MAX_CALLS][512];
	int		rknown[MAX_CALLS];
};

static void
outcome_init(struct outcome *o)
{
	memset(o, 0, sizeof(*o));
}

static void
outcome_cleanup(struct outcome *o)
{
	rs_buf_cleanup(&o->content);
	rs_buf_cleanup(&o->reasoning);
	rs_buf_cleanup(&o->rcontent);
	rs_buf_cleanup(&o->rreasoning);
	for (int i = 0; i < MAX_CALLS; i++) {
		rs_buf_cleanup(&o->name[i]);
		rs_buf_cleanup(&o->args[i]);
	}
}

/* 1 when the N bytes at S are valid UTF-8 (each event must be). */
static int
valid_utf8(const unsigned char *s, size_t n)
{
	size_t	i = 0, k;

	while (i < n) {
		if (s[i] < 0x80) { i++; continue; }
		k = (s[i] & 0xe0) == 0xc0 ? 2 : (s[i] & 0xf0) == 0xe0 ? 3 :
		    (s[i] & 0xf8) == 0xf0 ? 4 : 0;
		if (k == 0 || i + k > n)
			return (0);
		for (size_t j = 1; j < k; j++)
			if ((s[i + j] & 0xc0) != 0x80)
				return (0);
		i += k;
	}
	return (1);
}

static void
collect(struct rs_parse *p, struct outcome *o)
{
	const struct rs_parse_event	*ev;
	size_t				 n;

	ev = rs_parse_events(p, &n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_gt(ev[i].len, 0);
		ck_assert(valid_utf8((const unsigned char *)ev[i].text,
		    ev[i].len));
		switch (ev[i].kind) {
		case RS_PARSE_CONTENT:
			rs_buf_add(&o->content, ev[i].text, ev[i].len);
			break;
		case RS_PARSE_REASONING:
			rs_buf_add(&o->reasoning, ev[i].text, ev[i].len);
			break;
		case RS_PARSE_CALL:
			/* a new call gets the next index, a fresh id, a name */
			ck_assert_uint_eq(ev[i].index, o->n_calls);
			ck_assert_uint_lt(o->n_calls, MAX_CALLS);
			ck_assert_uint_eq(strlen(ev[i].id), 29);
			ck_assert(strncmp(ev[i].id, "call_", 5) == 0);
			strcpy(o->id[o->n_calls], ev[i].id);
			rs_buf_add(&o->name[o->n_calls], ev[i].text,
			    ev[i].len);
			o->n_calls++;
			break;
		case RS_PARSE_ARGS:
			/* never interleaved: always the latest call */
			ck_assert_uint_eq(ev[i].index + 1, o->n_calls);
			rs_buf_add(&o->args[ev[i].index], ev[i].text,
			    ev[i].len);
			break;
		}
	}
}

/*
 * Parse C's text cut at the byte offsets CUTS[0..NCUTS) (ascending) and
 * record the outcome.
 */
static void
run_split(const struct pcase *c, const size_t *cuts, size_t ncuts,
    struct outcome *o)
{
	struct rs_parse_opts	 opts;
	struct rs_parse		*p = NULL;
	struct rs_json		*tools = NULL;
	struct rs_parse_result	 r;
	size_t			 len = strlen(c->text), at = 0;

	if (c->tools != NULL)
		ck_assert_int_eq(rs_json_parse(c->tools, strlen(c->tools),
		    &tools, NULL), RS_OK);
	rs_parse_opts_init(&opts);
	opts.tools = tools;
	opts.thinking = c->thinking;
	opts.id_seed = 42;
	ck_assert_int_eq(rs_parse_new(&p, &opts, NULL), RS_OK);
	for (size_t i = 0; i <= ncuts; i++) {
		size_t	to = i < ncuts ? cuts[i] : len;

		ck_assert_int_eq(rs_parse_feed(p, c->text + at, to - at, NULL),
		    RS_OK);
		collect(p, o);
		at = to;
	}
	ck_assert_int_eq(rs_parse_finish(p, c->end, NULL), RS_OK);
	collect(p, o);
	rs_parse_result(p, &r);
	rs_buf_add(&o->rcontent, r.content, r.content_len);
	rs_buf_add(&o->rreasoning, r.reasoning, r.reasoning_len);
	o->r_calls = r.n_calls;
	for (size_t i = 0; i < r.n_calls && i < MAX_CALLS; i++) {
		ck_assert_str_eq(r.calls[i].id, o->id[i]);
		ck_assert_uint_lt(strlen(r.calls[i].name), 64);
		ck_assert_uint_lt(r.calls[i].args_len, 512);
		o->rknown[i] = r.calls[i].known;
		strcpy(o->rname[i], r.calls[i].name);
		memcpy(o->rargs[i], r.calls[i].args, r.calls[i].args_len);
		o->rargs[i][r.calls[i].args_len] = '\0';
	}
	rs_parse_free(p);
	rs_json_free(tools);
}

static const char *
text_of(const struct rs_buf *b)
{
	return (b->data != NULL ? b->data : "");
}

/* The outcome matches the case's expected message. */
static void
check_outcome(const struct pcase *c, const struct outcome *o,
    const char *how)
{
	ck_assert_msg(strcmp(text_of(&o->content), c->content) == 0,
	    "%s (%s): content '%s'", c->name, how, text_of(&o->content));
	ck_assert_msg(strcmp(text_of(&o->reasoning), c->reasoning) == 0,
	    "%s (%s): reasoning '%s'", c->name, how, text_of(&o->reasoning));
	ck_assert_str_eq(text_of(&o->rcontent), c->content);
	ck_assert_str_eq(text_of(&o->rreasoning), c->reasoning);
	ck_assert_msg(o->r_calls == (size_t)c->n_calls, "%s (%s): %zu calls",
	    c->name, how, o->r_calls);
	for (int i = 0; i < c->n_calls; i++) {
		ck_assert_str_eq(o->rname[i], c->calls[i][0]);
		/* the cases' only call of an undeclared tool is "other" */
		ck_assert_int_eq(o->rknown[i],
		    strcmp(c->calls[i][0], "other") != 0);
		ck_assert_msg(strcmp(o->rargs[i], c->calls[i][1]) == 0,
		    "%s (%s): args '%s'", c->name, how, o->rargs[i]);
		/* streamed pieces add up to the result, byte for byte */
		ck_assert_str_eq(text_of(&o->name[i]), c->calls[i][0]);
		ck_assert_str_eq(text_of(&o->args[i]), c->calls[i][1]);
	}
	if (c->streamed_args != NULL) {
		ck_assert_uint_eq(o->n_calls, (size_t)c->n_calls + 1);
		ck_assert_str_eq(text_of(&o->args[c->n_calls]),
		    c->streamed_args);
	} else {
		ck_assert_uint_eq(o->n_calls, (size_t)c->n_calls);
	}
}

/* Arguments are JSON objects with the emitted key order. */
static void
check_json(const struct pcase *c)
{
	for (int i = 0; i < c->n_calls; i++) {
		struct rs_json	*j = NULL;
		const char	*a = c->calls[i][1];

		/* 1e400 is valid JSON but beyond what jansson parses */
		if (strstr(a, "1e400") != NULL)
			continue;
		ck_assert_msg(rs_json_parse(a, strlen(a), &j, NULL) == RS_OK,
		    "%s: %s", c->name, a);
		ck_assert_int_eq(rs_json_kind(j), RS_JSON_OBJECT);
		rs_json_free(j);
	}
}

START_TEST(whole)
{
	const struct pcase	*c = &cases[_i];
	struct outcome		 o;

	outcome_init(&o);
	run_split(c, NULL, 0, &o);
	check_outcome(c, &o, "whole");
	check_json(c);
	outcome_cleanup(&o);
}
END_TEST

START_TEST(bytewise)
{
	const struct pcase	*c = &cases[_i];
	size_t			 len = strlen(c->text);
	size_t			*cuts = malloc((len + 1) * sizeof(*cuts));
	struct outcome		 o;

	for (size_t i = 0; i + 1 < len; i++)
		cuts[i] = i + 1;
	outcome_init(&o);
	run_split(c, cuts, len > 0 ? len - 1 : 0, &o);
	check_outcome(c, &o, "bytewise");
	outcome_cleanup(&o);
	free(cuts);
}
END_TEST

START_TEST(random_splits)
{
	const struct pcase	*c = &cases[_i];
	size_t			 len = strlen(c->text), n;
	size_t			*cuts = malloc((len + 1) * sizeof(*cuts));
	struct rs_rng		 rng;
	struct outcome		 first, o;

	rs_rng_seed(&rng, 1000 + (uint64_t)_i);
	outcome_init(&first);
	run_split(c, NULL, 0, &first);
	for (int k = 0; k < N_SPLITS; k++) {
		/* cut points with random gaps of 1..8 bytes (token-sized) */
		n = 0;
		for (size_t at = 1 + rs_rng_below(&rng, 8); at < len;
		    at += 1 + rs_rng_below(&rng, 8))
			cuts[n++] = at;
		outcome_init(&o);
		run_split(c, cuts, n, &o);
		check_outcome(c, &o, "random");
		/* the same seed gives the same ids however the text arrives */
		for (size_t i = 0; i < o.n_calls; i++)
			ck_assert_str_eq(o.id[i], first.id[i]);
		outcome_cleanup(&o);
	}
	outcome_cleanup(&first);
	free(cuts);
}
END_TEST

START_TEST(events_shape)
{
	/* P2's stream: reasoning, then the call header with its id, then
	 * "{" ... "}" in pieces; ids are distinct per call */
	const struct pcase		*c = &cases[10];
	struct rs_parse_opts		 opts;
	struct rs_parse			*p = NULL;
	struct rs_json			*tools = NULL;
	const struct rs_parse_event	*ev;
	size_t				 n;

	ck_assert_str_eq(c->name, "parallel_trailing");
	ck_assert_int_eq(rs_json_parse(c->tools, strlen(c->tools), &tools,
	    NULL), RS_OK);
	rs_parse_opts_init(&opts);
	opts.tools = tools;
	ck_assert_int_eq(rs_parse_new(&p, &opts, NULL), RS_OK);
	ck_assert_int_eq(rs_parse_feed(p, c->text, strlen(c->text), NULL),
	    RS_OK);
	ev = rs_parse_events(p, &n);
	ck_assert_uint_ge(n, 4);
	ck_assert_int_eq(ev[0].kind, RS_PARSE_CALL);
	ck_assert_int_eq(ev[1].kind, RS_PARSE_ARGS);
	ck_assert_int_eq(ev[2].kind, RS_PARSE_CALL);
	ck_assert_str_ne(ev[0].id, ev[2].id);
	ck_assert(ev[1].len == strlen("{\"city\": \"Paris\"}") &&
	    memcmp(ev[1].text, "{\"city\": \"Paris\"}", ev[1].len) == 0);
	ck_assert_int_eq(rs_parse_finish(p, RS_PARSE_END_STOP, NULL), RS_OK);
	rs_parse_free(p);
	rs_json_free(tools);
}
END_TEST

/* Two outcomes of the same text are identical (events and result). */
static void
same_outcome(const struct outcome *a, const struct outcome *b,
    const char *text)
{
	ck_assert_msg(strcmp(text_of(&a->content), text_of(&b->content)) == 0 &&
	    strcmp(text_of(&a->reasoning), text_of(&b->reasoning)) == 0 &&
	    strcmp(text_of(&a->rcontent), text_of(&b->rcontent)) == 0 &&
	    a->n_calls == b->n_calls && a->r_calls == b->r_calls,
	    "split changed the outcome of '%s'", text);
	for (size_t i = 0; i < a->n_calls; i++) {
		ck_assert_str_eq(text_of(&a->name[i]), text_of(&b->name[i]));
		ck_assert_str_eq(text_of(&a->args[i]), text_of(&b->args[i]));
	}
}

/*
 * Random texts made of delimiter fragments, feed-split three ways: the
 * outcome never depends on the split, and every complete call's arguments
 * are a JSON object.
 */
START_TEST(invariance)
{
	static const char *const frags[] = {
		"<tool_call>", "</tool_call>", "<function=get_weather>",
		"<function=", "get_weather", "</function>", "<parameter=city>",
		"<parameter=days>", "<parameter=", "</parameter>", "<think>",
		"</think>", "\n", "\n", " ", "Paris", "2", "<", ">", "=",
		"{'a': [1, None]}", "\xc3\xa9", "\xe3\x80\x80", "\"", "x"
	};
	struct rs_rng	rng;
	struct rs_buf	text;
	struct pcase	c;
	size_t		cuts[256], n, len;

	rs_rng_seed(&rng, 7 + (uint64_t)_i);
	rs_buf_init(&text);
	for (int round = 0; round < 40; round++) {
		struct outcome	a, b, d;

		rs_buf_reset(&text);
		for (int k = (int)rs_rng_below(&rng, 30); k >= 0; k--)
			rs_buf_adds(&text, frags[rs_rng_below(&rng,
			    sizeof(frags) / sizeof(frags[0]))]);
		memset(&c, 0, sizeof(c));
		c.name = "random";
		c.tools = rs_rng_below(&rng, 4) ? WEATHER : NULL;
		c.thinking = (int)rs_rng_below(&rng, 2);
		c.end = rs_rng_below(&rng, 2) ? RS_PARSE_END_STOP :
		    RS_PARSE_END_LENGTH;
		c.text = text.data;
		len = text.len;
		outcome_init(&a);
		outcome_init(&b);
		outcome_init(&d);
		run_split(&c, NULL, 0, &a);
		for (n = 0; n + 1 < len && n < 256; n++)
			cuts[n] = n + 1;
		run_split(&c, cuts, n, &b);
		n = 0;
		for (size_t at = 1 + rs_rng_below(&rng, 6); at < len && n < 256;
		    at += 1 + rs_rng_below(&rng, 6))
			cuts[n++] = at;
		run_split(&c, cuts, n, &d);
		same_outcome(&a, &b, c.text);
		same_outcome(&a, &d, c.text);
		for (size_t i = 0; i < a.r_calls; i++) {
			struct rs_json *j = NULL;

			ck_assert_msg(rs_json_parse(a.rargs[i],
			    strlen(a.rargs[i]), &j, NULL) == RS_OK,
			    "'%s' gave arguments '%s'", c.text, a.rargs[i]);
			ck_assert_int_eq(rs_json_kind(j), RS_JSON_OBJECT);
			rs_json_free(j);
		}
		outcome_cleanup(&a);
		outcome_cleanup(&b);
		outcome_cleanup(&d);
	}
	rs_buf_cleanup(&text);
}
END_TEST

/*
 * No text at all, thinking off: the parser's buffers are still empty
 * (NULL) when it looks for its markers (UBSan caught a memcmp of NULL
 * here under make asan).
 */
START_TEST(empty_answer)
{
	struct rs_parse_opts	 o;
	struct rs_parse		*p;
	struct rs_parse_result	 r;
	struct rs_err		 err;

	rs_parse_opts_init(&o);
	ck_assert_int_eq(rs_parse_new(&p, &o, &err), RS_OK);
	ck_assert_int_eq(rs_parse_finish(p, RS_PARSE_END_STOP, &err), RS_OK);
	rs_parse_result(p, &r);
	ck_assert_uint_eq(r.content_len, 0);
	ck_assert_uint_eq(r.n_calls, 0);
	rs_parse_free(p);
	/* thinking, nothing fed: fuzz_parse found NULL + 0 there (UBSan) */
	o.thinking = 1;
	ck_assert_int_eq(rs_parse_new(&p, &o, &err), RS_OK);
	ck_assert_int_eq(rs_parse_finish(p, RS_PARSE_END_LENGTH, &err), RS_OK);
	rs_parse_result(p, &r);
	ck_assert_uint_eq(r.reasoning_len, 0);
	ck_assert_uint_eq(r.content_len, 0);
	rs_parse_free(p);
}
END_TEST

START_TEST(bad_input)
{
	struct rs_parse_opts	 opts;
	struct rs_parse		*p = NULL;
	struct rs_json		*obj = NULL;
	struct rs_err		 err = { 0 };
	struct rs_parse_result	 r;
	char			 junk[512];

	ck_assert_int_eq(rs_json_parse("{}", 2, &obj, NULL), RS_OK);
	rs_parse_opts_init(&opts);
	opts.tools = obj;
	ck_assert_int_eq(rs_parse_new(&p, &opts, &err), RS_ERR_INVALID_ARG);
	ck_assert_ptr_nonnull(strstr(err.msg, "array"));
	rs_json_free(obj);
	/* feeding after finish is refused; binary junk never crashes */
	opts.tools = NULL;
	ck_assert_int_eq(rs_parse_new(&p, &opts, NULL), RS_OK);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 37 + 11);
	ck_assert_int_eq(rs_parse_feed(p, junk, sizeof(junk), NULL), RS_OK);
	ck_assert_int_eq(rs_parse_finish(p, RS_PARSE_END_STOP, NULL), RS_OK);
	rs_parse_result(p, &r);
	ck_assert_uint_eq(r.content_len, sizeof(junk));
	ck_assert_int_eq(rs_parse_feed(p, "x", 1, &err), RS_ERR_INVALID_ARG);
	ck_assert_int_eq(rs_parse_finish(p, RS_PARSE_END_STOP, &err),
	    RS_ERR_INVALID_ARG);
	rs_parse_free(p);
}
END_TEST

START_TEST(long_name)
{
	/* a name that never ends is given up on, not waited for forever */
	struct rs_parse_opts	 opts;
	struct rs_parse		*p = NULL;
	struct rs_json		*tools = NULL;
	struct rs_parse_result	 r;
	struct rs_buf		 b;

	rs_buf_init(&b);
	rs_buf_adds(&b, "<tool_call>\n<function=");
	for (int i = 0; i < 300; i++)
		rs_buf_addc(&b, 'a');
	ck_assert_int_eq(rs_json_parse(WEATHER, strlen(WEATHER), &tools,
	    NULL), RS_OK);
	rs_parse_opts_init(&opts);
	opts.tools = tools;
	ck_assert_int_eq(rs_parse_new(&p, &opts, NULL), RS_OK);
	ck_assert_int_eq(rs_parse_feed(p, b.data, b.len, NULL), RS_OK);
	rs_parse_result(p, &r);
	ck_assert_uint_gt(r.content_len, 256);
	rs_parse_free(p);
	rs_json_free(tools);
	rs_buf_cleanup(&b);
}
END_TEST

Suite *
parse_suite(void)
{
	Suite	*s = suite_create("parse");
	TCase	*tc;

	tc = tcase_create("examples");
	tcase_add_loop_test(tc, whole, 0, (int)N_CASES);
	tcase_add_loop_test(tc, bytewise, 0, (int)N_CASES);
	tcase_add_loop_test(tc, random_splits, 0, (int)N_CASES);
	tcase_add_test(tc, events_shape);
	suite_add_tcase(s, tc);
	tc = tcase_create("invariance");
	tcase_add_loop_test(tc, invariance, 0, 25);
	suite_add_tcase(s, tc);
	tc = tcase_create("bad_input");
	tcase_add_test(tc, empty_answer);
	tcase_add_test(tc, bad_input);
	tcase_add_test(tc, long_name);
	suite_add_tcase(s, tc);
	return (s);
}
