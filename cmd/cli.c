/*
 * cli.c - shared command-line conventions (see cli.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rs_version.h"

static const char *progname = "rs";

void
rs_cli_init(const char *argv0)
{
	const char *slash;

	if (argv0 == NULL || *argv0 == '\0')
		return;
	slash = strrchr(argv0, '/');
	progname = slash != NULL ? slash + 1 : argv0;
}

const char *
rs_cli_name(void)
{
	return (progname);
}

static void
vwarn(const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", progname);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void
rs_cli_warn(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
}

void
rs_cli_fatal(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
	exit(RS_EXIT_ERROR);
}

void
rs_cli_warn_err(const char *what, const struct rs_err *err)
{
	rs_cli_warn("%s: %s", what, err->msg);
}

void
rs_cli_usage_error(const char *usage, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
	fprintf(stderr, "usage: %s\nTry '%s --help' for more information.\n",
	    usage, progname);
	exit(RS_EXIT_ERROR);
}

void
rs_cli_norm_opt(enum rs_tok_norm *norm, int nfc, const char *usage)
{
	if (*norm != RS_TOK_NORM_DEFAULT)
		rs_cli_usage_error(usage, "--nfc and --no-nfc exclude each "
		    "other");
	*norm = nfc ? RS_TOK_NORM_NFC : RS_TOK_NORM_NONE;
}

void
rs_cli_print_version(void)
{
	printf("%s (redshift) %s\n%s\n", progname, rs_version(),
	    rs_build_info());
}

int
rs_cli_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
	char		*end;
	long long	 v;

	if (s == NULL || *s == '\0')
		return (-1);
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return (-1);
	*out = v;
	return (0);
}

int
rs_cli_parse_bool(const char *s, int *out)
{
	if (s == NULL)
		return (-1);
	if (strcmp(s, "true") == 0)
		*out = 1;
	else if (strcmp(s, "false") == 0)
		*out = 0;
	else
		return (-1);
	return (0);
}

int
rs_cli_parse_effort(const char *s, const char **out)
{
	static const char *const levels[] = { "xhigh", "medium", "low" };

	for (size_t i = 0; s != NULL && i < 3; i++)
		if (strcmp(s, levels[i]) == 0) {
			*out = levels[i];
			return (0);
		}
	return (-1);
}

void
rs_cli_each_line(FILE *fp, const char *name, rs_cli_line_fn fn, void *ctx)
{
	char	*line = NULL;
	size_t	 cap = 0, lineno = 0, n;
	ssize_t	 k;

	while ((k = getline(&line, &cap, fp)) >= 0) {
		lineno++;
		n = (size_t)k;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			n--;
		if (strspn(line, " \t") >= n)
			continue;	/* blank line */
		fn(ctx, line, n, lineno);
	}
	if (ferror(fp))
		rs_cli_fatal("%s: read error: %s", name, strerror(errno));
	free(line);
}

int
rs_cli_finish(int code)
{
	if (fflush(stdout) != 0 || ferror(stdout) || fclose(stdout) != 0) {
		fprintf(stderr, "%s: write error on stdout: %s\n", progname,
		    strerror(errno));
		return (RS_EXIT_ERROR);
	}
	return (code);
}
