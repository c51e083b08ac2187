/*
 * cli.c - shared command-line conventions (see cli.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "rs_gguf.h"
#include "rs_out.h"
#include "rs_time.h"
#include "rs_utf8.h"
#include "rs_version.h"

static const char *progname = "rs";
static int	 quiet;
static int	 progress_shown;	/* a progress line is on screen */
static double	 progress_last;	/* rs_time_ms() of the last line */

static void	 progress_clear(void);

/*
 * A model file that shrinks under a running command (truncated, or
 * rewritten in place: cp over it, a download into the same path) makes
 * every read of its mapping past the new end fault with SIGBUS.  Say so
 * and exit with RS_EXIT_ERROR, the temporary outputs removed, rather than
 * die with a bare "Bus error"; any other SIGBUS keeps its default action
 * (the handler returns and a fault repeats without it).  Only
 * async-signal-safe calls: the message is written from a buffer made in
 * rs_cli_init().
 */
static char	sigbus_msg[160];
static size_t	sigbus_len;

static void
on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	/* si_addr means the faulting address only for a fault (si_code > 0);
	   a SIGBUS sent by kill(2) is raised again, under the default */
	if (si == NULL || si->si_code <= 0 ||
	    !rs_gguf_mapped_at(si->si_addr)) {
		signal(sig, SIG_DFL);
		if (si == NULL || si->si_code <= 0)
			raise(sig);
		return;
	}
	rs_out_remove_temps();
	(void)!write(STDERR_FILENO, sigbus_msg, sigbus_len);
	_exit(RS_EXIT_ERROR);
}

static void
trap_sigbus(void)
{
	struct sigaction sa;
	int n;

	n = snprintf(sigbus_msg, sizeof(sigbus_msg), "%s: the model file "
	    "shrank while in use (truncated or rewritten in place); "
	    "stopping\n", progname);
	sigbus_len = n > 0 && (size_t)n < sizeof(sigbus_msg) ? (size_t)n :
	    sizeof(sigbus_msg) - 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGBUS, &sa, NULL);
}

/*
 * A command started with standard input, output or error closed (`>&-`)
 * would hand that number to the next file it opens: an output file would
 * then take the results meant for stdout (rs-verify's JSON lines inside
 * its .npy).  Each closed one becomes /dev/null, opened so that stdin and
 * stdout still fail as closed (a read of a write-only descriptor, a write
 * to a read-only one: EBADF, a read or write error, exit 2); stderr's
 * messages are dropped.
 */
static void
hold_std_fds(void)
{
	static const int mode[3] = { O_WRONLY, O_RDONLY, O_WRONLY };

	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) == -1 && errno == EBADF &&
		    open("/dev/null", mode[fd]) != fd) {
			(void)write(STDERR_FILENO, "cannot open /dev/null\n",
			    22);
			_exit(RS_EXIT_ERROR);
		}
}

void
rs_cli_init(const char *argv0)
{
	const char *slash;

	hold_std_fds();
	if (argv0 != NULL && *argv0 != '\0') {
		slash = strrchr(argv0, '/');
		progname = slash != NULL ? slash + 1 : argv0;
	}
	trap_sigbus();
}

const char *
rs_cli_name(void)
{
	return (progname);
}

/*
 * Messages carry file names, GGUF keys and values, request text: strings
 * from outside, escaped whole so that none can drive the terminal.
 */
static void
vwarn(const char *fmt, va_list ap)
{
	char	msg[2048], esc[4 * sizeof(msg)];
	int	n;

	progress_clear();
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(msg))
		n = sizeof(msg) - 1;
	rs_cli_esc(msg, (size_t)n, esc, sizeof(esc));
	fprintf(stderr, "%s: %s\n", progname, esc);
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

