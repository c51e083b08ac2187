/*
 * rs-generate - generate text with a model (rs_gen.h).
 *
 * Reads JSON lines on stdin, one request per line, with OpenAI field names
 * ({"messages": [...]}, {"prompt": "..."}, {"tokens": [...]} or {"ids":
 * [...]} as rs-tokenize writes them, plus max_tokens, temperature, seed,
 * stop, ...), and answers each with one JSON object: the text, the
 * generated ids, reasoning and tool calls, finish_reason, usage and
 * timings.  With --stream, one line per generated token comes first.  A
 * bad line gets an error object in its place and the next one still runs
 * (exit 1 at the end).  With --raw, all of stdin is one prompt and the
 * generated text is written as it comes.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rs_buf.h"
#include "rs_chat.h"
#include "rs_engine.h"
#include "rs_gen.h"
#include "rs_json.h"
#include "rs_model.h"
#include "rs_oai.h"
#include "rs_pyjson.h"
#include "rs_tok.h"

#define USAGE	"rs-generate -m MODEL [--stream | --raw] [-n N] [-s SEED] " \
		"[--backend cpu|cuda|auto]\n" \
		"       [--devices LIST [--split LIST]] [-t N] [-c N] [--draft D]\n" \
		"       [--draft-max K] [--chat-template-file FILE]\n" \
		"       [--default-enable-thinking true|false] " \
		"[--default-reasoning-effort E]\n" \
		"       [--nfc | --no-nfc] [-q]"

enum {
	OPT_STREAM = 256, OPT_RAW, OPT_BACKEND, OPT_TEMPLATE, OPT_DRAFT,
	OPT_DRAFT_MAX, OPT_DEF_THINKING, OPT_DEF_EFFORT, OPT_NFC, OPT_NO_NFC,
	OPT_DEVICES, OPT_SPLIT
};

struct opts {
	const char	*model;
	const char	*template_file;
	int		 stream;
	int		 raw;
	int		 backend;
	const char	*devices;	/* --devices, NULL: one GPU */
	const char	*split;		/* --split */
	int		 threads;
	int32_t		 ctx;
	int64_t		 max_tokens;	/* -1: to the context end */
	int64_t		 seed;
	struct rs_cli_draft draft;	/* --draft, --draft-max */
	enum rs_drafter_kind drafter;	/* resolved from them */
	int		 draft_max;
	int		 def_thinking;	/* -1: the library's default, off */
	const char	*def_effort;	/* NULL: the library's, xhigh */
	enum rs_tok_norm norm;		/* --nfc, --no-nfc */
	int		 quiet;
};

/* One streamed token's deltas, gathered from its events. */
struct delta {
	struct rs_buf	 content;
	struct rs_buf	 reasoning;
	struct rs_json	*calls;		/* tool_call_delta entries, or NULL */
	struct rs_json	*last;		/* the entry of the latest call */
	size_t		 last_index;
	struct rs_buf	 args;		/* its arguments so far */
	struct rs_logprob lp;		/* the token's logprob, with logprobs */
	int		 has_lp;
};

struct run {
	const struct opts	*o;
	struct rs_model		*model;
	struct rs_engine	*engine;
	struct rs_state		*state;
	struct rs_tok		*tok;
	struct rs_gen		*gen;
	struct rs_json		*id;		/* the request's id, or NULL */
	struct delta		 d;
	int			 failed;
	int			 wfail;
};

