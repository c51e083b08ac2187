/*
 * rs_time.c - the monotonic clock in milliseconds (see rs_time.h).
 */
#include <time.h>

#include "rs_time.h"

double
rs_time_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6);
}
