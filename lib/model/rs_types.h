/*
 * rs_types.h - the ggml tensor types Redshift reads, as one traits table.
 *
 * Code looks a type up here (block size, bytes, decoder) instead of switching
 * on it.  Type ids are ggml's, as stored in GGUF tensor infos
 * (qwen35-model.md §2.1).  The decoders are the scalar reference ("oracle")
 * implementations of §7 that faster CPU code and the CUDA kernels are tested
 * against.  Everything here is pure and thread-safe.
 *
 * To add a quant type (a block format of qwen35-model.md §7):
 *   1. enum rs_type below: its id, as ggml numbers it;
 *   2. rs_blocks.h: the block struct and a static_assert of its size, the
 *      only place the size is written (everything else takes sizeof);
 *   3. rs_types.c: the scalar decoder <t>_to_float, the oracle, and the
 *      traits entry (BLOCK(<t>, elements)); an encoder in rs_quant.c only
 *      if we write the type;
 *   4. tests/check_types.c: a block decoded by hand;
 *   5. rs_scan.c block_scales(): where its float scales are, for
 *      rs-inspect --check;
 *   6. optional, for speed on the CPU: a row decoder in rs_cpu_dequant.c
 *      (fast_decoders[]), checked against the oracle in tests/check_cpu.c;
 *   7. CUDA, kernels/quant.cuh: QBLOCK(), dequant8<T> and a case of
 *      dispatch_type(); the type in tests/check_cuda.c's type lists.  The
 *      integer matvec paths (matvec_sb.cuh, matvec_xq.cuh) are optional.
 */
#ifndef RS_TYPES_H
#define RS_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "rs_err.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rs_type {
	RS_TYPE_F32 = 0,
	RS_TYPE_F16 = 1,
	RS_TYPE_Q4_0 = 2,
	RS_TYPE_Q4_1 = 3,
	RS_TYPE_Q5_0 = 6,
	RS_TYPE_Q5_1 = 7,
	RS_TYPE_Q8_0 = 8,
	RS_TYPE_Q8_1 = 9,
	RS_TYPE_Q2_K = 10,
	RS_TYPE_Q3_K = 11,
	RS_TYPE_Q4_K = 12,
	RS_TYPE_Q5_K = 13,
	RS_TYPE_Q6_K = 14,
	RS_TYPE_Q8_K = 15,
	RS_TYPE_IQ4_NL = 20,
	RS_TYPE_IQ4_XS = 23,
	RS_TYPE_BF16 = 30,
	RS_TYPE_COUNT = 31
};

/*
 * Decode N elements (a multiple of block_elems) from SRC into DST.
 * Encode N floats into blocks; only set for the types we write.
 */
typedef void	(*rs_to_float_fn)(const void *src, float *dst, int64_t n);
typedef void	(*rs_from_float_fn)(const float *src, void *dst, int64_t n);

struct rs_type_traits {
	const char		*name;		/* "q4_k", as ggml spells it */
	int			 block_elems;	/* elements per block */
	int			 block_bytes;	/* bytes per block */
	rs_to_float_fn		 to_float;	/* NULL: not a weight type */
	rs_from_float_fn	 from_float;	/* NULL: we cannot write it */
};

/* Traits of TYPE, or NULL when TYPE is not one we know. */
const struct rs_type_traits *rs_type_traits(int type);

/* "q4_k" for a known TYPE, "type<id>" text in BUF-less form otherwise. */
const char	*rs_type_name(int type);

/* The type named NAME ("q4_k", "f16", case-insensitive) or -1. */
int		 rs_type_from_name(const char *name);

/*
 * Bytes of a row of N elements of TYPE into *OUT.  Fails with
 * RS_ERR_UNSUPPORTED for an unknown or non-weight type and RS_ERR_FORMAT
 * when N is negative or not a multiple of the block size.
 */
enum rs_status	 rs_type_row_bytes(int type, int64_t n, size_t *out,
		    struct rs_err *err);

/* Decode one row of N elements; TYPE must have a to_float (checked). */
enum rs_status	 rs_dequant_row(int type, const void *src, float *dst,
		    int64_t n, struct rs_err *err);

/* Encode one row of N floats; TYPE must have a from_float (checked). */
enum rs_status	 rs_quant_row(int type, const float *src, void *dst,
		    int64_t n, struct rs_err *err);

#ifdef __cplusplus
}
#endif

#endif /* RS_TYPES_H */
