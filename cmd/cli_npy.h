/*
 * cli_npy.h - write a float32 NumPy .npy file of unknown row count, safely.
 *
 * Rows are streamed through an rs_out (rs_out.h: a temporary file
 * renamed over PATH, or a FIFO/device written in place, never replaced);
 * rs_cli_npy_finish() writes the final header (shape (rows, cols), '<f4',
 * C order) and commits, so a regular PATH only ever appears complete.
 * rs_cli_npy_abort() removes the temporary file: a command that fails
 * leaves nothing behind.  Part of the commands, not of librs.
 */
#ifndef RS_CLI_NPY_H
#define RS_CLI_NPY_H

#include <stdint.h>
#include <stdio.h>

#include "rs_out.h"

struct rs_cli_npy {
	struct rs_out out;	/* the file being written */
	int64_t	 cols;
	int64_t	 rows;		/* written so far */
};

/* Open PATH for rows of COLS floats.  0, or −1 with ERR filled. */
int	rs_cli_npy_open(struct rs_cli_npy *w, const char *path, int64_t cols,
	    struct rs_err *err);

/* Append N rows at DATA (N·cols floats).  0, or −1 with errno. */
int	rs_cli_npy_rows(struct rs_cli_npy *w, const float *data, int64_t n);

/* Header, close, put in place.  0, or −1 with ERR filled (the temporary
 * file is then removed). */
int	rs_cli_npy_finish(struct rs_cli_npy *w, struct rs_err *err);

/* Remove the temporary file, if any (safe to call twice). */
void	rs_cli_npy_abort(struct rs_cli_npy *w);

#endif /* RS_CLI_NPY_H */
