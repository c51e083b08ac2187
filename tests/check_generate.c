/*
 * check_generate.c - rs-generate end to end: JSON lines in and out
 * (streamed per token and whole), every line parsed back with rs_json,
 * errors in place and the next line still run, --raw, the pipes from
 * rs-tokenize and into rs-tokenize --decode, usage errors and exit
 * statuses (style.md §2.8, §2.9).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_buf.h"
#include "rs_json.h"
#include "rs_synth.h"
#include "t_ref.h"
#include "t_tok.h"
#include "t_util.h"

#define Q8	"tiny/model-q8_0.gguf"
#define F16	"tiny/model-f16.gguf"
#define MAX_LINES	256

static int
run_cmd(char **out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
run_cmd(char **out, const char *fmt, ...)
{
	char	cmd[8192];
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return (t_run(cmd, out));
}

/* OUT split into JSON lines, each parsed (fails on any malformed line). */
static size_t
parse_lines(char *out, struct rs_json **lines, size_t max)
{
	struct rs_err	 err = { 0 };
	size_t		 n = 0;
	char		*p = out, *nl;

	while (*p != '\0') {
		ck_assert_msg((nl = strchr(p, '\n')) != NULL, "output ends "
		    "without a newline: '%s'", p);
		ck_assert(n < max);
		ck_assert_msg(rs_json_parse(p, (size_t)(nl - p), &lines[n],
		    &err) == RS_OK, "line %zu '%.*s': %s", n + 1,
		    (int)(nl - p), p, err.msg);
		ck_assert(rs_json_kind(lines[n]) == RS_JSON_OBJECT);
		n++;
		p = nl + 1;
	}
	return (n);
}

static void
free_lines(struct rs_json **lines, size_t n)
{
	for (size_t i = 0; i < n; i++)
		rs_json_free(lines[i]);
}

static int64_t
get_int(const struct rs_json *o, const char *key)
{
	int64_t	v = -1;

	ck_assert_msg(rs_json_as_int(rs_json_get(o, key), &v) == 0,
	    "no integer %s", key);
	return (v);
}

static const char *
get_str(const struct rs_json *o, const char *key)
{
	const char	*s = NULL;
	size_t		 n;

	ck_assert_msg(rs_json_as_str(rs_json_get(o, key), &s, &n) == 0,
	    "no string %s", key);
	return (s);
}

/* The final object's usage and timings, consistent with its tokens. */
static void
check_final(const struct rs_json *o, size_t n_tokens)
{
	struct rs_json	*u = rs_json_get(o, "usage");
	struct rs_json	*t = rs_json_get(o, "timings");
	struct rs_json	*toks = rs_json_get(o, "tokens");

	ck_assert_ptr_nonnull(u);
	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_nonnull(toks);
	ck_assert_uint_eq(rs_json_arr_len(toks), n_tokens);
	ck_assert_int_eq(get_int(u, "completion_tokens"), (int64_t)n_tokens);
	ck_assert_int_eq(get_int(u, "total_tokens"), get_int(u,
	    "prompt_tokens") + (int64_t)n_tokens);
	ck_assert_int_ge(get_int(rs_json_get(u, "prompt_tokens_details"),
	    "cached_tokens"), 0);
	ck_assert_int_eq(get_int(t, "predicted_n"), (int64_t)n_tokens);
	ck_assert_ptr_nonnull(rs_json_get(t, "prompt_ms"));
	ck_assert_ptr_nonnull(rs_json_get(t, "predicted_per_second"));
	ck_assert_ptr_nonnull(rs_json_get(t, "ttft_ms"));
	ck_assert_ptr_nonnull(rs_json_get(o, "text"));
	ck_assert_ptr_nonnull(rs_json_get(o, "reasoning"));
	ck_assert(rs_json_kind(rs_json_get(o, "tool_calls")) ==
	    RS_JSON_ARRAY);
}

