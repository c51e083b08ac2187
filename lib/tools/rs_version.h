/*
 * rs_version.h - what this build of the engine library contains.
 */
#ifndef RS_VERSION_H
#define RS_VERSION_H

/* "0.1.0" */
const char	*rs_version(void);

/*
 * One line describing the build: backends (CPU; CUDA runtime version and
 * target architectures when built with CUDA) and dependency versions.
 * Static storage; valid forever.
 */
const char	*rs_build_info(void);

#endif /* RS_VERSION_H */
