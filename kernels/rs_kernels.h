/*
 * rs_kernels.h - every CUDA kernel launcher, as plain C: the list of what the
 * GPU can do.  Each launcher checks its arguments, launches on STREAM and
 * returns RS_OK or RS_ERR_CUDA / RS_ERR_INVALID_ARG with ERR filled; none
 * synchronises.  Pointers named d_* are device memory.  Shapes are given
 * row-major, one row per token, like the CPU ops in rs_cpu.h, which are
 * the oracles tests/check_cuda.c compares each launcher with.  The forward
 * pass that strings them together is cuda_forward.cu, the twin of the CPU
 * backend's rs_cpu_forward.c (rs_engine_impl.h declares both).
 */
#ifndef RS_KERNELS_H
#define RS_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "rs_err.h"
#include "rs_top.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most token columns one matvec launch handles (more: the caller loops). */
#define RS_K_MATVEC_MAX_COLS	16

/*
 * Per-call parameters in device memory, so that a captured CUDA graph can
 * be replayed at any position: [0] the position of the first token,
 * [1] the first position recorded into the snapshot ring (INT32_MAX:
 * none), [2] the position whose recurrent state the call writes in full
 * (−1: none; rs_state_snap_begin).
 */
#define RS_K_PARAM_POS0		0
#define RS_K_PARAM_SNAP_FROM	1
#define RS_K_PARAM_SNAP_BASE	2
#define RS_K_N_PARAMS		3

/*
 * One GDN block's view of a state's snapshot ring (rs_state.h): FULL its
 * recurrent-state entry in ring slot 0 (slot i FULL_STRIDE floats on), REC
 * its replay record in slot 0 (slot i REC_STRIDE on), N slots.  A record
 * is k of every key head (L2-normalised), v of every value head, β of
 * every value head, then the decay e^g of every value head:
 * (n_kh + n_vh)·dk + 2·n_vh floats.  FULL NULL: no ring.
 */
struct rs_k_gdn_ring {
	float	*full;
	int64_t	 full_stride;
	float	*rec;
	int64_t	 rec_stride;
	int	 n;
};

/*
 * X's columns in the 16-bit format of rs_xq.h for the integer matvec:
 * columns T0 .. T0 + n_tok − 1 of a batch of NB columns at D (as rs_k_xq
 * and the kernels that convert their output write a batch).  D NULL: none.
 * A batch's layout is rs_k_xq_block_major(NB)'s on the current device:
 * block-major from RS_K_XQ_BM_MIN columns where the tensor-core matvec
 * runs (SM80 on), else column after column (rs_xq.h says why).  matvec.cu.
 */
#define RS_K_XQ_BM_MIN	2
int		rs_k_xq_block_major(int nb);

struct rs_k_xq_cols {
	const void	*d;
	int		 nb, t0;
};

/*
 * y[t][o] (+)= Σ_i W[o][i]·x[t][i] for t < N_TOK <= 16, o < N_OUT.  W is a
 * GGUF weight of TYPE in device memory, rows of N_IN values (ROW_BYTES
 * apart); X is (n_tok, ldx), Y (n_tok, ldy).  ACCUMULATE adds to Y (the
 * residual connection) instead of overwriting it.  f32 accumulation; one
 * warp per output row reads the weight row once for all columns.
 * XQ, if XQ.d is not NULL, holds the same N_TOK columns of X in the 16-bit
 * format.  Q4_K, Q5_K and Q6_K weights in the tiled layout of rs_tile.h
 * (TYPE | RS_TILED, 16-byte aligned, ROW_BYTES still the GGUF row's) take
 * the integer path and need XQ (y within ~1e-5 relative of the f32
 * path); every other weight reads X.  Either way y[t] does not depend on
 * N_TOK.
 * matvec.cu.  RS_ERR_UNSUPPORTED for a type without a device decoder.
 */