/* The brief's example: a chat, streamed; every line is JSON. */
START_TEST(cmd_stream)
{
	struct rs_json	*l[MAX_LINES];
	char		*out = NULL;
	size_t		 n;
	struct rs_json	*last;
	struct rs_buf	 cat;
	const char	*s;
	size_t		 len;
	int64_t		 v;

	ck_assert_int_eq(run_cmd(&out, "echo '{\"messages\":[{\"role\":"
	    "\"user\",\"content\":\"hi\"}],\"max_tokens\":16}' | %s -m %s "
	    "--stream", t_bin("rs-generate"), t_fixture(Q8)), 0);
	n = parse_lines(out, l, MAX_LINES);
	ck_assert_uint_eq(n, 17);
	last = l[n - 1];
	check_final(last, 16);
	ck_assert_str_eq(get_str(last, "finish_reason"), "length");
	/* one line per token, its id the final object's; the reasoning
	   deltas concatenate to the reasoning (the prompt ends in <think>) */
	rs_buf_init(&cat);
	for (size_t i = 0; i + 1 < n; i++) {
		ck_assert(rs_json_as_int(rs_json_arr_at(rs_json_get(last,
		    "tokens"), i), &v) == 0);
		ck_assert_int_eq(get_int(l[i], "token"), v);
		ck_assert_ptr_null(rs_json_get(l[i], "finish_reason"));
		if (rs_json_as_str(rs_json_get(l[i], "reasoning_delta"), &s,
		    &len) == 0)
			rs_buf_add(&cat, s, len);
	}
	ck_assert(rs_json_as_str(rs_json_get(last, "reasoning"), &s, &len) ==
	    0);
	ck_assert_uint_eq(cat.len, len);
	ck_assert(len == 0 || memcmp(cat.data, s, len) == 0);
	rs_buf_cleanup(&cat);
	free_lines(l, n);
	free(out);
}
END_TEST

/*
 * Logprobs asked for in the request: each streamed token line carries its
 * entry, the result all of them in order; the raw-mode greedy token is the
 * first of its top list.
 */
START_TEST(cmd_logprobs)
{
	struct rs_json	*l[MAX_LINES], *all, *e, *top;
	char		*out = NULL;
	size_t		 n;
	double		 a, b;

	ck_assert_int_eq(run_cmd(&out, "echo '{\"prompt\":\"Hello\","
	    "\"max_tokens\":5,\"temperature\":0,\"logprobs\":2}' | %s -m %s "
	    "--stream -t 1", t_bin("rs-generate"), t_fixture(Q8)), 0);
	n = parse_lines(out, l, MAX_LINES);
	ck_assert_uint_eq(n, 6);
	all = rs_json_get(l[5], "logprobs");
	ck_assert_uint_eq(rs_json_arr_len(all), 5);
	for (size_t i = 0; i < 5; i++) {
		e = rs_json_get(l[i], "logprob");
		ck_assert_ptr_nonnull(e);
		ck_assert_str_eq(get_str(e, "token"), get_str(rs_json_arr_at(all,
		    i), "token"));
		top = rs_json_get(e, "top_logprobs");
		ck_assert_uint_eq(rs_json_arr_len(top), 2);
		ck_assert(rs_json_as_real(rs_json_get(e, "logprob"), &a) == 0 &&
		    rs_json_as_real(rs_json_get(rs_json_arr_at(top, 0),
		    "logprob"), &b) == 0);
		ck_assert(a == b && a <= 0);
		ck_assert_str_eq(get_str(e, "token"),
		    get_str(rs_json_arr_at(top, 0), "token"));
	}
	free_lines(l, n);
	free(out);
	/* not asked for: no field */
	ck_assert_int_eq(run_cmd(&out, "echo '{\"prompt\":\"Hello\","
	    "\"max_tokens\":2}' | %s -m %s -t 1", t_bin("rs-generate"),
	    t_fixture(Q8)), 0);
	n = parse_lines(out, l, MAX_LINES);
	ck_assert_uint_eq(n, 1);
	ck_assert_ptr_null(rs_json_get(l[0], "logprobs"));
	free_lines(l, n);
	free(out);
}
END_TEST

