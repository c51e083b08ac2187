/*
 * rs_gguf.c - GGUF parser: one forward pass over the header with a bounds-
 * checked cursor, then a pass over the tensor infos against the data section.
 * Nothing is trusted: every length is compared with the bytes left before it
 * is used, and every product is checked for overflow.  Layout: rs_gguf.h.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rs_gguf.h"
#include "rs_utf8.h"
#include "rs_types.h"

#define GGUF_DEFAULT_ALIGNMENT	32

struct rs_gguf {
	const uint8_t		*base;
	uint64_t		 size;
	int			 mapped;	/* base is our mmap */
	uint32_t		 version;
	uint32_t		 alignment;
	uint64_t		 data_off;
	int64_t			 n_kv;
	struct rs_gguf_kv	*kv;
	int64_t			 n_tensors;
	struct rs_gguf_tensor	*tensors;
	/* the same by name (by_key, by_name): lookups and the duplicate
	   check in O(log n), where a linear scan made a hostile file of
	   200,000 keys take 36 s to open */
	const struct rs_gguf_kv	**by_key;
	const struct rs_gguf_tensor **by_name;
};

/* A read position; every read checks the bytes left. */
struct cursor {
	const uint8_t	*base;
	uint64_t	 size;
	uint64_t	 pos;
};

/* A key or tensor name from the file as a message quotes it (rs_utf8.h). */
static const char *
quoted(const char *name, char q[RS_UTF8_QUOTE_SIZE])
{
	return (rs_utf8_quote(name, strlen(name), q));
}

static const uint8_t vtype_size[RS_GGUF_VTYPE_COUNT] = {
	[RS_GGUF_U8] = 1, [RS_GGUF_I8] = 1, [RS_GGUF_U16] = 2,
	[RS_GGUF_I16] = 2, [RS_GGUF_U32] = 4, [RS_GGUF_I32] = 4,
	[RS_GGUF_F32] = 4, [RS_GGUF_BOOL] = 1, [RS_GGUF_U64] = 8,
	[RS_GGUF_I64] = 8, [RS_GGUF_F64] = 8,
};

static const char *const vtype_names[RS_GGUF_VTYPE_COUNT] = {
	"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string",
	"array", "u64", "i64", "f64",
};

static enum rs_status parse(struct rs_gguf *, struct rs_err *);

const char *
rs_gguf_vtype_name(enum rs_gguf_vtype t)
{
	if ((unsigned)t >= RS_GGUF_VTYPE_COUNT)
		return ("invalid");
	return (vtype_names[t]);
}

/* ---- cursor ---- */

static uint64_t
left(const struct cursor *c)
{
	return (c->size - c->pos);
}

static enum rs_status
take(struct cursor *c, void *dst, uint64_t n, const char *what,
    struct rs_err *err)
{
	if (left(c) < n)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "truncated at offset %llu: %s needs %llu bytes, %llu left",
		    (unsigned long long)c->pos, what, (unsigned long long)n,
		    (unsigned long long)left(c)));
	if (dst != NULL)
		memcpy(dst, c->base + c->pos, n);
	c->pos += n;
	return (RS_OK);
}

static enum rs_status
take_str(struct cursor *c, struct rs_gguf_str *s, const char *what,
    struct rs_err *err)
{
	uint64_t	at = c->pos, len = 0;
	enum rs_status	st;

	if ((st = take(c, &len, 8, what, err)) != RS_OK)
		return (st);
	if (len > left(c))
		return (rs_errf(err, RS_ERR_FORMAT,
		    "%s at offset %llu: length %llu exceeds the %llu bytes left",
		    what, (unsigned long long)at, (unsigned long long)len,
		    (unsigned long long)left(c)));
	s->ptr = (const char *)c->base + c->pos;
	s->len = len;
	c->pos += len;
	return (RS_OK);
}

static char *
dup_str(const struct rs_gguf_str *s)
{
	char	*p = malloc(s->len + 1);

	if (p != NULL) {
		memcpy(p, s->ptr, s->len);
		p[s->len] = '\0';
	}
	return (p);
}

/* ---- open / close ---- */

