/*
 * rs_err.c - status codes and bounded, allocation-free error messages.
 */
#include <stdio.h>
#include <string.h>

#include "rs_err.h"

static const char *const status_names[] = {
	[RS_OK] = "ok",
	[RS_ERR_IO] = "io",
	[RS_ERR_FORMAT] = "format",
	[RS_ERR_UNSUPPORTED] = "unsupported",
	[RS_ERR_INVALID_ARG] = "invalid argument",
	[RS_ERR_NOMEM] = "out of memory",
	[RS_ERR_CUDA] = "cuda",
	[RS_ERR_LIMIT] = "limit",
};

enum rs_status
rs_errf(struct rs_err *err, enum rs_status st, const char *fmt, ...)
{
	va_list	ap;

	if (err == NULL)
		return (st);
	err->status = st;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return (st);
}

void
rs_err_prefix(struct rs_err *err, const char *fmt, ...)
{
	char	head[128], old[sizeof(err->msg)];
	va_list	ap;

	if (err == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(head, sizeof(head), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	/* "HEAD: OLD", cut to fit; OLD is NUL-terminated within its array */
	size_t hl = strlen(head), ol = strlen(old), cap = sizeof(err->msg) - 1;
	if (hl > cap)
		hl = cap;
	memcpy(err->msg, head, hl);
	size_t at = hl;
	for (const char *sep = ": "; *sep != '\0' && at < cap; sep++)
		err->msg[at++] = *sep;
	if (ol > cap - at)
		ol = cap - at;
	memcpy(err->msg + at, old, ol);
	err->msg[at + ol] = '\0';
}

const char *
rs_status_str(enum rs_status st)
{
	if ((unsigned)st >= sizeof(status_names) / sizeof(status_names[0]))
		return ("unknown");
	return (status_names[st]);
}
