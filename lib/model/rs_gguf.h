/*
 * rs_gguf.h - read-only GGUF container reader (qwen35-model.md §2.1).
 *
 * Byte layout, little-endian:
 *
 *   "GGUF" | u32 version (2 or 3) | i64 n_tensors | i64 n_kv
 *   n_kv x { string key | i32 value type | value }
 *   n_tensors x { string name | u32 n_dims | n_dims x i64 ne |
 *                 i32 ggml type | u64 offset }
 *   padding to general.alignment (default 32)
 *   data section: tensor data at data_start + offset
 *
 *   string = u64 byte length + bytes (no NUL);  array = i32 element type +
 *   u64 count + elements.  Value types: 0 u8, 1 i8, 2 u16, 3 i16, 4 u32,
 *   5 i32, 6 f32, 7 bool, 8 string, 9 array, 10 u64, 11 i64, 12 f64.
 *
 * Lifecycle: rs_gguf_open() maps a file read-only (rs_gguf_open_mem() parses
 * a caller's buffer, which must outlive the object) and validates the whole
 * header before returning: every count, string length and array length fits
 * in the file, keys and tensor names are unique, types are known, tensor
 * sizes are computed without overflow, and every tensor lies inside the data
 * section at an aligned offset without overlapping another.  After that the
 * getters cannot fail on bounds.  rs_gguf_close() releases everything; all
 * pointers handed out are borrowed and valid until then.  A struct rs_gguf
 * is immutable after open and may be read from several threads.
 */
#ifndef RS_GGUF_H
#define RS_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "rs_err.h"

#define RS_GGUF_MAX_DIMS	4

enum rs_gguf_vtype {
	RS_GGUF_U8 = 0, RS_GGUF_I8 = 1, RS_GGUF_U16 = 2, RS_GGUF_I16 = 3,
	RS_GGUF_U32 = 4, RS_GGUF_I32 = 5, RS_GGUF_F32 = 6, RS_GGUF_BOOL = 7,
	RS_GGUF_STRING = 8, RS_GGUF_ARRAY = 9, RS_GGUF_U64 = 10,
	RS_GGUF_I64 = 11, RS_GGUF_F64 = 12, RS_GGUF_VTYPE_COUNT = 13
};

/* A string inside the file: LEN bytes at PTR, not NUL-terminated. */
struct rs_gguf_str {
	const char	*ptr;
	uint64_t	 len;
};

/* One metadata key/value pair. */
struct rs_gguf_kv {
	const char		*key;		/* NUL-terminated copy */
	enum rs_gguf_vtype	 type;
	enum rs_gguf_vtype	 arr_type;	/* element type, for arrays */
	uint64_t		 arr_len;	/* element count, for arrays */
	const void		*data;		/* scalar or first array element */
	const struct rs_gguf_str *strs;		/* string arrays: arr_len entries */
	uint64_t		 file_off;	/* offset of the value in the file */
};

/* One tensor-info record, resolved against the data section. */
struct rs_gguf_tensor {
	const char	*name;			/* NUL-terminated copy */
	int		 n_dims;		/* 1..4 */
	int64_t		 ne[RS_GGUF_MAX_DIMS];	/* unused dims are 1 */
	int		 type;			/* ggml type id (rs_types.h) */
	uint64_t	 offset;		/* relative to the data section */
	uint64_t	 nbytes;		/* bytes of data */
	const void	*data;			/* inside the mapping */
};

struct rs_gguf;

/*
 * Open and validate PATH, mapped read-only.  On RS_OK *OUT owns the mapping.
 * Fails with RS_ERR_IO (open/stat/mmap), RS_ERR_FORMAT (bad magic, truncated,
 * a count, length or offset past the end; the message names the offset),
 * RS_ERR_UNSUPPORTED (version, unknown tensor type, nested arrays),
 * RS_ERR_NOMEM.
 */
enum rs_status	 rs_gguf_open(struct rs_gguf **out, const char *path,
		    struct rs_err *err);

/* The same for SIZE bytes at DATA, borrowed (used by tests and fuzzers). */
enum rs_status	 rs_gguf_open_mem(struct rs_gguf **out, const void *data,
		    size_t size, struct rs_err *err);