enum rs_status
rs_gguf_open_mem(struct rs_gguf **out, const void *data, size_t size,
    struct rs_err *err)
{
	struct rs_gguf	*g;
	enum rs_status	 st;

	if ((g = calloc(1, sizeof(*g))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	g->base = data;
	g->size = size;
	if ((st = parse(g, err)) != RS_OK) {
		rs_gguf_close(g);
		return (st);
	}
	*out = g;
	return (RS_OK);
}

/*
 * The live file mappings, for rs_gguf_mapped_at() in a signal handler: a
 * slot's size is published before its base and its base cleared before
 * the mapping goes, so the handler never pairs a base with a stale size.
 */
static struct {
	const char *volatile	 base;
	volatile size_t		 size;
} maps[RS_GGUF_MAX_MAPS];
static pthread_mutex_t	maps_lock = PTHREAD_MUTEX_INITIALIZER;

static void
maps_add(const void *base, size_t size)
{
	pthread_mutex_lock(&maps_lock);
	for (int i = 0; i < RS_GGUF_MAX_MAPS; i++)
		if (maps[i].base == NULL) {
			maps[i].size = size;
			__atomic_store_n(&maps[i].base, (const char *)base,
			    __ATOMIC_RELEASE);
			break;
		}
	pthread_mutex_unlock(&maps_lock);
}

static void
maps_remove(const void *base)
{
	pthread_mutex_lock(&maps_lock);
	for (int i = 0; i < RS_GGUF_MAX_MAPS; i++)
		if (maps[i].base == base)
			__atomic_store_n(&maps[i].base, NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&maps_lock);
}

int
rs_gguf_mapped_at(const void *addr)
{
	const char *a = addr;

	for (int i = 0; i < RS_GGUF_MAX_MAPS; i++) {
		const char *b = __atomic_load_n(&maps[i].base,
		    __ATOMIC_ACQUIRE);

		if (b != NULL && a >= b && (size_t)(a - b) < maps[i].size)
			return (1);
	}
	return (0);
}

enum rs_status
rs_gguf_open(struct rs_gguf **out, const char *path, struct rs_err *err)
{
	struct stat	 sb;
	struct rs_gguf	*g;
	void		*p;
	enum rs_status	 st;
	int		 fd;

	/* O_NONBLOCK: opening a FIFO would otherwise wait for a writer
	   before the check below could refuse it (no effect on a file) */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1)
		return (rs_errf(err, RS_ERR_IO, "%s", strerror(errno)));
	if (fstat(fd, &sb) == -1) {
		st = rs_errf(err, RS_ERR_IO, "stat: %s", strerror(errno));
		close(fd);
		return (st);
	}
	if (!S_ISREG(sb.st_mode)) {
		close(fd);
		return (rs_errf(err, RS_ERR_IO, "not a regular file"));
	}
	if (sb.st_size < 4) {
		close(fd);
		return (rs_errf(err, RS_ERR_FORMAT,
		    "file of %lld bytes is too short for a GGUF header",
		    (long long)sb.st_size));
	}
	p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return (rs_errf(err, RS_ERR_IO, "mmap: %s", strerror(errno)));
	if ((st = rs_gguf_open_mem(&g, p, (size_t)sb.st_size, err)) != RS_OK) {
		munmap(p, (size_t)sb.st_size);
		return (st);
	}
	g->mapped = 1;
	maps_add(p, (size_t)sb.st_size);
	*out = g;
	return (RS_OK);
}

void
rs_gguf_close(struct rs_gguf *g)
{
	if (g == NULL)
		return;
	for (int64_t i = 0; g->kv != NULL && i < g->n_kv; i++) {
		free((char *)g->kv[i].key);
		free((void *)g->kv[i].strs);
	}
	for (int64_t i = 0; g->tensors != NULL && i < g->n_tensors; i++)
		free((char *)g->tensors[i].name);
	free(g->kv);
	free(g->tensors);
	free(g->by_key);
	free(g->by_name);
	if (g->mapped) {
		maps_remove(g->base);
		munmap((void *)g->base, g->size);
	}
	free(g);
}

/* ---- metadata ---- */

/* Parse the value of KV (type already read) at the cursor. */
static enum rs_status
parse_value(struct cursor *c, struct rs_gguf_kv *kv, struct rs_err *err)
{
	enum rs_status	st;
	int32_t		et = 0;

	kv->file_off = c->pos;
	if (kv->type == RS_GGUF_STRING) {
		struct rs_gguf_str s;
		if ((st = take_str(c, &s, "string value", err)) != RS_OK)
			return (st);
		kv->data = s.ptr - 8;	/* points at the length prefix */
		return (RS_OK);
	}
	if (kv->type != RS_GGUF_ARRAY) {
		kv->data = c->base + c->pos;
		return (take(c, NULL, vtype_size[kv->type], "value", err));
	}
	if ((st = take(c, &et, 4, "array type", err)) != RS_OK ||
	    (st = take(c, &kv->arr_len, 8, "array length", err)) != RS_OK)
		return (st);
	if (et < 0 || et >= RS_GGUF_VTYPE_COUNT)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "array at offset %llu: invalid element type %d",
		    (unsigned long long)kv->file_off, et));
	if (et == RS_GGUF_ARRAY)
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "array at offset %llu: nested arrays are not supported",
		    (unsigned long long)kv->file_off));
	kv->arr_type = (enum rs_gguf_vtype)et;
	kv->data = c->base + c->pos;
	if (et != RS_GGUF_STRING) {
		uint64_t esz = vtype_size[et];
		if (kv->arr_len > left(c) / esz)
			return (rs_errf(err, RS_ERR_FORMAT,
			    "array at offset %llu: %llu elements of %s exceed "
			    "the %llu bytes left", (unsigned long long)kv->file_off,
			    (unsigned long long)kv->arr_len, vtype_names[et],
			    (unsigned long long)left(c)));
		c->pos += kv->arr_len * esz;
		return (RS_OK);
	}
	/* each string needs at least its 8-byte length */
	if (kv->arr_len > left(c) / 8)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "array at offset %llu: %llu strings exceed the %llu bytes "
		    "left", (unsigned long long)kv->file_off,
		    (unsigned long long)kv->arr_len,
		    (unsigned long long)left(c)));
	struct rs_gguf_str *strs = malloc((kv->arr_len ? kv->arr_len : 1) *
	    sizeof(*strs));
	if (strs == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	kv->strs = strs;
	for (uint64_t i = 0; i < kv->arr_len; i++)
		if ((st = take_str(c, &strs[i], "array string", err)) != RS_OK)
			return (st);
	return (RS_OK);
}

