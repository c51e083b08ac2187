/*
 * matvec_pipe.cuh - the dp4a matvec of matvec.cu with its weights streamed
 * through shared memory: what Q6_K runs for one and two columns on SM80
 * and later.
 *
 * Why.  ncu on matvec_xq_kernel (ffn_up Q4_K, one column, four rows a
 * warp): DRAM 53 %, L1 55 %, issue 39 %, 128 registers, 16 warps an SM,
 * 54 % of the warps' time waiting on their loads.  The same grid doing
 * only that kernel's loads reaches 73-84 % of the DRAM
 * (kernels/dev/ldpattern.cu), so the addresses are not the limit: each
 * warp loads its rows' chunks, waits, then spends ~600 instructions on
 * them with nothing in flight.  Here the weights travel by cp.async,
 * which holds no registers while in flight:
 *
 *   slice      8 super-blocks of a row, 32 chunks: one per lane, so slice
 *              s of a row holds its chunks 32s .. 32s + 31
 *   stage      slice s of the CTA's 4R rows in shared memory, each row
 *              copied from the 16-byte boundary at or below its first
 *              byte (Q6_K rows are only 2-byte aligned), so a copy keeps
 *              its bytes' offsets modulo 16
 *   ring       S stages: the CTA's 128 threads copy the next slices while
 *              its warps compute this one; CTAs stay resident and walk
 *              the row groups (blockIdx.x, + gridDim.x, ...), so the
 *              copies of the next group overlap the last slices of this
 *   BULK       (SM90 on) warp 0 fills a stage with one bulk copy a row,
 *              counted on the stage's mbarrier, instead of every thread
 *              issuing cp.async pieces
 *
 * Measured (kernels/dev/matvec_xq.cu on several H200s, docs/perf-log.md):
 * on Q6_K faster than matvec_xq_kernel, in bulk most (ffn_down 30.5 µs
 * against 33.1 by cp.async and 35.0 on registers; the 1 GB head, four rows
 * a warp, 309 against 365 and 378); on Q4_K and Q5_K slower in both forms
 * (ffn_up 24-25 against 20), so not for the copies' instructions (bulk
 * has almost none) but for the shared-memory round trip and the barriers,
 * while Q6_K's decode from unaligned global words (ld_a2) gains from
 * reading shared memory instead.
 *
 * Same sums as matvec_xq_kernel, hence the same bits (and those of the
 * mma kernel): lane k takes chunks k, k + 32, ... of each of its rows in
 * order, decodes them through xq_from_shared into the same xq_chunk
 * values, adds them by xq_chunk_dot, and the row's sum is warp_sum of the
 * 32 lanes (check_cuda "matvec" and "matvec_parts" compare the kernels).
 * Before SM80 the kernel has no body: matvec.cu runs matvec_xq_kernel
 * there (no cp.async; Volta's HBM2, not the latency, is its limit).
 */
#ifndef RS_MATVEC_PIPE_CUH
#define RS_MATVEC_PIPE_CUH

#include "common.cuh"
#include "matvec_xq.cuh"
#include "quant.cuh"

#define PIPE_WARPS	4	/* warps a CTA */
#define PIPE_SB		8	/* super-blocks a slice: 32 chunks */

/* A stage's row: a slice and up to 15 bytes before it, in 16-byte pieces. */
template <int TYPE>
struct pipe_geom {
	static constexpr int	pieces = (15 + PIPE_SB *
	    qtraits<TYPE>::qb + 15) / 16;
	static constexpr int	pitch = 16 * pieces;
};

/* Shared-memory bytes of S stages of R rows a warp. */
template <int TYPE, int R, int S>
static constexpr int
pipe_smem_bytes(void)
{
	return (S * PIPE_WARPS * R * pipe_geom<TYPE>::pitch);
}

/*
 * The copies (SM80 on; the kernel has no body before, where matvec.cu
 * never launches it).
 */

/* N (0..16) bytes at SRC to DST, the rest of the 16 zero; asynchronous. */
static __device__ __forceinline__ void
pipe_copy16(uint8_t *dst, const uint8_t *src, int n)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::
	    "r"((uint32_t)__cvta_generic_to_shared(dst)), "l"(src), "r"(n) :
	    "memory");
#else
	(void)dst, (void)src, (void)n;
