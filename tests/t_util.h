/*
 * t_util.h - helpers shared by the Check suites: fixture paths, whole-file
 * reads, NumPy .npy loading and the fixtures' error metric.
 */
#ifndef T_UTIL_H
#define T_UTIL_H

#include <stddef.h>
#include <stdint.h>

/*
 * Full path of fixture REL ("tiny/model-f16.gguf") under $RS_FIXTURES
 * (default ../shared/fixtures).  Fails the running test, naming the path,
 * when the file does not exist.  Static buffer, rotating over 8 calls.
 */
const char	*t_fixture(const char *rel);

/* The same without failing: NULL when absent (for optional fixtures). */
const char	*t_fixture_opt(const char *rel);

/* Whole file into a malloc'd buffer (*N bytes); fails the test on error. */
void		*t_read_file(const char *path, size_t *n);

/* Path of a built command ("rs-inspect") under $RS_BIN (default build/bin). */
const char	*t_bin(const char *cmd);

/* A fresh temporary directory for this test (removed by the OS later). */
const char	*t_tmpdir(void);

/* Write N bytes to PATH; fails the test on error. */
void		 t_write_file(const char *path, const void *data, size_t n);

/*
 * A copy of fixture REL in a fresh temporary directory with one value of
 * tensor TENSOR made NaN: element 0 of an F32 or F16 tensor, or the f16
 * scale d of block 0 of a quantized tensor whose block starts with it
 * (q8_0, q4_k, ...).  Returns the copy's path (rotating static buffer).
 */
const char	*t_nan_copy(const char *rel, const char *tensor);

/*
 * A NumPy .npy array as float32 (f4, f2 or u2 on disk: u2 holds token ids,
 * exact as floats), C order.  Fails the test on a malformed file.  Caller
 * frees data.
 */
struct t_npy {
	float	*data;
	int	 ndim;
	int64_t	 shape[4];
	int64_t	 count;
};
void		 t_npy_load(const char *path, struct t_npy *out);

/*
 * Run the shell command CMD, capturing stdout into *OUT (malloc'd,
 * NUL-terminated; may be NULL to discard) and returning the exit status
 * (-1 if it did not exit normally).
 */
int		 t_run(const char *cmd, char **out);

/*
 * t_run with CMD's standard input, output and error on a pseudo-terminal
 * (script(1)): what a user at a terminal sees, carriage returns and escape
 * sequences included, all in *OUT.
 */
int		 t_run_tty(const char *cmd, char **out);

#endif /* T_UTIL_H */
