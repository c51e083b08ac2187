/*
 * rs_out.c - output files that never replace or follow what is at their
 * path (see rs_out.h for the rules).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rs_out.h"

#define TMP_TRIES	100	/* PATH.tmp.<pid>.0 .. 99 */

/*
 * Temporary files to remove if a signal ends the process.  A slot is
 * published only once its string is complete and cleared before the
 * string is freed, so the handler never sees a half-written name.
 */
static char *volatile	reg[RS_OUT_MAX];
static char		reg_empty[] = "";	/* a slot taken, no name yet */

static int
reg_add(char *tmp)
{
	for (int i = 0; i < RS_OUT_MAX; i++)
		if (reg[i] == NULL) {
			reg[i] = tmp;
			return (i);
		}
	return (-1);
}

void
rs_out_remove_temps(void)
{
	for (int i = 0; i < RS_OUT_MAX; i++)
		if (reg[i] != NULL)
			(void)unlink(reg[i]);	/* async-signal-safe */
}

static void
on_signal(int sig)
{
	int e = errno;

	rs_out_remove_temps();
	errno = e;
	signal(sig, SIG_DFL);
	raise(sig);
}

void
rs_out_trap_signals(void)
{
	/* every signal a user or a pipe sends that ends the process by
	   default (SIGPIPE: `| head -1` left a .npy.tmp behind) */
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE,
	    SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM };
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		/* nohup and friends ignore a signal on purpose: keep that */
		if (sigaction(sigs[i], NULL, &old) == 0 &&
		    old.sa_handler != SIG_IGN)
			sigaction(sigs[i], &sa, NULL);
	}
	/* a write past the file-size limit (ulimit -f) fails with EFBIG
	   and takes the error path, which removes the temporary file; the
	   signal would have ended the process with it left behind */
	signal(SIGXFSZ, SIG_IGN);
}

static void
close_out(struct rs_out *o)
{
	if (o->slot >= 0)
		reg[o->slot] = NULL;
	o->slot = -1;
	if (o->fp != NULL)
		fclose(o->fp);
	o->fp = NULL;
	if (o->target_fd >= 0)
		close(o->target_fd);
	o->target_fd = -1;
	free(o->tmp);
	free(o->path);
	o->tmp = o->path = NULL;
}

/* A FIFO or device at PATH: write it where it is. */
static enum rs_status
open_in_place(struct rs_out *o, int flags, struct rs_err *err)
{
	int fd;

	if ((fd = open(o->path, O_WRONLY | O_NOCTTY | O_CLOEXEC)) == -1)
		return (rs_errf(err, RS_ERR_IO, "%s", strerror(errno)));
	if ((flags & RS_OUT_SEEKABLE) && lseek(fd, 0, SEEK_CUR) == -1) {
		/* a FIFO: stage, copy at commit */
		o->target_fd = fd;
		if ((o->fp = tmpfile()) == NULL)
			return (rs_errf(err, RS_ERR_IO, "staging file: %s",
			    strerror(errno)));
		return (RS_OK);
	}
	if ((o->fp = fdopen(fd, "wb")) == NULL) {
		close(fd);
		return (rs_errf(err, RS_ERR_IO, "%s", strerror(errno)));
	}
	return (RS_OK);
}