/*
 * Greedy from reference.json's prompt as {"tokens": ...}: the reference
 * continuation; the same prompt through rs-tokenize's {"ids": ...}.
 */
START_TEST(cmd_greedy_and_pipes)
{
	struct t_ref	 ref;
	struct rs_json	*l[MAX_LINES], *o, *toks;
	const char	*dir = t_tmpdir(), *gen = t_bin("rs-generate");
	const char	*tok = t_bin("rs-tokenize"), *m = t_fixture(F16);
	char		 path[600], line[4096], *out = NULL, *out2 = NULL;
	size_t		 n, k = 0;
	int64_t		 v;
	int		 p;

	t_ref_load(&ref);
	p = ref.greedy_prompt;
	k = (size_t)snprintf(line, sizeof(line), "{\"id\":\"g\",\"tokens\":[");
	for (int32_t i = 0; i < ref.len[p]; i++)
		k += (size_t)snprintf(line + k, sizeof(line) - k, i > 0 ?
		    ",%d" : "%d", (int)ref.prompt[p][i]);
	snprintf(line + k, sizeof(line) - k, "],\"max_tokens\":40,"
	    "\"temperature\":0}\n");
	snprintf(path, sizeof(path), "%s/greedy.jsonl", dir);
	t_write_file(path, line, strlen(line));
	ck_assert_int_eq(run_cmd(&out, "%s -m %s -t 2 < %s", gen, m, path), 0);
	ck_assert_uint_eq(parse_lines(out, l, MAX_LINES), 1);
	o = l[0];
	ck_assert_str_eq(get_str(o, "id"), "g");
	toks = rs_json_get(o, "tokens");
	ck_assert_uint_eq(rs_json_arr_len(toks), 40);
	for (size_t i = 0; i < 40; i++) {
		ck_assert(rs_json_as_int(rs_json_arr_at(toks, i), &v) == 0);
		ck_assert_int_eq(v, ref.greedy[i]);
	}
	check_final(o, 40);
	/* rs-generate's output into rs-tokenize --decode: the same text */
	ck_assert_int_eq(run_cmd(&out2, "%s -m %s -j -d < /dev/stdin <<'EOF'\n"
	    "%sEOF", tok, m, out), 0);
	ck_assert_uint_eq(parse_lines(out2, l + 1, 1), 1);
	ck_assert_str_eq(get_str(l[1], "text"), get_str(o, "text"));
	free_lines(l, 2);
	free(out);
	free(out2);
	/* rs-tokenize's {"ids": ..., "n": ...} into rs-generate */
	ck_assert_int_eq(run_cmd(&out, "echo '{\"text\":\"Hello, world\"}' | "
	    "%s -m %s -j", tok, m), 0);
	ck_assert_uint_eq(parse_lines(out, l, 1), 1);
	v = get_int(l[0], "n");
	free_lines(l, 1);
	free(out);
	ck_assert_int_eq(run_cmd(&out, "echo '{\"text\":\"Hello, world\"}' | "
	    "%s -m %s -j | %s -m %s -n 4", tok, m, gen, m), 0);
	n = parse_lines(out, l, MAX_LINES);
	ck_assert_uint_eq(n, 1);
	check_final(l[0], 4);
	ck_assert_int_eq(get_int(rs_json_get(l[0], "usage"), "prompt_tokens"),
	    v);
	free_lines(l, n);
	free(out);
	t_ref_free(&ref);
}
END_TEST

/*
 * Bad lines get an error object in place; the other lines still run;
 * exit 1.  Ids are copied through.
 */
