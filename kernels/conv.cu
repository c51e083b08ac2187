/*
 * conv.cu - the GDN causal depthwise convolution + SiLU (qwen35-model.md
 * §4.6 step 2, §4.8 "Conv").
 *
 *   seq_c = [state_c (K−1 raw inputs, oldest first), x_0[c], …, x_{T−1}[c]]
 *   u_t[c] = silu(Σ_{τ<K} seq_c[t+τ]·w[c][τ])         (tap K−1: current)
 *   state_c ← last K−1 entries of seq_c               (raw, not convolved)
 *
 * Every u_t[c] depends on inputs only, so one thread per (channel, token)
 * computes it, reading its K entries of seq_c: a prompt chunk is as
 * parallel as its size (one thread per channel walking the tokens was
 * ~1 µs of memory latency a token and layer, 100 ms for a 2,048-token
 * chunk of the 27B).  The sum runs over τ in the same order for any T, so
 * a batch equals single steps bit for bit.  Snapshots (rollback of rejected
 * drafts, §6.5): the thread of token t also writes the state after it,
 * seq_c[t+1 .. t+K−1], to ring slot p mod n_snap when its position p ≥
 * snap_from.  Up to CONV_WALK tokens (decode, short verification) one
 * thread walks a channel's tokens with the window in registers and writes
 * the state itself; up to CONV_BLOCK_T tokens (long verification) a block
 * holds every token of CONV_BC channels, one thread each, and its threads
 * move the last K−1 entries into the state after a barrier; beyond that
 * (prompts) a second launch moves them, after every thread of the first
 * has read the old state.  One launch instead of two: ncu timed the
 * second at 2.6 µs a layer, the 27B's 8- and 16-token passes gained 0.06
 * ms on the H200 (docs/perf-log.md).  The same sums in all three.  K ≤ 8.
 * Each kernel triggers its programmatic dependent at its start: the scan
 * after it (rs_k_deltanet's AFTER_CONV) loads its state meanwhile.
 * Oracle:
 * rs_cpu_conv_ref; test: tests/check_cuda.c "conv".  27B: 10240 channels ×
 * (K + 2·T) floats per layer, a few hundred KB.
 */
#include "common.cuh"
#include "rs_kernels.h"

#define CONV_MAX_K	8
#define CONV_THREADS	128
#define CONV_WALK	4	/* tokens one thread walks (see above) */
#define CONV_BLOCK_T	16	/* tokens one block holds */
#define CONV_BC		32	/* channels of such a block */

/* Entry I of seq_c: the state's K−1 entries, then the T inputs. */
static __device__ __forceinline__ float
seq_at(const float *__restrict__ state, const float *__restrict__ x,
    int64_t ldx, int64_t c, int k, int i)
{
	return (i < k - 1 ? state[c * (k - 1) + i] :
	    x[(int64_t)(i - (k - 1)) * ldx + c]);
}

/* u_t[c] and, when asked, the snapshot after token t (see the header). */
static __device__ __forceinline__ void
conv_token(const float *state, const float *__restrict__ w,
    const float *__restrict__ x, int64_t ldx, int64_t c, int k, int t,
    float *__restrict__ u, int64_t n_ch, float *__restrict__ snap,
    int64_t snap_stride, int n_snap, const int32_t *__restrict__ params)
{
	float	win[CONV_MAX_K];
	float	acc = 0.0f;

	for (int i = 0; i < k; i++) {
		win[i] = seq_at(state, x, ldx, c, k, t + i);
		acc += win[i] * w[c * k + i];
	}
	u[(int64_t)t * n_ch + c] = silu_f(acc);
	int p = params[0] + t;
	if (snap != NULL && p >= params[1])
		for (int i = 0; i < k - 1; i++)
			snap[(int64_t)(p % n_snap) * snap_stride + c * (k - 1) +
			    i] = win[i + 1];
}

/*
 * Channel C's N_TOK ≤ CONV_WALK tokens by one thread: seq_c in registers
 * (every index below is a constant once unrolled), u_t[c] summed as in
 * conv_token, the snapshots, then the state, which no other thread reads.
 */
static __device__ __forceinline__ void
conv_walk(float *state, const float *__restrict__ w,
    const float *__restrict__ x, int64_t ldx, int64_t c, int k, int n_tok,
    float *__restrict__ u, int64_t n_ch, float *__restrict__ snap,
    int64_t snap_stride, int n_snap, const int32_t *__restrict__ params)
{
	float	seq[CONV_MAX_K - 1 + CONV_WALK], wc[CONV_MAX_K];

#pragma unroll
	for (int i = 0; i < CONV_MAX_K - 1 + CONV_WALK; i++)
		seq[i] = i < k - 1 + n_tok ? seq_at(state, x, ldx, c, k, i) :
		    0.0f;
#pragma unroll
	for (int i = 0; i < CONV_MAX_K; i++)
		wc[i] = i < k ? w[c * k + i] : 0.0f;
#pragma unroll
	for (int t = 0; t < CONV_WALK; t++) {
		if (t >= n_tok)
			break;
		float acc = 0.0f;
#pragma unroll
		for (int i = 0; i < CONV_MAX_K; i++)
			if (i < k)
				acc += seq[t + i] * wc[i];
		u[(int64_t)t * n_ch + c] = silu_f(acc);
		/* the state after token t: to the ring, and into the
		   state itself after the last token */
		const int p = params[0] + t;
		float *ring = snap != NULL && p >= params[1] ? snap +
		    (int64_t)(p % n_snap) * snap_stride + c * (k - 1) : NULL;
#pragma unroll
		for (int i = 0; i < CONV_MAX_K - 1; i++)
			if (i < k - 1) {
				if (ring != NULL)
					ring[i] = seq[t + 1 + i];
				if (t == n_tok - 1)
					state[c * (k - 1) + i] = seq[t + 1 + i];
			}
	}
}

