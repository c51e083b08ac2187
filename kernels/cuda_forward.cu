/*
 * cuda_forward.cu - the engine's CUDA backend: the qwen35 trunk (§4) and the
 * MTP block (§6) on the GPU, with the same structure and operation order as
 * the CPU backend (rs_cpu_forward.c), which is its oracle.
 *
 * Memory plan, allocated once (rs_engine_memory() and rs_state_bytes()
 * report it, rs-bench --plan predicts it):
 *   weights   every tensor of the GGUF in one device arena, as stored
 *             (quantized blocks are decoded inside the kernels);
 *   state     per sequence (rs_engine_state_new): f16 KV caches, f32 conv
 *             and recurrent state, snapshot ring, checkpoint (rs_state.c
 *             through cuda_mem below);
 *   scratch   activations for max_batch tokens (the prefill chunk, 2048 by
 *             default), attention partials and logits for the exact
 *             path's calls (EXACT_ROWS), the prefill products' f16
 *             copies (gemm.cu).
 * Two paths: calls of at most RS_ENGINE_EXACT_MAX tokens (decode steps,
 * verification) run the batch-invariant matvec and flash-decoding
 * attention, bit-identical to single steps; longer calls (prompts) run
 * the products on tensor cores (rs_k_mm) and the attention as causal
 * flash attention over the chunk (rs_k_attn_prefill).
 * The token loop never allocates.  A call copies its tokens and its three
 * parameters (first position, first recorded position, the position whose
 * recurrent state it writes in full: rs_kernels.h) to the device,
 * runs every kernel on one stream and copies logits / hidden rows back.
 * Calls of the exact path (decode steps, verification passes) run as one
 * CUDA graph launch, graphs kept per token count for the last few states
 * and outputs asked for (pass_graph()): no host synchronisation inside a
 * call, one at its end.
 *
 * Layer split (--devices, rs_split.h, docs/multi-gpu.md): each device slot
 * has all of the above for its own blocks (weights, scratch, stream, its
 * share of every state) and runs the same kernels on them in the same
 * order, so the logits are bit for bit the one-GPU ones.  At a boundary
 * the next slot's stream waits for an event of the previous one and the
 * residual stream x (n_embd floats a token) is copied across (peer copy,
 * or through the host without peer access); every slot has its own copy
 * of the call's tokens and parameters.  A decode step or a verification
 * pass is one graph per slot, the boundary copies between the launches.
 * "0,0" runs all of it on one GPU.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

extern "C" {
#include "rs_engine_impl.h"
#include "rs_gguf.h"
#include "rs_model.h"
#include "rs_state_impl.h"
#include "rs_tile.h"
#include "rs_types.h"
#include "rs_xq.h"
}
#include "common.cuh"
#include "rs_kernels.h"

struct dev_w {
	const void	*d;
	int		 type;
	int64_t		 n_in, n_out, row_bytes;
};

/*
 * A call of the exact path captured as one CUDA graph (pass_graph()), and
 * what it was captured for: its state, its first row of logits or top-k
 * candidates, and which outputs it copies to pinned memory; USED orders
 * the ways of one token count for eviction (the least recent goes).
 */
struct pass_graph {
	cudaGraphExec_t	 exec;
	uint64_t	 serial;	/* the state's serial (not its address) */
	uint64_t	 used;
	int32_t		 from;
	int		 logits, hidden, top, skip;
	int64_t		 reach;		/* the attention's MAX_KEYS */
};

/*
 * Graphs kept per token count: one a state for this many states used in
 * turn (rs-serve's --slots alternating jobs between its states) before a
 * capture must replace one.
 */
#define GRAPH_WAYS	4

struct cuda {
	cudaStream_t	 s;
	uint8_t		*arena;		/* weights */
	size_t		 arena_bytes;
	struct dev_w	*w;		/* per GGUF tensor index */
	int64_t		 batch;
	/* activations (batch, width), as in the CPU backend */
	float	*x, *h, *y, *mixed, *u, *z, *bb, *aa, *mix, *qg, *kk, *vv;
	float	*fg, *fu, *cat, *attn, *logits;
	struct rs_k_mm *mm;	/* prefill products (max_batch > EXACT_ROWS) */
	/* the input rs_k_mm holds in f16 (MM_ROWS rows of MM_WIDTH at MM_SRC,
	   MM_LD apart); MM_SRC NULL: none */
	const float *mm_src;
	int64_t	 mm_width, mm_ld, mm_rows;
	/* XQ_ROWS rows of XQ_WIDTH values at XQ_SRC (XQ_LD apart) in the
	   16-bit format of rs_xq.h, one batch: the input of the next
	   products; XQ_SRC NULL: none */
	uint8_t	*xq;
	const float *xq_src;
	int64_t	 xq_width, xq_ld, xq_rows;
	size_t	 scratch_bytes;
	int32_t	*d_tokens, *d_params;
	/* top-k selection of the exact path's logits rows (top.cu):
	   (EXACT_ROWS, RS_TOP_MAX) candidates, (EXACT_ROWS) first bad index */
	struct rs_top *d_top;
	int64_t	*d_bad;
	void	*top_scr;
	unsigned char *d_skip;	/* (n_vocab) rs_engine_set_top_skip's mask */
	/* pinned host staging */
	int32_t	*h_tokens, *h_params;
	float	*h_logits, *h_hidden;
	struct rs_top *h_top;
	int64_t	*h_bad;
	/* the exact path's graphs, graph[n − 1][·] for calls of n tokens,
	   and the clock of their USED stamps */
	struct pass_graph graph[RS_ENGINE_EXACT_MAX][GRAPH_WAYS];
	uint64_t	 graph_clock;
	/* this device slot of the layer split (rs_split.h) */
	int		 dev;		/* CUDA ordinal; −1: the current one */
	uint32_t	 l0, l1;	/* its trunk blocks l0 .. l1 − 1 */
	cudaEvent_t	 done;		/* its part of a call, for the next */
};

/*
 * The engine's private data: one struct cuda per device slot, each with
 * its weights, scratch, stream and graphs; CUR is the slot that the
 * helpers below work on (cc()), set with on_slot().  One slot on device
 * −1 is the engine without a split: cudaSetDevice is never called.
 */
struct multi {
	int		 n;
	int		 cur;
	struct cuda	*d[RS_SPLIT_MAX];
};

/* Devices some engine of the process has run on (for sync), and whether
   two of them are different GPUs (copies must find their devices). */
static int	seen_dev[64];
static int	n_seen_dev;
static int	multi_dev;

static void
saw_device(int dev)
{
	int	i;

	for (i = 0; i < n_seen_dev && seen_dev[i] != dev; i++)
		;
	if (i == n_seen_dev && n_seen_dev < 64)
		seen_dev[n_seen_dev++] = dev;
	multi_dev = n_seen_dev > 1;
}

/* The device holding P (current when unknown). */
static int
dev_of(const void *p)
{
	cudaPointerAttributes a;
	int	d = 0;

	if (cudaPointerGetAttributes(&a, p) == cudaSuccess &&
	    a.type == cudaMemoryTypeDevice)
		return (a.device);
	(void)cudaGetLastError();
	(void)cudaGetDevice(&d);
	return (d);
}

/* With several GPUs, make P's device current (its legacy stream orders the
   copy with that device's work). */
static void
on_dev_of(const void *p)
{
	if (multi_dev)
		(void)cudaSetDevice(dev_of(p));
}

/* ---- state memory on the device ---- */

static void *
dev_alloc(size_t bytes)
{
	void	*p = NULL;

	if (cudaMalloc(&p, bytes) != cudaSuccess) {
		/* a refusal is not sticky: clear it, or the next launch's
		   check reports it (a caller may retry with less) */
		(void)cudaGetLastError();
		return (NULL);
	}
	if (cudaMemset(p, 0, bytes) != cudaSuccess) {
		cudaFree(p);
		return (NULL);
	}
	return (p);
}

static void
dev_free(void *p)
{
	cudaFree(p);
}

/*
 * Errors stay sticky in the runtime and fail the next call's checks.
 * Between two GPUs (a layer split's checkpoint cache) cudaMemcpyPeer,
 * which is ordered with all work of both devices.
 */
static void
dev_copy(void *dst, const void *src, size_t bytes)
{
	if (multi_dev) {
		int dd = dev_of(dst), sd = dev_of(src);
		if (dd != sd) {
			(void)cudaMemcpyPeer(dst, dd, src, sd, bytes);
			return;
		}
		(void)cudaSetDevice(dd);
	}
	(void)cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice);
}

static void
dev_zero(void *p, size_t bytes)
{
	on_dev_of(p);
	(void)cudaMemset(p, 0, bytes);
}

/* Copies to and from any host memory (pageable: synchronous). */
static void
dev_to_host(void *host, const void *src, size_t bytes)
{
	on_dev_of(src);
	(void)cudaMemcpy(host, src, bytes, cudaMemcpyDeviceToHost);
}

static void
dev_from_host(void *dst, const void *host, size_t bytes)
{
	on_dev_of(dst);
	(void)cudaMemcpy(dst, host, bytes, cudaMemcpyHostToDevice);
}

/*
 * Checkpoints spilled to host RAM (rs_ckcache.h): page-locked buffers
 * that the cache keeps and reuses, and copies queued on the legacy
 * default stream, which the backend's blocking stream is ordered with,
 * so the host never waits for them.  27B: 150 MiB at ~50 GB/s over PCIe
 * 5 x16, ~3 ms, against ~15-60 ms for a synchronous copy into freshly
 * malloc'd pageable memory (staging plus a page fault per 4 KiB).
 */
