/*
 * check_pyjson.c - JSON text as Python writes it, and Python's white space.
 * Expected strings are what CPython 3 prints (repr, json.dumps with
 * ensure_ascii=False, str.strip).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_buf.h"
#include "rs_json.h"
#include "rs_pyjson.h"
#include "rs_pystr.h"

static struct rs_json *
parse(const char *text)
{
	struct rs_json	*j = NULL;
	struct rs_err	 err = { 0 };

	ck_assert_msg(rs_json_parse(text, strlen(text), &j, &err) == RS_OK,
	    "%s", err.msg);
	return (j);
}

static void
expect_real(double v, const char *want)
{
	struct rs_buf	b;

	rs_buf_init(&b);
	rs_pyjson_real(&b, v);
	ck_assert_str_eq(b.data, want);
	rs_buf_cleanup(&b);
}

START_TEST(pyjson_real)
{
	expect_real(1.5, "1.5");
	expect_real(1.0, "1.0");
	expect_real(-0.0, "-0.0");
	expect_real(1e-05, "1e-05");
	expect_real(0.0001, "0.0001");
	expect_real(1e16, "1e+16");
	expect_real(1e15, "1000000000000000.0");
	expect_real(100000.0, "100000.0");
	expect_real(0.1, "0.1");
	expect_real(1.0 / 3, "0.3333333333333333");
	expect_real(123456789012345678.0, "1.2345678901234568e+17");
	expect_real(5e-324, "5e-324");
	expect_real(1.7976931348623157e308, "1.7976931348623157e+308");
	expect_real(-2.5e-7, "-2.5e-07");
	expect_real(0.30000000000000004, "0.30000000000000004");
}
END_TEST

START_TEST(pyjson_dump)
{
	struct rs_json	*j = parse("{\"z\":1,\"a\":[true,null,2.50,\"\\u00e9\\n"
	    "\\u0001\\\"/\\u2028\"],\"o\":{},\"e\":[]}");
	struct rs_buf	 b;

	rs_buf_init(&b);
	rs_pyjson_dump(&b, j);
	ck_assert_str_eq(b.data, "{\"z\": 1, \"a\": [true, null, 2.5, "
	    "\"\xc3\xa9\\n\\u0001\\\"/\xe2\x80\xa8\"], \"o\": {}, \"e\": []}");
	rs_buf_cleanup(&b);
	rs_json_free(j);
}
END_TEST

static void
expect_lit(const char *in, enum rs_pyjson_mode mode, const char *want)
{
	struct rs_buf	b;
	int		ok;

	rs_buf_init(&b);
	rs_buf_adds(&b, "<");
	ok = rs_pyjson_literal(&b, in, strlen(in), mode);
	if (want == NULL) {
		ck_assert_msg(ok == 0, "'%s' accepted as '%s'", in, b.data);
		ck_assert_str_eq(b.data, "<");
	} else {
		ck_assert_msg(ok == 1, "'%s' refused", in);
		ck_assert_str_eq(b.data + 1, want);
	}
	rs_buf_cleanup(&b);
}

START_TEST(pyjson_literal)
{
	expect_lit(" {\"a\":1,\"b\" : [ 2 ,3.0e5] } ", RS_PYJSON_STRICT,
	    "{\"a\": 1, \"b\": [2, 3.0e5]}");
	expect_lit("123456789012345678901234567890", RS_PYJSON_STRICT,
	    "123456789012345678901234567890");
	expect_lit("\"\\ud83d\\ude00 \\ud83d x\"", RS_PYJSON_STRICT,
	    "\"\xf0\x9f\x98\x80 \xef\xbf\xbd x\"");
	expect_lit("{'a': 1}", RS_PYJSON_STRICT, NULL);
	expect_lit("{'a': 1}", RS_PYJSON_PYTHON, "{\"a\": 1}");
	expect_lit("[True, False, None, 'it\\'s', \"q\",]", RS_PYJSON_PYTHON,
	    "[true, false, null, \"it's\", \"q\"]");
	expect_lit("[1,]", RS_PYJSON_STRICT, NULL);
	expect_lit("[1 2]", RS_PYJSON_STRICT, NULL);
	expect_lit("01", RS_PYJSON_STRICT, NULL);
	expect_lit("1.", RS_PYJSON_STRICT, NULL);
	expect_lit("{\"a\":1} x", RS_PYJSON_STRICT, NULL);
	expect_lit("\"a\tb\"", RS_PYJSON_STRICT, NULL);
	expect_lit("", RS_PYJSON_STRICT, NULL);
	expect_lit("[[[[", RS_PYJSON_PYTHON, NULL);
	/* U+0000 in a value is escaped; in a key the literal is refused
	   (rs_json_parse could not read such a key back) */
	expect_lit("{\"a\": \"x\\u0000y\"}", RS_PYJSON_STRICT,
	    "{\"a\": \"x\\u0000y\"}");
	expect_lit("{\"a\\u0000\": 1}", RS_PYJSON_STRICT, NULL);
	expect_lit("{'a\\x00': 1}", RS_PYJSON_PYTHON, NULL);
	expect_lit("[{'k': {'\\x00': 2}}]", RS_PYJSON_PYTHON, NULL);
	ck_assert(rs_pyjson_is_number("-0", 2, 1));
	ck_assert(!rs_pyjson_is_number("1e5", 3, 1));
	ck_assert(rs_pyjson_is_number("1e5", 3, 0));
	ck_assert(!rs_pyjson_is_number("-", 1, 0));
}
END_TEST

