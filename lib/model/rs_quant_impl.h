/*
 * rs_quant_impl.h - internal: block encoders used by the traits table, and
 * the packed K-quant scale reader shared by decoders and encoders.
 */
#ifndef RS_QUANT_IMPL_H
#define RS_QUANT_IMPL_H

#include <stdint.h>

/* 6-bit scale and min of sub-block S (0..7) from Q4_K/Q5_K packed bytes. */
void	rs_k_scale_min(const uint8_t *scales, int s, int *sc, int *mn);

void	rs_quant_q8_0(const float *src, void *dst, int64_t n);
void	rs_quant_q4_k(const float *src, void *dst, int64_t n);
void	rs_quant_q5_k(const float *src, void *dst, int64_t n);
void	rs_quant_q6_k(const float *src, void *dst, int64_t n);

#endif /* RS_QUANT_IMPL_H */