/* Release G (NULL is fine). */
void		 rs_gguf_close(struct rs_gguf *g);

/*
 * Whether ADDR lies inside the file mapping of an open rs_gguf (a file of
 * rs_gguf_open; not the buffers of rs_gguf_open_mem).  Async-signal-safe:
 * a SIGBUS handler asks it whether the fault is a model file that shrank
 * under the process (truncated, or rewritten in place), which turns every
 * read of the mapping past its new end into SIGBUS.  At most
 * RS_GGUF_MAX_MAPS mappings are known at once; others answer 0.
 */
#define RS_GGUF_MAX_MAPS	16
int		 rs_gguf_mapped_at(const void *addr);

uint32_t	 rs_gguf_version(const struct rs_gguf *g);
uint64_t	 rs_gguf_file_size(const struct rs_gguf *g);
uint64_t	 rs_gguf_data_offset(const struct rs_gguf *g);	/* data section */
uint32_t	 rs_gguf_alignment(const struct rs_gguf *g);

int64_t		 rs_gguf_n_kv(const struct rs_gguf *g);
const struct rs_gguf_kv *rs_gguf_kv(const struct rs_gguf *g, int64_t i);
/* The pair named KEY, or NULL. */
const struct rs_gguf_kv *rs_gguf_find_kv(const struct rs_gguf *g,
		    const char *key);

int64_t		 rs_gguf_n_tensors(const struct rs_gguf *g);
const struct rs_gguf_tensor *rs_gguf_tensor(const struct rs_gguf *g,
		    int64_t i);
/* The tensor named NAME, or NULL. */
const struct rs_gguf_tensor *rs_gguf_find_tensor(const struct rs_gguf *g,
		    const char *name);

/* Name of a value type ("u32", "array", ...). */
const char	*rs_gguf_vtype_name(enum rs_gguf_vtype t);

/*
 * Typed getters.  KEY missing: RS_ERR_FORMAT "missing key 'k'" unless the
 * _opt form is used, which returns RS_OK and leaves *OUT alone.  A value of
 * another type converts when it is an integer whose value fits (any of
 * u8..i64 for integers, f32 or f64 for floats); otherwise RS_ERR_FORMAT
 * naming the key, its type and the expected one.
 */
enum rs_status	 rs_gguf_get_u32(const struct rs_gguf *g, const char *key,
		    uint32_t *out, struct rs_err *err);
enum rs_status	 rs_gguf_get_u32_opt(const struct rs_gguf *g, const char *key,
		    uint32_t *out, struct rs_err *err);
enum rs_status	 rs_gguf_get_f32(const struct rs_gguf *g, const char *key,
		    float *out, struct rs_err *err);
enum rs_status	 rs_gguf_get_f32_opt(const struct rs_gguf *g, const char *key,
		    float *out, struct rs_err *err);
enum rs_status	 rs_gguf_get_bool_opt(const struct rs_gguf *g,
		    const char *key, int *out, struct rs_err *err);
/* *OUT borrows the file's bytes (not NUL-terminated). */
enum rs_status	 rs_gguf_get_str(const struct rs_gguf *g, const char *key,
		    struct rs_gguf_str *out, struct rs_err *err);
/*
 * Integer array (any integer element type) KEY, N elements into OUT, which
 * has room for MAX.  Fails if the array is longer than MAX or an element
 * does not fit in int64_t.
 */
enum rs_status	 rs_gguf_get_int_array(const struct rs_gguf *g,
		    const char *key, int64_t *out, size_t max, size_t *n,
		    struct rs_err *err);

/* Scalar value of KV as int64 (integers and bool); RS_ERR_FORMAT otherwise. */
enum rs_status	 rs_gguf_kv_int(const struct rs_gguf_kv *kv, int64_t *out,
		    struct rs_err *err);
/* Element I of integer array KV as int64. */
int64_t		 rs_gguf_arr_int(const struct rs_gguf_kv *kv, uint64_t i);

#endif /* RS_GGUF_H */
