/*
 * check_tokenize.c - rs-tokenize end to end: ids against the fixtures'
 * reference ids, JSON lines in order with error objects in place, decode
 * round trips, usage errors and exit statuses (style.md §2.8, §2.9).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_json.h"
#include "rs_tok.h"
#include "t_tok.h"
#include "t_util.h"

/* The fixture case with text TEXT. */
static struct rs_json *
find_case(struct rs_json *j, const char *text)
{
	struct rs_json	*cases = rs_json_get(j, "cases");
	const char	*s;
	size_t		 n;

	for (size_t i = 0; i < rs_json_arr_len(cases); i++) {
		s = t_json_str(rs_json_arr_at(cases, i), "text", &n);
		if (n == strlen(text) && memcmp(s, text, n) == 0)
			return (rs_json_arr_at(cases, i));
	}
	ck_abort_msg("fixture case '%s' missing", text);
	return (NULL);
}

/* IDS as "1 2 3". */
static char *
ids_line(const struct rs_tok_ids *ids)
{
	char	*s = malloc(ids->n * 12 + 2);
	size_t	 o = 0;

	ck_assert(s != NULL);
	for (size_t i = 0; i < ids->n; i++)
		o += (size_t)sprintf(s + o, i > 0 ? " %d" : "%d",
		    (int)ids->v[i]);
	s[o] = '\0';
	return (s);
}

