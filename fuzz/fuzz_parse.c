/*
 * fuzz_parse.c - libFuzzer target for the output parser (rs_parse.h):
 * reasoning split and tool calls (serving.md §3).
 *
 * The first input byte picks the options, the next two seed the split,
 * the rest is the model's output text:
 *   bit 0      thinking (the output starts as reasoning)
 *   bit 1      tools given (get_weather, typed parameters), else none
 *   bit 2      strip_empty_think off
 *   bit 3      the end is a length cut, else a stop
 * The text is parsed twice: fed whole, and fed in pieces of 1 to 16
 * bytes.  Both must give the same events (concatenated per kind and per
 * call) and the same result (§3.5: streaming equals non-streaming); every
 * event is non-empty and, when the text is valid UTF-8 (as the
 * detokenizer's always is), valid UTF-8, and the arguments of every
 * complete call are a JSON object.  Any violation
 * aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs_buf.h"
#include "rs_json.h"
#include "rs_parse.h"
#include "rs_pyjson.h"
#include "rs_utf8.h"

int	LLVMFuzzerInitialize(int *argc, char ***argv);
int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct rs_json	*tools;

static const char tools_json[] = "[{\"type\": \"function\", \"function\": "
    "{\"name\": \"get_weather\", \"parameters\": {\"type\": \"object\", "
    "\"properties\": {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": "
    "\"integer\"}, \"hot\": {\"type\": \"boolean\"}, \"o\": {\"type\": "
    "\"object\"}, \"x\": {\"type\": [\"string\", \"null\"]}, \"n\": "
    "{\"type\": \"number\"}, \"any\": {}}}}}, {\"type\": \"function\", "
    "\"function\": {\"name\": \"run\", \"parameters\": {\"type\": "
    "\"object\", \"properties\": {\"cmd\": {\"type\": \"string\"}}}}}]";

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (rs_json_parse(tools_json, strlen(tools_json), &tools, NULL) !=
	    RS_OK)
		abort();
	return (0);
}

/* What one parse gives: each kind's text, concatenated. */
struct out {
	struct rs_buf	reasoning, content, names, args[8];
	size_t		n_calls;
};

static void
collect(struct out *o, const struct rs_parse *p, int valid)
{
	const struct rs_parse_event	*ev;
	size_t				 n;

	ev = rs_parse_events(p, &n);
	for (size_t i = 0; i < n; i++) {
		if (ev[i].len == 0 || ev[i].text == NULL)
			abort();
		if (valid && !rs_utf8_valid(ev[i].text, ev[i].len, NULL))
			abort();
		switch (ev[i].kind) {
		case RS_PARSE_REASONING:
			rs_buf_add(&o->reasoning, ev[i].text, ev[i].len);
			break;
		case RS_PARSE_CONTENT:
			rs_buf_add(&o->content, ev[i].text, ev[i].len);
			break;
		case RS_PARSE_CALL:
			if (ev[i].index != o->n_calls || ev[i].id == NULL)
				abort();
			o->n_calls++;
			rs_buf_add(&o->names, ev[i].text, ev[i].len);
			rs_buf_addc(&o->names, '\n');
			break;
		case RS_PARSE_ARGS:
			if (ev[i].index + 1 != o->n_calls)
				abort();	/* never interleaved */
			if (ev[i].index < 8)
				rs_buf_add(&o->args[ev[i].index], ev[i].text,
				    ev[i].len);
			break;
		}
	}
}

static int
same(const struct rs_buf *a, const struct rs_buf *b)
{
	return (a->len == b->len && (a->len == 0 ||
	    memcmp(a->data, b->data, a->len) == 0));
}

/* Parse TEXT (N bytes) in pieces from SEED (0: whole) into O and RES. */
static struct rs_parse *
run(const struct rs_parse_opts *po, const char *text, size_t n,
    unsigned seed, enum rs_parse_end how, struct out *o, int valid)
{
	struct rs_parse	*p;
	size_t		 at = 0, k;

	if (rs_parse_new(&p, po, NULL) != RS_OK)
		abort();
	while (at < n) {
		if (seed == 0)
			k = n - at;
		else {
			seed = seed * 1103515245u + 12345u;
			k = 1 + (seed >> 16) % 16;
			if (k > n - at)
				k = n - at;
		}
		if (rs_parse_feed(p, text + at, k, NULL) != RS_OK)
			abort();
		collect(o, p, valid);
		at += k;
	}
	if (rs_parse_finish(p, how, NULL) != RS_OK)
		abort();
	collect(o, p, valid);
	return (p);
}

