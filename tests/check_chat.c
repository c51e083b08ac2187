/*
 * check_chat.c - the chat-template renderer against the golden renderings
 * of real Jinja2 (the fixtures/chat case files), and template
 * identification.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_chat.h"
#include "rs_gguf.h"
#include "rs_json.h"
#include "t_chat.h"
#include "t_util.h"

#define N_QWEN38_CASES	35
#define N_QWEN35_CASES	10

static struct rs_json *
load_json(const char *rel)
{
	struct rs_json	*j = NULL;
	struct rs_err	 err = { 0 };
	size_t		 n;
	char		*text = t_read_file(t_fixture(rel), &n);

	ck_assert_msg(rs_json_parse(text, n, &j, &err) == RS_OK, "%s: %s", rel,
	    err.msg);
	free(text);
	return (j);
}

static struct rs_json *
parse(const char *text)
{
	struct rs_json	*j = NULL;
	struct rs_err	 err = { 0 };

	ck_assert_msg(rs_json_parse(text, strlen(text), &j, &err) == RS_OK,
	    "%s", err.msg);
	return (j);
}

static const char *
str_of(const struct rs_json *j)
{
	const char	*s;
	size_t		 n;

	ck_assert(j != NULL && rs_json_as_str(j, &s, &n) == 0);
	return (s);
}

/* The segments are non-empty runs that alternate and tile the text. */
static void
check_segments(const struct rs_chat_prompt *p)
{
	size_t	off = 0;

	for (size_t i = 0; i < p->n_segs; i++) {
		ck_assert_uint_eq(p->segs[i].off, off);
		ck_assert_uint_gt(p->segs[i].len, 0);
		if (i > 0)
			ck_assert_int_ne(p->segs[i].client,
			    p->segs[i - 1].client);
		off += p->segs[i].len;
	}
	ck_assert_uint_eq(off, p->len);
}

/*
 * Render case I of fixture REL with VARIANT; KW and EXPECT name the keys the
 * file uses for the template arguments and the expected text.
 */
static void
run_case(const char *rel, enum rs_chat_variant variant, int i,
    const char *kw_key, const char *expect_key)
{
	struct rs_json		*root = load_json(rel);
	struct rs_json		*cases = rs_json_get(root, "cases");
	struct rs_json		*c = rs_json_arr_at(cases, (size_t)i);
	const struct rs_json	*want;
	struct rs_chat_opts	 o;
	struct rs_chat_prompt	 p;
	struct rs_err		 err = { 0 };
	enum rs_status		 st;
	const char		*name, *s;
	size_t			 n;

	ck_assert(c != NULL);
	name = rs_json_get(c, "name") != NULL ?
	    str_of(rs_json_get(c, "name")) : "(unnamed)";
	t_chat_case_opts(c, variant, kw_key, &o);
	st = rs_chat_render(&o, rs_json_get(c, "messages"), &p, &err);
	if ((want = rs_json_get(c, expect_key)) != NULL) {
		ck_assert_msg(st == RS_OK, "case %d %s: %s", i, name, err.msg);
		ck_assert(rs_json_as_str(want, &s, &n) == 0);
		ck_assert_msg(p.len == n && memcmp(p.text, s, n) == 0,
		    "case %d %s:\n got: %s\nwant: %s", i, name, p.text, s);
		check_segments(&p);
	} else {
		want = rs_json_get(c, "expected_error");
		ck_assert_msg(st == RS_ERR_INVALID_ARG,
		    "case %d %s: rendered instead of failing", i, name);
		ck_assert_str_eq(err.msg, str_of(want));
		ck_assert(p.text == NULL && p.n_segs == 0);
	}
	rs_chat_prompt_cleanup(&p);
	rs_json_free(root);
}

START_TEST(golden_qwen38)
{
	run_case("chat/qwen38-template-cases.json", RS_CHAT_QWEN38, _i,
	    "template_kwargs", "expected");
}
END_TEST

START_TEST(golden_qwen35)
{
	run_case("chat/qwen35-template-cases.json", RS_CHAT_QWEN35, _i,
	    "kwargs", "rendered");
}
END_TEST

START_TEST(golden_counts)
{
	/* the loops above must cover every case of both files */
	struct rs_json	*a = load_json("chat/qwen38-template-cases.json");
	struct rs_json	*b = load_json("chat/qwen35-template-cases.json");

	ck_assert_uint_eq(rs_json_arr_len(rs_json_get(a, "cases")),
	    N_QWEN38_CASES);
	ck_assert_uint_eq(rs_json_arr_len(rs_json_get(b, "cases")),
	    N_QWEN35_CASES);
	rs_json_free(a);
	rs_json_free(b);
}
END_TEST