START_TEST(cmd_bad_lines)
{
	static const char *const req =
	    "{\"id\":1,\"prompt\":\"Hi\",\"max_tokens\":3}\n"
	    "{\"prompt\": \n"
	    "{\"id\":3,\"prompt\":\"Hi\",\"max_tokens\":\"3\"}\n"
	    "{\"id\":4,\"tokens\":[1,2,100000],\"max_tokens\":3}\n"
	    "{\"id\":5,\"prompt\":\"Hi\",\"max_tokens\":-3}\n"
	    "\n"
	    "[1,2]\n"
	    "{\"id\":7,\"prompt\":\"Hi hi hi hi hi hi hi hi hi hi hi hi hi hi "
	    "hi hi hi hi hi hi hi hi hi hi hi hi hi hi hi hi hi hi hi\"}\n"
	    "{\"id\":8,\"ids\":[10,11],\"max_tokens\":2}\n";
	static const char *const params[] = { NULL, "", "max_tokens",
	    "tokens[2]", "max_tokens", "", "prompt", NULL };
	struct rs_json	*l[MAX_LINES], *e;
	const char	*dir = t_tmpdir(), *s;
	char		 path[600], *out = NULL;
	size_t		 n, len;

	snprintf(path, sizeof(path), "%s/bad.jsonl", dir);
	t_write_file(path, req, strlen(req));
	ck_assert_int_eq(run_cmd(&out, "%s -m %s -c 32 -q < %s",
	    t_bin("rs-generate"), t_fixture(Q8), path), 1);
	n = parse_lines(out, l, MAX_LINES);
	ck_assert_uint_eq(n, 8);
	for (size_t i = 0; i < n; i++) {
		e = rs_json_get(l[i], "error");
		if (params[i] == NULL) {
			ck_assert_msg(e == NULL, "line %zu failed", i + 1);
			continue;
		}
		ck_assert_msg(e != NULL, "line %zu did not fail", i + 1);
		ck_assert(rs_json_as_str(rs_json_get(e, "message"), &s, &len) ==
		    0 && len > 0);
		ck_assert(rs_json_get(e, "type") != NULL);
		if (params[i][0] != '\0')
			ck_assert_str_eq(get_str(e, "param"), params[i]);
	}
	ck_assert_int_eq(get_int(l[0], "id"), 1);
	/* the input's line, not the parser's (it saw the line alone) */
	ck_assert(strncmp(get_str(rs_json_get(l[1], "error"), "message"),
	    "line 2 column ", 14) == 0);
	ck_assert_int_eq(get_int(l[2], "id"), 3);
	ck_assert_str_eq(get_str(rs_json_get(l[6], "error"), "type"),
	    "exceed_context_size_error");
	ck_assert_int_eq(get_int(l[7], "id"), 8);
	check_final(l[7], 2);
	free_lines(l, n);
	free(out);
}
END_TEST

/*
 * A line longer than the 256 MiB limit gets an error in its place and the
 * line after it still runs (it used to end the input silently, exit 0,
 * once getline ran out of memory); an endless --raw input or template
 * file is refused, exit 2, instead of growing until memory runs out.
 */
START_TEST(cmd_huge_inputs)
{
	struct rs_json	*l[MAX_LINES];
	const char	*gen = t_bin("rs-generate"), *m = t_fixture(Q8);
	char		*out = NULL;
	size_t		 n;

	ck_assert_int_eq(run_cmd(&out, "(echo '{\"id\":1,\"tokens\":[5],"
	    "\"max_tokens\":1}'; head -c 268435457 /dev/zero | tr '\\0' x; "
	    "echo; echo '{\"id\":3,\"tokens\":[5],\"max_tokens\":1}') | "
	    "%s -m %s -q", gen, m), 1);
	n = parse_lines(out, l, MAX_LINES);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(get_int(l[0], "id"), 1);
	ck_assert_str_eq(get_str(rs_json_get(l[1], "error"), "message"),
	    "line 2: the line is longer than 268435456 bytes");
	ck_assert_int_eq(get_int(l[2], "id"), 3);
	free_lines(l, n);
	free(out);
	ck_assert_int_eq(run_cmd(&out, "%s -m %s --raw -n 1 < /dev/zero 2>&1",
	    gen, m), 2);
	ck_assert_ptr_nonnull(strstr(out, "stdin: longer than"));
	free(out);
	ck_assert_int_eq(run_cmd(&out, "%s -m %s --chat-template-file "
	    "/dev/zero < /dev/null 2>&1", gen, m), 2);
	ck_assert_ptr_nonnull(strstr(out, "/dev/zero: longer than"));
	free(out);
}
END_TEST