static __global__ void __launch_bounds__(CONV_THREADS)
conv_kernel(float *state, const float *__restrict__ w,
    const float *__restrict__ x, int64_t ldx, int64_t n_ch, int k, int n_tok,
    float *__restrict__ u, float *__restrict__ snap, int64_t snap_stride,
    int n_snap, const int32_t *__restrict__ params)
{
	const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;

	rs_pdl_trigger();	/* the scan after it may start */
	if (c >= n_ch)
		return;
	if (n_tok <= CONV_WALK) {
		conv_walk(state, w, x, ldx, c, k, n_tok, u, n_ch, snap,
		    snap_stride, n_snap, params);
		return;
	}
	for (int t = blockIdx.y; t < n_tok; t += gridDim.y)
		conv_token(state, w, x, ldx, c, k, t, u, n_ch, snap,
		    snap_stride, n_snap, params);
}

/*
 * CONV_BC channels × every token of a call of CONV_WALK < N_TOK ≤
 * CONV_BLOCK_T tokens: thread (x, y) computes token y of channel x, then,
 * once the block's barrier says every window is read, the threads of rows
 * y < K − 1 move seq_c[T + y] into the state (blockDim.y ≥ K − 1).
 */
static __global__ void __launch_bounds__(CONV_BC * CONV_BLOCK_T)
conv_block_kernel(float *state, const float *__restrict__ w,
    const float *__restrict__ x, int64_t ldx, int64_t n_ch, int k, int n_tok,
    float *__restrict__ u, float *__restrict__ snap, int64_t snap_stride,
    int n_snap, const int32_t *__restrict__ params)
{
	const int64_t c = (int64_t)blockIdx.x * CONV_BC + threadIdx.x;
	const int t = threadIdx.y;
	const bool mover = c < n_ch && t < k - 1;
	float	next = 0.0f;

	rs_pdl_trigger();	/* the scan after it may start */
	if (c < n_ch && t < n_tok)
		conv_token(state, w, x, ldx, c, k, t, u, n_ch, snap,
		    snap_stride, n_snap, params);
	if (mover)
		next = seq_at(state, x, ldx, c, k, n_tok + t);
	__syncthreads();
	if (mover)
		state[c * (k - 1) + t] = next;
}

/* state_c ← seq_c[T .. T+K−2], read before written (one thread each). */
static __global__ void __launch_bounds__(CONV_THREADS)
conv_state_kernel(float *state, const float *__restrict__ x, int64_t ldx,
    int64_t n_ch, int k, int n_tok)
{
	const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	float	win[CONV_MAX_K];

	if (c >= n_ch)
		return;
	for (int i = 0; i < k - 1; i++)
		win[i] = seq_at(state, x, ldx, c, k, n_tok + i);
	for (int i = 0; i < k - 1; i++)
		state[c * (k - 1) + i] = win[i];
}

extern "C" enum rs_status
rs_k_conv(float *d_state, const float *d_w, const float *d_x, int64_t ldx,
    int64_t n_ch, int k, int n_tok, float *d_u, float *d_snap,
    int64_t snap_stride, int n_snap, const int32_t *d_params,
    cudaStream_t stream, struct rs_err *err)
{
	if (k < 2 || k > CONV_MAX_K || n_ch < 1 || n_tok < 1)
		return (rs_errf(err, RS_ERR_INVALID_ARG,
		    "conv: kernel %d (2..%d), %lld channels, %d tokens", k,
		    CONV_MAX_K, (long long)n_ch, n_tok));
	unsigned blocks = (unsigned)((n_ch + CONV_THREADS - 1) / CONV_THREADS);

	if (n_tok > CONV_WALK && n_tok <= CONV_BLOCK_T) {
		conv_block_kernel<<<(unsigned)((n_ch + CONV_BC - 1) / CONV_BC),
		    dim3(CONV_BC, n_tok > k - 1 ? n_tok : k - 1), 0, stream>>>(
		    d_state, d_w, d_x, ldx, n_ch, k, n_tok, d_u, d_snap,
		    snap_stride, n_snap, d_params);
		RS_LAUNCH_CHECK(err, "conv");
		return (RS_OK);
	}
	/* grid rows over the tokens: one when a thread walks them */
	unsigned rows = n_tok <= CONV_WALK ? 1 : n_tok < 65535 ?
	    (unsigned)n_tok : 65535;
	conv_kernel<<<dim3(blocks, rows), CONV_THREADS, 0, stream>>>(
	    d_state, d_w, d_x, ldx, n_ch, k, n_tok, d_u, d_snap, snap_stride,
	    n_snap, d_params);
	RS_LAUNCH_CHECK(err, "conv");
	if (n_tok <= CONV_WALK)
		return (RS_OK);		/* conv_walk updated the state */
	conv_state_kernel<<<blocks, CONV_THREADS, 0, stream>>>(d_state, d_x,
	    ldx, n_ch, k, n_tok);
	RS_LAUNCH_CHECK(err, "conv state");
	return (RS_OK);
}