/* qsort orders: by name, then by position (the later one a duplicate) */
static int
cmp_kv(const void *a, const void *b)
{
	const struct rs_gguf_kv *x = *(const struct rs_gguf_kv *const *)a;
	const struct rs_gguf_kv *y = *(const struct rs_gguf_kv *const *)b;
	const int c = strcmp(x->key, y->key);

	return (c != 0 ? c : (x > y) - (x < y));
}

static int
cmp_tensor(const void *a, const void *b)
{
	const struct rs_gguf_tensor *x = *(const struct rs_gguf_tensor *const *)a;
	const struct rs_gguf_tensor *y = *(const struct rs_gguf_tensor *const *)b;
	const int c = strcmp(x->name, y->name);

	return (c != 0 ? c : (x > y) - (x < y));
}

/* g->by_key: the keys sorted; a key twice is a format error. */
static enum rs_status
index_kvs(struct rs_gguf *g, struct rs_err *err)
{
	char	q[RS_UTF8_QUOTE_SIZE];

	if ((g->by_key = calloc((size_t)g->n_kv + 1, sizeof(*g->by_key))) ==
	    NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	for (int64_t i = 0; i < g->n_kv; i++)
		g->by_key[i] = &g->kv[i];
	qsort(g->by_key, (size_t)g->n_kv, sizeof(*g->by_key), cmp_kv);
	for (int64_t i = 1; i < g->n_kv; i++)
		if (strcmp(g->by_key[i - 1]->key, g->by_key[i]->key) == 0)
			return (rs_errf(err, RS_ERR_FORMAT, "duplicate key '%s' "
			    "(pairs %lld and %lld)",
			    quoted(g->by_key[i]->key, q),
			    (long long)(g->by_key[i - 1] - g->kv),
			    (long long)(g->by_key[i] - g->kv)));
	return (RS_OK);
}

/* g->by_name: the tensor names sorted; a name twice is a format error. */
static enum rs_status
index_tensors(struct rs_gguf *g, struct rs_err *err)
{
	char	q[RS_UTF8_QUOTE_SIZE];

	if ((g->by_name = calloc((size_t)g->n_tensors + 1,
	    sizeof(*g->by_name))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	for (int64_t i = 0; i < g->n_tensors; i++)
		g->by_name[i] = &g->tensors[i];
	qsort(g->by_name, (size_t)g->n_tensors, sizeof(*g->by_name),
	    cmp_tensor);
	for (int64_t i = 1; i < g->n_tensors; i++)
		if (strcmp(g->by_name[i - 1]->name, g->by_name[i]->name) == 0)
			return (rs_errf(err, RS_ERR_FORMAT,
			    "duplicate tensor name '%s'",
			    quoted(g->by_name[i]->name, q)));
	return (RS_OK);
}

static enum rs_status
parse_kvs(struct rs_gguf *g, struct cursor *c, struct rs_err *err)
{
	enum rs_status	st;
	char		q[RS_UTF8_QUOTE_SIZE];

	/* a pair takes at least 8 (key length) + 4 (type) + 1 bytes */
	if ((uint64_t)g->n_kv > left(c) / 13)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "n_kv %lld cannot fit in the %llu bytes left",
		    (long long)g->n_kv, (unsigned long long)left(c)));
	if ((g->kv = calloc((size_t)g->n_kv + 1, sizeof(*g->kv))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	for (int64_t i = 0; i < g->n_kv; i++) {
		struct rs_gguf_kv *kv = &g->kv[i];
		struct rs_gguf_str key;
		uint64_t at = c->pos;
		int32_t	 t = 0;

		if ((st = take_str(c, &key, "key", err)) != RS_OK)
			return (st);
		if ((kv->key = dup_str(&key)) == NULL)
			return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
		if (strlen(kv->key) != key.len || key.len == 0)
			return (rs_errf(err, RS_ERR_FORMAT,
			    "key at offset %llu is empty or holds a NUL byte",
			    (unsigned long long)at));
		if ((st = take(c, &t, 4, "value type", err)) != RS_OK)
			return (st);
		if (t < 0 || t >= RS_GGUF_VTYPE_COUNT)
			return (rs_errf(err, RS_ERR_FORMAT,
			    "key '%s': invalid value type %d at offset %llu",
			    quoted(kv->key, q), t,
			    (unsigned long long)(c->pos - 4)));
		kv->type = (enum rs_gguf_vtype)t;
		if ((st = parse_value(c, kv, err)) != RS_OK) {
			rs_err_prefix(err, "key '%s'", quoted(kv->key, q));
			return (st);
		}
	}
	return (index_kvs(g, err));
}

/* ---- tensor infos ---- */

static enum rs_status
parse_tensor_info(struct rs_gguf *g, struct cursor *c,
    struct rs_gguf_tensor *t, struct rs_err *err)
{
	struct rs_gguf_str name;
	uint64_t	at = c->pos;
	uint32_t	nd = 0;
	int32_t		type = 0;
	enum rs_status	st;
	char		q[RS_UTF8_QUOTE_SIZE];

	if ((st = take_str(c, &name, "tensor name", err)) != RS_OK)
		return (st);
	if ((t->name = dup_str(&name)) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	if (strlen(t->name) != name.len || name.len == 0)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "tensor name at offset %llu is empty or holds a NUL byte",
		    (unsigned long long)at));
	if ((st = take(c, &nd, 4, "n_dims", err)) != RS_OK)
		goto fail;
	if (nd < 1 || nd > RS_GGUF_MAX_DIMS) {
		st = rs_errf(err, RS_ERR_FORMAT,
		    "n_dims is %u but must be in [1, %d]", nd, RS_GGUF_MAX_DIMS);
		goto fail;
	}
	t->n_dims = (int)nd;
	for (int i = 0; i < RS_GGUF_MAX_DIMS; i++)
		t->ne[i] = 1;
	for (uint32_t i = 0; i < nd; i++) {
		if ((st = take(c, &t->ne[i], 8, "dimension", err)) != RS_OK)
			goto fail;
		if (t->ne[i] < 0) {
			st = rs_errf(err, RS_ERR_FORMAT,
			    "dimension %u is negative (%lld)", i,
			    (long long)t->ne[i]);
			goto fail;
		}
	}
	if ((st = take(c, &type, 4, "type", err)) != RS_OK ||
	    (st = take(c, &t->offset, 8, "offset", err)) != RS_OK)
		goto fail;
	if (rs_type_traits(type) == NULL) {
		st = rs_errf(err, RS_ERR_UNSUPPORTED,
		    "unknown ggml type %d", type);
		goto fail;
	}
	t->type = type;
	if (t->offset % g->alignment != 0) {
		st = rs_errf(err, RS_ERR_FORMAT,
		    "offset %llu is not a multiple of the alignment %u",
		    (unsigned long long)t->offset, g->alignment);
		goto fail;
	}
	return (RS_OK);
fail:
	rs_err_prefix(err, "tensor '%s' (info at offset %llu)",
	    quoted(t->name, q), (unsigned long long)at);
	return (st);
}

/* Byte size of T, with every product checked against overflow. */
static enum rs_status
tensor_bytes(struct rs_gguf_tensor *t, struct rs_err *err)
{
	size_t	 row;
	uint64_t rows = 1;
	enum rs_status st;

	if ((st = rs_type_row_bytes(t->type, t->ne[0], &row, err)) != RS_OK)
		return (st);
	for (int i = 1; i < RS_GGUF_MAX_DIMS; i++) {
		if (t->ne[i] != 0 && rows > UINT64_MAX / (uint64_t)t->ne[i])
			goto overflow;
		rows *= (uint64_t)t->ne[i];
	}
	if (row != 0 && rows > UINT64_MAX / row)
		goto overflow;
	t->nbytes = rows * row;
	return (RS_OK);
overflow:
	return (rs_errf(err, RS_ERR_FORMAT, "shape overflows 64-bit size"));
}

static int
cmp_offset(const void *a, const void *b)
{
	const struct rs_gguf_tensor *x = *(const struct rs_gguf_tensor *const *)a;
	const struct rs_gguf_tensor *y = *(const struct rs_gguf_tensor *const *)b;

	return (x->offset < y->offset ? -1 : x->offset > y->offset);
}

/* Every tensor inside the data section, none overlapping another. */
static enum rs_status
check_layout(struct rs_gguf *g, struct rs_err *err)
{
	struct rs_gguf_tensor **by_off;
	uint64_t	data_size = g->size - g->data_off;
	enum rs_status	st = RS_OK;
	char		q[RS_UTF8_QUOTE_SIZE], q2[RS_UTF8_QUOTE_SIZE];

	for (int64_t i = 0; i < g->n_tensors; i++) {
		struct rs_gguf_tensor *t = &g->tensors[i];
		if ((st = tensor_bytes(t, err)) != RS_OK) {
			rs_err_prefix(err, "tensor '%s'", quoted(t->name, q));
			return (st);
		}
		if (t->offset > data_size || t->nbytes > data_size - t->offset)
			return (rs_errf(err, RS_ERR_FORMAT,
			    "tensor '%s': data [%llu, +%llu) lies past the end "
			    "of the file (data section of %llu bytes at offset "
			    "%llu)", quoted(t->name, q),
			    (unsigned long long)t->offset,
			    (unsigned long long)t->nbytes,
			    (unsigned long long)data_size,
			    (unsigned long long)g->data_off));
		t->data = g->base + g->data_off + t->offset;
	}
	if (g->n_tensors < 2)
		return (RS_OK);
	if ((by_off = malloc((size_t)g->n_tensors * sizeof(*by_off))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	for (int64_t i = 0; i < g->n_tensors; i++)
		by_off[i] = &g->tensors[i];
	qsort(by_off, (size_t)g->n_tensors, sizeof(*by_off), cmp_offset);
	for (int64_t i = 1; i < g->n_tensors; i++) {
		const struct rs_gguf_tensor *a = by_off[i - 1], *b = by_off[i];
		if (a->offset + a->nbytes > b->offset) {
			st = rs_errf(err, RS_ERR_FORMAT,
			    "tensors '%s' (offset %llu, %llu bytes) and '%s' "
			    "(offset %llu) overlap", quoted(a->name, q),
			    (unsigned long long)a->offset,
			    (unsigned long long)a->nbytes, quoted(b->name, q2),
			    (unsigned long long)b->offset);
			break;
		}
	}
	free(by_off);
	return (st);
}

static enum rs_status
parse_tensors(struct rs_gguf *g, struct cursor *c, struct rs_err *err)
{
	enum rs_status	st;

	/* a record takes at least 8 + 1 (name) + 4 + 8 + 4 + 8 bytes */
	if ((uint64_t)g->n_tensors > left(c) / 33)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "n_tensors %lld cannot fit in the %llu bytes left",
		    (long long)g->n_tensors, (unsigned long long)left(c)));
	g->tensors = calloc((size_t)g->n_tensors + 1, sizeof(*g->tensors));
	if (g->tensors == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	for (int64_t i = 0; i < g->n_tensors; i++) {
		if ((st = parse_tensor_info(g, c, &g->tensors[i], err)) != RS_OK)
			return (st);
	}
	return (index_tensors(g, err));
}

static enum rs_status
read_alignment(struct rs_gguf *g, struct rs_err *err)
{
	const struct rs_gguf_kv *kv = rs_gguf_find_kv(g, "general.alignment");
	int64_t	v;

	g->alignment = GGUF_DEFAULT_ALIGNMENT;
	if (kv == NULL)
		return (RS_OK);
	if (kv->type != RS_GGUF_U32 || rs_gguf_kv_int(kv, &v, NULL) != RS_OK)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "general.alignment has type %s, expected u32",
		    vtype_names[kv->type]));
	if (v == 0 || (v & (v - 1)) != 0)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "general.alignment is %lld but must be a power of two",
		    (long long)v));
	g->alignment = (uint32_t)v;
	return (RS_OK);
}