/* --raw prints what the JSON mode calls text, for the same request. */
START_TEST(cmd_raw)
{
	struct rs_json	*l[2];
	const char	*gen = t_bin("rs-generate"), *m = t_fixture(Q8);
	char		*raw = NULL, *js = NULL;
	const char	*text;

	ck_assert_int_eq(run_cmd(&raw, "printf 'Once upon' | %s -m %s --raw "
	    "-n 12 -s 5 -q", gen, m), 0);
	ck_assert_int_eq(run_cmd(&js, "echo '{\"prompt\":\"Once upon\"}' | "
	    "%s -m %s -n 12 -s 5", gen, m), 0);
	ck_assert_uint_eq(parse_lines(js, l, 2), 1);
	text = get_str(l[0], "text");
	ck_assert_uint_eq(strlen(raw), strlen(text) + 1);
	ck_assert(strncmp(raw, text, strlen(text)) == 0);
	ck_assert_int_eq(raw[strlen(text)], '\n');
	free_lines(l, 1);
	free(raw);
	free(js);
}
END_TEST

/*
 * The prompt is normalized to NFC by default, as the reference tokenizer
 * does: the decomposed "résumé" has as many prompt tokens as its reference
 * ids in tokenizer-cases.json; with --no-nfc it has more.
 */
START_TEST(cmd_nfc)
{
	const char	*gen = t_bin("rs-generate"), *m = t_fixture(Q8);
	const char	*want = "re\xcc\x81sume\xcc\x81";
	struct rs_json	*j = t_json_load(T_CASES), *cases, *c = NULL, *r;
	struct rs_json	*l[2];
	char		 path[600], *out = NULL;
	const char	*s;
	size_t		 n, ref;
	FILE		*fp;

	cases = rs_json_get(j, "cases");
	for (size_t i = 0; i < rs_json_arr_len(cases) && c == NULL; i++) {
		s = t_json_str(rs_json_arr_at(cases, i), "text", &n);
		if (n == strlen(want) && memcmp(s, want, n) == 0)
			c = rs_json_arr_at(cases, i);
	}
	ck_assert_msg(c != NULL, "no decomposed resume case in %s", T_CASES);
	ref = rs_json_arr_len(rs_json_get(c, "tiny"));
	snprintf(path, sizeof(path), "%s/nfc.jsonl", t_tmpdir());
	ck_assert((fp = fopen(path, "w")) != NULL);
	r = rs_json_obj();
	rs_json_set(r, "prompt", rs_json_ref(rs_json_get(c, "text")));
	rs_json_set(r, "max_tokens", rs_json_int(1));
	ck_assert(rs_json_write_line(r, fp) == 0 && fclose(fp) == 0);
	ck_assert_int_eq(run_cmd(&out, "%s -m %s -q < %s", gen, m, path), 0);
	ck_assert_uint_eq(parse_lines(out, l, 2), 1);
	ck_assert_int_eq(get_int(rs_json_get(l[0], "usage"),
	    "prompt_tokens"), (int64_t)ref);
	free_lines(l, 1);
	free(out);
	ck_assert_int_eq(run_cmd(&out, "%s -m %s -q --no-nfc < %s", gen, m,
	    path), 0);
	ck_assert_uint_eq(parse_lines(out, l, 2), 1);
	ck_assert_int_gt(get_int(rs_json_get(l[0], "usage"),
	    "prompt_tokens"), (int64_t)ref);
	free_lines(l, 1);
	free(out);
	rs_json_free(r);
	rs_json_free(j);
}
END_TEST

