/*
 * check_make.c - make test's driver (scripts/test-stages.sh): a stage that
 * fails does not stop the ones after it, and the summary names it (issue
 * #15).  The stages here are a stand-in for make that fails on "b".  And
 * its layer check (scripts/check-layers.sh): the tree passes, a planted
 * upward include in a scratch lib/ fails, naming its file and line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <check.h>

#include "t_util.h"

START_TEST(stages_all_run)
{
	const char	*dir = t_tmpdir();
	char		 fake[512], log[512], c[2048], *out;
	size_t		 n;

	snprintf(fake, sizeof(fake), "%s/fake-make", dir);
	snprintf(log, sizeof(log), "%s/ran", dir);
	snprintf(c, sizeof(c), "#!/bin/sh\necho \"$1\" >> '%s'\n"
	    "[ \"$1\" != b ]\n", log);
	t_write_file(fake, c, strlen(c));
	ck_assert_int_eq(chmod(fake, 0755), 0);
	snprintf(c, sizeof(c), "MAKE='%s' sh scripts/test-stages.sh a b c "
	    "2>&1", fake);
	ck_assert_int_eq(t_run(c, &out), 1);
	ck_assert_msg(strstr(out, "test stages failed: b (") != NULL, "%s",
	    out);
	free(out);
	out = t_read_file(log, &n);
	ck_assert_uint_eq(n, 6);
	ck_assert_int_eq(memcmp(out, "a\nb\nc\n", 6), 0);
	free(out);
	snprintf(c, sizeof(c), "MAKE='%s' sh scripts/test-stages.sh a c "
	    "2>&1", fake);
	ck_assert_int_eq(t_run(c, &out), 0);
	ck_assert_msg(strstr(out, "test stages passed: a c") != NULL, "%s",
	    out);
	free(out);
}
END_TEST

START_TEST(layers_upward_include)
{
	const char	*dir = t_tmpdir();
	char		 p[512], c[1024], *out;

	ck_assert_int_eq(t_run("sh scripts/check-layers.sh 2>&1", &out), 0);
	free(out);
	snprintf(p, sizeof(p), "%s/lib", dir);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/lib/base", dir);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/lib/tok", dir);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/lib/base/rs_b.h", dir);
	t_write_file(p, "", 0);
	snprintf(p, sizeof(p), "%s/lib/tok/rs_t.h", dir);
	t_write_file(p, "#include \"rs_b.h\"\n", 18);
	snprintf(c, sizeof(c), "sh scripts/check-layers.sh '%s' 2>&1", dir);
	ck_assert_int_eq(t_run(c, &out), 0);
	free(out);

	/* base reaching up to tok, on line 2 */
	snprintf(p, sizeof(p), "%s/lib/base/rs_b.c", dir);
	t_write_file(p, "\n#include \"rs_t.h\"\n", 19);
	ck_assert_int_eq(t_run(c, &out), 1);
	ck_assert_msg(strstr(out, "lib/base/rs_b.c:2: includes \"rs_t.h\" "
	    "(layer tok)") != NULL, "%s", out);
	free(out);
}
END_TEST

Suite *
make_suite(void)
{
	Suite	*s = suite_create("make");
	TCase	*tc = tcase_create("test_stages");

	tcase_add_test(tc, stages_all_run);
	suite_add_tcase(s, tc);
	tc = tcase_create("layers");
	tcase_add_test(tc, layers_upward_include);
	suite_add_tcase(s, tc);
	return (s);
}
