/*
 * rs_version.c - version and build configuration string.
 */
#include <stdio.h>

#include "rs_json.h"
#include "rs_tok.h"
#include "rs_version.h"

#ifndef RS_VERSION
#define RS_VERSION "unknown"
#endif

const char *
rs_version(void)
{
	return (RS_VERSION);
}

const char *
rs_build_info(void)
{
	static char	buf[256];

	if (buf[0] == '\0')
		snprintf(buf, sizeof(buf), "backends: cpu%s; %s; %s",
#ifdef RS_CUDA
		    ", cuda",
#else
		    "",
#endif
		    rs_json_lib_version(), rs_tok_lib_versions());
	return (buf);
}