static void *
dev_host_alloc(size_t bytes)
{
	void	*p = NULL;

	if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess)
		return (NULL);
	return (p);
}

static void
dev_host_free(void *p)
{
	cudaFreeHost(p);
}

static void
dev_to_host_async(void *host, const void *src, size_t bytes)
{
	on_dev_of(src);
	(void)cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost,
	    cudaStreamLegacy);
}

static void
dev_from_host_async(void *dst, const void *host, size_t bytes)
{
	on_dev_of(dst);
	(void)cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice,
	    cudaStreamLegacy);
}

static void
dev_sync(void)
{
	int	cur = 0;

	if (!multi_dev) {
		(void)cudaDeviceSynchronize();
		return;
	}
	(void)cudaGetDevice(&cur);
	for (int i = 0; i < n_seen_dev; i++) {
		(void)cudaSetDevice(seen_dev[i]);
		(void)cudaDeviceSynchronize();
	}
	(void)cudaSetDevice(cur);
}

static void
dev_set_device(int dev)
{
	(void)cudaSetDevice(dev);
}

/*
 * rs_state_mem's gdn_replay: part Q's recurrent states rebuilt by one
 * launch over its blocks, on the legacy default stream, which the
 * backend's blocking stream is ordered with (like the copies).
 */
static enum rs_status
dev_gdn_replay(struct rs_state *st, struct rs_state_part *q, int32_t base,
    int32_t last, struct rs_err *err)
{
	const struct rs_hparams *hp = &st->model->hp;
	const int64_t ring = (int64_t)q->n_gdn * st->ssm_len;

	return (rs_k_deltanet_replay(q->ssm, st->ssm_len, base >= 0 ?
	    q->snap_ssm + (int64_t)(base % st->n_snap) * ring : NULL,
	    q->snap_rec, st->rec_len, (int64_t)q->n_gdn * st->rec_len,
	    st->n_snap, base + 1, last - base, q->n_gdn, (int)hp->ssm_n_kh,
	    (int)hp->ssm_n_vh, (int)hp->ssm_d_state, 0, err));
}

/*
 * Not const: clang's CUDA front end would take a namespace-scope const
 * struct that rs_cuda_backend points at for an implicit __constant__
 * variable, emit it on the device and make ptxas fail on the host function
 * addresses in it (building for sm_70 with clang, scripts/cuda129.sh).
 */
static struct rs_state_mem cuda_mem = {
	"cuda", dev_alloc, dev_free, dev_copy, dev_zero, sizeof(uint16_t),
	dev_to_host, dev_from_host, dev_host_alloc, dev_host_free,
	dev_to_host_async, dev_from_host_async, dev_sync, dev_set_device,
	dev_gdn_replay
};

/* why the last rs_cuda_device_count() found none, or NULL */
static const char *no_device_why;

extern "C" int
rs_cuda_device_count(void)
{
	int	n = 0;
	const cudaError_t ce = cudaGetDeviceCount(&n);

	if (ce != cudaSuccess) {
		/* (the runtime says "insufficient" for no driver at all) */
		no_device_why = ce == cudaErrorInsufficientDriver ? "no NVIDIA "
		    "driver, or one older than this build's CUDA runtime" :
		    cudaGetErrorString(ce);
		(void)cudaGetLastError();	/* not sticky */
		return (0);
	}
	no_device_why = n > 0 ? NULL : "none in this machine";
	return (n);
}

extern "C" const char *
rs_cuda_no_device_why(void)
{
	return (no_device_why != NULL ? no_device_why : "none found");
}

/* (the kernel whose attributes say whether this build runs on a GPU) */
static __global__ void
arch_probe_kernel(void)
{
}

/*
 * Does this build hold code that GPU DEV (−1: the current one) runs?
 * Every kernel file is compiled for the same CUDA_ARCHS (the Makefile),
 * so one kernel answers for all; without the check the first launch
 * would fail with the runtime's "no kernel image is available" and no
 * hint.  SASS runs on the GPUs of its major version from its minor on
 * (sm_80 on 8.0-8.9), the PTX of the last listed arch on every newer GPU
 * through the driver's JIT; Volta needs `make volta`.
 */
extern "C" enum rs_status
rs_cuda_check_device(int dev, struct rs_err *err)
{
	cudaFuncAttributes fa;
	int major = 0, minor = 0, prev = 0;

	(void)cudaGetDevice(&prev);
	if (dev < 0)
		dev = prev;
	RS_CUDA_TRY(err, cudaSetDevice(dev));
	const cudaError_t ce = cudaFuncGetAttributes(&fa, arch_probe_kernel);
	(void)cudaGetLastError();	/* not sticky: clear it */
	(void)cudaDeviceGetAttribute(&major,
	    cudaDevAttrComputeCapabilityMajor, dev);
	(void)cudaDeviceGetAttribute(&minor,
	    cudaDevAttrComputeCapabilityMinor, dev);
	(void)cudaSetDevice(prev);
	if (ce == cudaSuccess)
		return (RS_OK);
	if (ce == cudaErrorUnsupportedPtxVersion)
		return (rs_errf(err, RS_ERR_UNSUPPORTED, "backend 'cuda': GPU "
		    "%d: %s: the driver is older than the CUDA toolkit of "
		    "this build; update the NVIDIA driver", dev,
		    cudaGetErrorString(ce)));
	if (major < 7)
		return (rs_errf(err, RS_ERR_UNSUPPORTED, "backend 'cuda': GPU "
		    "%d has compute capability %d.%d; Redshift needs 7.0 "
		    "(Volta) or later", dev, major, minor));
	if (major == 7 && minor == 0)
		return (rs_errf(err, RS_ERR_UNSUPPORTED, "backend 'cuda': "
		    "this build has no code for GPU %d (compute capability "
		    "7.0, Volta: %s); build with `make volta` (CUDA 12.9, "
		    "README: Building)", dev, cudaGetErrorString(ce)));
	return (rs_errf(err, RS_ERR_UNSUPPORTED, "backend 'cuda': this build "
	    "has no code for GPU %d (compute capability %d.%d: %s); rebuild "
	    "for it: `make clean && make CUDA_ARCHS=%d%d` (README: Building)",
	    dev, major, minor, cudaGetErrorString(ce), major, minor));
}

extern "C" enum rs_status
rs_cuda_mem_info(int dev, uint64_t *free_bytes, uint64_t *total_bytes,
    struct rs_err *err)
{
	size_t	f, t;

	if (dev >= 0)
		RS_CUDA_TRY(err, cudaSetDevice(dev));
	RS_CUDA_TRY(err, cudaMemGetInfo(&f, &t));
	*free_bytes = f;
	*total_bytes = t;
	return (RS_OK);
}

/* ---- helpers ---- */

/* The current device slot's data. */
static struct cuda *
cc(const struct rs_engine *e)
{
	const struct multi *mu = (const struct multi *)e->be;

	return (mu->d[mu->cur]);
}

/* Make slot J current (its device too). */
static void
on_slot(struct rs_engine *e, int j)
{
	struct multi *mu = (struct multi *)e->be;

	mu->cur = j;
	if (mu->d[j]->dev >= 0)
		(void)cudaSetDevice(mu->d[j]->dev);
}

static int
n_slots(const struct rs_engine *e)
{
	return (((const struct multi *)e->be)->n);
}

static const struct dev_w *
dw(const struct rs_engine *e, const struct rs_gguf_tensor *t)
{
	const struct cuda *c = cc(e);

	return (&c->w[t - rs_gguf_tensor(e->model->gguf, 0)]);
}

static const float *
dvec(const struct rs_engine *e, const struct rs_gguf_tensor *t)
{
	return ((const float *)dw(e, t)->d);
}

/*
 * Rows of the logits and attention-partial buffers: the exact path's
 * longest call, the most rows of logits a call computes at once.
 */
#define EXACT_ROWS	RS_ENGINE_EXACT_MAX

/* Whether a call of N tokens takes the prefill path. */
static int
prefill_path(int64_t n)
{
	return (n > RS_ENGINE_EXACT_MAX);
}

/*
 * The next kernel writes X (N rows of WIDTH, LDX apart), the input of the
 * products that follow.  On the exact path it also writes X in the 16-bit
 * format of their integer path (rs_k_matvec) where this returns: NULL when
 * WIDTH is not a multiple of 32 (the f32 path) or on the prefill path,
 * whose products convert X to f16 themselves (mv).  Either conversion
 * serves every product of the same input (q, k, v; gate and up); this call
 * also forgets the last one's.
 */
static void *
xq_for(struct cuda *c, const float *x, int64_t ldx, int64_t width, int64_t n)
{
	c->mm_src = NULL;
	c->xq_src = width % RS_XQ_BLOCK == 0 && !prefill_path(n) ? x : NULL;
	c->xq_width = width;
	c->xq_ld = ldx;
	c->xq_rows = n;
	return (c->xq_src == NULL ? NULL : c->xq);
}

/* X (as for xq_for) into c->xq, when no kernel converts it on the way. */
static enum rs_status
quant(struct rs_engine *e, const float *x, int64_t ldx, int64_t width,
    int64_t n, struct rs_err *err)
{
	struct cuda *c = cc(e);
	void *xq = xq_for(c, x, ldx, width, n);

	return (xq == NULL ? RS_OK : rs_k_xq(x, ldx, width, (int)n, xq, c->s,
	    err));
}