#endif
}

static __device__ __forceinline__ void
pipe_commit(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

/* Wait until at most N of this thread's copy groups are in flight. */
template <int N>
static __device__ __forceinline__ void
pipe_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
#endif
}

/*
 * Hopper's bulk copies (SM90 on): one instruction moves a row's slice
 * (1,680 bytes of Q6_K) into shared memory and counts its bytes on the
 * stage's mbarrier, where the warps wait for them, in place of ~5
 * cp.async a thread with their address arithmetic and a commit.  The
 * copy's addresses and size are multiples of 16 (pipe_issue_bulk).
 */
static __device__ __forceinline__ uint32_t
pipe_saddr(const void *p)
{
	return ((uint32_t)__cvta_generic_to_shared(p));
}

/* BAR's phases complete after N arrivals (and their bytes) */
static __device__ __forceinline__ void
pipe_bar_init(uint64_t *bar, int n)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::
	    "r"(pipe_saddr(bar)), "r"(n) : "memory");
#else
	(void)bar, (void)n;
#endif
}

/* Make the initialized barriers visible to the copy engine. */
static __device__ __forceinline__ void
pipe_bar_fence(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}

/* One arrival on BAR, whose phase then also waits for BYTES more. */
static __device__ __forceinline__ void
pipe_bar_expect(uint64_t *bar, uint32_t bytes)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
	    :: "r"(pipe_saddr(bar)), "r"(bytes) : "memory");
#else
	(void)bar, (void)bytes;
#endif
}

/* BYTES (a multiple of 16) from SRC to DST, both 16-byte aligned. */
static __device__ __forceinline__ void
pipe_bulk(uint8_t *dst, const uint8_t *src, uint32_t bytes, uint64_t *bar)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::"
	    "complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
	    "r"(pipe_saddr(dst)), "l"(src), "r"(bytes), "r"(pipe_saddr(bar)) :
	    "memory");
#else
	(void)dst, (void)src, (void)bytes, (void)bar;
#endif
}

/* Wait until BAR's phase of parity PARITY has completed. */
static __device__ __forceinline__ void
pipe_bar_wait(uint64_t *bar, uint32_t parity)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	uint32_t done;

	do
		asm volatile("{\n.reg .pred p;\n"
		    "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
		    "selp.u32 %0, 1, 0, p;\n}\n" : "=r"(done) :
		    "r"(pipe_saddr(bar)), "r"(parity) : "memory");
	while (!done);
#else
	(void)bar, (void)parity;
#endif
}

/* Where slice S of row O starts in global memory. */
static __device__ __forceinline__ const uint8_t *
pipe_src(const mv_part &pt, int64_t o, int s, int qb)
{
	if (o >= pt.n_out)	/* rows past the last read it again */
		o = pt.n_out - 1;
	return (pt.w + o * pt.row_bytes + (int64_t)s * PIPE_SB * qb);
}

/*
 * This thread's share of copying slice S (NSB super-blocks of it) of the
 * ROWS rows from O0 on into stage DST, then one commit (also when there
 * is nothing to copy, so that every thread counts the same groups).  Each
 * row is copied by the same 128 / ROWS threads, 16 bytes each in turn, so
 * a piece costs an add, a compare and the copy.
 */
template <int TYPE, int ROWS>
static __device__ __forceinline__ void
pipe_issue(uint8_t *dst, const mv_part &pt, int64_t o0, int s, int nsb)
{
	constexpr int	 tpr = PIPE_WARPS * RS_WARP / ROWS;
	const int	 r = threadIdx.x / tpr;
	const uint8_t	*src = pipe_src(pt, o0 + r, s, qtraits<TYPE>::qb);
	const int	 sh = (int)((uintptr_t)src & 15);
	const int	 end = sh + nsb * qtraits<TYPE>::qb;
	uint8_t		*d = dst + r * pipe_geom<TYPE>::pitch;

	src -= sh;
	for (int b = 16 * (threadIdx.x % tpr); b < end; b += 16 * tpr)
		pipe_copy16(d + b, src + b, min(16, end - b));
	pipe_commit();
}

