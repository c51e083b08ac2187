/*
 * check_utf8.c - the strict UTF-8 classifier and the U+FFFD-per-byte
 * policy (rs_utf8.h) on sequences worked out from RFC 3629's table.
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
	k = rs_utf8_sanitize("e\xe2\x82x", 4, out, 1, &used);
	ck_assert(k == 8 && memcmp(out, "e\xef\xbf\xbd\xef\xbf\xbdx", 8) == 0);
	k = rs_utf8_sanitize("ab\xe2\x82", 4, out, 0, &used);
	ck_assert(k == 2 && used == 2);
	k = rs_utf8_sanitize("ab\xe2\x82", 4, out, 1, &used);
	ck_assert(k == 8 && used == 4);
	ck_assert(!rs_utf8_valid("ok\xc0\xaf", 4, &bad) && bad == 2);
	ck_assert(rs_utf8_valid("ok\xc2\xa9", 4, &bad));
}
END_TEST

/* Invalid input text is tokenized as if each bad byte were U+FFFD. */

Suite *
utf8_suite(void)
{
	Suite	*s = suite_create("utf8");
	TCase	*tc = tcase_create("policy");

	tcase_add_test(tc, utf8_policy);
	suite_add_tcase(s, tc);
	return (s);
}
