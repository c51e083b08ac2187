/*
 * check_argtype.c - parameter types from JSON schemas and the conversion
 * table of serving.md §3.4 (expected values written from the table).
 */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_argtype.h"
#include "rs_buf.h"
#include "rs_json.h"

static struct rs_json *
parse(const char *text)
{
	struct rs_json	*j = NULL;
	struct rs_err	 err = { 0 };

	ck_assert_msg(rs_json_parse(text, strlen(text), &j, &err) == RS_OK,
	    "%s", err.msg);
	return (j);
}

START_TEST(types)
{
	static const struct {
		const char		*name;
		enum rs_argtype_kind	 kind;
		int			 nullable;
	} want[] = {
		{ "s", RS_ARG_STRING, 0 }, { "S", RS_ARG_STRING, 0 },
		{ "text", RS_ARG_STRING, 0 }, { "i", RS_ARG_INTEGER, 0 },
		{ "i64", RS_ARG_INTEGER, 0 }, { "u8", RS_ARG_INTEGER, 0 },
		{ "long", RS_ARG_INTEGER, 0 }, { "n", RS_ARG_NUMBER, 0 },
		{ "f", RS_ARG_NUMBER, 0 }, { "b", RS_ARG_BOOLEAN, 0 },
		{ "o", RS_ARG_CONTAINER, 0 }, { "a", RS_ARG_CONTAINER, 0 },
		{ "d", RS_ARG_CONTAINER, 0 }, { "z", RS_ARG_NULL, 0 },
		{ "ni", RS_ARG_INTEGER, 1 }, { "nn", RS_ARG_NULL, 1 },
		{ "any_s", RS_ARG_STRING, 1 }, { "one_ref", RS_ARG_INTEGER, 0 },
		{ "enum_s", RS_ARG_STRING, 0 }, { "enum_f", RS_ARG_NUMBER, 0 },
		{ "none", RS_ARG_UNKNOWN, 0 }, { "odd", RS_ARG_UNKNOWN, 0 },
		{ "loop", RS_ARG_UNKNOWN, 0 }, { "far", RS_ARG_UNKNOWN, 0 },
		{ "absent", RS_ARG_UNDECLARED, 0 },
	};
	struct rs_json	*params = parse("{\"type\":\"object\",\"properties\":{"
	    "\"s\":{\"type\":\"string\"},\"S\":{\"type\":\"STR\"},"
	    "\"text\":{\"type\":\"text\"},\"i\":{\"type\":\"integer\"},"
	    "\"i64\":{\"type\":\"int64\"},\"u8\":{\"type\":\"uint8\"},"
	    "\"long\":{\"type\":\"long\"},\"n\":{\"type\":\"number\"},"
	    "\"f\":{\"type\":\"float\"},\"b\":{\"type\":\"boolean\"},"
	    "\"o\":{\"type\":\"object\"},\"a\":{\"type\":\"array\"},"
	    "\"d\":{\"type\":\"dict\"},\"z\":{\"type\":\"null\"},"
	    "\"ni\":{\"type\":[\"null\",\"integer\"]},"
	    "\"nn\":{\"type\":[\"null\"]},"
	    "\"any_s\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]},"
	    "\"one_ref\":{\"oneOf\":[{\"$ref\":\"#/$defs/N\"}]},"
	    "\"enum_s\":{\"enum\":[\"x\",\"y\"]},\"enum_f\":{\"enum\":[1.5]},"
	    "\"none\":{\"description\":\"d\"},\"odd\":{\"type\":5},"
	    "\"loop\":{\"$ref\":\"#/$defs/L\"},"
	    "\"far\":{\"$ref\":\"https://example.com/s.json\"}},"
	    "\"$defs\":{\"N\":{\"type\":\"integer\"},"
	    "\"L\":{\"$ref\":\"#/$defs/L\"}}}");

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct rs_argtype t = rs_argtype_of(params, want[i].name);

		ck_assert_msg(t.kind == want[i].kind &&
		    t.nullable == want[i].nullable, "%s: kind %d nullable %d",
		    want[i].name, (int)t.kind, t.nullable);
	}
	ck_assert(rs_argtype_declared(params, "s"));
	ck_assert(!rs_argtype_declared(params, "absent"));
	ck_assert(!rs_argtype_declared(NULL, "s"));
	ck_assert_int_eq(rs_argtype_of(NULL, "s").kind, RS_ARG_UNDECLARED);
	rs_json_free(params);
}
END_TEST