/*
 * The bulk form of pipe_issue, by warp 0: lane r copies row r's slice in
 * one piece, from the 16-byte boundary at or below its start to the one
 * at or above its end (Q6_K's rows are 2-byte aligned; Q4_K's and Q5_K's
 * slices lie on the boundaries), and announces those bytes on BAR, whose
 * phase waits for ROWS such arrivals.  The rounding reads nothing outside
 * the tensor when it starts and ends on a boundary (matvec.cu:
 * bulk_aligned).
 */
template <int TYPE, int ROWS>
static __device__ __forceinline__ void
pipe_issue_bulk(uint8_t *dst, uint64_t *bar, const mv_part &pt, int64_t o0,
    int s, int nsb)
{
	const int r = threadIdx.x % RS_WARP;

	static_assert(ROWS <= RS_WARP, "a lane a row");
	if (r < ROWS) {
		const uint8_t *src = pipe_src(pt, o0 + r, s, qtraits<TYPE>::qb);
		const uintptr_t lo = (uintptr_t)src & ~(uintptr_t)15;
		const uintptr_t hi = ((uintptr_t)src + (uintptr_t)(nsb *
		    qtraits<TYPE>::qb) + 15) & ~(uintptr_t)15;

		pipe_bar_expect(bar, (uint32_t)(hi - lo));
		pipe_bulk(dst + r * pipe_geom<TYPE>::pitch, (const uint8_t *)lo,
		    (uint32_t)(hi - lo), bar);
	}
}

/* Item (J, S) of this CTA: slice S of its J-th row group. */
struct pipe_item {
	mv_part	 pt;
	int64_t	 o0;	/* the group's first row */
	int	 s;
};

template <int R>
static __device__ __forceinline__ pipe_item
pipe_item_of(const mv_parts &parts, int j, int s)
{
	pipe_item it;

	it.pt = mv_part_of(parts, blockIdx.x + (unsigned)j * gridDim.x);
	it.o0 = it.pt.blk * PIPE_WARPS * R;
	it.s = s;
	return (it);
}

/* The item after (J, S), slices in order, then the next group. */
static __device__ __forceinline__ void
pipe_next(int *j, int *s, int nsl)
{
	if (++*s == nsl) {
		*s = 0;
		++*j;
	}
}

/* Stage (J, S) of the ring: items are numbered J · NSL + S. */
template <int TYPE, int R, int S>
static __device__ __forceinline__ uint8_t *
pipe_stage(uint8_t *ring, int j, int s, int nsl)
{
	return (ring + ((j * nsl + s) % S) * PIPE_WARPS * R *
	    pipe_geom<TYPE>::pitch);
}

/*
 * Starts copying item (J, S) into its stage: by cp.async (every thread
 * copies a share and commits one group, also when there is nothing left)
 * or, BULK, by warp 0 in bulk copies counted on the stage's barrier.
 */
template <int TYPE, int R, int S, bool BULK>
static __device__ __forceinline__ void
pipe_issue_item(uint8_t *ring, uint64_t *bars, const mv_parts &parts,
    int j, int s, int nj, int nsl, int nsb)
{
	if (BULK && (threadIdx.x >= RS_WARP || j >= nj))
		return;
	if (j >= nj) {
		pipe_commit();
		return;
	}
	const pipe_item it = pipe_item_of<R>(parts, j, s);
	uint8_t *stage = pipe_stage<TYPE, R, S>(ring, j, s, nsl);
	const int n = min(PIPE_SB, nsb - s * PIPE_SB);

	if (BULK)
		pipe_issue_bulk<TYPE, PIPE_WARPS * R>(stage, bars + (j * nsl +
		    s) % S, it.pt, it.o0, s, n);
	else
		pipe_issue<TYPE, PIPE_WARPS * R>(stage, it.pt, it.o0, s, n);
}

/*
 * Until item (J, S)'s stage has arrived for the whole CTA.  Item I = J ·
 * NSL + S uses barrier I % S in its phase I / S, whose parity the wait
 * names.
 */
template <int S, bool BULK>
static __device__ __forceinline__ void
pipe_arrived(uint64_t *bars, int j, int s, int nsl)
{
	if (BULK) {
		const int i = j * nsl + s;
		pipe_bar_wait(bars + i % S, (uint32_t)(i / S) & 1);
	} else {
		pipe_wait<S - 1>();
		__syncthreads();
	}
}