/*
 * The converted form of the N rows at X (LDX apart): their columns in the
 * last converted batch, or .d NULL.
 */
static struct rs_k_xq_cols
xq_of(const struct cuda *c, const float *x, int64_t ldx, int64_t width,
    int64_t n)
{
	struct rs_k_xq_cols none = { NULL, 0, 0 }, got = none;

	if (c->xq_src == NULL || width != c->xq_width || ldx != c->xq_ld ||
	    x < c->xq_src)
		return (none);
	int64_t off = x - c->xq_src;
	if (off % ldx != 0 || off / ldx + n > c->xq_rows)
		return (none);
	got.d = c->xq;
	got.nb = (int)c->xq_rows;
	got.t0 = (int)(off / ldx);
	return (got);
}

/* columns I .. of XQ */
static struct rs_k_xq_cols
xq_from(struct rs_k_xq_cols xq, int64_t i)
{
	xq.t0 += (int)i;
	return (xq);
}

/*
 * Y (+)= W·X for N tokens: on tensor cores for a prefill chunk, else in
 * matvec launches of up to 16 columns, on X's integer form if X is part of
 * what was last converted, else on X.
 */
static enum rs_status
mv(struct rs_engine *e, const struct rs_gguf_tensor *t, const float *x,
    int64_t ldx, float *y, int64_t ldy, int64_t n, int acc, struct rs_err *err)
{
	struct cuda *c = cc(e);
	const struct dev_w *w = dw(e, t);
	struct rs_k_xq_cols xq = xq_of(c, x, ldx, w->n_in, n);
	enum rs_status st;

	/* tiled weights take only x's 16-bit form: make it if no kernel
	   before did (every product's input has one today) */
	if (!prefill_path(n) && (w->type & RS_TILED) && xq.d == NULL) {
		if ((st = quant(e, x, ldx, w->n_in, n, err)) != RS_OK)
			return (st);
		xq = xq_of(c, x, ldx, w->n_in, n);
	}
	if (prefill_path(n)) {
		if (x != c->mm_src || ldx != c->mm_ld || n != c->mm_rows ||
		    w->n_in != c->mm_width) {
			if ((st = rs_k_mm_input(c->mm, x, ldx, w->n_in, (int)n,
			    c->s, err)) != RS_OK)
				return (st);
			c->mm_src = x;
			c->mm_ld = ldx;
			c->mm_rows = n;
			c->mm_width = w->n_in;
		}
		return (rs_k_mm(c->mm, w->d, w->type, w->n_in, w->n_out,
		    w->row_bytes, y, ldy, acc, c->s, err));
	}
	for (int64_t i = 0; i < n; i += RS_K_MATVEC_MAX_COLS) {
		int k = (int)(n - i < RS_K_MATVEC_MAX_COLS ? n - i :
		    RS_K_MATVEC_MAX_COLS);
		if ((st = rs_k_matvec(w->d, w->type, w->n_in, w->n_out,
		    w->row_bytes, x + i * ldx, ldx, xq_from(xq, i),
		    y + i * ldy, ldy, k, acc, c->s, err)) != RS_OK)
			return (st);
	}
	return (RS_OK);
}

/* One product of a group: Y (LDY apart) = T·X. */
struct mv_out {
	const struct rs_gguf_tensor	*t;
	float				*y;
	int64_t				 ldy;
};

/*
 * The N_OUT products of one input X (q, k and v; gate and up; a GDN
 * layer's four projections), each as mv() gives it, bit for bit: on the
 * integer path in one launch per 16 columns (rs_k_matvec_parts groups
 * the products of one type), else one mv() after the other.
 */
static enum rs_status
mv_group(struct rs_engine *e, const struct mv_out *o, int n_out,
    const float *x, int64_t ldx, int64_t n, struct rs_err *err)
{
	struct cuda *c = cc(e);
	const int64_t n_in = dw(e, o[0].t)->n_in;
	const struct rs_k_xq_cols xq = xq_of(c, x, ldx, n_in, n);
	struct rs_k_mv_part p[RS_K_MATVEC_MAX_PARTS];
	enum rs_status st;

	if (prefill_path(n) || xq.d == NULL ||
	    n_out > RS_K_MATVEC_MAX_PARTS) {
		for (int j = 0; j < n_out; j++)
			if ((st = mv(e, o[j].t, x, ldx, o[j].y, o[j].ldy, n, 0,
			    err)) != RS_OK)
				return (st);
		return (RS_OK);
	}
	for (int64_t i = 0; i < n; i += RS_K_MATVEC_MAX_COLS) {
		int k = (int)(n - i < RS_K_MATVEC_MAX_COLS ? n - i :
		    RS_K_MATVEC_MAX_COLS);
		for (int j = 0; j < n_out; j++) {
			const struct dev_w *w = dw(e, o[j].t);
			p[j] = (struct rs_k_mv_part){ w->d, w->type, w->n_out,
			    w->row_bytes, o[j].y + i * o[j].ldy, o[j].ldy, 0 };
		}
		if ((st = rs_k_matvec_parts(p, n_out, n_in, x + i * ldx, ldx,
		    xq_from(xq, i), k, c->s, err)) != RS_OK)
			return (st);
	}
	return (RS_OK);
}

static enum rs_status
norm_rows(struct rs_engine *e, const float *x, const struct rs_gguf_tensor *w,
    float *y, int64_t ldy, int64_t n, struct rs_err *err)
{
	struct cuda *c = cc(e);
	const int64_t d = e->model->hp.n_embd;

	return (rs_k_rmsnorm(x, d, dvec(e, w), y, ldy, d, n,
	    e->model->hp.rms_eps, xq_for(c, y, ldy, d, n), c->s, err));
}

#define TRY(x)	do { if ((s = (x)) != RS_OK) return (s); } while (0)

/* ---- blocks ---- */

static enum rs_status
ffn_block(struct rs_engine *e, const struct rs_layer *l, int64_t n,
    struct rs_err *err)
{
	struct cuda *c = cc(e);
	const int64_t d = e->model->hp.n_embd, ff = e->model->hp.n_ff;
	const struct mv_out o[] = { { l->ffn_gate, c->fg, ff },
	    { l->ffn_up, c->fu, ff } };
	enum rs_status s;

	TRY(norm_rows(e, c->x, l->post_norm, c->h, d, n, err));
	TRY(mv_group(e, o, 2, c->h, d, n, err));
	TRY(rs_k_swiglu(c->fg, c->fu, c->fg, ff, (int)n, xq_for(c, c->fg, ff,
	    ff, n), c->s, err));
	return (mv(e, l->ffn_down, c->fg, ff, c->x, d, n, 1, err));
}

static enum rs_status
gdn_block(struct rs_engine *e, struct rs_state *st, const struct rs_layer *l,
    int32_t slot, int64_t n, struct rs_err *err)
{
	struct cuda *c = cc(e);
	const struct rs_hparams *hp = &e->model->hp;
	const int	 ds = (int)hp->ssm_d_state;
	const int64_t	 d = hp->n_embd, di = hp->ssm_d_inner, nvh = hp->ssm_n_vh;
	const int64_t	 ch = 2 * (int64_t)hp->ssm_n_kh * ds + di;
	/* the ring of the slot's part: entries n_gdn (its own) blocks apart */
	struct rs_state_part *q = rs_state_gdn_part(st, slot);
	float		*snap_c = NULL;
	struct rs_k_gdn_ring ring = { NULL, 0, NULL, 0, 0 };
	enum rs_status	 s;

	if (st->n_snap > 0) {
		snap_c = q->snap_conv + (int64_t)(slot - q->gdn0) *
		    st->conv_len;
		ring.full = q->snap_ssm + (int64_t)(slot - q->gdn0) *
		    st->ssm_len;
		ring.full_stride = (int64_t)q->n_gdn * st->ssm_len;
		ring.rec = q->snap_rec + (int64_t)(slot - q->gdn0) *
		    st->rec_len;
		ring.rec_stride = (int64_t)q->n_gdn * st->rec_len;
		ring.n = st->n_snap;
	}
	const struct mv_out o[] = { { l->qkv, c->mixed, ch },
	    { l->gate, c->z, di }, { l->beta, c->bb, nvh },
	    { l->alpha, c->aa, nvh } };
	TRY(mv_group(e, o, 4, c->h, d, n, err));
	TRY(rs_k_conv(rs_state_conv(st, slot), dvec(e, l->conv1d), c->mixed, ch,
	    ch, (int)hp->ssm_conv_kernel, (int)n, c->u, snap_c,
	    (int64_t)q->n_gdn * st->conv_len, st->n_snap, c->d_params, c->s,
	    err));
	/* the norm writes ssm_out's 16-bit input itself where it can */
	void *xq = ds % RS_XQ_BLOCK == 0 ? xq_for(c, c->mix, di, di, n) : NULL;
	if (n <= RS_K_DN_GN_MAX) {
		/* the gated norm in the scan's launch (rs_kernels.h says why):
		   the same bits */
		const struct rs_k_gnorm gn = { c->z, dvec(e, l->ssm_norm),
		    hp->rms_eps, xq };
		TRY(rs_k_deltanet_gnorm(rs_state_ssm(st, slot), c->u, ch,
		    c->bb, c->aa, nvh, dvec(e, l->dt_bias), dvec(e, l->ssm_a),
		    (int)hp->ssm_n_kh, (int)nvh, ds, (int)n, hp->rms_eps,
		    c->mix, st->n_snap > 0 ? &ring : NULL, c->d_params, 1, &gn,
		    c->s, err));
	} else {
		TRY(rs_k_deltanet(rs_state_ssm(st, slot), c->u, ch, c->bb,
		    c->aa, nvh, dvec(e, l->dt_bias), dvec(e, l->ssm_a),
		    (int)hp->ssm_n_kh, (int)nvh, ds, (int)n, hp->rms_eps,
		    c->mix, st->n_snap > 0 ? &ring : NULL, c->d_params, 1,
		    c->s, err));
		TRY(rs_k_gated_rmsnorm(c->mix, c->z, dvec(e, l->ssm_norm),
		    c->mix, ds, n * nvh, hp->rms_eps, xq, nvh, c->s, err));
	}
	if (xq == NULL)
		TRY(quant(e, c->mix, di, di, n, err));
	return (mv(e, l->ssm_out, c->mix, di, c->x, d, n, 1, err));
}