static enum rs_status
parse(struct rs_gguf *g, struct rs_err *err)
{
	struct cursor	c = { g->base, g->size, 0 };
	char		magic[4];
	enum rs_status	st;

	if ((st = take(&c, magic, 4, "magic", err)) != RS_OK)
		return (st);
	if (memcmp(magic, "GGUF", 4) != 0)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "bad magic at offset 0: not a GGUF file"));
	if ((st = take(&c, &g->version, 4, "version", err)) != RS_OK)
		return (st);
	if (g->version != 2 && g->version != 3)
		return (rs_errf(err, RS_ERR_UNSUPPORTED,
		    "GGUF version %u is not supported (2 or 3)", g->version));
	if ((st = take(&c, &g->n_tensors, 8, "n_tensors", err)) != RS_OK ||
	    (st = take(&c, &g->n_kv, 8, "n_kv", err)) != RS_OK)
		return (st);
	if (g->n_tensors < 0 || g->n_kv < 0)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "negative count at offset 8: n_tensors %lld, n_kv %lld",
		    (long long)g->n_tensors, (long long)g->n_kv));
	if ((st = parse_kvs(g, &c, err)) != RS_OK ||
	    (st = read_alignment(g, err)) != RS_OK ||
	    (st = parse_tensors(g, &c, err)) != RS_OK)
		return (st);
	g->data_off = (c.pos + g->alignment - 1) / g->alignment * g->alignment;
	if (g->data_off > g->size) {
		if (g->n_tensors > 0)
			return (rs_errf(err, RS_ERR_FORMAT,
			    "data section at offset %llu starts past the end of "
			    "the file (%llu bytes)",
			    (unsigned long long)g->data_off,
			    (unsigned long long)g->size));
		g->data_off = g->size;
	}
	return (check_layout(g, err));
}

