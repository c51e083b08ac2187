/*
 * rs_gguf_write.h - write GGUF v3 files (layout in rs_gguf.h).
 *
 * Build the metadata and tensor table in memory, then rs_gguf_writer_write()
 * streams the file: header, key/value pairs, tensor infos, padding, and the
 * data of each tensor, which a caller's callback produces one tensor at a
 * time (so a 17 GB file never has to fit in memory).  PATH is opened
 * through rs_out (rs_out.h): a temporary file beside it, renamed over it
 * only when complete (a failure never leaves a partial file behind), or a
 * FIFO or device written in place.  Not thread-safe; one writer per thread.
 */
#ifndef RS_GGUF_WRITE_H
#define RS_GGUF_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "rs_err.h"

struct rs_gguf_writer;

/*
 * Produce the NBYTES bytes of tensor INDEX (in add order) into BUF.
 * Return RS_OK or a status with ERR filled; that aborts the write.
 */
typedef enum rs_status (*rs_gguf_fill_fn)(void *ctx, int64_t index,
		    void *buf, size_t nbytes, struct rs_err *err);

enum rs_status	rs_gguf_writer_new(struct rs_gguf_writer **out,
		    struct rs_err *err);
void		rs_gguf_writer_free(struct rs_gguf_writer *w);

/* Metadata setters; RS_ERR_NOMEM is the only failure. */
enum rs_status	rs_gguf_writer_u32(struct rs_gguf_writer *w, const char *key,
		    uint32_t v);
enum rs_status	rs_gguf_writer_f32(struct rs_gguf_writer *w, const char *key,
		    float v);
enum rs_status	rs_gguf_writer_bool(struct rs_gguf_writer *w, const char *key,
		    int v);
enum rs_status	rs_gguf_writer_str(struct rs_gguf_writer *w, const char *key,
		    const char *v, size_t len);
enum rs_status	rs_gguf_writer_i32_array(struct rs_gguf_writer *w,
		    const char *key, const int32_t *v, size_t n);
/* N strings; V[i] is NUL-terminated. */
enum rs_status	rs_gguf_writer_str_array(struct rs_gguf_writer *w,
		    const char *key, const char *const *v, size_t n);

/*
 * Append a tensor of TYPE with N_DIMS dimensions NE.  RS_ERR_FORMAT when
 * ne[0] is not a multiple of the type's block or the type is unknown.
 */
enum rs_status	rs_gguf_writer_tensor(struct rs_gguf_writer *w,
		    const char *name, int type, int n_dims, const int64_t *ne,
		    struct rs_err *err);

/* Bytes of tensor data the file will hold (after padding). */
uint64_t	rs_gguf_writer_data_bytes(const struct rs_gguf_writer *w);

/*
 * Write the file (see above).  RS_ERR_IO on a failed write or rename, the
 * statuses of rs_out_open() and of FILL.
 */
enum rs_status	rs_gguf_writer_write(struct rs_gguf_writer *w,
		    const char *path, rs_gguf_fill_fn fill, void *ctx,
		    struct rs_err *err);

#endif /* RS_GGUF_WRITE_H */