/*
 * h (n, n_embd) → x += ATTN(h), K/V to the f16 caches KC/VC at params[0];
 * MAX_KEYS bounds params[0] + n (rs_k_attn).
 */
static enum rs_status
attn_block(struct rs_engine *e, const struct rs_layer *l, uint16_t *kc,
    uint16_t *vc, int64_t n, int64_t max_keys, struct rs_err *err)
{
	struct cuda *c = cc(e);
	const struct rs_hparams *hp = &e->model->hp;
	const int	 hd = (int)hp->head_dim, hdv = (int)hp->head_dim_v;
	const int	 nh = (int)hp->n_head, nkv = (int)hp->n_head_kv;
	const int64_t	 d = hp->n_embd, qdim = 2 * (int64_t)nh * hd;
	const int64_t	 ldk = (int64_t)nkv * hd, ldv = (int64_t)nkv * hdv;
	enum rs_status	 s;

	const struct mv_out o[] = { { l->wq, c->qg, qdim },
	    { l->wk, c->kk, ldk }, { l->wv, c->vv, ldv } };
	TRY(mv_group(e, o, 3, c->h, d, n, err));
	/* per head [q | gate] interleaved (§3.3): norm and rotate q only;
	   k and v into the caches */
	const struct rs_k_qkv qkv = { c->qg, c->kk, c->vv,
	    dvec(e, l->q_norm), dvec(e, l->k_norm), qdim, 2 * hd, ldk, ldv,
	    nh, nkv, hd, hdv, kc, vc };
	TRY(rs_k_qkv_prep(&qkv, (int)n, (int)hp->n_rot, hp->rope_sections,
	    hp->rope_base, hp->rms_eps, c->d_params, c->s, err));
	/* the split path writes attn_o's 16-bit input itself */
	void *xq = NULL;
	if (prefill_path(n))
		TRY(rs_k_attn_prefill(c->qg, qdim, 2 * hd, hd, kc, vc, nh, nkv,
		    hd, hdv, (int)n, c->d_params, 1.0f / sqrtf((float)hd),
		    c->mix, c->s, err));
	else {
		xq = xq_for(c, c->mix, (int64_t)nh * hdv, (int64_t)nh * hdv,
		    n);
		TRY(rs_k_attn_xq(c->qg, qdim, 2 * hd, hd, kc, vc, nh, nkv, hd,
		    hdv, (int)n, c->d_params, max_keys,
		    1.0f / sqrtf((float)hd), c->mix, xq, c->attn, c->s, err));
	}
	if (xq == NULL)
		TRY(quant(e, c->mix, (int64_t)nh * hdv, (int64_t)nh * hdv, n,
		    err));
	return (mv(e, l->wo, c->mix, (int64_t)nh * hdv, c->x, d, n, 1, err));
}

/* ---- the trunk ---- */

/*
 * Slot J's share of a forward call, once its inputs (and, past slot 0,
 * the residual stream c->x) are on its device: the embedding on slot 0,
 * its blocks, the final norm (c->h) on the last slot.  MAX_KEYS bounds
 * params[0] + n: the state's n_ctx for a captured graph, whose position
 * changes between launches.
 */
static enum rs_status
trunk_part(struct rs_engine *e, struct rs_state *st, int j, int64_t n,
    int64_t max_keys, struct rs_err *err)
{
	const struct rs_model *m = e->model;
	struct cuda *c = cc(e);
	const int64_t d = m->hp.n_embd;
	enum rs_status s;

	if (j == 0) {
		const struct dev_w *te = dw(e, m->tok_embd);
		TRY(rs_k_embed(te->d, te->type, d, te->row_bytes, te->n_out,
		    c->d_tokens, (int)n, c->x, c->s, err));
	}
	for (uint32_t il = c->l0; il < c->l1; il++) {
		const struct rs_layer *l = &m->layers[il];
		int32_t slot = st->slot[il];

		TRY(norm_rows(e, c->x, l->attn_norm, c->h, d, n, err));
		if (l->kind == RS_LAYER_GDN)
			TRY(gdn_block(e, st, l, slot, n, err));
		else
			TRY(attn_block(e, l, (uint16_t *)rs_state_kv_k(st,
			    slot), (uint16_t *)rs_state_kv_v(st, slot), n,
			    max_keys, err));
		TRY(ffn_block(e, l, n, err));
	}
	if (j == n_slots(e) - 1)
		TRY(norm_rows(e, c->x, m->output_norm, c->h, d, n, err));
	return (RS_OK);
}

/*
 * Make slot J (> 0) current, its stream waiting for slot J − 1's work,
 * and copy the residual stream of N tokens (n_embd floats each: 20 KB a
 * token for the 27B) across the boundary: a peer copy, staged through
 * the host by the runtime when the GPUs have no peer access, a plain
 * device copy when both slots are one GPU ("--devices 0,0").
 */
static enum rs_status
cross(struct rs_engine *e, int j, int64_t n, struct rs_err *err)
{
	struct multi *mu = (struct multi *)e->be;
	struct cuda *a = mu->d[j - 1], *b = mu->d[j];
	const size_t bytes = (size_t)(n * e->model->hp.n_embd) * sizeof(float);

	on_slot(e, j - 1);
	RS_CUDA_TRY(err, cudaEventRecord(a->done, a->s));
	on_slot(e, j);
	RS_CUDA_TRY(err, cudaStreamWaitEvent(b->s, a->done, 0));
	if (a->dev == b->dev)
		RS_CUDA_TRY(err, cudaMemcpyAsync(b->x, a->x, bytes,
		    cudaMemcpyDeviceToDevice, b->s));
	else
		RS_CUDA_TRY(err, cudaMemcpyPeerAsync(b->x, b->dev, a->x,
		    a->dev, bytes, b->s));
	return (RS_OK);
}

/* Every slot's share of a call, ending on the last slot (c->h there). */
static enum rs_status
trunk(struct rs_engine *e, struct rs_state *st, int64_t n, int64_t max_keys,
    struct rs_err *err)
{
	enum rs_status s;

	for (int j = 0; j < n_slots(e); j++) {
		if (j > 0)
			TRY(cross(e, j, n, err));
		else
			on_slot(e, 0);
		TRY(trunk_part(e, st, j, n, max_keys, err));
	}
	return (RS_OK);
}

/*
 * The head W (output or the MTP's) on rows FROM .. N − 1 of c->h,
 * EXACT_ROWS at a time on the exact path (logits never depend on the
 * call's length), each piece written to OUT (c->logits when NULL) and
 * copied from there to LOGITS (host) when not NULL.  OUT may be pinned
 * host memory, which the products then write across the bus as they go
 * (one piece, no top-k: nothing reads it back on the device).  TOP_K > 0:
 * each piece's rows also go through top-k selection into c->d_top and
 * c->d_bad (row r − FROM; N − FROM must not exceed EXACT_ROWS), leaving
 * out c->d_skip's tokens when SKIP.
 */
static enum rs_status
head(struct rs_engine *e, const struct rs_gguf_tensor *w, int64_t n,
    int32_t from, float *out, float *logits, int top_k, int skip,
    struct rs_err *err)
{
	struct cuda *c = cc(e);
	const int64_t d = e->model->hp.n_embd, v = e->model->hp.n_vocab;
	enum rs_status s;

	if (out == NULL)
		out = c->logits;

	for (int64_t r = from; r < n; r += EXACT_ROWS) {
		int64_t k = n - r < EXACT_ROWS ? n - r : EXACT_ROWS;
		/* a prefill's final norm left no 16-bit rows */
		if (xq_of(c, c->h + r * d, d, d, k).d == NULL)
			TRY(quant(e, c->h + r * d, d, d, k, err));
		for (int64_t i = 0; i < k; i += RS_K_MATVEC_MAX_COLS) {
			int64_t j = k - i < RS_K_MATVEC_MAX_COLS ? k - i :
			    RS_K_MATVEC_MAX_COLS;
			TRY(mv(e, w, c->h + (r + i) * d, d, out + i * v, v, j,
			    0, err));
		}
		if (top_k > 0)
			TRY(rs_k_top(out, v, v, (int)k, top_k,
			    skip ? c->d_skip : NULL, c->d_top + (r - from) *
			    top_k, c->d_bad + (r - from), c->top_scr, c->s,
			    err));
		if (logits != NULL)
			RS_CUDA_TRY(err, cudaMemcpyAsync(logits + (r - from) *
			    v, out, (size_t)(k * v) * sizeof(float),
			    cudaMemcpyDeviceToHost, c->s));
	}
	return (RS_OK);
}