static void
help(void)
{
	printf("usage: %s\n\n", USAGE);
	puts("Generate text with a qwen35 model: JSON lines in, JSON lines "
	    "out.\n"
	    "\n"
	    "  -m, --model FILE            qwen35 GGUF model (required)\n"
	    "      --stream                one line per generated token "
	    "before each result\n"
	    "      --raw                   stdin is one plain-text prompt; "
	    "print the text\n"
	    "  -n, --max-tokens N          tokens to generate when a request "
	    "gives no max_tokens\n"
	    "                              (default: up to the context end)\n"
	    "  -s, --seed N                sampling seed when a request gives "
	    "none (default 0)\n"
	    "      --backend NAME          cpu, cuda or auto (default auto: "
	    "cuda when a GPU\n"
	    "                              is present in a CUDA build, else "
	    "cpu)\n"
	    RS_CLI_DEVICES_HELP
	    "  -t, --threads N             worker threads (default: all "
	    "CPUs)\n"
	    "  -c, --ctx-size N            context positions (default: the "
	    "model's)");
	rs_cli_draft_help(30);
	puts("      --chat-template-file F  render chats with the template in "
	    "F instead of the\n"
	    "                              model's (one of the known Qwen "
	    "templates)\n"
	    "      --default-enable-thinking true|false\n"
	    "                              think when a request neither sets "
	    "enable_thinking\n"
	    "                              nor gives an effort (default "
	    "false)\n"
	    "      --default-reasoning-effort E\n"
	    "                              effort when thinking without a "
	    "level: xhigh, medium\n"
	    "                              or low (default xhigh)\n"
	    "      --nfc                   normalize prompt text to NFC (the "
	    "default)\n"
	    "      --no-nfc                do not normalize: raw text, as "
	    "llama.cpp\n"
	    "  -q, --quiet                 no error lines, timings or "
	    "progress on stderr\n"
	    "  -h, --help                  this help\n"
	    "      --version               version and build configuration\n"
	    "\n"
	    "Input lines: {\"messages\": [...]}, {\"prompt\": \"...\"} or "
	    "{\"tokens\": [ids]} (\"ids\" too),\n"
	    "with OpenAI fields: max_tokens, temperature, top_p, top_k, "
	    "min_p, seed, stop,\n"
	    "stop_token_ids, presence_penalty, frequency_penalty, "
	    "repetition_penalty,\n"
	    "logit_bias, tools, tool_choice, reasoning_effort, "
	    "enable_thinking, ...\n"
	    "Chats think only when asked: reasoning_effort other than "
	    "\"none\", or\n"
	    "enable_thinking true (at --default-reasoning-effort without "
	    "a level).\n"
	    "Exit status: 0 success, 1 some request failed, 2 error.");
}

