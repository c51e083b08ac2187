/*
 * slurp.h - a whole file into memory, for the two small build tools of the
 * CUDA 12.9 tree (fatbinary.c, nvrtc-ptx.c), which are compiled alone,
 * without the project's library.
 */
#ifndef RS_SLURP_H
#define RS_SLURP_H

#include <stdio.h>
#include <stdlib.h>

/*
 * PATH's contents, NUL-terminated, with *SIZE (if not NULL) excluding the
 * NUL; NULL after a message on stderr.
 */
static char *
slurp(const char *path, size_t *size)
{
	FILE	*f;
	char	*buf;
	long	 n;

	if ((f = fopen(path, "rb")) == NULL || fseek(f, 0, SEEK_END) != 0 ||
	    (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
	    (buf = malloc((size_t)n + 1)) == NULL) {
		perror(path);
		if (f != NULL)
			fclose(f);
		return (NULL);
	}
	if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
		perror(path);
		free(buf);
		fclose(f);
		return (NULL);
	}
	fclose(f);
	buf[n] = '\0';
	if (size != NULL)
		*size = (size_t)n;
	return (buf);
}

#endif /* RS_SLURP_H */