/*
 * Queue the copies of ROWS rows' TOP_K candidates and first bad indices
 * (head()'s c->d_top, c->d_bad) to pinned memory (c->h_top, c->h_bad).
 */
static enum rs_status
top_to_host(struct cuda *c, int64_t rows, int top_k, struct rs_err *err)
{
	RS_CUDA_TRY(err, cudaMemcpyAsync(c->h_top, c->d_top,
	    (size_t)(rows * top_k) * sizeof(struct rs_top),
	    cudaMemcpyDeviceToHost, c->s));
	RS_CUDA_TRY(err, cudaMemcpyAsync(c->h_bad, c->d_bad,
	    (size_t)rows * sizeof(int64_t), cudaMemcpyDeviceToHost, c->s));
	return (RS_OK);
}

/*
 * Logits of rows LOGITS_FROM .. (or their TOP_K best into c->h_top and
 * c->h_bad) and hidden rows to the caller, then wait.
 */
static enum rs_status
fetch(struct rs_engine *e, const struct rs_gguf_tensor *w, int64_t n,
    int32_t logits_from, float *logits, int top_k, int skip, float *hidden,
    struct rs_err *err)
{
	struct cuda *c = cc(e);
	const int64_t d = e->model->hp.n_embd;
	enum rs_status s;

	if (logits != NULL || top_k > 0)
		TRY(head(e, w, n, logits_from, NULL, logits, top_k, skip,
		    err));
	if (top_k > 0)
		TRY(top_to_host(c, n - logits_from, top_k, err));
	if (hidden != NULL)
		RS_CUDA_TRY(err, cudaMemcpyAsync(hidden, c->h,
		    (size_t)(n * d) * sizeof(float), cudaMemcpyDeviceToHost,
		    c->s));
	RS_CUDA_TRY(err, cudaStreamSynchronize(c->s));
	return (RS_OK);
}

static enum rs_status
upload_one(struct cuda *c, const int32_t *tokens, int64_t n, int32_t pos0,
    int32_t snap_from, int32_t snap_base, struct rs_err *err)
{
	memcpy(c->h_tokens, tokens, (size_t)n * sizeof(int32_t));
	c->h_params[RS_K_PARAM_POS0] = pos0;
	c->h_params[RS_K_PARAM_SNAP_FROM] = snap_from;
	c->h_params[RS_K_PARAM_SNAP_BASE] = snap_base;
	RS_CUDA_TRY(err, cudaMemcpyAsync(c->d_tokens, c->h_tokens,
	    (size_t)n * sizeof(int32_t), cudaMemcpyHostToDevice, c->s));
	RS_CUDA_TRY(err, cudaMemcpyAsync(c->d_params, c->h_params,
	    RS_K_N_PARAMS * sizeof(int32_t), cudaMemcpyHostToDevice, c->s));
	return (RS_OK);
}

/*
 * The tokens and parameters of a call to every slot (each has its own
 * copy: the kernels of a slot read its device's), ending on slot 0; the
 * MTP block (ALL 0) runs on the last slot only.
 */
static enum rs_status
upload_inputs(struct rs_engine *e, const int32_t *tokens, int64_t n,
    int32_t pos0, int32_t snap_from, int32_t snap_base, int all,
    struct rs_err *err)
{
	enum rs_status s;

	for (int j = n_slots(e) - 1; j >= (all ? 0 : n_slots(e) - 1); j--) {
		on_slot(e, j);
		TRY(upload_one(cc(e), tokens, n, pos0, snap_from, snap_base,
		    err));
	}
	return (RS_OK);
}

/*
 * Slot J's share of a call of N tokens (N ≤ EXACT_ROWS), as pass_graph()
 * captures it: the inputs from pinned memory, its blocks, and on the last
 * slot the head on rows FROM .. N − 1 and the outputs to pinned memory
 * (LOGITS: the one row N − 1, into c->h_logits; TOP_K: each row's
 * candidates and first bad index; HIDDEN: the N hidden rows).  The
 * attention's grid is sized for REACH keys (graph_reach): the position
 * changes between launches of the graph.
 */
static enum rs_status
pass_body(struct rs_engine *e, struct rs_state *st, int j, int32_t n,
    int32_t from, int want_logits, int top_k, int skip, int want_hidden,
    int64_t reach, struct rs_err *err)
{
	struct cuda *c = cc(e);
	const int64_t d = e->model->hp.n_embd, v = e->model->hp.n_vocab;
	const int64_t rows = (int64_t)n - from;
	enum rs_status s;

	RS_CUDA_TRY(err, cudaMemcpyAsync(c->d_tokens, c->h_tokens,
	    (size_t)n * sizeof(int32_t), cudaMemcpyHostToDevice, c->s));
	RS_CUDA_TRY(err, cudaMemcpyAsync(c->d_params, c->h_params,
	    RS_K_N_PARAMS * sizeof(int32_t), cudaMemcpyHostToDevice, c->s));
	TRY(trunk_part(e, st, j, n, reach, err));
	if (j < n_slots(e) - 1)
		return (RS_OK);
	/*
	 * The one row of logits (a decode step) goes from the head's
	 * products straight into pinned host memory, which UVA maps: its 1
	 * MB crosses the bus while the head's 1 GB of weights streams, where
	 * a copy after the head cost its own time (decode 0.03-0.05 ms
	 * faster on an H100, docs/perf-log.md session 37).  With top-k as
	 * well the row stays on the device for rs_k_top and is copied after
	 * it.
	 */
	const int direct = want_logits && top_k == 0;
	if (want_logits || top_k > 0)
		TRY(head(e, e->model->output, n, from, direct ? c->h_logits :
		    NULL, NULL, top_k, skip, err));
	if (want_logits && !direct)
		RS_CUDA_TRY(err, cudaMemcpyAsync(c->h_logits, c->logits,
		    (size_t)v * sizeof(float), cudaMemcpyDeviceToHost, c->s));
	if (top_k > 0)
		TRY(top_to_host(c, rows, top_k, err));
	if (want_hidden)
		RS_CUDA_TRY(err, cudaMemcpyAsync(c->h_hidden, c->h,
		    (size_t)(n * d) * sizeof(float), cudaMemcpyDeviceToHost,
		    c->s));
	return (RS_OK);
}

/*
 * The keys a graph's attention is sized for when its rows end at END
 * (position + tokens): the state's n_ctx, but below RS_K_ATTN_MMA_FROM
 * only that many minus one, so that a graph of short rows launches
 * rs_k_attn's FMA kernel alone (rs_kernels.h) and does not pay for the
 * mma path's blocks and registers (perf-log, session 18: +1 % at 4,096
 * keys for 16 tokens).  A state crossing the bound captures its graphs
 * once more.
 */
static int64_t
graph_reach(const struct rs_state *st, int64_t end)
{
	return (end < RS_K_ATTN_MMA_FROM && st->n_ctx >= RS_K_ATTN_MMA_FROM ?
	    RS_K_ATTN_MMA_FROM - 1 : st->n_ctx);
}

/* Whether PG was captured for this state, these outputs and this reach. */
static int
graph_fits(const struct pass_graph *pg, const struct rs_state *st,
    int32_t from, int want_logits, int top_k, int skip, int want_hidden,
    int64_t reach)
{
	return (pg->exec != NULL && pg->serial == st->serial &&
	    pg->from == from && pg->logits == want_logits &&
	    pg->top == top_k && pg->skip == skip &&
	    pg->hidden == want_hidden && pg->reach == reach);
}

/*
 * The way of WAYS that a new capture takes: an empty one, else the least
 * recently used.
 */
static struct pass_graph *
graph_victim(struct pass_graph *ways)
{
	struct pass_graph *v = &ways[0];

	for (int w = 0; w < GRAPH_WAYS; w++) {
		if (ways[w].exec == NULL)
			return (&ways[w]);
		if (ways[w].used < v->used)
			v = &ways[w];
	}
	return (v);
}

/*
 * G into PG's executable graph: an update in place when PG has one of the
 * same shape (a new state: the same kernels and copies, other pointers),
 * else a new instantiation.  Measured on the H200 for the 27B's ~700
 * nodes (docs/perf-log.md, session 14): capture 0.6-1 ms, update 2.2,
 * instantiation 3-5.
 */
static enum rs_status
graph_install(struct pass_graph *pg, cudaGraph_t g, struct rs_err *err)
{
	cudaGraphExecUpdateResultInfo info;
	cudaError_t ce;

	if (pg->exec != NULL) {
		if (cudaGraphExecUpdate(pg->exec, g, &info) == cudaSuccess)
			return (RS_OK);
		(void)cudaGetLastError();	/* not sticky: a shape change */
		cudaGraphExecDestroy(pg->exec);
		pg->exec = NULL;
	}
	ce = cudaGraphInstantiate(&pg->exec, g, 0);
	if (ce != cudaSuccess) {
		pg->exec = NULL;
		return (rs_errf(err, RS_ERR_CUDA, "graph instantiate: %s",
		    cudaGetErrorString(ce)));
	}
	return (RS_OK);
}