static void
out_cleanup(struct out *o)
{
	rs_buf_cleanup(&o->reasoning);
	rs_buf_cleanup(&o->content);
	rs_buf_cleanup(&o->names);
	for (int i = 0; i < 8; i++)
		rs_buf_cleanup(&o->args[i]);
}

/*
 * A call's arguments are one JSON object.  Numbers keep their lexeme
 * (serving.md §6, 46), so 1e400 or an integer past 64 bits may be there,
 * which rs_json_parse refuses (RS_ERR_LIMIT): then the strict literal
 * parser, which reads any number, checks the structure instead.
 */
static void
check_object(const char *a, size_t n)
{
	struct rs_json	*j;
	struct rs_buf	 b;
	enum rs_status	 s;

	if ((s = rs_json_parse(a, n, &j, NULL)) == RS_OK) {
		if (rs_json_kind(j) != RS_JSON_OBJECT)
			abort();
		rs_json_free(j);
		return;
	}
	rs_buf_init(&b);
	if (s != RS_ERR_LIMIT || n == 0 || a[0] != '{' ||
	    !rs_pyjson_literal(&b, a, n, RS_PYJSON_STRICT))
		abort();
	rs_buf_cleanup(&b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rs_parse_opts	 po;
	struct rs_parse_result	 ra, rb;
	struct rs_parse		*a, *b;
	struct out		 oa, ob;
	const char		*text;
	size_t			 n;
	unsigned		 seed;
	int			 valid;
	enum rs_parse_end	 how;

	if (size < 3)
		return (0);
	rs_parse_opts_init(&po);
	po.thinking = data[0] & 1;
	po.tools = (data[0] & 2) ? tools : NULL;
	po.strip_empty_think = !(data[0] & 4);
	po.id_seed = 7;
	how = (data[0] & 8) ? RS_PARSE_END_LENGTH : RS_PARSE_END_STOP;
	seed = 1u + (data[1] | (unsigned)data[2] << 8);
	text = (const char *)data + 3;
	n = size - 3;
	valid = rs_utf8_valid(text, n, NULL);
	memset(&oa, 0, sizeof(oa));
	memset(&ob, 0, sizeof(ob));
	for (int i = 0; i < 8; i++) {
		rs_buf_init(&oa.args[i]);
		rs_buf_init(&ob.args[i]);
	}
	rs_buf_init(&oa.reasoning);
	rs_buf_init(&oa.content);
	rs_buf_init(&oa.names);
	rs_buf_init(&ob.reasoning);
	rs_buf_init(&ob.content);
	rs_buf_init(&ob.names);
	a = run(&po, text, n, 0, how, &oa, valid);
	b = run(&po, text, n, seed, how, &ob, valid);
	if (!same(&oa.reasoning, &ob.reasoning) ||
	    !same(&oa.content, &ob.content) || !same(&oa.names, &ob.names) ||
	    oa.n_calls != ob.n_calls)
		abort();
	for (int i = 0; i < 8; i++)
		if (!same(&oa.args[i], &ob.args[i]))
			abort();
	rs_parse_result(a, &ra);
	rs_parse_result(b, &rb);
	if (ra.content_len != rb.content_len || ra.reasoning_len !=
	    rb.reasoning_len || ra.n_calls != rb.n_calls ||
	    memcmp(ra.content, rb.content, ra.content_len) != 0 ||
	    memcmp(ra.reasoning, rb.reasoning, ra.reasoning_len) != 0)
		abort();
	for (size_t i = 0; i < ra.n_calls; i++) {
		struct rs_json *j;

		if (strcmp(ra.calls[i].name, rb.calls[i].name) != 0 ||
		    ra.calls[i].args_len != rb.calls[i].args_len ||
		    memcmp(ra.calls[i].args, rb.calls[i].args,
		    ra.calls[i].args_len) != 0)
			abort();
		/* (the detokenizer only ever feeds valid UTF-8) */
		if (valid)
			check_object(ra.calls[i].args, ra.calls[i].args_len);
		/* a complete call's arguments are what streamed */
		if (i < 8 && (ra.calls[i].args_len != oa.args[i].len ||
		    memcmp(ra.calls[i].args, oa.args[i].data,
		    oa.args[i].len) != 0))
			abort();
	}
	rs_parse_free(a);
	rs_parse_free(b);
	out_cleanup(&oa);
	out_cleanup(&ob);
	return (0);
}
