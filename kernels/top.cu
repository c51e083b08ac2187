/*
 * top.cu - the K best logits of each row on the GPU (rs_top.h's order:
 * larger logit first, lower id on ties), so a decode step copies back
 * K·8 bytes instead of the n_vocab floats of the row (1 MB for the 27B).
 *
 *   top[r][0..K) = the K best finite x[r][i] with skip[i] = 0,
 *   bad[r] = min{ i : x[r][i] not finite } or −1.
 *
 * Two kernels.  top_part: TOP_BLOCKS blocks per row, each over a contiguous
 * slice; K rounds, each a block-wide argmax over the elements strictly
 * worse than the last one taken (the order is total, so no element needs
 * a "taken" flag: a thread rescans its few elements from L1), writing a
 * sorted list of K per block, and the slice's first non-finite index.
 * top_merge: one block per row, thread b owns block b's sorted list; K
 * rounds of a block-wide argmax over the list heads.  Every comparison is
 * in the total order, so the result is exact and does not depend on the
 * launch shape.  Oracle: rs_top_select (rs_top.c); test:
 * tests/check_cuda.c "top".
 *
 * Napkin math, 27B row (248,320 logits): one read of the row, 1 MB, 0.3 µs
 * at the H200's bandwidth; K rounds of ~8 loads and one block reduction
 * per thread: ~1 µs for K = 1, ~15 µs for K = 64.  Against a 1 MB copy over
 * PCIe (~40 µs pinned) plus the host's scan of it (~100 µs).
 */
#include <math.h>

#include "common.cuh"
#include "rs_kernels.h"

#define TOP_BLOCKS	128	/* slices per row; top_merge's block size */
#define TOP_THREADS	256

/* A candidate; id −1 (logit −∞) is worse than every real one. */
struct cand {
	float	l;
	int32_t	id;
};

static __device__ __forceinline__ bool
better(struct cand a, struct cand b)
{
	if (b.id < 0)
		return (a.id >= 0);
	if (a.id < 0)
		return (false);
	return (a.l > b.l || (a.l == b.l && a.id < b.id));
}

static __device__ __forceinline__ struct cand
warp_best(struct cand c)
{
	for (int o = RS_WARP / 2; o > 0; o >>= 1) {
		struct cand x;
		x.l = __shfl_xor_sync(0xffffffffu, c.l, o);
		x.id = __shfl_xor_sync(0xffffffffu, c.id, o);
		if (better(x, c))
			c = x;
	}
	return (c);
}

/* The best C of the block, to every thread.  SM: 32 cands. */
static __device__ __forceinline__ struct cand
block_best(struct cand c, struct cand *sm)
{
	int lane = threadIdx.x % RS_WARP, warp = threadIdx.x / RS_WARP;
	int nw = blockDim.x / RS_WARP;

	c = warp_best(c);
	__syncthreads();	/* the last round's readers are done */
	if (lane == 0)
		sm[warp] = c;
	__syncthreads();
	if (lane < nw)
		c = sm[lane];
	else
		c.id = -1;
	return (warp_best(c));
}

static __device__ __forceinline__ int64_t
block_min_i64(int64_t v, int64_t *sm)
{
	int lane = threadIdx.x % RS_WARP, warp = threadIdx.x / RS_WARP;
	int nw = blockDim.x / RS_WARP;

	for (int o = RS_WARP / 2; o > 0; o >>= 1)
		v = min(v, (int64_t)__shfl_xor_sync(0xffffffffu, (long long)v, o));
	__syncthreads();
	if (lane == 0)
		sm[warp] = v;
	__syncthreads();
	v = lane < nw ? sm[lane] : INT64_MAX;
	for (int o = RS_WARP / 2; o > 0; o >>= 1)
		v = min(v, (int64_t)__shfl_xor_sync(0xffffffffu, (long long)v, o));
	return (v);
}

