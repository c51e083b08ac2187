/*
 * t_util.c - test helpers (see t_util.h).
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "rs_gguf.h"
#include "rs_half.h"
#include "rs_types.h"
#include "t_util.h"

static char *
ring(void)
{
	static char	bufs[8][1024];
	static int	next;

	return (bufs[next++ % 8]);
}

const char *
t_fixture_opt(const char *rel)
{
	const char	*root = getenv("RS_FIXTURES");
	char		*p = ring();

	if (root == NULL || *root == '\0')
		root = "../shared/fixtures";
	snprintf(p, 1024, "%s/%s", root, rel);
	return (access(p, R_OK) == 0 ? p : NULL);
}

const char *
t_fixture(const char *rel)
{
	const char *p = t_fixture_opt(rel);

	if (p == NULL) {
		const char *root = getenv("RS_FIXTURES");
		ck_abort_msg("fixture missing: %s/%s",
		    root != NULL ? root : "../shared/fixtures", rel);
	}
	return (p);
}

const char *
t_bin(const char *cmd)
{
	const char	*root = getenv("RS_BIN");
	char		*p = ring();

	snprintf(p, 1024, "%s/%s", root != NULL ? root : "build/bin", cmd);
	return (p);
}

const char *
t_tmpdir(void)
{
	char	*p = ring();

	snprintf(p, 1024, "/tmp/rs-test-XXXXXX");
	ck_assert_msg(mkdtemp(p) != NULL, "mkdtemp failed");
	return (p);
}

void *
t_read_file(const char *path, size_t *n)
{
	FILE	*fp = fopen(path, "rb");
	char	*buf;
	long	 len;

	ck_assert_msg(fp != NULL, "cannot open %s", path);
	fseek(fp, 0, SEEK_END);
	len = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	buf = malloc((size_t)len + 1);
	ck_assert(buf != NULL);
	ck_assert_msg(fread(buf, 1, (size_t)len, fp) == (size_t)len,
	    "short read on %s", path);
	buf[len] = '\0';
	fclose(fp);
	*n = (size_t)len;
	return (buf);
}

void
t_write_file(const char *path, const void *data, size_t n)
{
	FILE	*fp = fopen(path, "wb");

	ck_assert_msg(fp != NULL, "cannot create %s", path);
	ck_assert(fwrite(data, 1, n, fp) == n);
	ck_assert(fclose(fp) == 0);
}

/* Parse "'shape': (a, b)" and "'descr': '<f4'" out of an .npy header. */
void
t_npy_load(const char *path, struct t_npy *out)
{
	size_t		 n;
	unsigned char	*buf = t_read_file(path, &n);
	const char	*hdr, *p;
	size_t		 hlen, off;
	enum { NPY_F4, NPY_F2, NPY_U2 } dt;

	ck_assert_msg(n >= 10 && memcmp(buf, "\x93NUMPY", 6) == 0,
	    "%s: not an .npy file", path);
	if (buf[6] == 1) {
		hlen = buf[8] | (size_t)buf[9] << 8;
		off = 10;
	} else {
		hlen = buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 |
		    (size_t)buf[11] << 24;
		off = 12;
	}
	ck_assert(off + hlen <= n);
	hdr = (const char *)buf + off;
	ck_assert_msg(strstr(hdr, "'fortran_order': False") != NULL,
	    "%s: fortran order", path);
	if (strstr(hdr, "'<f4'") != NULL)
		dt = NPY_F4;
	else if (strstr(hdr, "'<f2'") != NULL)
		dt = NPY_F2;
	else if (strstr(hdr, "'<u2'") != NULL)
		dt = NPY_U2;
	else
		ck_abort_msg("%s: dtype is not <f4, <f2 or <u2", path);
	p = strstr(hdr, "'shape': (");
	ck_assert(p != NULL);
	p += strlen("'shape': (");
	memset(out, 0, sizeof(*out));
	out->count = 1;
	while (*p != ')' && out->ndim < 4) {
		char *end;
		long long v = strtoll(p, &end, 10);
		ck_assert(end != p);
		out->shape[out->ndim++] = v;
		out->count *= v;
		p = end;
		while (*p == ',' || *p == ' ')
			p++;
	}
	off += hlen;
	ck_assert_msg(n - off == (size_t)out->count * (dt == NPY_F4 ? 4 : 2),
	    "%s: data size mismatch", path);
	out->data = malloc((size_t)out->count * sizeof(float));
	ck_assert(out->data != NULL);
	for (int64_t i = 0; i < out->count; i++) {
		uint16_t h;
		if (dt == NPY_F4) {
			memcpy(&out->data[i], buf + off + 4 * i, 4);
			continue;
		}
		memcpy(&h, buf + off + 2 * i, 2);
		out->data[i] = dt == NPY_F2 ? rs_f16_to_f32(h) : (float)h;
	}
	free(buf);
}

int
t_run(const char *cmd, char **out)
{
	FILE	*fp = popen(cmd, "r");
	char	*buf = NULL;
	size_t	 len = 0, cap = 0, k;
	char	 chunk[4096];
	int	 st;

	ck_assert_msg(fp != NULL, "popen %s", cmd);
	while ((k = fread(chunk, 1, sizeof(chunk), fp)) > 0) {
		if (len + k + 1 > cap) {
			cap = (len + k + 1) * 2;
			buf = realloc(buf, cap);
			ck_assert(buf != NULL);
		}
		memcpy(buf + len, chunk, k);
		len += k;
	}
	st = pclose(fp);
	if (out != NULL) {
		if (buf == NULL)
			buf = calloc(1, 1);
		else
			buf[len] = '\0';
		*out = buf;
	} else
		free(buf);
	return (WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

int
t_run_tty(const char *cmd, char **out)
{
	char	 script[1100], c[1300];

	/* a file, so that CMD needs no second level of quoting */
	snprintf(script, sizeof(script), "%s/cmd.sh", t_tmpdir());
	t_write_file(script, cmd, strlen(cmd));
	snprintf(c, sizeof(c), "script -qec 'sh %s' /dev/null </dev/null",
	    script);
	return (t_run(c, out));
}

const char *
t_nan_copy(const char *rel, const char *tensor)
{
	const char	*src = t_fixture(rel);
	char		*p = ring();
	struct rs_gguf	*g;
	const struct rs_gguf_tensor *t;
	uint64_t	 off;
	uint8_t		*data;
	size_t		 n;

	ck_assert_int_eq(rs_gguf_open(&g, src, NULL), RS_OK);
	t = rs_gguf_find_tensor(g, tensor);
	ck_assert_msg(t != NULL, "%s has no tensor %s", src, tensor);
	off = rs_gguf_data_offset(g) + t->offset;
	data = t_read_file(src, &n);
	if (t->type == RS_TYPE_F32) {
		float nan = NAN;
		memcpy(data + off, &nan, 4);
	} else {
		data[off] = 0x00;	/* f16 0x7e00, little-endian: NaN */
		data[off + 1] = 0x7e;
	}
	rs_gguf_close(g);
	snprintf(p, 1024, "%s/nan.gguf", t_tmpdir());
	t_write_file(p, data, n);
	free(data);
	return (p);
}