/*
 * Slot J's graph for calls of N tokens to *EXEC: one of c->graph[N − 1]'s
 * ways, captured only when none was captured for this state and what the
 * call asks for (pass_body).  A decode step and a verification pass are
 * each one graph launch per slot; the boundary copies between the slots'
 * graphs are not captured (launch_graphs): a graph stays on one device.
 * Why verification too: launched one by one from the host, the ~700
 * kernels of a pass cost about 1 ms more than in a graph
 * (docs/perf-log.md, session 13).  Why ways: the graphs hold the state's
 * cache pointers, and a server alternating jobs between states would
 * otherwise capture again at every switch.
 */
static enum rs_status
pass_graph(struct rs_engine *e, struct rs_state *st, int j, int32_t n,
    int32_t from, int want_logits, int top_k, int skip, int want_hidden,
    int64_t reach, cudaGraphExec_t *exec, struct rs_err *err)
{
	struct cuda *c = cc(e);
	struct pass_graph *ways = c->graph[n - 1], *pg = NULL;
	cudaGraph_t g;
	enum rs_status s;

	for (int w = 0; w < GRAPH_WAYS && pg == NULL; w++)
		if (graph_fits(&ways[w], st, from, want_logits, top_k, skip,
		    want_hidden, reach))
			pg = &ways[w];
	if (pg == NULL) {
		pg = graph_victim(ways);
		pg->serial = 0;		/* no match until installed */
		RS_CUDA_TRY(err, cudaStreamBeginCapture(c->s,
		    cudaStreamCaptureModeThreadLocal));
		s = pass_body(e, st, j, n, from, want_logits, top_k, skip,
		    want_hidden, reach, err);
		cudaError_t ce = cudaStreamEndCapture(c->s, &g);
		if (s != RS_OK) {
			if (ce == cudaSuccess)
				cudaGraphDestroy(g);
			return (s);
		}
		if (ce != cudaSuccess)
			return (rs_errf(err, RS_ERR_CUDA, "graph capture: %s",
			    cudaGetErrorString(ce)));
		s = graph_install(pg, g, err);
		cudaGraphDestroy(g);
		if (s != RS_OK)
			return (s);
		pg->serial = st->serial;
		pg->from = from;
		pg->logits = want_logits;
		pg->top = top_k;
		pg->skip = skip;
		pg->hidden = want_hidden;
		pg->reach = reach;
	}
	pg->used = ++c->graph_clock;
	*exec = pg->exec;
	return (RS_OK);
}

/*
 * A call of N ≤ EXACT_ROWS tokens at position P0: each slot's graph
 * (captured if need be) after the residual stream crossed to it; ends
 * on the last slot, synchronised.
 */
static enum rs_status
launch_graphs(struct rs_engine *e, struct rs_state *st,
    const int32_t *tokens, int32_t n, int32_t from, int32_t p0,
    int32_t snap_from, int want_logits, int top_k, int skip,
    int want_hidden, struct rs_err *err)
{
	enum rs_status s;

	for (int j = 0; j < n_slots(e); j++) {
		if (j > 0)
			TRY(cross(e, j, n, err));
		else
			on_slot(e, 0);
		struct cuda *c = cc(e);
		memcpy(c->h_tokens, tokens, (size_t)n * sizeof(int32_t));
		c->h_params[RS_K_PARAM_POS0] = p0;
		c->h_params[RS_K_PARAM_SNAP_FROM] = snap_from;
		c->h_params[RS_K_PARAM_SNAP_BASE] = st->snap_base;
		cudaGraphExec_t exec = NULL;

		TRY(pass_graph(e, st, j, n, from, want_logits, top_k, skip,
		    want_hidden, graph_reach(st, (int64_t)p0 + n), &exec,
		    err));
		RS_CUDA_TRY(err, cudaGraphLaunch(exec, c->s));
	}
	RS_CUDA_TRY(err, cudaStreamSynchronize(cc(e)->s));
	return (RS_OK);
}

static int64_t
rows_of(int32_t n, int32_t from)
{
	return ((int64_t)n - from);
}

/*
 * After a synchronised fetch of ROWS rows' TOP_K best: them to TOP, and
 * *BAD (row·n_vocab + token of the first non-finite logit, or −1) with its
 * value in *BAD_VAL, read from c->logits, which still holds the rows (they
 * are at most EXACT_ROWS: one piece).
 */
static enum rs_status
take_top(struct rs_engine *e, int64_t rows, int top_k, struct rs_top *top,
    int64_t *bad, float *bad_val, struct rs_err *err)
{
	struct cuda *c = cc(e);
	const int64_t v = e->model->hp.n_vocab;

	memcpy(top, c->h_top, (size_t)(rows * top_k) * sizeof(struct rs_top));
	*bad = -1;
	for (int64_t r = 0; r < rows && *bad < 0; r++)
		if (c->h_bad[r] >= 0) {
			*bad = r * v + c->h_bad[r];
			RS_CUDA_TRY(err, cudaMemcpy(bad_val, c->logits + *bad,
			    sizeof(float), cudaMemcpyDeviceToHost));
		}
	return (RS_OK);
}

/*
 * A forward call: logits rows to LOGITS, or (TOP_K > 0) the TOP_K best
 * of each row (less c->d_skip's tokens when SKIP) to TOP with *BAD the
 * index (row·n_vocab + token) of the first non-finite logit and *BAD_VAL
 * its value, or −1.  Calls of the exact path run as graphs (pass_graph)
 * unless they ask for more than one row of logits, which go to the
 * caller's memory straight from the stream.
 */
static enum rs_status
run(struct rs_engine *e, struct rs_state *st, const int32_t *tokens,
    int32_t n, int32_t snap_from, float *logits, int32_t logits_from,
    int top_k, int skip, struct rs_top *top, int64_t *bad, float *bad_val,
    float *hidden, struct rs_err *err)
{
	struct cuda *c = cc(e);
	const int64_t d = e->model->hp.n_embd, v = e->model->hp.n_vocab;
	const int32_t p0 = st->pos;
	enum rs_status s;

	if (top_k > 0 && n - logits_from > EXACT_ROWS)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "top-k of %d rows: "
		    "at most %d", n - logits_from, EXACT_ROWS));
	memmove(st->tokens + p0, tokens, (size_t)n * sizeof(*tokens));
	if (n <= EXACT_ROWS && (logits == NULL || n - logits_from <= 1)) {
		const int want_logits = logits != NULL && logits_from < n;

		TRY(launch_graphs(e, st, tokens, n, logits_from, p0,
		    snap_from, want_logits, top_k, skip, hidden != NULL,
		    err));
		c = cc(e);
		if (want_logits)
			memcpy(logits, c->h_logits, (size_t)v * sizeof(float));
		if (hidden != NULL)
			memcpy(hidden, c->h_hidden, (size_t)(n * d) *
			    sizeof(float));
	} else {
		TRY(upload_inputs(e, tokens, n, p0, snap_from, st->snap_base, 1,
		    err));
		TRY(trunk(e, st, n, (int64_t)p0 + n, err));
		TRY(fetch(e, e->model->output, n, logits_from, logits, top_k,
		    skip, hidden, err));
	}
	st->pos = p0 + n;
	return (top_k > 0 ? take_top(e, rows_of(n, logits_from), top_k, top,
	    bad, bad_val, err) : RS_OK);
}

static enum rs_status
cuda_forward(struct rs_engine *e, struct rs_state *st, const int32_t *tokens,
    int32_t n, int32_t snap_from, float *logits, int32_t logits_from,
    float *hidden, struct rs_err *err)
{
	return (run(e, st, tokens, n, snap_from, logits, logits_from, 0, 0,
	    NULL, NULL, NULL, hidden, err));
}

static enum rs_status
cuda_forward_top(struct rs_engine *e, struct rs_state *st,
    const int32_t *tokens, int32_t n, int32_t snap_from, int32_t logits_from,
    int32_t k, int skip, struct rs_top *top, int64_t *bad, float *bad_val,
    float *hidden, struct rs_err *err)
{
	return (run(e, st, tokens, n, snap_from, NULL, logits_from, k, skip,
	    top, bad, bad_val, hidden, err));
}

/* The mask arrives between calls: no graph or kernel is reading it. */
static enum rs_status
cuda_set_top_skip(struct rs_engine *e, const unsigned char *mask,
    struct rs_err *err)
{
	struct cuda *c;

	on_slot(e, n_slots(e) - 1);	/* the head's */
	c = cc(e);
	RS_CUDA_TRY(err, cudaMemcpy(c->d_skip, mask, e->model->hp.n_vocab,
	    cudaMemcpyHostToDevice));
	return (RS_OK);
}

/* ---- the MTP block (§6.1) ---- */

/* LOGITS, or (TOP_K > 0) each row's TOP_K best as run() gives them. */
static enum rs_status
mtp_run(struct rs_engine *e, struct rs_state *st, const int32_t *tokens,
    int32_t n, int32_t pos, const float *h_in, float *logits, int top_k,
    struct rs_top *top, int64_t *bad, float *bad_val, float *h_out,
    struct rs_err *err)
{
	const struct rs_model *m = e->model;
	const struct rs_layer *l = &m->layers[m->hp.n_layer];
	struct cuda *c = cc(e);
	const int64_t d = m->hp.n_embd;
	const struct dev_w *te;
	enum rs_status s;

