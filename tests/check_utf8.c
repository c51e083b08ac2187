/*
 * check_utf8.c - the strict UTF-8 classifier and the two U+FFFD policies
 * (rs_utf8.h) on sequences worked out from RFC 3629's table and the maximal
 * subpart examples of the Unicode standard (§3.9, Table 3-8).
 */
#include <string.h>

#include <check.h>

#include "rs_utf8.h"

START_TEST(utf8_policy)
{
	static const struct {
		const char	*s;
		int		 want;
	} seq[] = {
		{ "A", 1 }, { "\xc2\xa9", 2 }, { "\xc0\xaf", -1 },
		{ "\xc1\xbf", -1 }, { "\xe0\x9f\xbf", -1 },
		{ "\xe0\xa0\x80", 3 }, { "\xed\x9f\xbf", 3 },
		{ "\xed\xa0\x80", -1 }, { "\xef\xbf\xbf", 3 },
		{ "\xf0\x8f\xbf\xbf", -1 }, { "\xf0\x90\x80\x80", 4 },
		{ "\xf4\x8f\xbf\xbf", 4 }, { "\xf4\x90\x80\x80", -1 },
		{ "\xf5\x80\x80\x80", -1 }, { "\x80", -1 }, { "\xff", -1 },
		{ "\xe2\x82", 0 }, { "\xe2", 0 }, { "\xe2\x28", -1 },
		{ "\xf0\x9f\xa6", 0 }, { "\xe0\x80", -1 },
	};
	char	out[64];
	size_t	used, k, bad;

	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++)
		ck_assert_msg(rs_utf8_seq((const unsigned char *)seq[i].s,
		    strlen(seq[i].s), NULL) == seq[i].want, "sequence %zu", i);
	/* one U+FFFD per invalid byte; a cut sequence held unless final */
	k = rs_utf8_sanitize("e\xe2\x82x", 4, RS_UTF8_PER_BYTE, out, 1, &used);
	ck_assert(k == 8 && memcmp(out, "e\xef\xbf\xbd\xef\xbf\xbdx", 8) == 0);
	k = rs_utf8_sanitize("ab\xe2\x82", 4, RS_UTF8_PER_BYTE, out, 0, &used);
	ck_assert(k == 2 && used == 2);
	k = rs_utf8_sanitize("ab\xe2\x82", 4, RS_UTF8_PER_BYTE, out, 1, &used);
	ck_assert(k == 8 && used == 4);
	k = rs_utf8_sanitize("ab\xe2\x82", 4, RS_UTF8_PER_SUBPART, out, 0,
	    &used);
	ck_assert(k == 2 && used == 2);
	ck_assert(!rs_utf8_valid("ok\xc0\xaf", 4, &bad) && bad == 2);
	ck_assert(rs_utf8_valid("ok\xc2\xa9", 4, &bad));
}
END_TEST

/*
 * One U+FFFD per maximal subpart.  The first row is Table 3-8 of the
 * Unicode standard (§3.9): 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64 gives
 * a FFFD FFFD FFFD b FFFD c FFFD FFFD d.
 */