START_TEST(cmd_usage)
{
	const char	*gen = t_bin("rs-generate"), *m = t_fixture(Q8);
	const char	*dir = t_tmpdir();
	char		*out = NULL, path[600];

	ck_assert_int_eq(run_cmd(&out, "%s --help", gen), 0);
	ck_assert(strstr(out, "--stream") != NULL &&
	    strstr(out, "--chat-template-file") != NULL &&
	    strstr(out, "--ctx-size") != NULL &&
	    strstr(out, "--default-enable-thinking") != NULL &&
	    strstr(out, "--default-reasoning-effort") != NULL);
	free(out);
	ck_assert_int_eq(run_cmd(&out, "%s --version", gen), 0);
	free(out);
	ck_assert_int_eq(run_cmd(NULL, "%s </dev/null 2>/dev/null", gen), 2);
	ck_assert_int_eq(run_cmd(NULL, "%s -m %s --stream --raw </dev/null "
	    "2>/dev/null", gen, m), 2);
	ck_assert_int_eq(run_cmd(NULL, "%s -m %s --nfc --no-nfc </dev/null "
	    "2>/dev/null", gen, m), 2);
	ck_assert_int_eq(run_cmd(NULL, "%s -m %s -n 0 </dev/null 2>/dev/null",
	    gen, m), 2);
	ck_assert_int_eq(run_cmd(NULL, "%s -m %s -s x </dev/null 2>/dev/null",
	    gen, m), 2);
	ck_assert_int_eq(run_cmd(NULL, "%s -m %s --backend tpu </dev/null "
	    "2>/dev/null", gen, m), 2);
	/* the thinking defaults take exactly these values (serving.md §2.5) */
	ck_assert_int_eq(run_cmd(NULL, "%s -m %s --default-enable-thinking yes "
	    "</dev/null 2>/dev/null", gen, m), 2);
	ck_assert_int_eq(run_cmd(NULL, "%s -m %s --default-reasoning-effort "
	    "high </dev/null 2>/dev/null", gen, m), 2);
	ck_assert_int_eq(run_cmd(NULL, "%s -m %s --default-enable-thinking true "
	    "--default-reasoning-effort low </dev/null", gen, m), 0);
	ck_assert_int_eq(run_cmd(NULL, "%s -m %s extra </dev/null 2>/dev/null",
	    gen, m), 2);
	ck_assert_int_eq(run_cmd(NULL, "%s -m /nonexistent.gguf </dev/null "
	    "2>/dev/null", gen), 2);
	/* a template file that is not a known template */
	snprintf(path, sizeof(path), "%s/tpl.jinja", dir);
	t_write_file(path, "{{ messages }}", 14);
	ck_assert_int_eq(run_cmd(NULL, "%s -m %s --chat-template-file %s "
	    "</dev/null 2>/dev/null", gen, m, path), 2);
	/* empty input: nothing to do */
	ck_assert_int_eq(run_cmd(&out, "%s -m %s </dev/null", gen, m), 0);
	ck_assert_str_eq(out, "");
	free(out);
	/* drafters: names, a bare count (ngram), and their errors */
	ck_assert_int_eq(run_cmd(&out, "%s -m %s --draft bogus </dev/null "
	    "2>&1", gen, m), 2);
	ck_assert(strstr(out, "none, ngram, mtp, mtp+ngram") != NULL);
	free(out);
	ck_assert_int_eq(run_cmd(&out, "%s -m %s --draft 4 --draft-max 3 "
	    "</dev/null 2>&1", gen, m), 2);
	ck_assert(strstr(out, "--draft ngram --draft-max 3") != NULL);
	free(out);
	/* alone, --draft-max sets the default drafter's count */
	ck_assert_int_eq(run_cmd(NULL, "%s -m %s --draft-max 3 </dev/null",
	    gen, m), 0);
	ck_assert_int_eq(run_cmd(NULL, "%s -m %s --draft mtp --draft-max 17 "
	    "</dev/null 2>/dev/null", gen, m), 2);
	ck_assert_int_eq(run_cmd(NULL, "%s -m %s --draft 8 </dev/null", gen, m),
	    0);
}
END_TEST

/* 1 when A and B are arrays of the same integers. */
static int
same_ints(const struct rs_json *a, const struct rs_json *b)
{
	int64_t	x, y;

	if (a == NULL || b == NULL || rs_json_arr_len(a) != rs_json_arr_len(b))
		return (0);
	for (size_t i = 0; i < rs_json_arr_len(a); i++)
		if (rs_json_as_int(rs_json_arr_at(a, i), &x) != 0 ||
		    rs_json_as_int(rs_json_arr_at(b, i), &y) != 0 || x != y)
			return (0);
	return (1);
}

