/*
 * check_json.c - rs_json_parse's reading of unpaired UTF-16 surrogate
 * escapes (serving.md §1.7: accepted, each replaced by U+FFFD, EF BF BD in
 * UTF-8), and its messages for text that is not JSON.  The expected bytes
 * are the UTF-8 of the code points the escapes name (RFC 8259 §7,
 * Unicode's UTF-16 and UTF-8 definitions).
 */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_json.h"

#define FFFD	"\xef\xbf\xbd"

struct sur {
	const char	*json;		/* a JSON string literal */
	const char	*want;		/* its value's bytes */
	size_t		 n_lone;	/* unpaired escapes in it */
};

static const struct sur surs[] = {
	{ "\"a\\ud83d\"", "a" FFFD, 1 },		/* a cut pair */
	{ "\"\\uD83D\"", FFFD, 1 },			/* upper-case hex */
	{ "\"\\udc00x\"", FFFD "x", 1 },		/* a low half alone */
	{ "\"\\ud800\\ud800\"", FFFD FFFD, 2 },		/* two highs */
	{ "\"\\ud83d\\u0041\"", FFFD "A", 1 },		/* high, then no low */
	{ "\"\\ude00\\ud83d\"", FFFD FFFD, 2 },		/* low before high */
	{ "\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80", 0 },	/* U+1F600 */
	{ "\"\\ud83d\\ude00\\ud83d\"", "\xf0\x9f\x98\x80" FFFD, 1 },
	{ "\"\\\\ud83d\"", "\\ud83d", 0 },		/* an escaped '\' */
	{ "\"\\\"\\ud83d\"", "\"" FFFD, 1 },		/* after an escaped '"' */
	{ "\"\\ud7ff\\ue000\"", "\xed\x9f\xbf\xee\x80\x80", 0 },
};

START_TEST(lone_surrogates)
{
	const struct sur *c = &surs[_i];
	struct rs_json	*j = NULL;
	struct rs_err	 err = { 0 };
	const char	*s;
	size_t		 n;

	ck_assert_uint_eq(rs_json_lone_surrogates(c->json, strlen(c->json)),
	    c->n_lone);
	ck_assert_msg(rs_json_parse(c->json, strlen(c->json), &j, &err) ==
	    RS_OK, "%s: %s", c->json, err.msg);
	ck_assert_int_eq(rs_json_as_str(j, &s, &n), 0);
	ck_assert_uint_eq(n, strlen(c->want));
	ck_assert_mem_eq(s, c->want, n);
	rs_json_free(j);
}
END_TEST

/* In keys and nested values too; the text itself is not changed. */
START_TEST(lone_surrogates_nested)
{
	static const char text[] = "{\"k\\ud83d\": [1, {\"v\": \"\\udfff\"}]}";
	char		 copy[sizeof(text)];
	struct rs_json	*j = NULL, *v;
	struct rs_err	 err = { 0 };
	const char	*key, *s;
	size_t		 n;

	memcpy(copy, text, sizeof(text));
	ck_assert_uint_eq(rs_json_lone_surrogates(copy, strlen(copy)), 2);
	ck_assert(rs_json_parse(copy, strlen(copy), &j, &err) == RS_OK);
	ck_assert_str_eq(copy, text);
	ck_assert_int_eq(rs_json_obj_at(j, 0, &key, &v), 0);
	ck_assert_str_eq(key, "k" FFFD);
	v = rs_json_get(rs_json_arr_at(v, 1), "v");
	ck_assert_int_eq(rs_json_as_str(v, &s, &n), 0);
	ck_assert_str_eq(s, FFFD);
	rs_json_free(j);
}
END_TEST

/*
 * What is not JSON stays an error: an escape outside a string, a cut
 * escape, a surrogate escape in an unterminated string; the error's
 * position is the one of the text as sent.
 */
START_TEST(lone_surrogates_bad)
{
	static const char *bad[] = {
		"\\ud83d", "\"\\ud83", "\"\\ud83d", "[\"\\ud83d\", ]",
		"\"\\ud83d\\u12\"",
	};
	struct rs_json	*j = NULL;
	struct rs_err	 err = { 0 };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(rs_json_parse(bad[i], strlen(bad[i]), &j, &err)
		    == RS_ERR_FORMAT, "%s: accepted", bad[i]);
	/* the ']' at column 12 is where the array breaks off */
	ck_assert(rs_json_parse("[\"\\ud83d\", ]", 12, &j, &err) ==
	    RS_ERR_FORMAT);
	ck_assert_msg(strstr(err.msg, "column 12") != NULL, "%s", err.msg);
}
END_TEST