START_TEST(pyjson_deep)
{
	/* 200 nested arrays: beyond the depth limit, refused without a crash */
	char	in[401];

	memset(in, '[', 200);
	memset(in + 200, ']', 200);
	in[400] = '\0';
	expect_lit(in, RS_PYJSON_STRICT, NULL);
}
END_TEST

START_TEST(pystr_space)
{
	/* str.isspace() is true exactly for these (Unicode 15, CPython 3.11) */
	static const uint32_t	space[] = { 0x09, 0x0a, 0x0b, 0x0c, 0x0d,
	    0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2005,
	    0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000 };
	static const uint32_t	not_space[] = { 0x00, 0x08, 0x0e, 0x1b, 0x21,
	    0x84, 0x86, 0x180e, 0x200b, 0x200c, 0x2060, 0xfeff, 0x3001 };
	/* " \u3000x\u00a0 \u001c" strips to "x" */
	const char	*s = " \xe3\x80\x80x\xc2\xa0 \x1c";
	size_t		 n = strlen(s);

	for (size_t i = 0; i < sizeof(space) / sizeof(space[0]); i++)
		ck_assert_msg(rs_pystr_isspace(space[i]), "U+%04X",
		    (unsigned)space[i]);
	for (size_t i = 0; i < sizeof(not_space) / sizeof(not_space[0]); i++)
		ck_assert_msg(!rs_pystr_isspace(not_space[i]), "U+%04X",
		    (unsigned)not_space[i]);
	ck_assert_uint_eq(rs_pystr_lspace(s, n), 4);
	ck_assert_uint_eq(rs_pystr_rspace(s, n), 4);
	ck_assert_uint_eq(rs_pystr_lspace("   ", 3), 3);
	/* a cut sequence or a stray byte is not a space */
	ck_assert_uint_eq(rs_pystr_rspace("a\xe3\x80", 3), 0);
	ck_assert_uint_eq(rs_pystr_lspace("\x80 ", 2), 0);
}
END_TEST

/*
 * Numbers Python's json reads and rs_json cannot hold: RS_JSON_WIDE of
 * their lexeme (no string: as_str refuses them), the rest of the document
 * as rs_json_parse reads it, and the dump writes them as json.dumps does
 * Python's int (the lexeme: 1e400 too, serving.md §6, 46); a string that
 * looks like a number stays a string; text that is not JSON stays an
 * error.
 */