/* The final record of OUT (one request), parsed; fails the test if not. */
static struct rs_json *
one_record(char *out)
{
	struct rs_json	*b[2];

	ck_assert_int_eq(parse_lines(out, b, 2), 1);
	return (b[0]);
}

/* The drafter named in record R's timings, or NULL when it drafted not. */
static const char *
draft_name(const struct rs_json *r)
{
	const char	*name = NULL;
	size_t		 len;

	(void)rs_json_as_str(rs_json_get(rs_json_get(r, "timings"), "draft"),
	    &name, &len);
	return (name);
}

/*
 * Every drafter from the command line, and the default (auto: mtp+ngram
 * on a model with an MTP block), gives plain decoding's tokens and
 * reports its drafts in the final record's timings; --draft none reports
 * none.
 */
START_TEST(cmd_draft)
{
	static const char *const drafts[][2] = { { "ngram", "ngram" },
	    { "mtp", "mtp" }, { "mtp+ngram", "mtp+ngram" }, { "3", "ngram" },
	    { "auto", "mtp+ngram" }, { NULL, "mtp+ngram" } };
	const char	*gen = t_bin("rs-generate"), *m = t_fixture(F16);
	const char	*in = "{\"tokens\":[1063,321,984,260,1063,321],"
			    "\"max_tokens\":24,\"temperature\":0}";
	char		*plain = NULL, *out = NULL;
	struct rs_json	*a, *b, *t;

	ck_assert_int_eq(run_cmd(&plain, "echo '%s' | %s -m %s --draft none",
	    in, gen, m), 0);
	a = one_record(plain);
	ck_assert(draft_name(a) == NULL);
	for (size_t i = 0; i < sizeof(drafts) / sizeof(drafts[0]); i++) {
		const char *d = drafts[i][0];

		ck_assert_int_eq(run_cmd(&out, "echo '%s' | %s -m %s%s%s", in,
		    gen, m, d != NULL ? " --draft " : "", d != NULL ? d : ""),
		    0);
		b = one_record(out);
		ck_assert_msg(same_ints(rs_json_get(a, "tokens"),
		    rs_json_get(b, "tokens")), "--draft %s changed the "
		    "tokens", d != NULL ? d : "(default)");
		ck_assert_msg(draft_name(b) != NULL && strcmp(draft_name(b),
		    drafts[i][1]) == 0, "--draft %s drafted with %s",
		    d != NULL ? d : "(default)", draft_name(b));
		t = rs_json_get(b, "timings");
		ck_assert(get_int(t, "draft_n") >= get_int(t,
		    "draft_n_accepted"));
		ck_assert(rs_json_get(t, "draft_acceptance") != NULL);
		ck_assert(rs_json_get(t, "draft_ms") != NULL);
		rs_json_free(b);
		free(out);
	}
	rs_json_free(a);
	free(plain);
}
END_TEST

/*
 * On a model without an MTP block the default drafter is the n-gram
 * lookup, and asking for MTP is a clear error, not a crash.
 */
START_TEST(cmd_draft_no_mtp)
{
	const char	*gen = t_bin("rs-generate");
	const char	*in = "{\"tokens\":[5,6,7,8,5,6,7],"
			    "\"max_tokens\":12,\"temperature\":0}";
	struct rs_synth_cfg cfg;
	struct rs_err	 err = { 0 };
	struct rs_json	*b;
	char		 path[1100], *out = NULL;

	snprintf(path, sizeof(path), "%s/no-mtp.gguf", t_tmpdir());
	ck_assert_int_eq(rs_synth_preset("tiny", &cfg, &err), RS_OK);
	cfg.n_nextn = 0;
	ck_assert_msg(rs_synth_write(&cfg, path, &err) == RS_OK, "%s",
	    err.msg);
	ck_assert_int_eq(run_cmd(&out, "echo '%s' | %s -m %s", in, gen, path),
	    0);
	b = one_record(out);
	ck_assert_str_eq(draft_name(b), "ngram");
	rs_json_free(b);
	free(out);
	ck_assert_int_eq(run_cmd(&out, "echo '%s' | %s -m %s --draft mtp "
	    "2>&1", in, gen, path), 2);
	ck_assert(strstr(out, "no MTP block") != NULL);
	free(out);
}
END_TEST