static void
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "model", required_argument, NULL, 'm' },
		{ "stream", no_argument, NULL, OPT_STREAM },
		{ "raw", no_argument, NULL, OPT_RAW },
		{ "max-tokens", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' },
		{ "backend", required_argument, NULL, OPT_BACKEND },
		{ "devices", required_argument, NULL, OPT_DEVICES },
		{ "split", required_argument, NULL, OPT_SPLIT },
		{ "threads", required_argument, NULL, 't' },
		{ "ctx-size", required_argument, NULL, 'c' },
		{ "chat-template-file", required_argument, NULL, OPT_TEMPLATE },
		{ "draft", required_argument, NULL, OPT_DRAFT },
		{ "draft-max", required_argument, NULL, OPT_DRAFT_MAX },
		{ "default-enable-thinking", required_argument, NULL,
		    OPT_DEF_THINKING },
		{ "default-reasoning-effort", required_argument, NULL,
		    OPT_DEF_EFFORT },
		{ "nfc", no_argument, NULL, OPT_NFC },
		{ "no-nfc", no_argument, NULL, OPT_NO_NFC },
		{ "quiet", no_argument, NULL, 'q' },
		RS_CLI_LONGOPTS_TAIL
	};
	int	c;

	memset(o, 0, sizeof(*o));
	o->max_tokens = -1;
	o->def_thinking = -1;
	while ((c = getopt_long(argc, argv, "m:n:s:t:c:qh", longopts,
	    NULL)) != -1) {
		switch (c) {
		case 'm':
			o->model = optarg;
			break;
		case OPT_STREAM:
			o->stream = 1;
			break;
		case OPT_RAW:
			o->raw = 1;
			break;
		case 'n':
			o->max_tokens = rs_cli_num_opt("--max-tokens", optarg,
			    1, INT32_MAX, USAGE);
			break;
		case 's':
			o->seed = rs_cli_num_opt("--seed", optarg, INT64_MIN,
			    INT64_MAX, USAGE);
			break;
		case OPT_BACKEND:
			o->backend = rs_cli_backend_opt(optarg, USAGE);
			break;
		case OPT_DEVICES:
			o->devices = optarg;
			break;
		case OPT_SPLIT:
			o->split = optarg;
			break;
		case 't':
			o->threads = (int)rs_cli_num_opt("--threads", optarg, 1,
			    256, USAGE);
			break;
		case 'c':
			o->ctx = (int32_t)rs_cli_num_opt("--ctx-size", optarg, 2,
			    1 << 24, USAGE);
			break;
		case OPT_TEMPLATE:
			o->template_file = optarg;
			break;
		case OPT_DRAFT:
			rs_cli_draft_opt(&o->draft, optarg, NULL, USAGE);
			break;
		case OPT_DRAFT_MAX:
			rs_cli_draft_opt(&o->draft, NULL, optarg, USAGE);
			break;
		case OPT_DEF_THINKING:
			if (rs_cli_parse_bool(optarg, &o->def_thinking) != 0)
				rs_cli_usage_error(USAGE, "--default-enable-"
				    "thinking: '%s' is not true or false",
				    optarg);
			break;
		case OPT_DEF_EFFORT:
			if (rs_cli_parse_effort(optarg, &o->def_effort) != 0)
				rs_cli_usage_error(USAGE, "--default-reasoning-"
				    "effort: '%s' is not xhigh, medium or low",
				    optarg);
			break;
		case OPT_NFC:
		case OPT_NO_NFC:
			rs_cli_norm_opt(&o->norm, c == OPT_NFC, USAGE);
			break;
		case 'q':
			o->quiet = 1;
			break;
		default:
			rs_cli_common_opt(c, USAGE, help);
		}
	}
	rs_cli_opts_done(argc, argv, o->model, USAGE);
	rs_cli_devices_check(o->devices, o->split, USAGE);
	if (o->stream && o->raw)
		rs_cli_usage_error(USAGE, "--stream and --raw exclude each "
		    "other");
	rs_cli_draft_done(&o->draft, RS_DRAFTER_AUTO, &o->drafter,
	    &o->draft_max, USAGE);
}

/* The known chat template in FILE, or exit 2. */
static enum rs_chat_variant
template_variant(const char *file)
{
	struct rs_err		 err = { 0 };
	enum rs_chat_variant	 v;
	FILE			*fp;
	char			*text;
	size_t			 n;

	if ((fp = fopen(file, "rb")) == NULL)
		rs_cli_fatal("%s: %s", file, strerror(errno));
	text = rs_cli_read_all(fp, file, RS_CLI_MAX_LINE, &n);
	fclose(fp);
	if (rs_chat_identify(text, n, &v, &err) != RS_OK)
		rs_cli_fatal("%s: %s", file, err.msg);
	free(text);
	return (v);
}