/* Render MSGS (JSON text) with O and compare with WANT (text or error). */
static void
expect_render(const struct rs_chat_opts *o, const char *msgs,
    const char *want, const char *want_err)
{
	struct rs_json		*m = parse(msgs);
	struct rs_chat_prompt	 p;
	struct rs_err		 err = { 0 };
	enum rs_status		 st = rs_chat_render(o, m, &p, &err);

	if (want != NULL) {
		ck_assert_msg(st == RS_OK, "%s", err.msg);
		ck_assert_str_eq(p.text, want);
		check_segments(&p);
	} else {
		ck_assert_int_eq(st, RS_ERR_INVALID_ARG);
		ck_assert_str_eq(err.msg, want_err);
	}
	rs_chat_prompt_cleanup(&p);
	rs_json_free(m);
}

/*
 * Cases beyond the fixture files.  Every expected text or message here was
 * produced by Jinja2 3.1.6 in the configuration of serving.md §2.7 (the
 * same set-up as the fixtures) from the named template.
 */
START_TEST(jinja_extra)
{
	struct rs_chat_opts	o;

	/* qwen35: <think> split out of content; Python str() of values */
	rs_chat_opts_init(&o, RS_CHAT_QWEN35);
	o.add_generation_prompt = 0;
	expect_render(&o, "[{\"role\":\"user\",\"content\":\"Q\"},"
	    "{\"role\":\"assistant\",\"content\":\"<think>\\nR1\\n</think>\\n\\n"
	    "A\",\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":"
	    "{\"b\":true,\"n\":null,\"x\":1e-05,\"i\":7,\"l\":[1,\"a\"]}}}]}]",
	    "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<think>\nR1"
	    "\n</think>\n\nA\n\n<tool_call>\n<function=f>\n<parameter=b>\nTrue"
	    "\n</parameter>\n<parameter=n>\nNone\n</parameter>\n<parameter=x>\n"
	    "1e-05\n</parameter>\n<parameter=i>\n7\n</parameter>\n"
	    "<parameter=l>\n[1, \"a\"]\n</parameter>\n</function>\n"
	    "</tool_call><|im_end|>\n", NULL);
	/* qwen36: preserve_thinking keeps history reasoning; tojson values */
	rs_chat_opts_init(&o, RS_CHAT_QWEN36);
	o.preserve_thinking = 1;
	expect_render(&o, "[{\"role\":\"user\",\"content\":\"Q\"},"
	    "{\"role\":\"assistant\",\"content\":\"A\",\"reasoning_content\":"
	    "\" R \",\"tool_calls\":[{\"function\":{\"name\":\"f\","
	    "\"arguments\":{\"b\":false,\"n\":null}}}]},"
	    "{\"role\":\"tool\",\"content\":\"ok\"},"
	    "{\"role\":\"user\",\"content\":\"Q2\"}]",
	    "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<think>\nR\n"
	    "</think>\n\nA\n\n<tool_call>\n<function=f>\n<parameter=b>\nfalse\n"
	    "</parameter>\n<parameter=n>\nnull\n</parameter>\n</function>\n"
	    "</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\nok\n"
	    "</tool_response><|im_end|>\n<|im_start|>user\nQ2<|im_end|>\n"
	    "<|im_start|>assistant\n<think>\n", NULL);
	/* qwen35: an empty system message still opens a system turn */
	rs_chat_opts_init(&o, RS_CHAT_QWEN35);
	expect_render(&o, "[{\"role\":\"system\",\"content\":\" \"},"
	    "{\"role\":\"user\",\"content\":[{\"type\":\"image\"},"
	    "{\"text\":\"x\"},{\"video\":1}]}]",
	    "<|im_start|>system\n<|im_end|>\n<|im_start|>user\n"
	    "<|vision_start|><|image_pad|><|vision_end|>x<|vision_start|>"
	    "<|video_pad|><|vision_end|><|im_end|>\n<|im_start|>assistant\n"
	    "<think>\n", NULL);
	/* qwen38: vision ids count across messages */
	rs_chat_opts_init(&o, RS_CHAT_QWEN38);
	o.add_vision_id = 1;
	o.reasoning_effort = "medium";
	expect_render(&o, "[{\"role\":\"user\",\"content\":[{\"image\":\"a\"}]}"
	    ",{\"role\":\"assistant\",\"content\":\"k\"},{\"role\":\"user\","
	    "\"content\":[{\"type\":\"image\"},{\"type\":\"video\"}]}]",
	    "<|im_start|>user\nPicture 1: <|vision_start|><|image_pad|>"
	    "<|vision_end|><|im_end|>\n<|im_start|>assistant\n<think>\n\n"
	    "</think>\n\nk<|im_end|>\n<|im_start|>user\nPicture 2: "
	    "<|vision_start|><|image_pad|><|vision_end|>Video 1: "
	    "<|vision_start|><|video_pad|><|vision_end|><|im_end|>\n"
	    "<|im_start|>assistant\n<think>\n", NULL);
	/* errors raised by Jinja/Python rather than the template */
	rs_chat_opts_init(&o, RS_CHAT_QWEN38);
	expect_render(&o, "[{\"role\":\"user\",\"content\":\"Q\"},"
	    "{\"role\":\"assistant\",\"tool_calls\":[{\"function\":"
	    "{\"arguments\":{}}}]}]", NULL,
	    "'dict object' has no attribute 'name'");
	expect_render(&o, "[{\"role\":\"user\",\"content\":\"Q\"},"
	    "{\"role\":\"assistant\",\"tool_calls\":[{\"function\":"
	    "{\"name\":5}}]}]", NULL,
	    "can only concatenate str (not \"int\") to str");
	expect_render(&o, "[{\"role\":\"user\",\"content\":\"Q\"},"
	    "{\"role\":\"assistant\",\"tool_calls\":[{\"function\":"
	    "{\"name\":\"f\",\"arguments\":\"{}\"}}]}]", NULL,
	    "Can only get item pairs from a mapping.");
	expect_render(&o, "[{\"role\":\"user\",\"content\":[5]}]", NULL,
	    "argument of type 'int' is not iterable");
	expect_render(&o, "[{\"role\":\"user\",\"content\":[{\"type\":"
	    "\"audio\"}]}]", NULL, "Unexpected item type in content.");
	expect_render(&o, "[{\"role\":\"user\",\"content\":{\"a\":1}}]", NULL,
	    "Unexpected content type.");
	expect_render(&o, "[{\"role\":\"system\",\"content\":[{\"type\":"
	    "\"video\"}]},{\"role\":\"user\",\"content\":\"x\"}]", NULL,
	    "System message cannot contain videos.");
	o.enable_thinking = 1;
	o.reasoning_effort = "XHIGH";
	expect_render(&o, "[{\"role\":\"user\",\"content\":\"x\"}]", NULL,
	    "Unexpected reasoning effort XHIGH. Supported types are xhigh "
	    "(default), medium, and low.");
}
END_TEST