START_TEST(pyjson_parse_wide)
{
	static const char doc[] = "{\"a\": 123456789012345678901234567890, "
	    "\"b\": [1e400, -18446744073709551616], \"c\": \"9e999\", "
	    "\"d\": 5, \"e\": -9223372036854775808}";
	struct rs_json	*j;
	struct rs_err	 err;
	struct rs_buf	 out;
	const char	*s;
	size_t		 n;
	int64_t		 v;

	ck_assert_int_eq(rs_json_parse(doc, strlen(doc), &j, &err),
	    RS_ERR_LIMIT);
	ck_assert_int_eq(rs_pyjson_parse(doc, strlen(doc), &j, &err), RS_OK);
	ck_assert_int_eq(rs_json_kind(rs_json_get(j, "a")), RS_JSON_WIDE);
	ck_assert_int_eq(rs_json_as_str(rs_json_get(j, "a"), &s, &n), -1);
	ck_assert_int_eq(rs_json_as_wide(rs_json_get(j, "a"), &s, &n), 0);
	ck_assert(n == 30 && memcmp(s, "123456789012345678901234567890", n) ==
	    0);
	const struct rs_json *b = rs_json_get(j, "b");
	ck_assert_int_eq(rs_json_as_wide(rs_json_arr_at(b, 0), &s, &n), 0);
	ck_assert(n == 5 && memcmp(s, "1e400", n) == 0);
	ck_assert_int_eq(rs_json_as_wide(rs_json_arr_at(b, 1), &s, &n), 0);
	ck_assert(n == 21 && memcmp(s, "-18446744073709551616", n) == 0);
	ck_assert_int_eq(rs_json_as_str(rs_json_get(j, "c"), &s, &n), 0);
	ck_assert_str_eq(s, "9e999");
	rs_buf_init(&out);
	rs_pyjson_dump(&out, j);
	rs_buf_addc(&out, '\0');
	ck_assert_str_eq(out.data, "{\"a\": 123456789012345678901234567890, "
	    "\"b\": [1e400, -18446744073709551616], \"c\": \"9e999\", "
	    "\"d\": 5, \"e\": -9223372036854775808}");
	rs_buf_cleanup(&out);
	ck_assert_int_eq(rs_json_as_int(rs_json_get(j, "d"), &v), 0);
	ck_assert_int_eq(v, 5);
	ck_assert_int_eq(rs_json_as_int(rs_json_get(j, "e"), &v), 0);
	ck_assert(v == INT64_MIN);
	/* rs_json's own text: the numbers bare, as they came */
	char *d = rs_json_dumps(j);
	ck_assert_str_eq(d, "{\"a\":123456789012345678901234567890,\"b\":"
	    "[1e400,-18446744073709551616],\"c\":\"9e999\",\"d\":5,\"e\":"
	    "-9223372036854775808}");
	free(d);
	rs_json_free(j);
	/* strings that hold the mark are strings unless they are exactly
	   it and a number, and their text is kept */
	static const char strs[] = "{\"s\":\"x\\u0000\\u0001123\",\"t\":"
	    "\"\\u0000\\u0001abc\",\"u\":\"q\\\"\\u0000\\u00015\"}";
	ck_assert_int_eq(rs_json_parse(strs, strlen(strs), &j, &err), RS_OK);
	ck_assert_int_eq(rs_json_kind(rs_json_get(j, "t")), RS_JSON_STRING);
	d = rs_json_dumps(j);
	ck_assert_str_eq(d, strs);
	free(d);
	rs_json_free(j);
	/* malformed stays malformed, with or without a wide number */
	ck_assert_int_eq(rs_pyjson_parse("{\"a\": 1e400", 12, &j, &err),
	    RS_ERR_FORMAT);
	ck_assert_int_eq(rs_pyjson_parse("[01]", 4, &j, &err), RS_ERR_FORMAT);
	/*
	 * and its error placed in the client's text, not in the text with the
	 * wide numbers quoted (14 characters each, which put the first one
	 * past the end of its 43-character line)
	 */
	static const struct {
		const char	*text;
		const char	*want;
	} bad[] = {
		{ "{\"x\":123456789012345678901234567890,\"y\":1,}",
		    "line 1 column 43: " },
		{ "[1e400, 2e400 x]", "line 1 column 15: " },
		{ "[1e400,\n 2e400, \"\xc3\xa9\" x]", "line 2 column 13: " },
		{ "[1, x, 1e400]", "line 1 column 5: " },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(rs_pyjson_parse(bad[i].text,
		    strlen(bad[i].text), &j, &err), RS_ERR_FORMAT);
		ck_assert_msg(strncmp(err.msg, bad[i].want,
		    strlen(bad[i].want)) == 0, "%s: %s", bad[i].text, err.msg);
	}
}
END_TEST

Suite *
pyjson_suite(void)
{
	Suite	*s = suite_create("pyjson");
	TCase	*tc = tcase_create("pyjson");

	tcase_add_test(tc, pyjson_real);
	tcase_add_test(tc, pyjson_dump);
	tcase_add_test(tc, pyjson_literal);
	tcase_add_test(tc, pyjson_parse_wide);
	suite_add_tcase(s, tc);
	tc = tcase_create("pystr");
	tcase_add_test(tc, pystr_space);
	suite_add_tcase(s, tc);
	tc = tcase_create("bad_input");
	tcase_add_test(tc, pyjson_deep);
	suite_add_tcase(s, tc);
	return (s);
}