enum rs_status	rs_k_matvec(const void *d_w, int type, int64_t n_in,
		    int64_t n_out, int64_t row_bytes, const float *d_x,
		    int64_t ldx, struct rs_k_xq_cols xq, float *d_y,
		    int64_t ldy, int n_tok, int accumulate,
		    cudaStream_t stream, struct rs_err *err);

/*
 * Several products of the same X in one call: for each part,
 * y (+)= W·X exactly as rs_k_matvec(part's W, type, N_IN, its N_OUT,
 * ROW_BYTES, D_X, LDX, XQ, its D_Y, LDY, N_TOK, ACCUMULATE) gives it,
 * bit for bit.  Parts of one type on the integer path share each launch
 * (q, k and v; gate and up: one launch instead of several, and small
 * products run beside large ones); others run one after the other.
 */
#define RS_K_MATVEC_MAX_PARTS	4
struct rs_k_mv_part {
	const void	*d_w;
	int		 type;
	int64_t		 n_out, row_bytes;
	float		*d_y;
	int64_t		 ldy;
	int		 accumulate;
};
enum rs_status	rs_k_matvec_parts(const struct rs_k_mv_part *parts,
		    int n_parts, int64_t n_in, const float *d_x, int64_t ldx,
		    struct rs_k_xq_cols xq, int n_tok, cudaStream_t stream,
		    struct rs_err *err);

/*
 * Y (+)= W·X as rs_k_matvec, for any number of token columns, on tensor
 * cores through cuBLAS: X and W rounded to f16 (X with one power-of-two
 * scale), f32 accumulation; within ~1e-3 relative of the f32 product, not
 * bit-identical to rs_k_matvec, so only for prefill chunks.  A struct
 * rs_k_mm holds cuBLAS (loaded at run time: $RS_CUBLAS, else
 * libcublas.so.13 or .12), the f16 copy of an input of up to MAX_IN values
 * and MAX_TOK tokens, and WBUDGET f16 values of decoded weights (W is
 * taken in pieces of rows that fit, at least 64; the engine gives
 * RS_K_MM_WBUDGET).  rs_k_mm_input() converts X (n_tok, ldx), which then
 * serves every rs_k_mm() of N_IN inputs until the next rs_k_mm_input().
 * On failure *OUT may still need rs_k_mm_free().  N_IN a multiple of 8.
 * rs_k_mm_new fails with RS_ERR_UNSUPPORTED when cuBLAS is missing.
 * rs_k_mm_bytes: the device bytes of one; rs_k_mm_plan: of one to be.
 * gemm.cu.
 */
#define RS_K_MM_WBUDGET	((int64_t)48 << 20)
struct rs_k_mm;
enum rs_status	rs_k_mm_new(int64_t max_in, int max_tok, int64_t wbudget,
		    struct rs_k_mm **out, struct rs_err *err);
void		rs_k_mm_free(struct rs_k_mm *m);
size_t		rs_k_mm_bytes(const struct rs_k_mm *m);
size_t		rs_k_mm_plan(int64_t max_in, int max_tok, int64_t wbudget);
enum rs_status	rs_k_mm_input(struct rs_k_mm *m, const float *d_x,
		    int64_t ldx, int64_t n_in, int n_tok, cudaStream_t stream,
		    struct rs_err *err);
enum rs_status	rs_k_mm(struct rs_k_mm *m, const void *d_w, int type,
		    int64_t n_in, int64_t n_out, int64_t row_bytes, float *d_y,
		    int64_t ldy, int accumulate, cudaStream_t stream,
		    struct rs_err *err);

/*
 * rs_k_mm's conversions (mm_conv.cu).  X16: rows of X (n_tok, ldx) as f16
 * (n_tok, n) dense, times one power of two s that brings their largest
 * magnitude to [2^12, 2^13) (*D_AMAX, device scratch, ends as its bits),
 * and *D_ALPHA = 1/s.  W16: rows R0 .. R0 + N_ROWS − 1 of W (any type with
 * a device decoder, or a tiled one: rs_tile.h) as f16 (n_rows, n_in).
 */