static __global__ void __launch_bounds__(TOP_THREADS)
top_part(const float *__restrict__ x, int64_t ldx, int64_t n, int k,
    const unsigned char *__restrict__ skip, struct cand *__restrict__ part,
    int64_t *__restrict__ pbad)
{
	__shared__ struct cand	sm[32];
	__shared__ int64_t	smb[32];
	const int	 b = blockIdx.x, r = blockIdx.y;
	const int64_t	 chunk = (n + TOP_BLOCKS - 1) / TOP_BLOCKS;
	const int64_t	 i0 = b * chunk, i1 = min(n, i0 + chunk);
	const float	*row = x + r * ldx;
	struct cand	*out = part + ((int64_t)r * TOP_BLOCKS + b) * k;
	struct cand	 last = { -INFINITY, -1 };
	int64_t		 bad = INT64_MAX;

	for (int64_t i = i0 + threadIdx.x; i < i1; i += blockDim.x)
		if (!isfinite(row[i]))
			bad = min(bad, i);
	bad = block_min_i64(bad, smb);
	if (threadIdx.x == 0)
		pbad[(int64_t)r * TOP_BLOCKS + b] = bad;
	for (int round = 0; round < k; round++) {
		struct cand c = { -INFINITY, -1 };
		for (int64_t i = i0 + threadIdx.x; i < i1; i += blockDim.x) {
			struct cand e = { row[i], (int32_t)i };
			if (!isfinite(e.l) || (skip != NULL && skip[i]))
				continue;
			/* strictly after the last one taken */
			if (round > 0 && !better(last, e))
				continue;
			if (better(e, c))
				c = e;
		}
		c = block_best(c, sm);
		if (threadIdx.x == 0)
			out[round] = c;
		last = c;
		if (c.id < 0) {		/* the slice is used up */
			for (int j = round + 1 + threadIdx.x; j < k;
			    j += blockDim.x)
				out[j] = c;
			break;
		}
	}
}

static __global__ void __launch_bounds__(TOP_BLOCKS)
top_merge(const struct cand *__restrict__ part,
    const int64_t *__restrict__ pbad, int k, struct rs_top *__restrict__ top,
    int64_t *__restrict__ bad)
{
	__shared__ struct cand	sm[32];
	__shared__ int64_t	smb[32];
	const int	 r = blockIdx.x, b = threadIdx.x;
	const struct cand *mine = part + ((int64_t)r * TOP_BLOCKS + b) * k;
	int		 at = 0;

	int64_t v = block_min_i64(pbad[(int64_t)r * TOP_BLOCKS + b], smb);
	if (b == 0)
		bad[r] = v == INT64_MAX ? -1 : v;
	for (int round = 0; round < k; round++) {
		struct cand h = { -INFINITY, -1 };
		if (at < k)
			h = mine[at];
		struct cand c = block_best(h, sm);
		if (c.id >= 0 && h.id == c.id)
			at++;
		if (b == 0) {
			top[(int64_t)r * k + round].id = c.id;
			top[(int64_t)r * k + round].logit = c.id < 0 ?
			    -INFINITY : c.l;
		}
	}
}

size_t
rs_k_top_scratch(int rows, int k)
{
	return ((size_t)rows * TOP_BLOCKS * ((size_t)k * sizeof(struct cand) +
	    sizeof(int64_t)));
}

extern "C" enum rs_status
rs_k_top(const float *d_x, int64_t ldx, int64_t n, int rows, int k,
    const unsigned char *d_skip, struct rs_top *d_top, int64_t *d_bad,
    void *d_scratch, cudaStream_t stream, struct rs_err *err)
{
	struct cand	*part = (struct cand *)d_scratch;
	int64_t		*pbad = (int64_t *)(part + (size_t)rows * TOP_BLOCKS * k);

	if (rows < 1 || n < 1 || n > INT32_MAX || k < 1 || k > RS_TOP_MAX ||
	    ldx < n)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "top: %d rows of %lld "
		    "(stride %lld), k %d (1 .. %d)", rows, (long long)n,
		    (long long)ldx, k, RS_TOP_MAX));
	top_part<<<dim3(TOP_BLOCKS, (unsigned)rows), TOP_THREADS, 0,
	    stream>>>(d_x, ldx, n, k, d_skip, part, pbad);
	RS_LAUNCH_CHECK(err, "top part");
	top_merge<<<(unsigned)rows, TOP_BLOCKS, 0, stream>>>(part, pbad, k,
	    d_top, d_bad);
	RS_LAUNCH_CHECK(err, "top merge");
	return (RS_OK);
}