static void
load(struct run *r)
{
	const struct opts	*o = r->o;
	struct rs_err		 err = { 0 };
	struct rs_engine_opts	 eo = { 0 };
	struct rs_state_opts	 so = { 0 };
	struct rs_gen_opts	 go;
	enum rs_status		 st;

	rs_gen_opts_init(&go);
	if (o->template_file != NULL)
		go.variant = template_variant(o->template_file);
	rs_cli_progress("loading the model", 0, 0);
	if (rs_model_open(&r->model, o->model, &err) != RS_OK)
		rs_cli_fatal("%s: %s", o->model, err.msg);
	eo.backend = o->backend;
	eo.n_threads = o->threads;
	rs_cli_devices_opt(o->devices, o->split, o->ctx, 1, &eo, USAGE);
	so.n_ctx = o->ctx;
	so.checkpoint = 1;	/* prefix reuse between requests */
	so.n_snap = o->draft_max > 0 ? o->draft_max + 1 : 0;
	go.draft = o->drafter;
	go.draft_max = o->draft_max;
	if (o->def_thinking >= 0)
		go.enable_thinking = o->def_thinking;
	if (o->def_effort != NULL)
		go.reasoning_effort = o->def_effort;
	if (rs_engine_new(&r->engine, r->model, &eo, &err) != RS_OK)
		rs_cli_fatal("%s: %s", o->model, err.msg);
	st = rs_engine_state_new(r->engine, &so, &r->state, &err);
	if (st != RS_OK && !o->draft.given && so.n_snap > 0 &&
	    (st == RS_ERR_NOMEM || st == RS_ERR_CUDA)) {
		/* the default drafter gives way: no memory for its
		   snapshots is no reason to fail a run */
		rs_cli_warn("decoding without drafts: no memory for the "
		    "drafter's %d state snapshots (%s)", so.n_snap, err.msg);
		so.n_snap = 0;
		go.draft = RS_DRAFTER_NONE;
		go.draft_max = 0;
		st = rs_engine_state_new(r->engine, &so, &r->state, &err);
	}
	if (st != RS_OK ||
	    rs_tok_new(&r->tok, r->model->gguf, o->norm, &err) != RS_OK ||
	    rs_gen_new(&r->gen, r->engine, r->state, r->tok, &go, &err) !=
	    RS_OK)
		rs_cli_fatal("%s: %s", o->model, err.msg);
	rs_cli_progress_end();
}

static void
write_line(struct run *r, const struct rs_json *j)
{
	if (j == NULL)
		rs_cli_fatal("out of memory");
	if (rs_json_write_line(j, stdout) != 0)
		r->wfail = 1;
}

/* A new output object, led by the request's id when it has one. */
static struct rs_json *
new_line(const struct run *r)
{
	struct rs_json	*o = rs_json_obj();

	if (o != NULL && r->id != NULL)
		rs_json_set(o, "id", rs_json_ref(r->id));
	return (o);
}

/* ---- --stream: one line per token ---- */

static void
delta_reset(struct delta *d)
{
	rs_buf_reset(&d->content);
	rs_buf_reset(&d->reasoning);
	rs_json_free(d->calls);
	d->calls = NULL;
	d->last = NULL;
	d->has_lp = 0;
}

/* Close the latest call entry: its arguments so far go in. */
static void
delta_close_call(struct delta *d)
{
	struct rs_json	*fn;

	if (d->last == NULL)
		return;
	if ((fn = rs_json_get(d->last, "function")) == NULL) {
		fn = rs_json_obj();
		rs_json_set(d->last, "function", fn);
	}
	rs_json_set(fn, "arguments", rs_json_strn(d->args.data != NULL ?
	    d->args.data : "", d->args.len));
	d->last = NULL;
	rs_buf_reset(&d->args);
}

/* A tool-call event: a new entry for a new call, else more arguments. */
static void
delta_call(struct delta *d, const struct rs_gen_event *ev)
{
	struct rs_json	*e, *fn;

	if (d->last != NULL && (d->last_index != ev->index ||
	    ev->kind == RS_GEN_EV_TOOL_CALL))
		delta_close_call(d);
	if (d->last == NULL) {
		if (d->calls == NULL)
			d->calls = rs_json_arr();
		e = rs_json_obj();
		rs_json_set(e, "index", rs_json_int((int64_t)ev->index));
		if (ev->kind == RS_GEN_EV_TOOL_CALL) {
			rs_json_set(e, "id", rs_json_str(ev->id));
			rs_json_set(e, "type", rs_json_str("function"));
			fn = rs_json_obj();
			rs_json_set(fn, "name", rs_json_strn(ev->text,
			    ev->len));
			rs_json_set(e, "function", fn);
		}
		rs_json_push(d->calls, e);
		d->last = e;
		d->last_index = ev->index;
	}
	if (ev->kind == RS_GEN_EV_TOOL_ARGS)
		rs_buf_add(&d->args, ev->text, ev->len);
}