template <int TYPE, int NT, int R, int S, bool BULK>
static __global__ void __launch_bounds__(PIPE_WARPS * RS_WARP)
matvec_xq_pipe_kernel(const mv_parts parts, int64_t n_in,
    const xq_in xq)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#if __CUDA_ARCH__ < 900
	if (BULK)	/* no bulk copies before SM90 (never launched there) */
		return;
#endif
	extern __shared__ uint4 pipe_ring[];
	__shared__ uint64_t bars[BULK ? S : 1];
	typedef pipe_geom<TYPE> g;
	constexpr int	 qb = qtraits<TYPE>::qb;
	uint8_t		*ring = (uint8_t *)pipe_ring;
	const int	 lane = threadIdx.x % RS_WARP;
	const int	 wr = threadIdx.x / RS_WARP * R;
	const int	 nsb = (int)(n_in / 256);
	const int	 nsl = (nsb + PIPE_SB - 1) / PIPE_SB;
	const xq_at	 x = xq_at_of(xq, n_in);
	const unsigned	 nvb = parts.first[parts.n];
	const int	 nj = (int)((nvb - blockIdx.x + gridDim.x - 1) /
	    gridDim.x);
	int		 ij = 0, is = 0;	/* the next item to copy */
	float		 acc[R][NT];

	if (BULK) {
		if (threadIdx.x == 0) {
			for (int i = 0; i < S; i++)
				pipe_bar_init(bars + i, PIPE_WARPS * R);
			pipe_bar_fence();
		}
		__syncthreads();
	}
	rs_pdl_trigger();
	for (int q = 0; q < S - 1; q++) {
		pipe_issue_item<TYPE, R, S, BULK>(ring, bars, parts, ij, is, nj,
		    nsl, nsb);
		pipe_next(&ij, &is, nsl);
	}
	/* launched early in decode (matvec.cu: mv_launch): until here,
	   only weights */
	rs_pdl_wait();
	for (int j = 0; j < nj; j++) {
		const pipe_item it = pipe_item_of<R>(parts, j, 0);

#pragma unroll
		for (int r = 0; r < R; r++)
#pragma unroll
			for (int t = 0; t < NT; t++)
				acc[r][t] = 0.0f;
		for (int s = 0; s < nsl; s++) {
			pipe_issue_item<TYPE, R, S, BULK>(ring, bars, parts, ij,
			    is, nj, nsl, nsb);
			pipe_next(&ij, &is, nsl);
			pipe_arrived<S, BULK>(bars, j, s, nsl);

			const uint8_t *stage = pipe_stage<TYPE, R, S>(ring, j, s,
			    nsl);
			if (lane / 4 < nsb - s * PIPE_SB) {
				xq_chunk c[R];
#pragma unroll
				for (int r = 0; r < R; r++) {
					const uint8_t *src = pipe_src(it.pt,
					    it.o0 + wr + r, s, qb);
					xqc<TYPE>::template load<xq_from_shared>(
					    stage + (wr + r) * g::pitch +
					    ((uintptr_t)src & 15), lane / 4,
					    lane % 4, &c[r]);
				}
				xq_chunk_dot<TYPE, NT, R>(c, x,
				    (int64_t)s * PIPE_SB + lane / 4, acc);
			}
			__syncthreads();
		}
#pragma unroll
		for (int r = 0; r < R; r++)
#pragma unroll
			for (int t = 0; t < NT; t++) {
				const float v = warp_sum(acc[r][t]);
				const int64_t o = it.o0 + wr + r;

				if (lane == 0 && o < it.pt.n_out) {
					float *dst = it.pt.y + t * it.pt.ldy + o;
					*dst = it.pt.acc ? *dst + v : v;
				}
			}
	}
#else
	(void)parts, (void)n_in, (void)xq;
#endif
}

#ifndef __CUDACC_RTC__
/*
 * Does this device run code built for SM90 or later: the bulk form, and
 * the programmatic launches of matvec.cu (mv_launch)?  Like
 * has_mma_matvec().
 */
static int
has_bulk_matvec(void)
{
	static signed char known[RS_MAX_DEVICES];

	return (rs_runs_ptx(matvec_xq_pipe_kernel<RS_TYPE_Q6_K, 1, 2, 2, true>,
	    90, known));
}
#endif

#endif /* RS_MATVEC_PIPE_CUH */
