/*
 * check_main.c - runs every suite.  The list comes from the build
 * (build/gen/suites.h: one RS_SUITE(m) per tests/check_<m>.c).  Pick one
 * with CK_RUN_SUITE / CK_RUN_CASE; debug without fork with CK_FORK=no.
 */
#include <stdlib.h>

#include <check.h>

#define RS_SUITE(m)	Suite *m##_suite(void);
#include "suites.h"
#undef RS_SUITE

int
main(void)
{
	SRunner	*sr = srunner_create(NULL);
	int	 failed;

#define RS_SUITE(m)	srunner_add_suite(sr, m##_suite());
#include "suites.h"
#undef RS_SUITE
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return (failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
}