enum rs_status	rs_k_mm_x16(const float *d_x, int64_t ldx, int64_t n,
		    int n_tok, void *d_x16, unsigned int *d_amax,
		    float *d_alpha, cudaStream_t stream, struct rs_err *err);
enum rs_status	rs_k_mm_w16(const void *d_w, int type, int64_t n_in,
		    int64_t row_bytes, int64_t r0, int64_t n_rows, void *d_w16,
		    cudaStream_t stream, struct rs_err *err);

/*
 * The N_TOK rows of X (n_tok, ldx), N values each (a multiple of 32), into
 * D_XQ in the 16-bit format of rs_xq.h as one batch, bit-identical to
 * rs_xq_quantize_batch.
 * xq.cu.
 */
enum rs_status	rs_k_xq(const float *d_x, int64_t ldx, int64_t n, int n_tok,
		    void *d_xq, cudaStream_t stream, struct rs_err *err);

/*
 * N_OUT GGUF rows of N_IN values of TYPE (Q4_K, Q5_K or Q6_K; N_IN a
 * multiple of 256) from host memory H_SRC into D_DST in the tiled layout
 * of rs_tile.h (rs_tile_bytes of it), through D_STAGE (device, at least
 * 16 rows' bytes: the rows go in groups that fit), in order on STREAM
 * (D_STAGE is free again once STREAM is done).  tile.cu.
 */
enum rs_status	rs_k_tile_upload(const void *h_src, int type, int64_t n_in,
		    int64_t n_out, void *d_dst, void *d_stage,
		    size_t stage_bytes, cudaStream_t stream,
		    struct rs_err *err);

/* Rows D_TOKENS[t] of the embedding table (TYPE: as rs_k_mm_w16) into Y
   (n_tok, n_embd). */
enum rs_status	rs_k_embed(const void *d_w, int type, int64_t n_embd,
		    int64_t row_bytes, int64_t n_vocab, const int32_t *d_tokens,
		    int n_tok, float *d_y, cudaStream_t stream,
		    struct rs_err *err);

/*
 * RMSNorm of N_ROWS rows of N values: y = x·rsqrt(mean(x²) + eps)·w.
 * Row r of X starts at r·LDX, of Y at r·LDY; W has N values, repeated for
 * every row (per-head q/k norms use rows = tokens × heads).  In place is
 * fine (X == Y).  D_XQ, if not NULL, also receives each row of Y in the
 * 16-bit format of rs_xq.h (N a multiple of 32; the rows as one batch),
 * as rs_k_xq would write it.  norm.cu.
 */
enum rs_status	rs_k_rmsnorm(const float *d_x, int64_t ldx, const float *d_w,
		    float *d_y, int64_t ldy, int64_t n, int64_t n_rows,
		    float eps, void *d_xq, cudaStream_t stream,
		    struct rs_err *err);

/*
 * Gated RMSNorm of the GDN output (§4.6 step 7), per head of N values:
 * y = rmsnorm(x, w) ⊙ silu(z); X, Z, Y are (n_rows, n).  With D_XQ, every
 * PER_COL rows (a token's heads) are also one column of the 16-bit format
 * of rs_xq.h (N a multiple of 32; n_rows / per_col columns of n·per_col
 * values as one batch), as rs_k_xq would write it.  norm.cu.
 */
enum rs_status	rs_k_gated_rmsnorm(const float *d_x, const float *d_z,
		    const float *d_w, float *d_y, int64_t n, int64_t n_rows,
		    float eps, void *d_xq, int64_t per_col,
		    cudaStream_t stream, struct rs_err *err);

/*
 * An attention block's q, k and v of N_TOK tokens after the projections:
 * q head h of token t at q + t·ldq + h·q_stride (the [q | gate] rows of
 * §3.3), k head h at k + t·ldk + h·hd, v head h at v + t·ldv + h·hdv.
 * In place, per head of q and k: RMSNorm (q_norm, k_norm; EPS), then
 * IMRoPE (§4.5) of the first N_ROT dims in NeoX pairs by the text
 * position params[0] + t (components (p, p, p, 0)); then k and v as f16
 * at that position of the caches KC (n_ctx, nkv·hd) and VC (n_ctx,
 * nkv·hdv).  qkv_prep.cu.
 */