/* The line of token TOKEN (or -1: text after the last token). */
static void
delta_write(struct run *r, int32_t token)
{
	struct delta	*d = &r->d;
	struct rs_json	*o = new_line(r);

	if (token >= 0)
		rs_json_set(o, "token", rs_json_int(token));
	if (d->has_lp) {
		struct rs_json *l = rs_oai_logprobs_chat(&d->lp, 1, r->tok);

		if (l == NULL)
			rs_cli_fatal("out of memory");
		rs_json_set(o, "logprob", rs_json_ref(rs_json_arr_at(l, 0)));
		rs_json_free(l);
		d->has_lp = 0;
	}
	if (d->content.len > 0)
		rs_json_set(o, "delta", rs_json_strn(d->content.data,
		    d->content.len));
	if (d->reasoning.len > 0)
		rs_json_set(o, "reasoning_delta",
		    rs_json_strn(d->reasoning.data, d->reasoning.len));
	delta_close_call(d);
	if (d->calls != NULL)
		rs_json_set(o, "tool_call_delta", rs_json_ref(d->calls));
	if (d->content.oom || d->reasoning.oom || d->args.oom)
		rs_cli_fatal("out of memory");
	write_line(r, o);
	rs_json_free(o);
	delta_reset(d);
}

/* A long prompt's prefill, on a terminal (rs_cli_progress). */
static void
show_progress(const struct rs_gen_event *ev)
{
	if (ev->n_total < RS_CLI_LONG_PROMPT)
		return;
	rs_cli_progress("prompt", (uint64_t)ev->n_done,
	    (uint64_t)ev->n_total);
	if (ev->n_done == ev->n_total)
		rs_cli_progress_end();
}

/* Without --stream only the progress of the prompt is shown. */
static int
on_progress(const struct rs_gen_event *ev, void *arg)
{
	(void)arg;
	if (ev->kind == RS_GEN_EV_PROGRESS)
		show_progress(ev);
	return (0);
}

static int
on_event(const struct rs_gen_event *ev, void *arg)
{
	struct run	*r = arg;

	switch (ev->kind) {
	case RS_GEN_EV_CONTENT:
		rs_buf_add(&r->d.content, ev->text, ev->len);
		break;
	case RS_GEN_EV_REASONING:
		rs_buf_add(&r->d.reasoning, ev->text, ev->len);
		break;
	case RS_GEN_EV_TOOL_CALL:
	case RS_GEN_EV_TOOL_ARGS:
		delta_call(&r->d, ev);
		break;
	case RS_GEN_EV_TOKEN:
		delta_write(r, ev->token);
		break;
	case RS_GEN_EV_LOGPROB:
		r->d.lp = *ev->lp;
		r->d.has_lp = 1;
		break;
	case RS_GEN_EV_PROGRESS:
		show_progress(ev);
		break;
	case RS_GEN_EV_FINISH:
		break;
	}
	return (r->wfail);	/* nobody reads: stop */
}

/* ---- JSON lines ---- */

/*
 * The final object of a successful request; LOGPROBS: the request asked
 * for them.
 */
static void
write_result(struct run *r, const struct rs_gen_result *res, int logprobs)
{
	struct rs_json	*o = new_line(r), *toks = rs_json_arr();

	for (size_t i = 0; i < res->n_tokens; i++)
		rs_json_push(toks, rs_json_int(res->tokens[i]));
	rs_json_set(o, "text", rs_json_strn(res->content, res->content_len));
	rs_json_set(o, "tokens", toks);
	rs_json_set(o, "reasoning", rs_json_strn(res->reasoning,
	    res->reasoning_len));
	rs_json_set(o, "tool_calls", rs_gen_calls_json(res));
	rs_json_set(o, "finish_reason",
	    rs_json_str(rs_gen_finish_name(res->finish)));
	rs_json_set(o, "usage", rs_gen_usage_json(&res->usage));
	rs_json_set(o, "timings", rs_gen_timings_json(&res->timings));
	if (logprobs)
		rs_json_set(o, "logprobs", rs_oai_logprobs_chat(res->logprobs,
		    res->n_logprobs, r->tok));
	write_line(r, o);
	rs_json_free(o);
}

