/*
 * check_draft.c - prompt-lookup drafting on hand-made histories whose
 * answers follow from rs_draft.h's rule by inspection.
 */
#include <check.h>

#include "rs_draft.h"

START_TEST(lookup)
{
	/* "1 2 3 4 5 1 2 3": the ending 1 2 3 was followed by 4 5 1 2 3 */
	const int32_t a[] = { 1, 2, 3, 4, 5, 1, 2, 3 };
	int32_t	out[8];

	ck_assert_int_eq(rs_draft_lookup(a, 8, NULL, 0, out, 3, NULL), 3);
	ck_assert(out[0] == 4 && out[1] == 5 && out[2] == 1);
	/* capped by the history: 4 5 1 2 3 and nothing after */
	ck_assert_int_eq(rs_draft_lookup(a, 8, NULL, 0, out, 8, NULL), 5);
	ck_assert(out[4] == 3);
	/* the history split between prompt and output */
	const int32_t p[] = { 7, 8, 9, 6 }, o[] = { 7, 8 };
	ck_assert_int_eq(rs_draft_lookup(p, 4, o, 2, out, 4, NULL), 4);
	ck_assert(out[0] == 9 && out[1] == 6 && out[2] == 7 && out[3] == 8);
	/* the latest earlier occurrence wins: 5 after the second "2" */
	const int32_t q[] = { 2, 4, 2, 5, 2 };
	ck_assert_int_eq(rs_draft_lookup(q, 5, NULL, 0, out, 1, NULL), 1);
	ck_assert_int_eq(out[0], 5);
	/* longer matches are tried first: 3 4 → 9, not 4 → 7 */
	const int32_t r[] = { 4, 7, 3, 4, 9, 1, 3, 4 };
	int ng;
	ck_assert_int_eq(rs_draft_lookup(r, 8, NULL, 0, out, 1, &ng), 1);
	ck_assert_int_eq(out[0], 9);
	ck_assert_int_eq(ng, 2);	/* the evidence mtp+ngram weighs */
}
END_TEST

START_TEST(no_draft)
{
	const int32_t a[] = { 1, 2, 3 };
	int32_t	out[4];

	int ng = -1;
	ck_assert_int_eq(rs_draft_lookup(a, 3, NULL, 0, out, 4, &ng), 0);
	ck_assert_int_eq(ng, 0);
	ck_assert_int_eq(rs_draft_lookup(a, 1, NULL, 0, out, 4, NULL), 0);
	ck_assert_int_eq(rs_draft_lookup(NULL, 0, NULL, 0, out, 4, NULL), 0);
	ck_assert_int_eq(rs_draft_lookup(a, 3, a, 3, out, 0, NULL), 0);
}
END_TEST

Suite *
draft_suite(void)
{
	Suite	*s = suite_create("draft");
	TCase	*tc = tcase_create("lookup");

	tcase_add_test(tc, lookup);
	tcase_add_test(tc, no_draft);
	suite_add_tcase(s, tc);
	return (s);
}