const char *
rs_cli_at_line(char *buf, size_t n, long long line, const char *msg)
{
	static const char inner[] = "line 1 column ";

	if (strncmp(msg, inner, sizeof(inner) - 1) == 0)
		(void)snprintf(buf, n, "line %lld column %s", line,
		    msg + sizeof(inner) - 1);
	else
		(void)snprintf(buf, n, "line %lld: %s", line, msg);
	return (buf);
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
	enum rs_tok_norm	want = nfc ? RS_TOK_NORM_NFC : RS_TOK_NORM_NONE;

	/* the same one twice is harmless; both are a contradiction */
	if (*norm != RS_TOK_NORM_DEFAULT && *norm != want)
		rs_cli_usage_error(usage, "--nfc and --no-nfc exclude each "
		    "other");
	*norm = want;
}

void
rs_cli_draft_opt(struct rs_cli_draft *d, const char *arg,
    const char *max_arg, const char *usage)
{
	struct rs_err	err = { 0 };
	int64_t		v;

	if (arg != NULL && rs_drafter_parse(arg, &d->kind, &d->count, &err) !=
	    RS_OK)
		rs_cli_usage_error(usage, "--draft: %s", err.msg);
	d->given |= arg != NULL;
	if (max_arg != NULL) {
		if (rs_cli_parse_i64(max_arg, 1, RS_DRAFTER_K_MAX, &v) != 0)
			rs_cli_usage_error(usage, "--draft-max: '%s' is not in "
			    "[1, %d]", max_arg, RS_DRAFTER_K_MAX);
		d->max = (int)v;
	}
}

void
rs_cli_draft_done(const struct rs_cli_draft *d, enum rs_drafter_kind def,
    enum rs_drafter_kind *kind, int *k, const char *usage)
{
	if (d->count > 0 && d->max > 0)
		rs_cli_usage_error(usage, "--draft %d already gives the draft "
		    "count; use --draft ngram --draft-max %d", d->count,
		    d->max);
	if (!d->given && def == RS_DRAFTER_NONE && d->max > 0)
		rs_cli_usage_error(usage, "--draft-max needs --draft ngram, "
		    "mtp, mtp+ngram or auto");
	*kind = d->given ? d->kind : def;
	*k = *kind == RS_DRAFTER_NONE ? 0 : d->count > 0 ? d->count :
	    d->max > 0 ? d->max : RS_DRAFTER_K_DEFAULT;
}

void
rs_cli_draft_help(int col)
{
	printf("      %-*sspeculative decoding with drafter D: auto\n"
	    "%*s(default: mtp+ngram with an MTP block, else\n"
	    "%*sngram), none, ngram (prompt lookup), mtp (the\n"
	    "%*smodel's MTP head) or mtp+ngram; a number N is\n"
	    "%*sngram with --draft-max N, 0 none (same output,\n"
	    "%*sfewer passes)\n", col - 6, "--draft D", col, "", col, "", col,
	    "", col, "", col, "");
	printf("      %-*sdrafts per pass, at most (1..%d, default %d; fewer\n"
	    "%*swhile a request's acceptance is low)\n", col - 6,
	    "--draft-max K", RS_DRAFTER_K_MAX, RS_DRAFTER_K_DEFAULT, col, "");
}

void
rs_cli_common_opt(int c, const char *usage, void (*help)(void))
{
	switch (c) {
	case 'h':
		help();
		exit(rs_cli_finish(RS_EXIT_OK));
	case RS_CLI_OPT_VERSION:
		rs_cli_print_version();
		exit(rs_cli_finish(RS_EXIT_OK));
	case '?':	/* getopt_long said which option, and why */
		fprintf(stderr, "usage: %s\nTry '%s --help' for more "
		    "information.\n", usage, progname);
		exit(RS_EXIT_ERROR);
	default:
		rs_cli_usage_error(usage, "unknown option");
	}
}

void
rs_cli_opts_done(int argc, char **argv, const char *model, const char *usage)
{
	if (optind < argc)
		rs_cli_usage_error(usage, "unexpected operand '%s'",
		    argv[optind]);
	if (model == NULL)
		rs_cli_usage_error(usage, "no model (-m FILE)");
}

