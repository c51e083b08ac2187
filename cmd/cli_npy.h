/*
 * cli_npy.h - write a float32 NumPy .npy file of unknown row count, safely.
 *
 * Rows are streamed to "<path>.tmp.<pid>" next to PATH; rs_cli_npy_finish()
 * writes the final header (shape (rows, cols), '<f4', C order) and renames
 * the file into place, so PATH only ever appears complete.
 * rs_cli_npy_abort() removes the temporary file: a command that fails
 * leaves nothing behind.  Part of the commands, not of librs.
 */
#ifndef RS_CLI_NPY_H
#define RS_CLI_NPY_H

#include <stdint.h>
#include <stdio.h>

struct rs_cli_npy {
	char	*path;		/* final name */
	char	*tmp;		/* the file being written */
	FILE	*fp;
	int64_t	 cols;
	int64_t	 rows;		/* written so far */
};

/* Create the temporary file for rows of COLS floats.  0, or −1 with errno. */
int	rs_cli_npy_open(struct rs_cli_npy *w, const char *path, int64_t cols);

/* Append N rows at DATA (N·cols floats).  0, or −1 with errno. */
int	rs_cli_npy_rows(struct rs_cli_npy *w, const float *data, int64_t n);

/* Header, close, rename to the final name.  0, or −1 with errno (the
 * temporary file is then removed). */
int	rs_cli_npy_finish(struct rs_cli_npy *w);

/* Remove the temporary file, if any (safe to call twice). */
void	rs_cli_npy_abort(struct rs_cli_npy *w);

#endif /* RS_CLI_NPY_H */
