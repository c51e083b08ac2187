/*
 * fuzz_gguf.c - libFuzzer target for the GGUF reader and the qwen35 model
 * binding: any input must be accepted or rejected with a status, never
 * crash or read outside the buffer (built with ASan and UBSan).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rs_gguf.h"
#include "rs_model.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Touch every value the reader hands out. */
static void
walk(const struct rs_gguf *g)
{
	volatile uint64_t sink = 0;

	for (int64_t i = 0; i < rs_gguf_n_kv(g); i++) {
		const struct rs_gguf_kv *kv = rs_gguf_kv(g, i);
		int64_t v;
		if (rs_gguf_kv_int(kv, &v, NULL) == RS_OK)
			sink += (uint64_t)v;
		for (uint64_t k = 0; kv->type == RS_GGUF_ARRAY &&
		    k < kv->arr_len; k++) {
			if (kv->arr_type == RS_GGUF_STRING)
				sink += kv->strs[k].len ?
				    (uint8_t)kv->strs[k].ptr[kv->strs[k].len - 1] : 0;
			else
				sink += (uint64_t)rs_gguf_arr_int(kv, k);
		}
	}
	for (int64_t i = 0; i < rs_gguf_n_tensors(g); i++) {
		const struct rs_gguf_tensor *t = rs_gguf_tensor(g, i);
		if (t->nbytes > 0)
			sink += ((const uint8_t *)t->data)[t->nbytes - 1];
	}
	(void)sink;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rs_gguf	*g;
	struct rs_model	*m;
	struct rs_err	 err;
	uint8_t		*copy;

	/* an exact-size heap copy so ASan sees any read past the end */
	if ((copy = malloc(size ? size : 1)) == NULL)
		return (0);
	memcpy(copy, data, size);
	if (rs_gguf_open_mem(&g, copy, size, &err) == RS_OK) {
		walk(g);
		if (rs_model_from_gguf(&m, g, &err) == RS_OK) {
			(void)rs_model_decode_bytes(m);
			rs_model_close(m);
		}
	}
	free(copy);
	return (0);
}