int64_t
rs_cli_num_opt(const char *opt, const char *s, int64_t min, int64_t max,
    const char *usage)
{
	int64_t	v;

	if (rs_cli_parse_i64(s, min, max, &v) != 0)
		rs_cli_usage_error(usage, "%s: '%s' is not an integer in "
		    "[%lld, %lld]", opt, s, (long long)min, (long long)max);
	return (v);
}

enum rs_backend
rs_cli_backend_opt(const char *s, const char *usage)
{
	int	b;

	if ((b = rs_backend_from_name(s)) < 0)
		rs_cli_usage_error(usage, "--backend: '%s' is not cpu, cuda or "
		    "auto", s);
	return ((enum rs_backend)b);
}

void
rs_cli_devices_opt(const char *devices, const char *split, int32_t ctx,
    int states, struct rs_engine_opts *eo, const char *usage)
{
	struct rs_err	err;
	int		n = 0;

	if (split != NULL && devices == NULL)
		rs_cli_usage_error(usage, "--split needs --devices");
	if (devices == NULL)
		return;
	if (rs_split_parse("--devices", devices, 0, RS_SPLIT_MAX_DEV,
	    eo->devices, &eo->n_devices, &err) != RS_OK)
		rs_cli_usage_error(usage, "%s", err.msg);
	if (split != NULL) {
		if (rs_split_parse("--split", split, 1, 1 << 20, eo->split, &n,
		    &err) != RS_OK)
			rs_cli_usage_error(usage, "%s", err.msg);
		if (n != eo->n_devices)
			rs_cli_usage_error(usage, "--split: %d counts for %d "
			    "devices", n, eo->n_devices);
	}
	eo->split_ctx = ctx;
	eo->split_states = states;
}