	TRY(upload_inputs(e, tokens, n, pos, INT32_MAX, -1, 0, err));
	c = cc(e);
	te = dw(e, l->mtp_embd);
	RS_CUDA_TRY(err, cudaMemcpyAsync(c->y, h_in, (size_t)(n * d) *
	    sizeof(float), cudaMemcpyHostToDevice, c->s));
	/* cat = [enorm(embed(x)); hnorm(h_in)], embedding half first */
	TRY(rs_k_embed(te->d, te->type, d, te->row_bytes, te->n_out,
	    c->d_tokens, n, c->h, c->s, err));
	TRY(norm_rows(e, c->h, l->enorm, c->cat, 2 * d, n, err));
	TRY(norm_rows(e, c->y, l->hnorm, c->cat + d, 2 * d, n, err));
	TRY(quant(e, c->cat, 2 * d, 2 * d, n, err));
	TRY(mv(e, l->eh_proj, c->cat, 2 * d, c->x, d, n, 0, err));
	TRY(norm_rows(e, c->x, l->attn_norm, c->h, d, n, err));
	TRY(attn_block(e, l, (uint16_t *)st->mtp_k, (uint16_t *)st->mtp_v, n,
	    (int64_t)pos + n, err));
	TRY(ffn_block(e, l, n, err));
	TRY(norm_rows(e, c->x, l->head_norm, c->h, d, n, err));
	TRY(fetch(e, l->mtp_head, n, 0, logits, top_k, 0, h_out, err));
	st->mtp_pos = pos + n;
	return (top_k > 0 ? take_top(e, n, top_k, top, bad, bad_val, err) :
	    RS_OK);
}

static enum rs_status
cuda_mtp(struct rs_engine *e, struct rs_state *st, const int32_t *tokens,
    int32_t n, int32_t pos, const float *h_in, float *logits, float *h_out,
    struct rs_err *err)
{
	return (mtp_run(e, st, tokens, n, pos, h_in, logits, 0, NULL, NULL,
	    NULL, h_out, err));
}

static enum rs_status
cuda_mtp_top(struct rs_engine *e, struct rs_state *st, const int32_t *tokens,
    int32_t n, int32_t pos, const float *h_in, int32_t k, struct rs_top *top,
    int64_t *bad, float *bad_val, float *h_out, struct rs_err *err)
{
	if (n > EXACT_ROWS)
		return (rs_errf(err, RS_ERR_INVALID_ARG, "top-k of %d MTP "
		    "rows: at most %d", n, EXACT_ROWS));
	return (mtp_run(e, st, tokens, n, pos, h_in, NULL, k, top, bad,
	    bad_val, h_out, err));
}

/* ---- lifecycle ---- */

static void
free_slot(struct cuda *c)
{
	if (c == NULL)
		return;
	if (c->dev >= 0)
		(void)cudaSetDevice(c->dev);
	if (c->done != NULL)
		cudaEventDestroy(c->done);
	for (int n = 0; n < EXACT_ROWS; n++)
		for (int w = 0; w < GRAPH_WAYS; w++)
			if (c->graph[n][w].exec != NULL)
				cudaGraphExecDestroy(c->graph[n][w].exec);
	float *bufs[] = { c->x, c->h, c->y, c->mixed, c->u, c->z, c->bb, c->aa,
	    c->mix, c->qg, c->kk, c->vv, c->fg, c->fu, c->cat, c->attn,
	    c->logits };
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		cudaFree(bufs[i]);
	cudaFree(c->xq);
	cudaFree(c->d_top);
	cudaFree(c->d_bad);
	cudaFree(c->top_scr);
	cudaFree(c->d_skip);
	rs_k_mm_free(c->mm);
	cudaFree(c->d_tokens);
	cudaFree(c->d_params);
	cudaFree(c->arena);
	cudaFreeHost(c->h_tokens);
	cudaFreeHost(c->h_params);
	cudaFreeHost(c->h_logits);
	cudaFreeHost(c->h_hidden);
	cudaFreeHost(c->h_top);
	cudaFreeHost(c->h_bad);
	if (c->s != NULL)
		cudaStreamDestroy(c->s);
	free(c->w);
	free(c);
}

static void
cuda_free(struct rs_engine *e)
{
	struct multi *mu = (struct multi *)e->be;

	if (mu == NULL)
		return;
	for (int j = 0; j < mu->n; j++)
		free_slot(mu->d[j]);
	free(mu);
	e->be = NULL;
}

/* Whether tensor T goes to the device in 16-row tiles (rs_tile.h). */
static int
tiled(const struct rs_gguf_tensor *t)
{
	return (rs_tile_type(t->type) && t->ne[0] % 256 == 0 && t->nbytes > 0);
}

/* T's bytes on the device, as upload_weights lays it out */
static size_t
dev_bytes(const struct rs_gguf_tensor *t)
{
	const struct rs_type_traits *tt = rs_type_traits(t->type);

	if (!tiled(t))
		return ((size_t)t->nbytes);
	return (rs_tile_bytes(t->type, t->ne[0], (int64_t)(t->nbytes /
	    ((uint64_t)t->ne[0] / tt->block_elems * tt->block_bytes))));
}

/*
 * The device staging a tiled upload of T needs (rs_k_tile_upload): up to
 * 64 MB of its rows, and at least one tile row's 16.
 */
#define STAGE_BYTES	((size_t)64 << 20)

static size_t
stage_need(const struct rs_gguf_tensor *t)
{
	const struct rs_type_traits *tt = rs_type_traits(t->type);
	const size_t group = (size_t)RS_TILE_ROWS * (size_t)(t->ne[0] /
	    tt->block_elems * tt->block_bytes);
	const size_t want = t->nbytes < STAGE_BYTES ? t->nbytes : STAGE_BYTES;

	return (want > group ? want : group);
}

/*
 * Every tensor slot J needs (rs_split_tensor_slots: all of them without a
 * split) into one arena on its device, 256-byte aligned; Q4_K, Q5_K and
 * Q6_K matrices in 16-row tiles (rs_tile.h: what the integer products
 * read), through a staging buffer freed on return.
 */