START_TEST(utf8_subpart)
{
	static const struct {
		const char	*in, *want;
	} cases[] = {
		{ "\x61\xf1\x80\x80\xe1\x80\xc2\x62\x80\x63\x80\xbf\x64",
		  "a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "b\xef\xbf\xbd"
		  "c\xef\xbf\xbd\xef\xbf\xbd" "d" },
		/* an emoji cut after 3 of its 4 bytes, at the end */
		{ "\xf0\x9f\x9a", "\xef\xbf\xbd" },
		{ "e\xe2\x82x", "e\xef\xbf\xbdx" },
		/* overlong, surrogate, > U+10FFFF: the lead byte starts no
		   valid prefix with that second byte, so bytes go one by one */
		{ "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xf4\x90\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		/* a valid prefix broken by a new lead byte */
		{ "\xf0\x9f\xf0\x9f\x9a\x80", "\xef\xbf\xbd\xf0\x9f\x9a\x80" },
	};
	char	out[64];
	size_t	k, used;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		k = rs_utf8_sanitize(cases[i].in, strlen(cases[i].in),
		    RS_UTF8_PER_SUBPART, out, 1, &used);
		ck_assert_msg(k == strlen(cases[i].want) &&
		    memcmp(out, cases[i].want, k) == 0 &&
		    used == strlen(cases[i].in), "case %zu", i);
	}
	ck_assert_uint_eq(rs_utf8_subpart((const unsigned char *)"\x80", 1),
	    1);
	ck_assert_uint_eq(rs_utf8_subpart((const unsigned char *)
	    "\xf0\x9f\x9a", 3), 3);
	ck_assert_uint_eq(rs_utf8_subpart((const unsigned char *)
	    "\xf0\x9f\x9ax", 4), 3);
	ck_assert_uint_eq(rs_utf8_subpart((const unsigned char *)
	    "\xe0\x80", 2), 1);
}
END_TEST

/*
 * rs_utf8_quote: what an error message shows of a file's or a client's
 * string.  A NUL no longer cuts it (printf's %.*s stopped there); control
 * bytes, bytes outside UTF-8 and characters that move text on a terminal
 * become \xHH, a backslash two; valid characters stay whole, also at the
 * cut; the output is bounded, so the message keeps room for its reason.
 */
START_TEST(utf8_quote)
{
	static const struct {
		const char	*in;
		size_t		 n;
		const char	*want;
	} c[] = {
		{ "qwen35", 6, "qwen35" },
		{ "qwen35\0x", 8, "qwen35\\x00x" },
		{ "a\tb\x7f", 4, "a\\x09b\\x7f" },
		{ "caf\xc3\xa9", 5, "caf\xc3\xa9" },
		{ "\xff\xc3(", 3, "\\xff\\xc3(" },
		{ "\xc3", 1, "\\xc3" },			/* cut by the end */
		{ "a\\x00", 5, "a\\\\x00" },		/* not a NUL */
		{ "\xc2\x85|\xe2\x80\xae|\xe2\x80\xa8", 10,
		    "\\xc2\\x85|\\xe2\\x80\\xae|\\xe2\\x80\\xa8" },
		/* invisible: a byte order mark, a zero-width space */
		{ "\xef\xbb\xbf" "1|\xe2\x80\x8b", 8,
		    "\\xef\\xbb\\xbf1|\\xe2\\x80\\x8b" },
		{ "", 0, "" },
	};
	char	 out[RS_UTF8_QUOTE_SIZE], in[200], want[80];

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		ck_assert_str_eq(rs_utf8_quote(c[i].in, c[i].n, out),
		    c[i].want);
	/* 63 ASCII bytes, then a 2-byte character that does not fit: cut
	   before it, not shown as invalid bytes */
	memset(in, 'a', 63);
	memcpy(in + 63, "\xc3\xa9zz", 4);
	memset(want, 'a', 63);
	memcpy(want + 63, "...", 4);
	ck_assert_str_eq(rs_utf8_quote(in, 67, out), want);
	/* 62 + the same character: 64 bytes, whole, no ellipsis */
	ck_assert_str_eq(rs_utf8_quote(in + 1, 64, out) + 62, "\xc3\xa9");
	/* the worst case: 16 escapes and the ellipsis */
	memset(in, 1, sizeof(in));
	rs_utf8_quote(in, sizeof(in), out);
	ck_assert_uint_eq(strlen(out), RS_UTF8_QUOTE_MAX + 3);
}
END_TEST

Suite *
utf8_suite(void)
{
	Suite	*s = suite_create("utf8");
	TCase	*tc = tcase_create("policy");

	tcase_add_test(tc, utf8_policy);
	tcase_add_test(tc, utf8_subpart);
	tcase_add_test(tc, utf8_quote);
	suite_add_tcase(s, tc);
	return (s);
}