START_TEST(tools)
{
	struct rs_json	*tools = parse("[{\"type\":\"function\",\"function\":"
	    "{\"name\":\"a\"}},{\"type\":\"function\",\"function\":"
	    "{\"name\":\"bb\",\"parameters\":{}}}, 5, {}]");
	const struct rs_json *f = rs_argtype_tool(tools, "bb", 2);
	const char	*s;
	size_t		 n;

	ck_assert_ptr_nonnull(f);
	ck_assert(rs_json_as_str(rs_json_get(f, "name"), &s, &n) == 0 &&
	    n == 2 && memcmp(s, "bb", 2) == 0);
	ck_assert_ptr_null(rs_argtype_tool(tools, "b", 1));
	ck_assert_ptr_null(rs_argtype_tool(NULL, "a", 1));
	rs_json_free(tools);
}
END_TEST

static void
expect(enum rs_argtype_kind kind, int nullable, const char *v,
    const char *want)
{
	struct rs_buf		b;
	struct rs_argtype	t = { kind, nullable };

	rs_buf_init(&b);
	rs_argtype_convert(&b, t, v, strlen(v));
	ck_assert_msg(b.data != NULL && strcmp(b.data, want) == 0,
	    "kind %d '%s': got '%s', want '%s'", (int)kind, v, b.data, want);
	rs_buf_cleanup(&b);
}

START_TEST(convert)
{
	expect(RS_ARG_STRING, 0, "a\n\"b\" ", "\"a\\n\\\"b\\\" \"");
	expect(RS_ARG_STRING, 0, "None", "\"None\"");
	expect(RS_ARG_STRING, 1, "None", "null");
	expect(RS_ARG_STRING, 1, " null", "\" null\"");
	expect(RS_ARG_INTEGER, 0, " 42 ", "42");
	expect(RS_ARG_INTEGER, 0, "-0", "-0");
	expect(RS_ARG_INTEGER, 0, "12345678901234567890123",
	    "12345678901234567890123");
	expect(RS_ARG_INTEGER, 0, "1.5", "\"1.5\"");
	expect(RS_ARG_INTEGER, 0, "007", "\"007\"");
	expect(RS_ARG_INTEGER, 0, "null", "null");
	expect(RS_ARG_NUMBER, 0, "1e-3", "1e-3");
	expect(RS_ARG_NUMBER, 0, "\t2\n", "2");
	expect(RS_ARG_NUMBER, 0, "NaN", "\"NaN\"");
	expect(RS_ARG_BOOLEAN, 0, "True", "true");
	expect(RS_ARG_BOOLEAN, 0, " FALSE\n", "false");
	expect(RS_ARG_BOOLEAN, 0, "yes", "\"yes\"");
	expect(RS_ARG_BOOLEAN, 0, "None", "null");
	expect(RS_ARG_CONTAINER, 0, "{\"a\":[1,2]}", "{\"a\": [1, 2]}");
	expect(RS_ARG_CONTAINER, 0, " {'a': None, 'b': (1)} ",
	    "\" {'a': None, 'b': (1)} \"");
	expect(RS_ARG_CONTAINER, 0, "{'a': None}", "{\"a\": null}");
	expect(RS_ARG_CONTAINER, 0, "[1, 2", "\"[1, 2\"");
	expect(RS_ARG_NULL, 0, "anything", "null");
	expect(RS_ARG_UNKNOWN, 0, " 3 ", "3");
	expect(RS_ARG_UNKNOWN, 0, "{'a':1}", "\"{'a':1}\"");
	expect(RS_ARG_UNKNOWN, 0, "hello", "\"hello\"");
	expect(RS_ARG_UNDECLARED, 0, "3", "\"3\"");
	expect(RS_ARG_STRING, 0, "", "\"\"");
	expect(RS_ARG_INTEGER, 0, "", "\"\"");
}
END_TEST

Suite *
argtype_suite(void)
{
	Suite	*s = suite_create("argtype");
	TCase	*tc = tcase_create("schema");

	tcase_add_test(tc, types);
	tcase_add_test(tc, tools);
	suite_add_tcase(s, tc);
	tc = tcase_create("convert");
	tcase_add_test(tc, convert);
	suite_add_tcase(s, tc);
	return (s);
}