/* Nothing or a regular file at PATH: a fresh temporary file beside it. */
static enum rs_status
open_tmp(struct rs_out *o, struct rs_err *err)
{
	size_t	len = strlen(o->path) + 48;
	int	fd = -1, failed = 0;

	if ((o->tmp = malloc(len)) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	/*
	 * The name is published before the file exists: a signal right
	 * after open() must find it (it did not, and SIGINT in that window
	 * left the file, check_out synth_interrupted).  The slot holds ""
	 * while the name is rewritten.
	 */
	if ((o->slot = reg_add(reg_empty)) < 0)
		return (rs_errf(err, RS_ERR_LIMIT, "more than %d outputs open",
		    RS_OUT_MAX));
	for (int n = 0; n < TMP_TRIES && fd == -1; n++) {
		reg[o->slot] = reg_empty;
		snprintf(o->tmp, len, "%s.tmp.%ld.%d", o->path,
		    (long)getpid(), n);
		reg[o->slot] = o->tmp;
		fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0666);
		if (fd == -1 && errno != EEXIST) {
			(void)rs_errf(err, RS_ERR_IO, "%s: %s", o->tmp,
			    strerror(errno));
			failed = 1;
			break;
		}
	}
	if (fd == -1) {
		if (!failed)
			(void)rs_errf(err, RS_ERR_IO, "%s: %d temporary names "
			    "taken", o->tmp, TMP_TRIES);
		/* not ours: nothing to remove, here or in a handler */
		reg[o->slot] = NULL;
		o->slot = -1;
		free(o->tmp);
		o->tmp = NULL;
		return (RS_ERR_IO);
	}
	if ((o->fp = fdopen(fd, "wb")) == NULL) {
		close(fd);
		return (rs_errf(err, RS_ERR_IO, "%s", strerror(errno)));
	}
	return (RS_OK);
}

enum rs_status
rs_out_open(struct rs_out *o, const char *path, int flags,
    struct rs_err *err)
{
	struct stat	 sb;
	enum rs_status	 st;

	memset(o, 0, sizeof(*o));
	o->target_fd = o->slot = -1;
	if (*path == '\0')
		return (rs_errf(err, RS_ERR_INVALID_ARG, "empty file name"));
	if ((o->path = strdup(path)) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	if (stat(path, &sb) == -1) {
		if (errno != ENOENT) {
			st = rs_errf(err, RS_ERR_IO, "%s", strerror(errno));
			close_out(o);
			return (st);
		}
		st = open_tmp(o, err);
	} else if (S_ISREG(sb.st_mode))
		st = open_tmp(o, err);
	else if (S_ISFIFO(sb.st_mode) || S_ISCHR(sb.st_mode) ||
	    S_ISBLK(sb.st_mode))
		st = open_in_place(o, flags, err);
	else
		st = rs_errf(err, RS_ERR_INVALID_ARG, "%s, not a file, FIFO "
		    "or device", S_ISDIR(sb.st_mode) ? "a directory" :
		    "a socket");
	if (st != RS_OK)
		rs_out_abort(o);
	return (st);
}

/* Copy the staged data to the FIFO/device. */
static int
copy_staged(struct rs_out *o)
{
	char	buf[65536];
	size_t	n;

	if (fseek(o->fp, 0, SEEK_SET) != 0)
		return (-1);
	while ((n = fread(buf, 1, sizeof(buf), o->fp)) > 0)
		for (size_t off = 0; off < n; ) {
			ssize_t w = write(o->target_fd, buf + off, n - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return (-1);
			off += (size_t)w;
		}
	return (ferror(o->fp) ? -1 : 0);
}

enum rs_status
rs_out_commit(struct rs_out *o, struct rs_err *err)
{
	enum rs_status	st = RS_OK;
	int		rc;

	rc = fflush(o->fp) != 0 || ferror(o->fp);
	if (rc == 0 && o->target_fd >= 0)
		rc = copy_staged(o);
	if (rc == 0 && o->target_fd >= 0 && close(o->target_fd) != 0)
		rc = -1;
	o->target_fd = -1;
	if (fclose(o->fp) != 0)
		rc = -1;
	o->fp = NULL;
	if (rc != 0)
		st = rs_errf(err, RS_ERR_IO, "write: %s", strerror(errno));
	else if (o->tmp != NULL && rename(o->tmp, o->path) != 0)
		st = rs_errf(err, RS_ERR_IO, "rename %s: %s", o->tmp,
		    strerror(errno));
	else if (o->tmp != NULL) {
		if (o->slot >= 0)
			reg[o->slot] = NULL;
		o->slot = -1;
		free(o->tmp);
		o->tmp = NULL;
	}
	rs_out_abort(o);
	return (st);
}

void
rs_out_abort(struct rs_out *o)
{
	if (o->tmp != NULL) {
		if (o->fp != NULL)
			fclose(o->fp);
		o->fp = NULL;
		(void)unlink(o->tmp);
	}
	close_out(o);
}