/* ---- getters ---- */

uint32_t rs_gguf_version(const struct rs_gguf *g) { return (g->version); }
uint64_t rs_gguf_file_size(const struct rs_gguf *g) { return (g->size); }
uint64_t rs_gguf_data_offset(const struct rs_gguf *g) { return (g->data_off); }
uint32_t rs_gguf_alignment(const struct rs_gguf *g) { return (g->alignment); }
int64_t rs_gguf_n_kv(const struct rs_gguf *g) { return (g->n_kv); }
int64_t rs_gguf_n_tensors(const struct rs_gguf *g) { return (g->n_tensors); }

const struct rs_gguf_kv *
rs_gguf_kv(const struct rs_gguf *g, int64_t i)
{
	return (i >= 0 && i < g->n_kv ? &g->kv[i] : NULL);
}

const struct rs_gguf_kv *
rs_gguf_find_kv(const struct rs_gguf *g, const char *key)
{
	int64_t	lo = 0, hi = g->by_key != NULL ? g->n_kv : 0, mid;

	while (lo < hi) {	/* the first entry not below KEY */
		mid = lo + (hi - lo) / 2;
		if (strcmp(g->by_key[mid]->key, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (g->by_key != NULL && lo < g->n_kv &&
	    strcmp(g->by_key[lo]->key, key) == 0 ? g->by_key[lo] : NULL);
}

const struct rs_gguf_tensor *
rs_gguf_tensor(const struct rs_gguf *g, int64_t i)
{
	return (i >= 0 && i < g->n_tensors ? &g->tensors[i] : NULL);
}

const struct rs_gguf_tensor *
rs_gguf_find_tensor(const struct rs_gguf *g, const char *name)
{
	int64_t	lo = 0, hi = g->by_name != NULL ? g->n_tensors : 0, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (strcmp(g->by_name[mid]->name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (g->by_name != NULL && lo < g->n_tensors &&
	    strcmp(g->by_name[lo]->name, name) == 0 ? g->by_name[lo] : NULL);
}

/* Integer at P of type T as int64; 0 on success, -1 if it does not fit. */
static int
load_int(enum rs_gguf_vtype t, const void *p, int64_t *out)
{
	uint64_t u;

	switch (t) {
	case RS_GGUF_U8: case RS_GGUF_BOOL:
		*out = *(const uint8_t *)p; return (0);
	case RS_GGUF_I8:
		*out = *(const int8_t *)p; return (0);
	case RS_GGUF_U16: { uint16_t v; memcpy(&v, p, 2); *out = v; return (0); }
	case RS_GGUF_I16: { int16_t v; memcpy(&v, p, 2); *out = v; return (0); }
	case RS_GGUF_U32: { uint32_t v; memcpy(&v, p, 4); *out = v; return (0); }
	case RS_GGUF_I32: { int32_t v; memcpy(&v, p, 4); *out = v; return (0); }
	case RS_GGUF_I64: memcpy(out, p, 8); return (0);
	case RS_GGUF_U64:
		memcpy(&u, p, 8);
		if (u > INT64_MAX)
			return (-1);
		*out = (int64_t)u;
		return (0);
	default:
		return (-1);
	}
}

enum rs_status
rs_gguf_kv_int(const struct rs_gguf_kv *kv, int64_t *out, struct rs_err *err)
{
	if (load_int(kv->type, kv->data, out) != 0)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "key '%s' has type %s, expected an integer", kv->key,
		    vtype_names[kv->type]));
	return (RS_OK);
}

int64_t
rs_gguf_arr_int(const struct rs_gguf_kv *kv, uint64_t i)
{
	int64_t	v = 0;

	if (kv->type == RS_GGUF_ARRAY && i < kv->arr_len &&
	    kv->arr_type != RS_GGUF_STRING)
		(void)load_int(kv->arr_type,
		    (const uint8_t *)kv->data + i * vtype_size[kv->arr_type], &v);
	return (v);
}

static enum rs_status
get_u32(const struct rs_gguf *g, const char *key, uint32_t *out, int opt,
    struct rs_err *err)
{
	const struct rs_gguf_kv *kv = rs_gguf_find_kv(g, key);
	int64_t	v;

	if (kv == NULL)
		return (opt ? RS_OK : rs_errf(err, RS_ERR_FORMAT,
		    "missing key '%s'", key));
	if (kv->type == RS_GGUF_BOOL || load_int(kv->type, kv->data, &v) != 0)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "key '%s' has type %s, expected u32", key,
		    vtype_names[kv->type]));
	if (v < 0 || v > UINT32_MAX)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "key '%s' is %lld, outside the u32 range", key,
		    (long long)v));
	*out = (uint32_t)v;
	return (RS_OK);
}