struct rs_k_qkv {
	float		*q, *k;
	const float	*v, *q_norm, *k_norm;
	int64_t		 ldq, q_stride, ldk, ldv;
	int		 nh, nkv, hd, hdv;
	uint16_t	*kc, *vc;
};

enum rs_status	rs_k_qkv_prep(const struct rs_k_qkv *a, int n_tok,
		    int n_rot, const uint32_t sections[4], float base, float eps,
		    const int32_t *d_params, cudaStream_t stream,
		    struct rs_err *err);

/*
 * Causal gated attention (§4.4) of N_TOK query tokens at positions
 * params[0] + t over the f16 caches, with GQA (query head h reads kv head
 * h / (n_head / n_head_kv)).  Q head h of token t starts at t·LDQ + h·QS and
 * its gate at + GATE_OFF (the interleaved attn_q layout); the output
 * O (n_tok, n_head·dv) is softmax(q·Kᵀ·scale)·V ⊙ sigmoid(gate).
 * D = DV in {64, 128, 256}, the caches D/16-byte aligned.
 * Flash-decoding: the n keys of a row are cut into splits of
 * rs_k_attn_split_keys(n) keys (at most RS_K_ATTN_MAX_SPLITS), one block
 * per (token, heads of a KV head, split), then merged in split order: a
 * row's output depends on its position only, never on N_TOK (batch
 * invariance).  From SM80 on, rows of at least RS_K_ATTN_MMA_FROM keys
 * take a tensor-core path (attn_mma.cuh) that shares each K/V row among
 * a call's tokens; a row's path depends on its key count alone, so the
 * invariance holds.  MAX_KEYS bounds params[0] + n_tok (the grid's size;
 * a captured graph passes the cache's n_ctx, or RS_K_ATTN_MMA_FROM − 1
 * while its rows are shorter: below it the FMA kernel runs alone); a
 * smaller value leaves keys out.  SCRATCH: rs_k_attn_scratch() floats.
 * attn.cu.
 */
#define RS_K_ATTN_MAX_SPLITS	128
#define RS_K_ATTN_SPLIT_MIN	128
#define RS_K_ATTN_MMA_FROM	32769
int64_t		rs_k_attn_split_keys(int64_t n_keys);
size_t		rs_k_attn_scratch(int n_head, int n_tok, int dv);
enum rs_status	rs_k_attn(const float *d_q, int64_t ldq, int64_t qs,
		    int64_t gate_off, const uint16_t *d_kc,
		    const uint16_t *d_vc, int n_head, int n_head_kv, int d,
		    int dv, int n_tok, const int32_t *d_params,
		    int64_t max_keys, float scale, float *d_o,
		    float *d_scratch, cudaStream_t stream,
		    struct rs_err *err);

/*
 * rs_k_attn, and with D_XQ not NULL also its output's N_TOK rows
 * (n_head·dv values each) in the 16-bit format of rs_xq.h as one batch,
 * as rs_k_xq would write them (the next product's input without a
 * conversion launch).  attn.cu.
 */
enum rs_status	rs_k_attn_xq(const float *d_q, int64_t ldq, int64_t qs,
		    int64_t gate_off, const uint16_t *d_kc,
		    const uint16_t *d_vc, int n_head, int n_head_kv, int d,
		    int dv, int n_tok, const int32_t *d_params,
		    int64_t max_keys, float scale, float *d_o, void *d_xq,
		    float *d_scratch, cudaStream_t stream,
		    struct rs_err *err);