/* LOCATED: GE's message names its line already (bad_json) */
static void
write_error(struct run *r, size_t lineno, const struct rs_gen_error *ge,
    int located)
{
	struct rs_json	*o = new_line(r);

	r->failed++;
	if (!r->o->quiet) {
		char at[320];

		rs_cli_warn("%s", located ? ge->err.msg : rs_cli_at_line(at,
		    sizeof(at), (long long)lineno, ge->err.msg));
	}
	rs_json_set(o, "error", rs_gen_error_json(ge));
	write_line(r, o);
	rs_json_free(o);
}

/*
 * Input line LINENO is not JSON: the envelope of serving.md edge case 1,
 * its message placed in the input ("line 3 column 7: ...", where the
 * parser, which saw the line alone, said line 1).  Returns 1: the
 * message names its line.
 */
static int
bad_json(struct rs_gen_error *ge, const struct rs_err *err, size_t lineno)
{
	memset(ge, 0, sizeof(*ge));
	ge->err = *err;
	(void)rs_cli_at_line(ge->err.msg, sizeof(ge->err.msg),
	    (long long)lineno, err->msg);
	ge->type = "invalid_request_error";
	ge->code = 400;
	return (1);
}

/*
 * rs-tokenize writes {"ids": [...], "n": COUNT}; that "n" is not OpenAI's
 * number of choices, so a line with ids and n equal to their count loses
 * n.  Returns BODY, or a new object without n (BODY then freed).
 */
static struct rs_json *
drop_id_count(struct rs_json *body)
{
	struct rs_json	*ids = rs_json_get(body, "ids"), *o, *v;
	const char	*key;
	size_t		 klen;
	void		*it = NULL;
	int64_t		 n;

	if (ids == NULL || rs_json_kind(ids) != RS_JSON_ARRAY ||
	    rs_json_as_int(rs_json_get(body, "n"), &n) != 0 ||
	    n != (int64_t)rs_json_arr_len(ids))
		return (body);
	if ((o = rs_json_obj()) == NULL)
		rs_cli_fatal("out of memory");
	while (rs_json_obj_next(body, &it, &key, &klen, &v) == 0)
		if (strcmp(key, "n") != 0 && rs_json_set(o, key,
		    rs_json_ref(v)) != 0)
			rs_cli_fatal("out of memory");
	rs_json_free(body);
	return (o);
}

/*
 * One input line: a result, or an error object in its place (LINE NULL:
 * a line longer than N bytes, rs_cli_each_line).
 */
static void
json_line(struct run *r, const char *line, size_t n, size_t lineno)
{
	struct rs_json		*body = NULL;
	struct rs_gen_req	 req;
	struct rs_gen_result	 res;
	struct rs_gen_error	 ge = { 0 };
	struct rs_err		 err = { 0 };
	enum rs_status		 st;
	int			 located = 0;

	r->id = NULL;
	rs_gen_req_init(&req, r->gen);
	req.sample.seed = (uint64_t)r->o->seed;
	req.max_tokens = r->o->max_tokens;
	if (line == NULL) {	/* rs_cli_each_line: longer than N bytes */
		st = rs_errf(&err, RS_ERR_LIMIT, "the line is longer than %zu "
		    "bytes", n);
		located = bad_json(&ge, &err, lineno);
	} else if ((st = rs_pyjson_parse(line, n, &body, &err)) != RS_OK)
		located = bad_json(&ge, &err, lineno);
	else {
		if (rs_json_kind(body) == RS_JSON_OBJECT) {
			body = drop_id_count(body);
			r->id = rs_json_get(body, "id");
		}
		if ((st = rs_gen_req_parse(r->gen, &req, body, &ge)) ==
		    RS_OK)
			st = rs_gen_run(r->gen, &req, r->o->stream ? on_event :
			    on_progress, r, &res, &ge);
	}
	if (st == RS_OK) {
		if (r->o->stream && (r->d.content.len > 0 ||
		    r->d.reasoning.len > 0 || r->d.calls != NULL))
			delta_write(r, -1);
		write_result(r, &res, req.logprobs);
		rs_gen_result_cleanup(&res);
	} else
		write_error(r, lineno, &ge, located);
	delta_reset(&r->d);
	rs_gen_req_cleanup(&req);
	rs_json_free(body);
	r->id = NULL;
}