static int
run_cmd(char **out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
run_cmd(char **out, const char *fmt, ...)
{
	char	cmd[4096];
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return (t_run(cmd, out));
}

START_TEST(cmd_plain)
{
	struct rs_json	*j = t_json_load(T_CASES), *c;
	struct rs_tok_ids want;
	const char	*bin = t_bin("rs-tokenize"), *m = t_fixture(T_TINY);
	const char	*dir = t_tmpdir(), *text;
	char		 in[600], ids_f[600], *out = NULL, *line, *exp;
	size_t		 n, lines = 0;

	rs_tok_ids_init(&want);
	c = find_case(j, "Hello, world!");
	t_json_ids(c, "tiny", &want);
	line = ids_line(&want);
	ck_assert_int_eq(run_cmd(&out, "%s -m %s --text 'Hello, world!'",
	    bin, m), 0);
	ck_assert_uint_eq(strlen(out), strlen(line) + 1);
	ck_assert(strncmp(out, line, strlen(line)) == 0);
	free(out);
	free(line);
	/* a chat prompt from a file, and back with --decode */
	c = find_case(j, "<|im_start|>user\nhi there<|im_end|>\n"
	    "<|im_start|>assistant\n<think>\n\n</think>\n\nHello");
	text = t_json_str(c, "text", &n);
	t_json_ids(c, "tiny", &want);
	snprintf(in, sizeof(in), "%s/in.txt", dir);
	snprintf(ids_f, sizeof(ids_f), "%s/ids.txt", dir);
	t_write_file(in, text, n);
	ck_assert_int_eq(run_cmd(&out, "%s -m %s %s", bin, m, in), 0);
	exp = ids_line(&want);
	ck_assert(strncmp(out, exp, strlen(exp)) == 0);
	t_write_file(ids_f, out, strlen(out));
	free(out);
	ck_assert_int_eq(run_cmd(&out, "%s -m %s -d < %s", bin, m, ids_f), 0);
	ck_assert_str_eq(out, text);
	free(out);
	/* --pieces: one line per token */
	ck_assert_int_eq(run_cmd(&out, "%s -m %s -p %s", bin, m, in), 0);
	for (char *p = out; *p != '\0'; p++)
		lines += *p == '\n';
	ck_assert_uint_eq(lines, want.n);
	ck_assert(strncmp(out, "2049\t<|im_start|>\n", 18) == 0);
	free(out);
	/* --no-special: <|im_end|> is text; decode drops CONTROL ids */
	ck_assert_int_eq(run_cmd(&out, "%s -m %s --no-special "
	    "--text '<|im_end|>'", bin, m), 0);
	ck_assert(strstr(out, "2050") == NULL && strchr(out, ' ') != NULL);
	free(out);
	ck_assert_int_eq(run_cmd(&out, "%s -m %s --no-special -d --text "
	    "'2050 39'", bin, m), 0);
	ck_assert_str_eq(out, "H");
	free(out);
	/* a NUL inside a word is not an id's end: "1 2\\0003 4" was 1 2 4 */
	ck_assert_int_eq(run_cmd(&out, "printf '1 2\\0003 4' | %s -m %s -d "
	    "2>&1", bin, m), 1);
	ck_assert_msg(strstr(out, "NUL byte") != NULL, "%s", out);
	free(out);
	free(exp);
	rs_tok_ids_cleanup(&want);
	rs_json_free(j);
}
END_TEST

START_TEST(cmd_jsonl)
{
	const char	*bin = t_bin("rs-tokenize"), *m = t_fixture(T_TINY);
	const char	*dir = t_tmpdir();
	const char	*req = "{\"id\":\"a\",\"text\":\"Hello, world!\"}\n"
	    "not json\n\n{\"id\":2,\"text\":5}\n";
	const char	*dreq = "{\"ids\":[39,265,331]}\n"
	    "{\"id\":[1],\"tokens\":[2049]}\n{\"ids\":[99999]}\n";
	const char	*l1, *l2, *l3;
	char		 in[600], *out = NULL, *p;

	snprintf(in, sizeof(in), "%s/req.jsonl", dir);
	t_write_file(in, req, strlen(req));
	ck_assert_int_eq(run_cmd(&out, "%s -m %s -j -q %s", bin, m, in), 1);
	/* one answer per non-blank line, in order (ids from the fixture) */
	l1 = "{\"id\":\"a\",\"ids\":[39,265,331,11,398,264,75,67,0],\"n\":9}\n";
	/* the input's line, not the parser's (it saw the line alone) */
	l2 = "{\"error\":{\"type\":\"invalid_input\",\"message\":"
	    "\"line 2 column 3: ";
	l3 = "{\"id\":2,\"error\":{\"type\":\"invalid_input\",\"message\":"
	    "\"text: missing or not a string\"}}\n";
	ck_assert(strncmp(out, l1, strlen(l1)) == 0);
	ck_assert(strncmp(out + strlen(l1), l2, strlen(l2)) == 0);
	ck_assert((p = strchr(out + strlen(l1), '\n')) != NULL);
	ck_assert_str_eq(p + 1, l3);
	free(out);
	t_write_file(in, dreq, strlen(dreq));
	ck_assert_int_eq(run_cmd(&out, "%s -m %s -j -d -q < %s", bin, m, in),
	    1);
	ck_assert_str_eq(out, "{\"text\":\"Hello\"}\n"
	    "{\"id\":[1],\"text\":\"<|im_start|>\"}\n"
	    "{\"error\":{\"type\":\"invalid_input\",\"message\":"
	    "\"ids[0] = 99999: outside the vocabulary [0, 2176)\"}}\n");
	free(out);
	/* a line over the 256 MiB limit: an error in its place, then on */
	ck_assert_int_eq(run_cmd(&out, "(head -c 268435457 /dev/zero; echo; "
	    "echo '{\"text\":\"Hello\"}') | %s -m %s -j -q", bin, m), 1);
	ck_assert_str_eq(out, "{\"error\":{\"type\":\"invalid_input\","
	    "\"message\":\"line 1: the line is longer than 268435456 "
	    "bytes\"}}\n"
	    "{\"ids\":[39,265,331],\"n\":3}\n");
	free(out);
}
END_TEST

/*
 * Write one JSON line per case of ARR to PATH: {"text": case.text}, or
 * with DECODE {"ids": case.ids} (the fixture's decode lists).
 */
static void
write_requests(const struct rs_json *arr, int decode, const char *path)
{
	FILE	*fp = fopen(path, "w");

	ck_assert_msg(fp != NULL, "%s", path);
	for (size_t i = 0; i < rs_json_arr_len(arr); i++) {
		struct rs_json *c = rs_json_arr_at(arr, i), *r = rs_json_obj();
		const char *key = decode ? "ids" : "text";

		rs_json_set(r, key, rs_json_ref(rs_json_get(c, key)));
		ck_assert(rs_json_write_line(r, fp) == 0);
		rs_json_free(r);
	}
	ck_assert(fclose(fp) == 0);
}

/*
 * Check rs-tokenize's answer OUT, one line per case of ARR, against each
 * case's KEY: an id array, or with DECODE a text.
 */
static void
check_answers(char *out, const struct rs_json *arr, const char *key,
    int decode)
{
	struct rs_tok_ids got, want;
	struct rs_json	*res;
	const char	*a, *b;
	size_t		 an, bn, i = 0;

	rs_tok_ids_init(&got);
	rs_tok_ids_init(&want);
	for (char *l = out, *e; (e = strchr(l, '\n')) != NULL; l = e + 1, i++) {
		struct rs_json *c = rs_json_arr_at(arr, i);

		ck_assert_msg(c != NULL, "%s: more answers than cases", key);
		ck_assert(rs_json_parse(l, (size_t)(e - l), &res, NULL) ==
		    RS_OK);
		if (decode) {
			a = t_json_str(res, "text", &an);
			b = t_json_str(c, key, &bn);
			ck_assert_msg(an == bn && memcmp(a, b, an) == 0,
			    "%s %zu: text differs", key, i);
		} else {
			t_json_ids(res, "ids", &got);
			t_json_ids(c, key, &want);
			t_tok_assert_ids(&got, &want, key, i);
		}
		rs_json_free(res);
	}
	ck_assert_uint_eq(i, rs_json_arr_len(arr));
	rs_tok_ids_cleanup(&got);
	rs_tok_ids_cleanup(&want);
}

/*
 * The real Qwen3.5/3.8 vocabulary as a user runs it, default options:
 * every case of qwen35-cases.json in its three modes, and its decode lists.
 */
START_TEST(cmd_real)
{
	static const struct {
		const char	*opt, *key;
	} modes[] = {
		{ "", "qwen35" },
		{ "--no-special", "qwen35_no_special" },
		{ "--no-added", "qwen35_no_added" },
	};
	const char	*bin = t_bin("rs-tokenize"), *m = t_fixture(T_QWEN35);
	struct rs_json	*j = t_json_load(T_CASES35);
	struct rs_json	*cases = rs_json_get(j, "cases");
	struct rs_json	*dec = rs_json_get(j, "decode");
	char		 in[600], *out = NULL;

	snprintf(in, sizeof(in), "%s/cases.jsonl", t_tmpdir());
	write_requests(cases, 0, in);
	for (size_t k = 0; k < 3; k++) {
		ck_assert_int_eq(run_cmd(&out, "%s -m %s --jsonl %s %s", bin,
		    m, modes[k].opt, in), 0);
		check_answers(out, cases, modes[k].key, 0);
		free(out);
	}
	write_requests(dec, 1, in);
	ck_assert_int_eq(run_cmd(&out, "%s -m %s --jsonl --decode %s", bin,
	    m, in), 0);
	check_answers(out, dec, "text", 1);
	free(out);
	ck_assert_int_eq(run_cmd(&out, "%s -m %s --jsonl --decode "
	    "--no-special %s", bin, m, in), 0);
	check_answers(out, dec, "text_no_control", 1);
	free(out);
	printf("tokenize: rs-tokenize -m %s gives the reference for %zu "
	    "cases x 3 modes and %zu decode lists\n", T_QWEN35,
	    rs_json_arr_len(cases), rs_json_arr_len(dec));
	rs_json_free(j);
}
END_TEST

START_TEST(cmd_usage)
{
	const char	*bin = t_bin("rs-tokenize"), *m = t_fixture(T_TINY);
	char		*out = NULL;

	ck_assert_int_eq(run_cmd(&out, "%s --help", bin), 0);
	ck_assert(strstr(out, "--no-special") != NULL &&
	    strstr(out, "--jsonl") != NULL);
	free(out);
	ck_assert_int_eq(run_cmd(NULL, "%s --text x 2>/dev/null", bin), 2);
	ck_assert_int_eq(run_cmd(NULL, "%s -m /nonexistent.gguf --text x "
	    "2>/dev/null", bin), 2);
	ck_assert_int_eq(run_cmd(NULL, "%s -m %s --text x --jsonl "
	    "2>/dev/null", bin, m), 2);
	ck_assert_int_eq(run_cmd(NULL, "%s -m %s -d -p 2>/dev/null", bin, m),
	    2);
	ck_assert_int_eq(run_cmd(NULL, "%s -m %s --nfc --no-nfc --text x "
	    "2>/dev/null", bin, m), 2);
	ck_assert_int_eq(run_cmd(NULL, "%s -m %s --bogus 2>/dev/null", bin,
	    m), 2);
	/* a full disk: exit 2, said once */
	ck_assert_int_eq(run_cmd(&out, "%s -m %s --text x 2>&1 >/dev/full", bin,
	    m), 2);
	ck_assert_msg(strstr(out, "write error on stdout") != NULL &&
	    strstr(strstr(out, "write error") + 1, "write error") == NULL,
	    "%s", out);
	free(out);
	/* the same switch twice is no contradiction */
	ck_assert_int_eq(run_cmd(NULL, "%s -m %s --nfc --nfc --text x "
	    ">/dev/null 2>&1", bin, m), 0);
	/* a missing value: getopt's word for it, not "unknown option" */
	ck_assert_int_eq(run_cmd(&out, "%s -m 2>&1", bin), 2);
	ck_assert_msg(strstr(out, "requires an argument") != NULL &&
	    strstr(out, "unknown option") == NULL, "%s", out);
	free(out);
	/* a word that is not an id fails the record */
	ck_assert_int_eq(run_cmd(NULL, "%s -m %s -d --text '12 abc' "
	    "2>/dev/null", bin, m), 1);
	/* invalid UTF-8 is tokenized with U+FFFD and a warning, exit 0 */
	ck_assert_int_eq(run_cmd(&out, "printf 'a\\377b' | %s -m %s "
	    "2>/dev/null", bin, m), 0);
	free(out);
	/* a model without a tokenizer of ours */
	ck_assert_int_eq(run_cmd(NULL, "%s -m %s --text x 2>/dev/null", bin,
	    t_fixture("tiny/hf-config.json")), 2);
}
END_TEST

Suite *
tokenize_suite(void)
{
	Suite	*s = suite_create("tokenize");
	TCase	*tc = tcase_create("cmd");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, cmd_plain);
	tcase_add_test(tc, cmd_jsonl);
	tcase_add_test(tc, cmd_real);
	tcase_add_test(tc, cmd_usage);
	suite_add_tcase(s, tc);
	return (s);
}