void
rs_cli_devices_check(const char *devices, const char *split,
    const char *usage)
{
	struct rs_engine_opts t;

	memset(&t, 0, sizeof(t));
	rs_cli_devices_opt(devices, split, 0, 1, &t, usage);
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

	/* digits after an optional '-': strtoll alone would also take
	   leading white space and a '+' */
	if (s == NULL || !((*s >= '0' && *s <= '9') || (*s == '-' &&
	    s[1] >= '0' && s[1] <= '9')))
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

char *
rs_cli_read_all(FILE *fp, const char *name, size_t max, size_t *n)
{
	size_t	 cap = 0, len = 0, k;
	char	*buf = NULL, *p;

	do {
		if (len == cap) {
			if (len > max)
				rs_cli_fatal("%s: longer than %zu bytes", name,
				    max);
			cap = cap == 0 ? 65536 : cap * 2;
			if (cap > max + 1)
				cap = max + 1;	/* one byte past: too long */
			if ((p = realloc(buf, cap + 1)) == NULL)
				rs_cli_fatal("%s: out of memory", name);
			buf = p;
		}
		k = fread(buf + len, 1, cap - len, fp);
		len += k;
	} while (k > 0);
	if (ferror(fp))
		rs_cli_fatal("%s: read error: %s", name, strerror(errno));
	if (len > max)
		rs_cli_fatal("%s: longer than %zu bytes", name, max);
	buf[len] = '\0';
	*n = len;
	return (buf);
}

ssize_t
rs_cli_getline(char **line, size_t *cap, FILE *fp, size_t max,
    const char *name, size_t lineno)
{
	size_t	n = 0;
	int	c = EOF;

	/* getline(3) would grow the buffer until memory runs out, and its
	   ENOMEM looks like the end of the input */
	while (n <= max && (c = getc_unlocked(fp)) != EOF) {
		if (n + 2 > *cap) {
			size_t	 want = *cap < 4096 ? 4096 : *cap * 2;
			char	*p;

			if (want > max + 2)
				want = max + 2;
			if ((p = realloc(*line, want)) == NULL)
				rs_cli_fatal("%s: line %zu: out of memory", name,
				    lineno);
			*line = p;
			*cap = want;
		}
		(*line)[n++] = (char)c;
		if (c == '\n')
			break;
	}
	if (n > max) {
		while (c != '\n' && (c = getc_unlocked(fp)) != EOF)
			;
		if (ferror(fp))
			rs_cli_fatal("%s: read error: %s", name,
			    strerror(errno));
		return (-2);
	}
	if (ferror(fp))
		rs_cli_fatal("%s: read error: %s", name, strerror(errno));
	if (n == 0)
		return (-1);
	(*line)[n] = '\0';
	return ((ssize_t)n);
}

void
rs_cli_each_line(FILE *fp, const char *name, rs_cli_line_fn fn, void *ctx)
{
	char	*line = NULL;
	size_t	 cap = 0, lineno = 0, n;
	ssize_t	 k;

	while ((k = rs_cli_getline(&line, &cap, fp, RS_CLI_MAX_LINE, name,
	    lineno + 1)) != -1) {
		lineno++;
		if (k == -2) {
			fn(ctx, NULL, RS_CLI_MAX_LINE, lineno);
			continue;
		}
		n = (size_t)k;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			n--;
		if (strspn(line, " \t") >= n)
			continue;	/* blank line */
		fn(ctx, line, n, lineno);
	}
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

/* ---- escaping ---- */

size_t
rs_cli_esc(const char *s, size_t n, char *buf, size_t cap)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t	 o = 0, i = 0;
	uint32_t cp = 0;
	char	 tmp[8];

	if (cap == 0)
		return (0);
	while (i < n) {
		/* ASCII: 1; else the UTF-8 length, or < 1 when not UTF-8 */
		int	    seq = p[i] < 0x80 ? 1 : rs_utf8_seq(p + i, n - i, &cp);
		size_t	    len = seq > 1 ? (size_t)seq : 1, k = len;
		const char *piece = s + i;

		if (seq == 1 && (p[i] == '\n' || p[i] == '\t' || p[i] == '\r')) {
			k = (size_t)snprintf(tmp, sizeof(tmp), "\\%c",
			    p[i] == '\n' ? 'n' : p[i] == '\t' ? 't' : 'r');
			piece = tmp;
		} else if (seq < 2 && (p[i] < 0x20 || p[i] >= 0x7f)) {
			/* C0, DEL, a byte that is not (whole) UTF-8 */
			k = (size_t)snprintf(tmp, sizeof(tmp), "\\x%02x", p[i]);
			piece = tmp;
		} else if (seq > 1 && cp <= 0x9f) {	/* C1 */
			k = (size_t)snprintf(tmp, sizeof(tmp), "\\u%04x",
			    (unsigned)cp);
			piece = tmp;
		}
		if (o + k >= cap)
			break;
		memcpy(buf + o, piece, k);
		o += k;
		i += len;
	}
	buf[o] = '\0';
	return (o);
}

const char *
rs_cli_esc_str(const char *s)
{
	static char	bufs[4][1024];
	static int	next;
	char		*b = bufs[next++ % 4];

	rs_cli_esc(s, strlen(s), b, sizeof(bufs[0]));
	return (b);
}

/* ---- progress ---- */

void
rs_cli_set_quiet(int q)
{
	quiet = q;
}

static void
progress_clear(void)
{
	if (progress_shown)
		fputs("\r\033[K", stderr);
	progress_shown = 0;
}

void
rs_cli_progress(const char *what, uint64_t done, uint64_t total)
{
	double	now;

	if (quiet || !isatty(STDERR_FILENO))
		return;
	now = rs_time_ms();
	/* 4 updates a second at most, and always the first and the last */
	if (progress_shown && now - progress_last < 250 && done < total)
		return;
	progress_last = now;
	if (total == 0)
		fprintf(stderr, "\r\033[K%s: %s ...", progname,
		    rs_cli_esc_str(what));
	else
		fprintf(stderr, "\r\033[K%s: %s: %3.0f%%", progname,
		    rs_cli_esc_str(what), 100.0 * (double)done /
		    (double)total);
	fflush(stderr);
	progress_shown = 1;
}

void
rs_cli_progress_end(void)
{
	progress_clear();
	fflush(stderr);
}