enum rs_status
rs_gguf_get_u32(const struct rs_gguf *g, const char *key, uint32_t *out,
    struct rs_err *err)
{
	return (get_u32(g, key, out, 0, err));
}

enum rs_status
rs_gguf_get_u32_opt(const struct rs_gguf *g, const char *key, uint32_t *out,
    struct rs_err *err)
{
	return (get_u32(g, key, out, 1, err));
}

static enum rs_status
get_f32(const struct rs_gguf *g, const char *key, float *out, int opt,
    struct rs_err *err)
{
	const struct rs_gguf_kv *kv = rs_gguf_find_kv(g, key);

	if (kv == NULL)
		return (opt ? RS_OK : rs_errf(err, RS_ERR_FORMAT,
		    "missing key '%s'", key));
	if (kv->type == RS_GGUF_F32) {
		memcpy(out, kv->data, 4);
	} else if (kv->type == RS_GGUF_F64) {
		double d;
		memcpy(&d, kv->data, 8);
		*out = (float)d;
	} else
		return (rs_errf(err, RS_ERR_FORMAT,
		    "key '%s' has type %s, expected f32", key,
		    vtype_names[kv->type]));
	return (RS_OK);
}

enum rs_status
rs_gguf_get_f32(const struct rs_gguf *g, const char *key, float *out,
    struct rs_err *err)
{
	return (get_f32(g, key, out, 0, err));
}

