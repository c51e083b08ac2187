/*
 * rs_out.h - open an output file without replacing or following what is
 * already at its path.  Every file a command or librs writes goes through
 * here (the .npy writer of rs-verify, the GGUF writer behind rs-bench
 * --synth).
 *
 * The rules, by what PATH is when rs_out_open() looks at it (stat(2),
 * following a symbolic link at PATH itself):
 *   - nothing, or a regular file: the data go to a new temporary file
 *     "PATH.tmp.<pid>.<n>" in PATH's directory, created with
 *     O_CREAT|O_EXCL|O_NOFOLLOW (a link or file planted at that name is
 *     never followed nor reused: the next <n> is tried), and
 *     rs_out_commit() renames it over PATH, so PATH only ever appears
 *     complete.  A symbolic link at PATH is replaced, not written through.
 *   - a FIFO or a character or block device (/dev/null, /dev/full): opened
 *     and written in place, never replaced; nothing is created or renamed.
 *     Under RS_OUT_SEEKABLE (a writer that goes back to patch a header)
 *     a non-seekable target gets the data staged in an anonymous file and
 *     copied to it at commit.
 *   - anything else (a directory, a socket): refused, RS_ERR_INVALID_ARG.
 *
 * The temporary file is removed by rs_out_abort(), on a failed commit and,
 * once rs_out_trap_signals() was called, when a signal ends the process
 * (SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM:
 * a 17 GB --synth interrupted leaves nothing behind).
 *
 * Lifecycle: rs_out_open, write through ->fp, then rs_out_commit or
 * rs_out_abort (either one; both leave the struct closed).  At most
 * RS_OUT_MAX files may be open at once.  Not thread-safe: open and close
 * outputs from one thread.
 */
#ifndef RS_OUT_H
#define RS_OUT_H

#include <stdio.h>

#include "rs_err.h"

#define RS_OUT_MAX	8	/* outputs open at once (signal cleanup) */
#define RS_OUT_SEEKABLE	0x1	/* ->fp must support fseek */

struct rs_out {
	FILE	*fp;		/* write here; NULL once committed/aborted */
	char	*path;		/* the final name (owned) */
	char	*tmp;		/* the temporary file, NULL when in place */
	int	 target_fd;	/* staged: the FIFO/device to copy to, else -1 */
	int	 slot;		/* signal-cleanup registry slot, or -1 */
};

/*
 * Open an output for PATH following the rules above.  On RS_OK O->fp is
 * ready for writing.  Fails with RS_ERR_INVALID_ARG (a directory or socket
 * at PATH, a path too long), RS_ERR_IO (stat, open, no free temporary
 * name), RS_ERR_LIMIT (RS_OUT_MAX outputs already open) or RS_ERR_NOMEM.
 * Messages do not repeat PATH: the caller prefixes it.
 */
enum rs_status	rs_out_open(struct rs_out *o, const char *path, int flags,
		    struct rs_err *err);

/*
 * Flush and close O->fp and put the data in place (rename, or copy a staged
 * file to its FIFO/device).  Fails with RS_ERR_IO, the temporary file then
 * removed.  O is closed either way.
 */
enum rs_status	rs_out_commit(struct rs_out *o, struct rs_err *err);

/* Close and remove the temporary file, if any.  Safe on a closed O. */
void		rs_out_abort(struct rs_out *o);

/*
 * Install handlers for SIGINT, SIGTERM and SIGHUP (those not ignored) that
 * remove every open output's temporary file, then let the signal take its
 * default action (the exit status still says which signal).  For commands;
 * idempotent.
 */
void		rs_out_trap_signals(void);

/*
 * Remove every open output's temporary file, as those handlers do; for a
 * handler of another signal that ends the process.  Async-signal-safe.
 */
void		rs_out_remove_temps(void);

#endif /* RS_OUT_H */