/*
 * rs_k_attn for a prompt chunk (prefill): the same arguments, meanings and
 * output, no scratch.  Flash attention on f16 tensor cores (wmma, SM70 and
 * later; mma.sync with S, P and O in registers where the code was built
 * for SM80 and later): Q and P are rounded to f16 for the products,
 * scores, softmax and sums are f32 (relative error ~3e-4 against
 * rs_k_attn).  The queries of the heads that share a KV head are
 * processed together, 64 (token, head) rows per block (128 on SM80+).
 * D = DV in {64, 128, 256}; the caches 16-byte aligned; head dim 256
 * needs 95 KB of shared memory per block (132 KB on SM80+; SM70, SM80+;
 * not sm_75).  Worth it from a few dozen tokens on (below that rs_k_attn's
 * splits fill the GPU better).  attn_prefill.cu.
 */
enum rs_status	rs_k_attn_prefill(const float *d_q, int64_t ldq, int64_t qs,
		    int64_t gate_off, const uint16_t *d_kc,
		    const uint16_t *d_vc, int n_head, int n_head_kv, int d,
		    int dv, int n_tok, const int32_t *d_params, float scale,
		    float *d_o, cudaStream_t stream, struct rs_err *err);

/*
 * 1 if rs_k_attn_prefill runs its mma.sync kernel for head dim D on the
 * current device (code built for SM80+, shared memory granted), 0 if the
 * wmma one: for tools that report which kernel they timed.
 * attn_prefill.cu.
 */
int		rs_k_attn_prefill_mma(int d);

/*
 * Causal depthwise conv + SiLU (§4.6 step 2) over N_TOK tokens for N_CH
 * channels: X, U are (n_tok, ldx) / (n_tok, n_ch); W (n_ch, K); STATE
 * (n_ch, K−1) raw inputs, updated.  When D_SNAP is not NULL, the state
 * after the token at position p >= params[1] is also written to ring entry
 * D_SNAP + (p mod N_SNAP)·SNAP_STRIDE.  conv.cu.
 */
enum rs_status	rs_k_conv(float *d_state, const float *d_w, const float *d_x,
		    int64_t ldx, int64_t n_ch, int k, int n_tok, float *d_u,
		    float *d_snap, int64_t snap_stride, int n_snap,
		    const int32_t *d_params, cudaStream_t stream,
		    struct rs_err *err);

/*
 * The gated delta rule (§4.6 steps 3-6) of one GDN block over N_TOK tokens.
 * U (n_tok, ldu) holds the conv output [q (n_kh·dk) | k (n_kh·dk) | v
 * (n_vh·dv)]; B and A (n_tok, ldba) the beta and alpha projections; DT and
 * SSM_A (n_vh).  Value head n reads q/k head n mod n_kh (tiled order).  S
 * is (n_vh, dk, dv), S[i][j] with i the key index, updated.  O (n_tok,
 * n_vh·dv).  RING (NULL: none): the token at position p >= params[1]
 * leaves its record in slot p mod n, and S after position params[2] goes
 * to that position's full entry.  DK = DV in {64, 128}.  AFTER_CONV:
 * the launch before this one on STREAM is rs_k_conv's (the engine's
 * order), which writes no S and starts only when everything before it has
 * ended; the scan then starts during the convolution and loads S
 * meanwhile (SM90: a programmatic dependent).  0 for any other order
 * (two scans of one S in a row would race).  deltanet.cu.
 */
enum rs_status	rs_k_deltanet(float *d_s, const float *d_u, int64_t ldu,
		    const float *d_b, const float *d_a, int64_t ldba,
		    const float *d_dt, const float *d_ssm_a, int n_kh, int n_vh,
		    int dk, int n_tok, float eps, float *d_o,
		    const struct rs_k_gdn_ring *ring, const int32_t *d_params,
		    int after_conv, cudaStream_t stream, struct rs_err *err);

/*
 * The gated RMSNorm after a GDN block's scan (rs_k_gated_rmsnorm's Z, W,
 * EPS and D_XQ, for the scan's output as its x and y, per_col = n_vh).
 */
struct rs_k_gnorm {
	const float	*z;
	const float	*w;
	float		 eps;
	void		*xq;
};

