/*
 * cli_npy.c - streaming .npy writer (see cli_npy.h).
 *
 * Format 1.0: "\x93NUMPY" 1 0, u16 header length, then the dictionary text
 * padded with spaces and ended by '\n' so that the data starts at a
 * multiple of 64 bytes.  We reserve HEADER_BYTES up front, stream the data
 * after it, and fill the header in at the end when the row count is known.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli_npy.h"

#define HEADER_BYTES	128	/* magic + version + length + dictionary */

int
rs_cli_npy_open(struct rs_cli_npy *w, const char *path, int64_t cols,
    struct rs_err *err)
{
	static const char zeros[HEADER_BYTES];

	memset(w, 0, sizeof(*w));
	w->cols = cols;
	if (rs_out_open(&w->out, path, RS_OUT_SEEKABLE, err) != RS_OK)
		return (-1);
	if (fwrite(zeros, 1, HEADER_BYTES, w->out.fp) != HEADER_BYTES) {
		rs_errf(err, RS_ERR_IO, "write: %s", strerror(errno));
		rs_cli_npy_abort(w);
		return (-1);
	}
	return (0);
}

int
rs_cli_npy_rows(struct rs_cli_npy *w, const float *data, int64_t n)
{
	size_t count = (size_t)(n * w->cols);

	if (fwrite(data, sizeof(float), count, w->out.fp) != count)
		return (-1);
	w->rows += n;
	return (0);
}

static int
write_header(struct rs_cli_npy *w)
{
	char	hdr[HEADER_BYTES];
	int	len;

	memset(hdr, ' ', sizeof(hdr));
	memcpy(hdr, "\x93NUMPY\x01\x00", 8);
	hdr[8] = (char)(HEADER_BYTES - 10);
	hdr[9] = 0;
	len = snprintf(hdr + 10, HEADER_BYTES - 10,
	    "{'descr': '<f4', 'fortran_order': False, 'shape': (%" PRId64
	    ", %" PRId64 "), }", w->rows, w->cols);
	if (len < 0 || len >= HEADER_BYTES - 11) {
		errno = EOVERFLOW;
		return (-1);
	}
	hdr[10 + len] = ' ';		/* snprintf's NUL */
	hdr[HEADER_BYTES - 1] = '\n';
	if (fseek(w->out.fp, 0, SEEK_SET) != 0 ||
	    fwrite(hdr, 1, sizeof(hdr), w->out.fp) != sizeof(hdr))
		return (-1);
	return (0);
}

int
rs_cli_npy_finish(struct rs_cli_npy *w, struct rs_err *err)
{
	if (write_header(w) != 0) {
		rs_errf(err, RS_ERR_IO, "write: %s", strerror(errno));
		rs_cli_npy_abort(w);
		return (-1);
	}
	return (rs_out_commit(&w->out, err) == RS_OK ? 0 : -1);
}

void
rs_cli_npy_abort(struct rs_cli_npy *w)
{
	rs_out_abort(&w->out);
}
