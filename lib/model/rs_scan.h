/*
 * rs_scan.h - find non-finite values (NaN, ±Inf) in tensor data.
 *
 * A weight holding NaN makes every logit NaN downstream, and nothing in a
 * GGUF's structure says so: rs-inspect --check reads the values.  Float
 * tensors (F32, F16, BF16) are scanned element by element; quantized ones
 * through the f16 scales of each block (d, and the min/sum scale where the
 * block has one: q4_1, q5_1, q8_1, q2_k, q4_k, q5_k), since their integer
 * quants are finite by construction and a block's values are scale × quant.
 * Types without a float scale we know of are not scanned (RS_OK).
 * Reads only; thread-safe.
 */
#ifndef RS_SCAN_H
#define RS_SCAN_H

#include "rs_err.h"
#include "rs_gguf.h"

/*
 * Scan T's data (T->data, T->nbytes, already validated by rs_gguf_open).
 * RS_OK when every value is finite; RS_ERR_FORMAT naming the tensor, what
 * is not finite and the element or block index otherwise
 * ("tensor 'output_norm.weight': element 0 is nan").
 */
enum rs_status	rs_scan_tensor(const struct rs_gguf_tensor *t,
		    struct rs_err *err);

/*
 * The index of the first NaN or ±Inf among the N f32 values at X (any
 * alignment), or −1 when every one is finite.  The pass over finite data
 * is branch-free and vectorised: the engine checks every logits row it
 * returns this way (1 MB a decode step for a 248,320-token vocabulary).
 */
int64_t		rs_scan_f32(const void *x, int64_t n);

#endif /* RS_SCAN_H */