enum rs_status
rs_gguf_get_f32_opt(const struct rs_gguf *g, const char *key, float *out,
    struct rs_err *err)
{
	return (get_f32(g, key, out, 1, err));
}

enum rs_status
rs_gguf_get_bool_opt(const struct rs_gguf *g, const char *key, int *out,
    struct rs_err *err)
{
	const struct rs_gguf_kv *kv = rs_gguf_find_kv(g, key);

	if (kv == NULL)
		return (RS_OK);
	if (kv->type != RS_GGUF_BOOL)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "key '%s' has type %s, expected bool", key,
		    vtype_names[kv->type]));
	*out = *(const uint8_t *)kv->data != 0;
	return (RS_OK);
}

enum rs_status
rs_gguf_get_str(const struct rs_gguf *g, const char *key,
    struct rs_gguf_str *out, struct rs_err *err)
{
	const struct rs_gguf_kv *kv = rs_gguf_find_kv(g, key);
	uint64_t	len;

	if (kv == NULL)
		return (rs_errf(err, RS_ERR_FORMAT, "missing key '%s'", key));
	if (kv->type != RS_GGUF_STRING)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "key '%s' has type %s, expected string", key,
		    vtype_names[kv->type]));
	memcpy(&len, kv->data, 8);
	out->ptr = (const char *)kv->data + 8;
	out->len = len;
	return (RS_OK);
}