/*
 * The model file truncated under a running rs-generate, between two
 * requests (a FIFO holds its input open; the first answer shows the model
 * was read): the next request's reads of the mapping fault, and the
 * command says so and exits 2 (it died of a bare SIGBUS, status 135).
 */
START_TEST(cmd_model_shrinks)
{
	const char	*req = "{\"tokens\":[5,6],\"max_tokens\":2}";
	char		*out = NULL;

	ck_assert_int_eq(run_cmd(&out, "d=%s && cp %s $d/shrink.gguf && "
	    "rm -f $d/shrink.in && mkfifo $d/shrink.in && "
	    "{ %s -m $d/shrink.gguf --backend cpu <$d/shrink.in "
	    ">$d/shrink.out 2>$d/shrink.err & } && exec 3>$d/shrink.in && "
	    "echo '%s' >&3 && i=0 && while ! grep -q finish_reason "
	    "$d/shrink.out && [ $i -lt 1200 ]; do sleep 0.05; "
	    "i=$((i + 1)); done; truncate -s 4096 $d/shrink.gguf && "
	    "echo '%s' >&3; exec 3>&-; wait $!; echo \"rc $?\"; "
	    "cat $d/shrink.err", t_tmpdir(), t_fixture("tiny/model-q4_k_m.gguf"),
	    t_bin("rs-generate"), req, req), 0);
	ck_assert_msg(strstr(out, "rc 2\n") != NULL && strstr(out,
	    "rs-generate: the model file shrank while in use") != NULL, "%s",
	    out);
	free(out);
}
END_TEST

/* On a terminal, a long prompt's prefill shows progress on stderr. */
START_TEST(cmd_progress)
{
	char	req[512], c[2048], *out, *body;
	size_t	len = 0;

	body = malloc(1100 * 6 + 64);
	ck_assert_ptr_nonnull(body);
	len += (size_t)sprintf(body, "{\"max_tokens\":1,\"tokens\":[");
	for (int i = 0; i < 1100; i++)
		len += (size_t)sprintf(body + len, "%s%d", i ? "," : "",
		    i % 2000 + 1);
	len += (size_t)sprintf(body + len, "]}\n");
	snprintf(req, sizeof(req), "%s/req.jsonl", t_tmpdir());
	t_write_file(req, body, len);
	free(body);
	snprintf(c, sizeof(c), "%s -m %s -t 1 < %s >/dev/null",
	    t_bin("rs-generate"), t_fixture("tiny/model-f16.gguf"), req);
	ck_assert_int_eq(t_run_tty(c, &out), 0);
	ck_assert_msg(strstr(out, "rs-generate: loading the model ...") !=
	    NULL && strstr(out, "rs-generate: prompt: 100%") != NULL, "%s",
	    out);
	free(out);
}
END_TEST

Suite *
generate_suite(void)
{
	Suite	*s = suite_create("generate");
	TCase	*tc = tcase_create("cmd");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, cmd_stream);
	tcase_add_test(tc, cmd_logprobs);
	tcase_add_test(tc, cmd_greedy_and_pipes);
	tcase_add_test(tc, cmd_bad_lines);
	tcase_add_test(tc, cmd_huge_inputs);
	tcase_add_test(tc, cmd_raw);
	tcase_add_test(tc, cmd_nfc);
	tcase_add_test(tc, cmd_usage);
	tcase_add_test(tc, cmd_draft);
	tcase_add_test(tc, cmd_draft_no_mtp);
	tcase_add_test(tc, cmd_progress);
	tcase_add_test(tc, cmd_model_shrinks);
	suite_add_tcase(s, tc);
	return (s);
}
