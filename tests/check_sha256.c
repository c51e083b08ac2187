/*
 * check_sha256.c - SHA-256 against the FIPS 180-2 example vectors.
 */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rs_sha256.h"

START_TEST(sha256_vectors)
{
	/* FIPS 180-2 appendix B and the empty message */
	char	hex[65], *a = malloc(1000000);

	rs_sha256_hex("abc", 3, hex);
	ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223"
	    "b00361a396177a9cb410ff61f20015ad");
	rs_sha256_hex("", 0, hex);
	ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb924"
	    "27ae41e4649b934ca495991b7852b855");
	rs_sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
	    56, hex);
	ck_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039"
	    "a33ce45964ff2167f6ecedd419db06c1");
	memset(a, 'a', 1000000);
	rs_sha256_hex(a, 1000000, hex);
	ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67"
	    "f1809a48a497200e046d39ccc7112cd0");
	free(a);
}
END_TEST

START_TEST(streaming)
{
	/* the digest does not depend on how the message is fed */
	struct rs_sha256	c;
	uint8_t			a[RS_SHA256_LEN], b[RS_SHA256_LEN];
	char			msg[300];

	for (int i = 0; i < 300; i++)
		msg[i] = (char)(i * 7);
	rs_sha256_init(&c);
	rs_sha256_update(&c, msg, 300);
	rs_sha256_final(&c, a);
	for (size_t step = 1; step < 130; step += 13) {
		rs_sha256_init(&c);
		for (size_t at = 0; at < 300; at += step)
			rs_sha256_update(&c, msg + at, at + step < 300 ? step :
			    300 - at);
		rs_sha256_final(&c, b);
		ck_assert(memcmp(a, b, sizeof(a)) == 0);
	}
}
END_TEST

Suite *
sha256_suite(void)
{
	Suite	*s = suite_create("sha256");
	TCase	*tc = tcase_create("vectors");

	tcase_add_test(tc, sha256_vectors);
	tcase_add_test(tc, streaming);
	suite_add_tcase(s, tc);
	return (s);
}