enum rs_status
rs_gguf_get_int_array(const struct rs_gguf *g, const char *key, int64_t *out,
    size_t max, size_t *n, struct rs_err *err)
{
	const struct rs_gguf_kv *kv = rs_gguf_find_kv(g, key);
	int64_t	v;

	if (kv == NULL)
		return (rs_errf(err, RS_ERR_FORMAT, "missing key '%s'", key));
	if (kv->type != RS_GGUF_ARRAY || kv->arr_type == RS_GGUF_STRING ||
	    kv->arr_type == RS_GGUF_F32 || kv->arr_type == RS_GGUF_F64)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "key '%s' has type %s, expected an integer array", key,
		    vtype_names[kv->type]));
	if (kv->arr_len > max)
		return (rs_errf(err, RS_ERR_FORMAT,
		    "key '%s' has %llu elements, at most %zu expected", key,
		    (unsigned long long)kv->arr_len, max));
	for (uint64_t i = 0; i < kv->arr_len; i++) {
		if (load_int(kv->arr_type, (const uint8_t *)kv->data +
		    i * vtype_size[kv->arr_type], &v) != 0)
			return (rs_errf(err, RS_ERR_FORMAT,
			    "key '%s': element %llu does not fit in 64 bits",
			    key, (unsigned long long)i));
		out[i] = v;
	}
	*n = (size_t)kv->arr_len;
	return (RS_OK);
}