/*
 * A NUL byte outside a string (after the value, before it, where a value
 * should be) is named as such: jansson's own words for it were "end of
 * file expected near end of file".  Inside a string jansson names it
 * itself.
 */
START_TEST(nul_byte)
{
	static const struct {
		const char	*t;	/* the text, N bytes */
		size_t		 n;
		const char	*col;	/* where the message must point */
	} c[] = {
		{ "{\"a\":1}\0x", 9, "column 8" },
		{ "\0{}", 3, "column 1" },
		{ "{\"a\":\0 1}", 9, "column 6" },
		/* a text that was mended (a lone surrogate) first */
		{ "[\"\\ud83d\"]\0", 11, "column 11" },
	};
	struct rs_json	*j = NULL;
	struct rs_err	 err = { 0 };

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		ck_assert(rs_json_parse(c[i].t, c[i].n, &j, &err) ==
		    RS_ERR_FORMAT);
		ck_assert_msg(strstr(err.msg, "NUL byte") != NULL &&
		    strstr(err.msg, c[i].col) != NULL, "%zu: %s", i, err.msg);
	}
	/* (jansson's own words there: "control character 0x0") */
	ck_assert(rs_json_parse("{\"a\":\"h\0i\"}", 11, &j, &err) ==
	    RS_ERR_FORMAT);
}
END_TEST

/*
 * A byte order mark before the text is named as such (jansson said
 * "invalid token near '...'" with the invisible mark quoted raw).
 */
START_TEST(byte_order_mark)
{
	struct rs_json	*j = NULL;
	struct rs_err	 err = { 0 };

	ck_assert(rs_json_parse("\xef\xbb\xbf{}", 5, &j, &err) ==
	    RS_ERR_FORMAT);
	ck_assert_msg(strstr(err.msg, "line 1 column 1: a byte order mark") !=
	    NULL, "%s", err.msg);
	ck_assert(rs_json_parse("{}", 2, &j, &err) == RS_OK);
	rs_json_free(j);
}
END_TEST

/*
 * What is printed escapes DEL and the C1 controls (redshift(7): a CSI,
 * U+009B, must not reach a terminal raw) in jansson's form for the C0
 * ones (upper-case hex) and keeps every other character as it is, U+00A0
 * (C2 A0, the first code point past C1) and U+0100 (C4 80) included; the
 * text parses back to the same value.
 */
START_TEST(c1_escaped)
{
	static const char val[] = "a\x7f" "b\xc2\x80\xc2\x9b" "c\xc2\x9f"
	    "\xc2\xa0\xc4\x80\x1b" "d";
	static const char want[] = "\"a\\u007Fb\\u0080\\u009Bc\\u009F"
	    "\xc2\xa0\xc4\x80\\u001Bd\"";
	struct rs_json	*j = rs_json_str(val), *back = NULL;
	struct rs_err	 err = { 0 };
	const char	*s;
	size_t		 n;
	char		*out;

	ck_assert(j != NULL && (out = rs_json_dumps(j)) != NULL);
	ck_assert_msg(strcmp(out, want) == 0, "printed %s", out);
	ck_assert(rs_json_parse(out, strlen(out), &back, &err) == RS_OK);
	ck_assert(rs_json_as_str(back, &s, &n) == 0 && n == strlen(val) &&
	    memcmp(s, val, n) == 0);
	free(out);
	rs_json_free(back);
	rs_json_free(j);
}
END_TEST

Suite *
json_suite(void)
{
	Suite	*s = suite_create("json");
	TCase	*tc = tcase_create("surrogates");

	tcase_add_loop_test(tc, lone_surrogates, 0,
	    sizeof(surs) / sizeof(surs[0]));
	tcase_add_test(tc, lone_surrogates_nested);
	tcase_add_test(tc, lone_surrogates_bad);
	suite_add_tcase(s, tc);
	tc = tcase_create("errors");
	tcase_add_test(tc, nul_byte);
	tcase_add_test(tc, byte_order_mark);
	suite_add_tcase(s, tc);
	tc = tcase_create("print");
	tcase_add_test(tc, c1_escaped);
	suite_add_tcase(s, tc);
	return (s);
}
