/*
 * rs_gguf_write.c - GGUF v3 writer: the key/value section is serialized as
 * it is set, tensor infos are kept as records, and the data is streamed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rs_gguf.h"
#include "rs_gguf_write.h"
#include "rs_out.h"
#include "rs_types.h"

#define ALIGN	32

struct wtensor {
	char		*name;
	int		 type;
	int		 n_dims;
	int64_t		 ne[RS_GGUF_MAX_DIMS];
	uint64_t	 nbytes;
	uint64_t	 offset;
};

struct rs_gguf_writer {
	unsigned char	*kv;		/* serialized pairs */
	size_t		 kv_len, kv_cap;
	int64_t		 n_kv;
	struct wtensor	*t;
	int64_t		 n_t, cap_t;
	uint64_t	 data_bytes;
};

enum rs_status
rs_gguf_writer_new(struct rs_gguf_writer **out, struct rs_err *err)
{
	if ((*out = calloc(1, sizeof(**out))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	return (RS_OK);
}

void
rs_gguf_writer_free(struct rs_gguf_writer *w)
{
	if (w == NULL)
		return;
	for (int64_t i = 0; i < w->n_t; i++)
		free(w->t[i].name);
	free(w->t);
	free(w->kv);
	free(w);
}

static int
put(struct rs_gguf_writer *w, const void *p, size_t n)
{
	if (w->kv_len + n > w->kv_cap) {
		size_t cap = (w->kv_len + n) * 2 + 4096;
		unsigned char *kv = realloc(w->kv, cap);
		if (kv == NULL)
			return (-1);
		w->kv = kv;
		w->kv_cap = cap;
	}
	memcpy(w->kv + w->kv_len, p, n);
	w->kv_len += n;
	return (0);
}

static int
put_str(struct rs_gguf_writer *w, const char *s, size_t len)
{
	uint64_t l = len;

	return (put(w, &l, 8) || put(w, s, len));
}

static enum rs_status
put_head(struct rs_gguf_writer *w, const char *key, int32_t type)
{
	w->n_kv++;
	if (put_str(w, key, strlen(key)) || put(w, &type, 4))
		return (RS_ERR_NOMEM);
	return (RS_OK);
}

enum rs_status
rs_gguf_writer_u32(struct rs_gguf_writer *w, const char *key, uint32_t v)
{
	if (put_head(w, key, RS_GGUF_U32) || put(w, &v, 4))
		return (RS_ERR_NOMEM);
	return (RS_OK);
}

enum rs_status
rs_gguf_writer_f32(struct rs_gguf_writer *w, const char *key, float v)
{
	if (put_head(w, key, RS_GGUF_F32) || put(w, &v, 4))
		return (RS_ERR_NOMEM);
	return (RS_OK);
}

enum rs_status
rs_gguf_writer_bool(struct rs_gguf_writer *w, const char *key, int v)
{
	uint8_t b = v != 0;

	if (put_head(w, key, RS_GGUF_BOOL) || put(w, &b, 1))
		return (RS_ERR_NOMEM);
	return (RS_OK);
}

enum rs_status
rs_gguf_writer_str(struct rs_gguf_writer *w, const char *key, const char *v,
    size_t len)
{
	if (put_head(w, key, RS_GGUF_STRING) || put_str(w, v, len))
		return (RS_ERR_NOMEM);
	return (RS_OK);
}

enum rs_status
rs_gguf_writer_i32_array(struct rs_gguf_writer *w, const char *key,
    const int32_t *v, size_t n)
{
	int32_t	 et = RS_GGUF_I32;
	uint64_t n64 = n;

	if (put_head(w, key, RS_GGUF_ARRAY) || put(w, &et, 4) ||
	    put(w, &n64, 8) || put(w, v, n * 4))
		return (RS_ERR_NOMEM);
	return (RS_OK);
}

enum rs_status
rs_gguf_writer_str_array(struct rs_gguf_writer *w, const char *key,
    const char *const *v, size_t n)
{
	int32_t	 et = RS_GGUF_STRING;
	uint64_t n64 = n;

	if (put_head(w, key, RS_GGUF_ARRAY) || put(w, &et, 4) ||
	    put(w, &n64, 8))
		return (RS_ERR_NOMEM);
	for (size_t i = 0; i < n; i++)
		if (put_str(w, v[i], strlen(v[i])))
			return (RS_ERR_NOMEM);
	return (RS_OK);
}

enum rs_status
rs_gguf_writer_tensor(struct rs_gguf_writer *w, const char *name, int type,
    int n_dims, const int64_t *ne, struct rs_err *err)
{
	struct wtensor	*t;
	size_t		 row;
	enum rs_status	 st;

	if (n_dims < 1 || n_dims > RS_GGUF_MAX_DIMS)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "tensor '%s': %d dimensions", name, n_dims));
	if ((st = rs_type_row_bytes(type, ne[0], &row, err)) != RS_OK) {
		rs_err_prefix(err, "tensor '%s'", name);
		return (st);
	}
	if (w->n_t == w->cap_t) {
		int64_t cap = w->cap_t * 2 + 64;
		struct wtensor *nt = realloc(w->t, (size_t)cap * sizeof(*nt));
		if (nt == NULL)
			return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
		w->t = nt;
		w->cap_t = cap;
	}
	t = &w->t[w->n_t];
	memset(t, 0, sizeof(*t));
	if ((t->name = strdup(name)) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	t->type = type;
	t->n_dims = n_dims;
	t->nbytes = row;
	for (int d = 0; d < RS_GGUF_MAX_DIMS; d++) {
		t->ne[d] = d < n_dims ? ne[d] : 1;
		if (d > 0)
			t->nbytes *= (uint64_t)t->ne[d];
	}
	t->offset = w->data_bytes;
	w->data_bytes += (t->nbytes + ALIGN - 1) / ALIGN * ALIGN;
	w->n_t++;
	return (RS_OK);
}

uint64_t
rs_gguf_writer_data_bytes(const struct rs_gguf_writer *w)
{
	return (w->data_bytes);
}

static enum rs_status
write_header(struct rs_gguf_writer *w, FILE *fp)
{
	static const unsigned char zeros[ALIGN];
	uint32_t version = 3;
	uint64_t pos;
	int	 ok;

	ok = fwrite("GGUF", 1, 4, fp) == 4 && fwrite(&version, 4, 1, fp) == 1 &&
	    fwrite(&w->n_t, 8, 1, fp) == 1 && fwrite(&w->n_kv, 8, 1, fp) == 1 &&
	    fwrite(w->kv, 1, w->kv_len, fp) == w->kv_len;
	pos = 24 + w->kv_len;
	for (int64_t i = 0; ok && i < w->n_t; i++) {
		const struct wtensor *t = &w->t[i];
		uint64_t len = strlen(t->name);
		uint32_t nd = (uint32_t)t->n_dims;
		int32_t	 ty = t->type;
		ok = fwrite(&len, 8, 1, fp) == 1 &&
		    fwrite(t->name, 1, len, fp) == len &&
		    fwrite(&nd, 4, 1, fp) == 1 &&
		    fwrite(t->ne, 8, nd, fp) == nd &&
		    fwrite(&ty, 4, 1, fp) == 1 &&
		    fwrite(&t->offset, 8, 1, fp) == 1;
		pos += 8 + len + 4 + 8 * nd + 4 + 8;
	}
	if (ok && pos % ALIGN != 0)
		ok = fwrite(zeros, 1, ALIGN - pos % ALIGN, fp) ==
		    ALIGN - pos % ALIGN;
	return (ok ? RS_OK : RS_ERR_IO);
}

static enum rs_status
write_data(struct rs_gguf_writer *w, FILE *fp, rs_gguf_fill_fn fill,
    void *ctx, struct rs_err *err)
{
	static const unsigned char zeros[ALIGN];
	unsigned char	*buf = NULL;
	size_t		 cap = 0;
	enum rs_status	 st = RS_OK;

	for (int64_t i = 0; i < w->n_t && st == RS_OK; i++) {
		const struct wtensor *t = &w->t[i];
		size_t pad = (ALIGN - t->nbytes % ALIGN) % ALIGN;
		if (t->nbytes > cap) {
			free(buf);
			cap = t->nbytes;
			if ((buf = malloc(cap)) == NULL)
				return (rs_errf(err, RS_ERR_NOMEM,
				    "out of memory for tensor '%s'", t->name));
		}
		if ((st = fill(ctx, i, buf, t->nbytes, err)) != RS_OK)
			break;
		if (fwrite(buf, 1, t->nbytes, fp) != t->nbytes ||
		    fwrite(zeros, 1, pad, fp) != pad)
			st = rs_errf(err, RS_ERR_IO, "write: %s",
			    strerror(errno));
	}
	free(buf);
	return (st);
}

enum rs_status
rs_gguf_writer_write(struct rs_gguf_writer *w, const char *path,
    rs_gguf_fill_fn fill, void *ctx, struct rs_err *err)
{
	struct rs_out	 out;
	enum rs_status	 st;

	if ((st = rs_out_open(&out, path, 0, err)) != RS_OK)
		return (st);
	if ((st = write_header(w, out.fp)) != RS_OK)
		rs_errf(err, st, "write: %s", strerror(errno));
	else
		st = write_data(w, out.fp, fill, ctx, err);
	if (st != RS_OK) {
		rs_out_abort(&out);
		return (st);
	}
	return (rs_out_commit(&out, err));
}