/*
 * rs_k_deltanet for N_TOK <= RS_K_DN_GN_MAX tokens with the gated RMSNorm
 * after it in the same launch: O receives rs_k_gated_rmsnorm(O, GN->z,
 * GN->w, O, dk, n_tok·n_vh, GN->eps, GN->xq, n_vh)'s output and GN->xq
 * (NULL: none) its 16-bit form, bit for bit what the two launches give,
 * in one launch instead of two (0.02-0.11 ms a pass on an H100;
 * docs/perf-log.md, session 45).  The launch holds a head a block (dk·4
 * threads), so that the norm's sum over the head stays in the block.
 * deltanet.cu.
 */
#define RS_K_DN_GN_MAX	16
enum rs_status	rs_k_deltanet_gnorm(float *d_s, const float *d_u,
		    int64_t ldu, const float *d_b, const float *d_a,
		    int64_t ldba, const float *d_dt, const float *d_ssm_a,
		    int n_kh, int n_vh, int dk, int n_tok, float eps,
		    float *d_o, const struct rs_k_gdn_ring *ring,
		    const int32_t *d_params, int after_conv,
		    const struct rs_k_gnorm *gn, cudaStream_t stream,
		    struct rs_err *err);

/*
 * The recurrent state of N_BLOCKS GDN blocks (block b's S at D_S +
 * b·S_STRIDE) rebuilt from their full ring entries D_BASE (the same
 * stride; NULL: the zero state) and the records of positions FIRST ..
 * FIRST + N_TOK − 1 (N_TOK <= N_SNAP; position p's record of block b at
 * D_REC + (p mod N_SNAP)·REC_STRIDE + b·REC_LEN), bit for bit the state
 * rs_k_deltanet left after those tokens.  deltanet.cu.
 */
enum rs_status	rs_k_deltanet_replay(float *d_s, int64_t s_stride,
		    const float *d_base, const float *d_rec, int64_t rec_len,
		    int64_t rec_stride, int n_snap, int first, int n_tok,
		    int n_blocks, int n_kh, int n_vh, int dk,
		    cudaStream_t stream, struct rs_err *err);

/*
 * h[t][i] = silu(g[t][i])·u[t][i]; G, U, H are (n_tok, n).  D_XQ, if not
 * NULL, also receives H in the 16-bit format of rs_xq.h (N a multiple of
 * 32; the N_TOK rows as one batch), as rs_k_xq would write it.
 * elementwise.cu
 */
enum rs_status	rs_k_swiglu(const float *d_g, const float *d_u, float *d_h,
		    int64_t n, int n_tok, void *d_xq, cudaStream_t stream,
		    struct rs_err *err);

/*
 * Index of the largest of the N values of each of N_ROWS rows of X (stride
 * LDX) into OUT; the lowest index wins ties.  elementwise.cu.
 */
enum rs_status	rs_k_argmax(const float *d_x, int64_t ldx, int64_t n,
		    int n_rows, int32_t *d_out, cudaStream_t stream,
		    struct rs_err *err);

/*
 * The K (1 .. RS_TOP_MAX) best finite values of each of ROWS rows of N
 * values of X (stride LDX) into TOP (rows, k), best first in rs_top.h's
 * order, leaving out i where SKIP (NULL or N device flags) is set
 * (rs_top_select() per row, exactly); BAD[r] = the first index of a
 * non-finite value in row r, or −1.  SCRATCH: rs_k_top_scratch() bytes.
 * top.cu.
 */
size_t		rs_k_top_scratch(int rows, int k);
enum rs_status	rs_k_top(const float *d_x, int64_t ldx, int64_t n, int rows,
		    int k, const unsigned char *d_skip, struct rs_top *d_top,
		    int64_t *d_bad, void *d_scratch, cudaStream_t stream,
		    struct rs_err *err);

/*
 * Streaming-read bandwidth of the current device: REPS timed reads of a
 * BYTES buffer after one warm-up, in GB/s (10^9 bytes).  probe.cu.
 */
enum rs_status	rs_k_probe_read(size_t bytes, int reps, double *gb_s,
		    struct rs_err *err);

#ifdef __cplusplus
}
#endif

#endif /* RS_KERNELS_H */