static enum rs_status
upload_weights(struct rs_engine *e, int j, struct rs_err *err)
{
	struct cuda *c = cc(e);
	const struct rs_gguf *g = e->model->gguf;
	int64_t	 nt = rs_gguf_n_tensors(g);
	size_t	 off = 0, stage_bytes = 0;
	void	*stage = NULL;
	enum rs_status st = RS_OK;

	if ((c->w = (struct dev_w *)calloc((size_t)nt + 1, sizeof(*c->w))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	for (int64_t i = 0; i < nt; i++) {
		const struct rs_gguf_tensor *t = rs_gguf_tensor(g, i);
		if (!(rs_split_tensor_slots(&e->split, e->model, i) >> j & 1))
			continue;
		off += (dev_bytes(t) + 255) / 256 * 256;
		if (tiled(t) && stage_need(t) > stage_bytes)
			stage_bytes = stage_need(t);
	}
	c->arena_bytes = off;
	RS_CUDA_TRY(err, cudaMalloc((void **)&c->arena, off ? off : 256));
	if (stage_bytes > 0)
		RS_CUDA_TRY(err, cudaMalloc(&stage, stage_bytes));
	off = 0;
	for (int64_t i = 0; i < nt && st == RS_OK; i++) {
		const struct rs_gguf_tensor *t = rs_gguf_tensor(g, i);
		const struct rs_type_traits *tt = rs_type_traits(t->type);
		struct dev_w *w = &c->w[i];
		if (!(rs_split_tensor_slots(&e->split, e->model, i) >> j & 1))
			continue;
		uint8_t *d = c->arena + off;
		w->d = d;
		w->type = t->type;
		w->n_in = t->ne[0];
		w->n_out = t->nbytes == 0 ? 0 : (int64_t)(t->nbytes /
		    ((uint64_t)t->ne[0] / tt->block_elems * tt->block_bytes));
		w->row_bytes = t->ne[0] / tt->block_elems * tt->block_bytes;
		if (tiled(t)) {
			w->type |= RS_TILED;
			st = rs_k_tile_upload(t->data, t->type, w->n_in,
			    w->n_out, d, stage, stage_bytes, c->s, err);
		} else if (cudaMemcpy(d, t->data, t->nbytes,
		    cudaMemcpyHostToDevice) != cudaSuccess)
			st = rs_errf(err, RS_ERR_CUDA, "upload of %s: %s",
			    t->name, cudaGetErrorString(cudaGetLastError()));
		off += (dev_bytes(t) + 255) / 256 * 256;
	}
	if (stage != NULL)
		(void)cudaFree(stage);
	return (st);
}

/* An f32 scratch buffer: where its pointer goes, its floats. */
struct sbuf {
	float	**p;
	int64_t	 n;
};
#define N_SBUF	17

/*
 * The f32 scratch of batch B in C's buffers (C may be a dummy: the plan
 * and the allocation share this list); returns the widest product input,
 * which sizes the 16-bit and f16 copies of inputs.
 */
static int64_t
scratch_bufs(struct cuda *c, const struct rs_hparams *hp, int64_t b,
    struct sbuf out[N_SBUF])
{
	const int64_t exact = b < EXACT_ROWS ? b : EXACT_ROWS;
	const int64_t ch = 2 * (int64_t)hp->ssm_n_kh * hp->ssm_d_state +
	    hp->ssm_d_inner;
	const int64_t mix = hp->ssm_d_inner > (int64_t)hp->n_head *
	    hp->head_dim_v ? hp->ssm_d_inner : (int64_t)hp->n_head *
	    hp->head_dim_v;
	const struct sbuf bufs[N_SBUF] = {
		{ &c->x, b * hp->n_embd }, { &c->h, b * hp->n_embd },
		{ &c->y, b * hp->n_embd }, { &c->mixed, b * ch },
		{ &c->u, b * ch }, { &c->z, b * hp->ssm_d_inner },
		{ &c->bb, b * hp->ssm_n_vh }, { &c->aa, b * hp->ssm_n_vh },
		{ &c->mix, b * mix },
		{ &c->qg, b * 2 * (int64_t)hp->n_head * hp->head_dim },
		{ &c->kk, b * hp->n_head_kv * hp->head_dim },
		{ &c->vv, b * hp->n_head_kv * hp->head_dim_v },
		{ &c->fg, b * hp->n_ff }, { &c->fu, b * hp->n_ff },
		{ &c->cat, b * 2 * (int64_t)hp->n_embd },
		{ &c->attn, (int64_t)rs_k_attn_scratch((int)hp->n_head,
		    (int)exact, (int)hp->head_dim_v) },
		{ &c->logits, exact * hp->n_vocab },
	};

	memcpy(out, bufs, sizeof(bufs));
	/* the widest product input: cat (MTP), the FFN or the mixer output */
	int64_t wide = 2 * (int64_t)hp->n_embd;
	wide = hp->n_ff > wide ? hp->n_ff : wide;
	return (mix > wide ? mix : wide);
}

/* The top-k selection's candidates, bad indices and scratch (the skip
   mask, n_vocab bytes, comes on top). */
static size_t
top_bytes(void)
{
	return (EXACT_ROWS * (RS_TOP_MAX * sizeof(struct rs_top) +
	    sizeof(int64_t)) + rs_k_top_scratch(EXACT_ROWS, RS_TOP_MAX));
}

extern "C" uint64_t
rs_cuda_scratch_plan(const struct rs_hparams *hp, int64_t b)
{
	struct cuda dummy;
	struct sbuf bufs[N_SBUF];
	int64_t wide = scratch_bufs(&dummy, hp, b, bufs);
	uint64_t bytes = (uint64_t)RS_XQ_BATCH_BYTES(wide, b) + top_bytes() +
	    hp->n_vocab;

	for (int i = 0; i < N_SBUF; i++)
		bytes += (uint64_t)bufs[i].n * sizeof(float);
	if (b > RS_ENGINE_EXACT_MAX)
		bytes += rs_k_mm_plan(wide, (int)b, RS_K_MM_WBUDGET);
	return (bytes);
}

static enum rs_status
alloc_scratch(struct rs_engine *e, struct rs_err *err)
{
	struct cuda *c = cc(e);
	const struct rs_hparams *hp = &e->model->hp;
	const int64_t b = e->max_batch;
	struct sbuf bufs[N_SBUF];
	int64_t wide = scratch_bufs(c, hp, b, bufs);

	for (int i = 0; i < N_SBUF; i++) {
		size_t bytes = (size_t)bufs[i].n * sizeof(float);
		RS_CUDA_TRY(err, cudaMalloc((void **)bufs[i].p, bytes));
		c->scratch_bytes += bytes;
	}
	size_t xq_bytes = (size_t)RS_XQ_BATCH_BYTES(wide, b);
	RS_CUDA_TRY(err, cudaMalloc((void **)&c->xq, xq_bytes));
	c->scratch_bytes += xq_bytes;
	if (b > RS_ENGINE_EXACT_MAX) {
		enum rs_status s = rs_k_mm_new(wide, (int)b, RS_K_MM_WBUDGET,
		    &c->mm, err);
		if (s != RS_OK)
			return (s);
		c->scratch_bytes += rs_k_mm_bytes(c->mm);
	}
	RS_CUDA_TRY(err, cudaMalloc((void **)&c->d_top, EXACT_ROWS *
	    RS_TOP_MAX * sizeof(struct rs_top)));
	RS_CUDA_TRY(err, cudaMalloc((void **)&c->d_bad, EXACT_ROWS *
	    sizeof(int64_t)));
	RS_CUDA_TRY(err, cudaMalloc(&c->top_scr,
	    rs_k_top_scratch(EXACT_ROWS, RS_TOP_MAX)));
	RS_CUDA_TRY(err, cudaMalloc((void **)&c->d_skip, hp->n_vocab));
	c->scratch_bytes += top_bytes() + hp->n_vocab;
	RS_CUDA_TRY(err, cudaMalloc((void **)&c->d_tokens, (size_t)b *
	    sizeof(int32_t)));
	RS_CUDA_TRY(err, cudaMalloc((void **)&c->d_params, RS_K_N_PARAMS *
	    sizeof(int32_t)));
	RS_CUDA_TRY(err, cudaMallocHost((void **)&c->h_tokens, (size_t)b *
	    sizeof(int32_t)));
	RS_CUDA_TRY(err, cudaMallocHost((void **)&c->h_params, RS_K_N_PARAMS *
	    sizeof(int32_t)));
	RS_CUDA_TRY(err, cudaMallocHost((void **)&c->h_logits,
	    (size_t)hp->n_vocab * sizeof(float)));
	RS_CUDA_TRY(err, cudaMallocHost((void **)&c->h_hidden, EXACT_ROWS *
	    (size_t)hp->n_embd * sizeof(float)));
	RS_CUDA_TRY(err, cudaMallocHost((void **)&c->h_top, EXACT_ROWS *
	    RS_TOP_MAX * sizeof(struct rs_top)));
	RS_CUDA_TRY(err, cudaMallocHost((void **)&c->h_bad, EXACT_ROWS *
	    sizeof(int64_t)));
	return (RS_OK);
}

/*
 * One struct cuda per slot of e->split (rs_engine.c made it), each on its
 * device with its blocks' weights (and the embedding, the head as
 * rs_split_tensor_slots says), the full scratch and its own stream.
 */
static enum rs_status
cuda_init(struct rs_engine *e, struct rs_err *err)
{
	const struct rs_split *sp = &e->split;
	struct multi *mu;
	enum rs_status s;
	int cur = 0;

	if ((mu = (struct multi *)calloc(1, sizeof(*mu))) == NULL)
		return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
	e->be = mu;
	for (int j = 0; j < sp->n; j++) {
		struct cuda *c;
		if ((c = (struct cuda *)calloc(1, sizeof(*c))) == NULL)
			return (rs_errf(err, RS_ERR_NOMEM, "out of memory"));
		mu->d[mu->n++] = c;
		c->dev = sp->dev[j];
		c->l0 = sp->first[j];
		c->l1 = sp->first[j + 1];
		c->batch = e->max_batch;
		if (c->dev >= 0)
			saw_device(c->dev);
		else if (cudaGetDevice(&cur) == cudaSuccess)
			saw_device(cur);	/* one engine may not name it */
		on_slot(e, j);
		/* a blocking stream: the state's synchronous copies order
		   after it */
		RS_CUDA_TRY(err, cudaStreamCreate(&c->s));
		RS_CUDA_TRY(err, cudaEventCreateWithFlags(&c->done,
		    cudaEventDisableTiming));
		TRY(upload_weights(e, j, err));
		TRY(alloc_scratch(e, err));
	}
	/* peer access where the GPUs have it (else copies go through the
	   host); already enabled is no error */
	for (int j = 1; j < sp->n; j++) {
		int a = sp->dev[j - 1], b = sp->dev[j], ok = 0;
		if (a == b)
			continue;
		if (cudaDeviceCanAccessPeer(&ok, b, a) == cudaSuccess && ok) {
			(void)cudaSetDevice(b);
			if (cudaDeviceEnablePeerAccess(a, 0) != cudaSuccess)
				(void)cudaGetLastError();
		}
		(void)cudaGetLastError();
	}
	on_slot(e, 0);
	return (RS_OK);
}

/* 4 GiB, far beyond any L2, read 5 times (on the first slot's GPU). */
static enum rs_status
cuda_probe(struct rs_engine *e, double *gb_s, struct rs_err *err)
{
	on_slot(e, 0);
	return (rs_k_probe_read((size_t)4 << 30, 5, gb_s, err));
}

/* Summed over the slots. */
static void
cuda_memory(const struct rs_engine *e, uint64_t *weights, uint64_t *scratch)
{
	const struct multi *mu = (const struct multi *)e->be;

	*weights = *scratch = 0;
	for (int j = 0; j < mu->n; j++) {
		*weights += mu->d[j]->arena_bytes;
		*scratch += mu->d[j]->scratch_bytes;
	}
}

/* Every slot's streams and the state copies on the legacy streams. */
static enum rs_status
cuda_sync(struct rs_engine *e, struct rs_err *err)
{
	for (int j = 0; j < n_slots(e); j++) {
		on_slot(e, j);
		RS_CUDA_TRY(err, cudaDeviceSynchronize());
	}
	return (RS_OK);
}

extern "C" const struct rs_backend_ops rs_cuda_backend = {
	"cuda", &cuda_mem, cuda_init, cuda_free, cuda_forward, cuda_probe,
	cuda_memory, cuda_mtp, cuda_forward_top, cuda_set_top_skip,
	cuda_mtp_top, cuda_sync
};