START_TEST(segments)
{
	struct rs_chat_opts	 o;
	struct rs_json		*m = parse("[{\"role\":\"user\",\"content\":"
	    "\"x<|im_end|>\"}]");
	struct rs_chat_prompt	 p;
	const char		*u;

	rs_chat_opts_init(&o, RS_CHAT_QWEN38);
	o.enable_thinking = 0;
	ck_assert_int_eq(rs_chat_render(&o, m, &p, NULL), RS_OK);
	/* template | client "x<|im_end|>" | template */
	u = strstr(p.text, "x<|im_end|>");
	ck_assert_uint_eq(p.n_segs, 3);
	ck_assert_int_eq(p.segs[0].client, 0);
	ck_assert_uint_eq(p.segs[1].off, (size_t)(u - p.text));
	ck_assert_uint_eq(p.segs[1].len, strlen("x<|im_end|>"));
	ck_assert_int_eq(p.segs[1].client, 1);
	rs_chat_prompt_cleanup(&p);
	rs_json_free(m);
}
END_TEST

START_TEST(bad_input)
{
	struct rs_chat_opts	 o;
	struct rs_chat_prompt	 p;
	struct rs_err		 err = { 0 };
	struct rs_json		*obj = parse("{\"role\":\"user\"}");
	struct rs_json		*msgs = parse("[{\"role\":\"user\",\"content\":"
	    "[{\"text\":[1]}]}]");

	rs_chat_opts_init(&o, RS_CHAT_QWEN38);
	ck_assert_int_eq(rs_chat_render(&o, obj, &p, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert_ptr_nonnull(strstr(err.msg, "must be an array"));
	ck_assert_int_eq(rs_chat_render(&o, NULL, &p, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert_str_eq(err.msg, "No messages provided.");
	o.tools = obj;
	ck_assert_int_eq(rs_chat_render(&o, msgs, &p, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert_ptr_nonnull(strstr(err.msg, "tools must be an array"));
	o.tools = NULL;
	ck_assert_int_eq(rs_chat_render(&o, msgs, &p, &err),
	    RS_ERR_INVALID_ARG);
	ck_assert_ptr_nonnull(strstr(err.msg, "text is an array"));
	o.variant = RS_CHAT_UNKNOWN;
	ck_assert_int_eq(rs_chat_render(&o, msgs, &p, &err),
	    RS_ERR_UNSUPPORTED);
	ck_assert(p.text == NULL);
	rs_json_free(obj);
	rs_json_free(msgs);
}
END_TEST

/* ---- identification ---- */

static char *
gguf_template(size_t *n)
{
	struct rs_gguf		*g = NULL;
	struct rs_gguf_str	 s;
	char			*t;

	ck_assert_int_eq(rs_gguf_open(&g, t_fixture("tiny/model-q8_0.gguf"),
	    NULL), RS_OK);
	ck_assert_int_eq(rs_gguf_get_str(g, "tokenizer.chat_template", &s,
	    NULL), RS_OK);
	t = malloc(s.len + 2);
	memcpy(t, s.ptr, s.len);
	*n = s.len;
	rs_gguf_close(g);
	return (t);
}

START_TEST(identify)
{
	struct rs_gguf		*g = NULL;
	enum rs_chat_variant	 v = RS_CHAT_UNKNOWN;
	struct rs_err		 err = { 0 };
	size_t			 n, i, k;
	char			*t = gguf_template(&n), *crlf;

	ck_assert_int_eq(rs_gguf_open(&g, t_fixture("tiny/model-f16.gguf"),
	    NULL), RS_OK);
	ck_assert_int_eq(rs_chat_identify_gguf(g, &v, &err), RS_OK);
	ck_assert_int_eq(v, RS_CHAT_QWEN35);
	rs_gguf_close(g);
	/* the text Jinja reads is the same with a trailing newline or CR LF */
	t[n] = '\n';
	v = RS_CHAT_UNKNOWN;
	ck_assert_int_eq(rs_chat_identify(t, n + 1, &v, &err), RS_OK);
	ck_assert_int_eq(v, RS_CHAT_QWEN35);
	crlf = malloc(2 * n);
	for (i = k = 0; i < n; i++) {
		if (t[i] == '\n')
			crlf[k++] = '\r';
		crlf[k++] = t[i];
	}
	v = RS_CHAT_UNKNOWN;
	ck_assert_int_eq(rs_chat_identify(crlf, k, &v, &err), RS_OK);
	ck_assert_int_eq(v, RS_CHAT_QWEN35);
	/* any other change is refused */
	t[100] ^= 1;
	ck_assert_int_eq(rs_chat_identify(t, n, &v, &err), RS_ERR_UNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(err.msg, "not recognised"));
	ck_assert_ptr_nonnull(strstr(err.msg, "7756 bytes"));
	ck_assert_int_eq(rs_chat_identify(t, n - 1, &v, &err),
	    RS_ERR_UNSUPPORTED);
	ck_assert_int_eq(rs_chat_identify("", 0, &v, &err),
	    RS_ERR_UNSUPPORTED);
	ck_assert_str_eq(rs_chat_variant_name(RS_CHAT_QWEN38), "qwen38");
	free(crlf);
	free(t);
}
END_TEST

Suite *
chat_suite(void)
{
	Suite	*s = suite_create("chat");
	TCase	*tc;

	tc = tcase_create("golden");
	tcase_add_loop_test(tc, golden_qwen38, 0, N_QWEN38_CASES);
	tcase_add_loop_test(tc, golden_qwen35, 0, N_QWEN35_CASES);
	tcase_add_test(tc, golden_counts);
	tcase_add_test(tc, jinja_extra);
	tcase_add_test(tc, segments);
	suite_add_tcase(s, tc);
	tc = tcase_create("identify");
	tcase_add_test(tc, identify);
	suite_add_tcase(s, tc);
	tc = tcase_create("bad_input");
	tcase_add_test(tc, bad_input);
	suite_add_tcase(s, tc);
	return (s);
}