/* rs_cli_each_line callback: one request per line */
static void
each_line(void *ctx, char *line, size_t n, size_t lineno)
{
	json_line(ctx, line, n, lineno);
}

static void
run_jsonl(struct run *r)
{
	rs_cli_each_line(stdin, "stdin", each_line, r);
}

/* ---- --raw ---- */

static int
on_raw(const struct rs_gen_event *ev, void *arg)
{
	struct run	*r = arg;

	if (ev->kind == RS_GEN_EV_PROGRESS)
		show_progress(ev);
	if (ev->kind != RS_GEN_EV_CONTENT)
		return (0);
	if (fwrite(ev->text, 1, ev->len, stdout) != ev->len ||
	    fflush(stdout) != 0)
		r->wfail = 1;
	return (r->wfail);
}

static void
run_raw(struct run *r)
{
	struct rs_gen_req	 req;
	struct rs_gen_result	 res;
	struct rs_gen_error	 ge = { 0 };
	const struct rs_gen_timings *t = &res.timings;

	rs_gen_req_init(&req, r->gen);
	req.sample.seed = (uint64_t)r->o->seed;
	req.max_tokens = r->o->max_tokens;
	req.kind = RS_GEN_TEXT;
	req.text = rs_cli_read_all(stdin, "stdin", RS_CLI_MAX_LINE,
	    &req.text_len);
	if (rs_gen_run(r->gen, &req, on_raw, r, &res, &ge) != RS_OK) {
		r->failed++;
		if (!r->o->quiet)
			rs_cli_warn("%s", ge.err.msg);
	} else {
		if (putchar('\n') == EOF || fflush(stdout) != 0)
			r->wfail = 1;
		if (!r->o->quiet)
			rs_cli_warn("%lld prompt tokens in %.1f ms (%.1f "
			    "tok/s), %lld generated in %.1f ms (%.1f tok/s), "
			    "finish %s", (long long)t->prompt_n, t->prompt_ms,
			    t->prompt_per_second, (long long)t->predicted_n,
			    t->predicted_ms, t->predicted_per_second,
			    rs_gen_finish_name(res.finish));
		if (!r->o->quiet && t->draft != NULL)
			rs_cli_warn("drafts (%s): %lld of %lld accepted in "
			    "%lld passes, %.1f ms drafting, %.1f ms MTP "
			    "catch-up", t->draft, (long long)t->draft_n_accepted,
			    (long long)t->draft_n, (long long)t->draft_rounds,
			    t->draft_ms, t->draft_catchup_ms);
		rs_gen_result_cleanup(&res);
	}
	rs_gen_req_cleanup(&req);
}

int
main(int argc, char **argv)
{
	struct opts	o;
	struct run	r;

	rs_cli_init(argv[0]);
	parse_opts(argc, argv, &o);
	rs_cli_set_quiet(o.quiet);
	memset(&r, 0, sizeof(r));
	r.o = &o;
	rs_buf_init(&r.d.content);
	rs_buf_init(&r.d.reasoning);
	rs_buf_init(&r.d.args);
	load(&r);
	if (o.raw)
		run_raw(&r);
	else
		run_jsonl(&r);
	rs_buf_cleanup(&r.d.content);
	rs_buf_cleanup(&r.d.reasoning);
	rs_buf_cleanup(&r.d.args);
	rs_gen_free(r.gen);
	rs_tok_free(r.tok);
	rs_state_free(r.state);
	rs_engine_free(r.engine);
	rs_model_close(r.model);
	/* a write error leaves stdout's error flag: rs_cli_finish says it */
	return (rs_cli_finish(r.wfail ? RS_EXIT_ERROR : r.failed > 0 ?
	    RS_EXIT_FAIL : RS_EXIT_OK));
}
