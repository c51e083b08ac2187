/*
 * rs_err.h - status codes and error messages shared by every lib/ module.
 *
 * Fallible functions return an enum rs_status and, when the caller passes a
 * non-NULL struct rs_err, write one lower-case message into it saying where,
 * what and what was expected ("tensor 'x': offset 96 past end of file (80)").
 * Nothing here allocates, so it is safe in any thread and after ENOMEM.
 */
#ifndef RS_ERR_H
#define RS_ERR_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

enum rs_status {
	RS_OK = 0,
	RS_ERR_IO,		/* open, read, mmap, write failed */
	RS_ERR_FORMAT,		/* malformed input file or record */
	RS_ERR_UNSUPPORTED,	/* well-formed but not something we handle */
	RS_ERR_INVALID_ARG,	/* caller passed a bad value */
	RS_ERR_NOMEM,		/* allocation failed */
	RS_ERR_CUDA,		/* CUDA runtime or driver error */
	RS_ERR_LIMIT		/* a size or count beyond a documented limit */
};

struct rs_err {
	enum rs_status	status;
	char		msg[256];
};

/*
 * Record ST and a printf-style message in ERR (which may be NULL) and return
 * ST, so that failing takes one line: return (rs_errf(err, RS_ERR_IO, ...)).
 */
enum rs_status	rs_errf(struct rs_err *err, enum rs_status st,
		    const char *fmt, ...)
		    __attribute__((format(printf, 3, 4)));

/* Prefix ERR's message with "PREFIX: " (for context added by a caller). */
void		rs_err_prefix(struct rs_err *err, const char *fmt, ...)
		    __attribute__((format(printf, 2, 3)));

/* A short constant name for ST ("format", "io", ...). */
const char	*rs_status_str(enum rs_status st);

#ifdef __cplusplus
}
#endif

#endif /* RS_ERR_H */
