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
#include <unistd.h>

#include "cli_npy.h"

#define HEADER_BYTES	128	/* magic + version + length + dictionary */

int
rs_cli_npy_open(struct rs_cli_npy *w, const char *path, int64_t cols)
{
	static const char zeros[HEADER_BYTES];
	size_t	len = strlen(path) + 32;

	memset(w, 0, sizeof(*w));
	w->cols = cols;
	if ((w->path = strdup(path)) == NULL ||
	    (w->tmp = malloc(len)) == NULL) {
		free(w->path);
		return (-1);
	}
	snprintf(w->tmp, len, "%s.tmp.%ld", path, (long)getpid());
	if ((w->fp = fopen(w->tmp, "wb")) == NULL) {
		int e = errno;

		free(w->tmp);
		free(w->path);
		w->tmp = w->path = NULL;
		errno = e;
		return (-1);
	}
	if (fwrite(zeros, 1, HEADER_BYTES, w->fp) != HEADER_BYTES) {
		rs_cli_npy_abort(w);
		return (-1);
	}
	return (0);
}

int
rs_cli_npy_rows(struct rs_cli_npy *w, const float *data, int64_t n)
{
	size_t count = (size_t)(n * w->cols);

	if (fwrite(data, sizeof(float), count, w->fp) != count)
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
	if (fseek(w->fp, 0, SEEK_SET) != 0 ||
	    fwrite(hdr, 1, sizeof(hdr), w->fp) != sizeof(hdr))
		return (-1);
	return (0);
}

int
rs_cli_npy_finish(struct rs_cli_npy *w)
{
	int	rc;

	rc = write_header(w);
	if (fclose(w->fp) != 0)
		rc = -1;
	w->fp = NULL;
	if (rc == 0 && rename(w->tmp, w->path) != 0)
		rc = -1;
	if (rc != 0) {
		int e = errno;

		rs_cli_npy_abort(w);
		errno = e;
		return (-1);
	}
	free(w->tmp);
	free(w->path);
	w->tmp = w->path = NULL;
	return (0);
}

void
rs_cli_npy_abort(struct rs_cli_npy *w)
{
	if (w->fp != NULL)
		fclose(w->fp);
	w->fp = NULL;
	if (w->tmp != NULL)
		unlink(w->tmp);
	free(w->tmp);
	free(w->path);
	w->tmp = w->path = NULL;
}
