/*
 * check_buf.c - the growable byte buffer.
 */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_buf.h"

START_TEST(append)
{
	struct rs_buf	b;
	char		*s;
	size_t		 n;

	rs_buf_init(&b);
	ck_assert_ptr_null(b.data);
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(rs_buf_addc(&b, 'a' + i % 26), 0);
	ck_assert_uint_eq(b.len, 1000);
	ck_assert_int_eq(b.data[1000], '\0');
	ck_assert_int_eq(rs_buf_addf(&b, "%d-%s", 42, "x"), 0);
	ck_assert_str_eq(b.data + 1000, "42-x");
	/* appending a slice of itself survives the move of the storage */
	rs_buf_reset(&b);
	rs_buf_adds(&b, "abc");
	for (int i = 0; i < 10; i++)
		rs_buf_add(&b, b.data, b.len);
	ck_assert_uint_eq(b.len, 3 * 1024);
	ck_assert(memcmp(b.data + 3 * 1023, "abc", 3) == 0);
	rs_buf_consume(&b, 3 * 1023);
	ck_assert_str_eq(b.data, "abc");
	rs_buf_truncate(&b, 1);
	ck_assert_str_eq(b.data, "a");
	s = rs_buf_release(&b, &n);
	ck_assert_str_eq(s, "a");
	ck_assert_uint_eq(n, 1);
	ck_assert_ptr_null(b.data);
	free(s);
	/* releasing an empty buffer gives an empty string */
	s = rs_buf_release(&b, &n);
	ck_assert(s != NULL && *s == '\0' && n == 0);
	free(s);
	rs_buf_cleanup(&b);
	rs_buf_cleanup(NULL);
}
END_TEST

START_TEST(oom_is_sticky)
{
	struct rs_buf	b;

	rs_buf_init(&b);
	rs_buf_adds(&b, "x");
	/* a length no allocation can satisfy fails and stays failed */
	ck_assert_int_eq(rs_buf_add(&b, "y", (size_t)-1), -1);
	ck_assert(b.oom);
	ck_assert_int_eq(rs_buf_adds(&b, "z"), -1);
	ck_assert_ptr_null(rs_buf_release(&b, NULL));
	rs_buf_cleanup(&b);
}
END_TEST

Suite *
buf_suite(void)
{
	Suite	*s = suite_create("buf");
	TCase	*tc = tcase_create("buf");

	tcase_add_test(tc, append);
	tcase_add_test(tc, oom_is_sticky);
	suite_add_tcase(s, tc);
	return (s);
}
