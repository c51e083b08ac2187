/*
 * pdl.cu - what programmatic dependent launch saves a decode step: pairs
 * of an RMSNorm (which converts x to the 16-bit form, as in the engine)
 * and the one-column Q4_K matvec that reads it, captured in a CUDA graph,
 * with the matvec launched plainly or with PDL (matvec.cu: mv_launch).
 *
 *   make CUDA=1 build/dev/pdl && build/dev/pdl
 *
 * Each pair's matvec reads its own copy of the weights (256 MB of copies
 * in all), so that none finds them in the L2, as in a decode step.  One
 * JSON line per shape and case: microseconds a pair (a graph of 64 pairs
 * launched 10 times), and the same for the norms alone and the matvecs
 * alone.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../matvec.cu"

#define PAIRS	64
#define REPS	10

static void
die(const char *what, cudaError_t e)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
		exit(1);
	}
}

struct setup {
	int64_t		 n_in, n_out, rb;
	uint8_t		*w[PAIRS];
	float		*x, *y, *nw;
	uint8_t		*xq;
};

enum { NORM = 1, MATVEC = 2 };

/* Capture PAIRS of what WHAT names into a graph and time it. */
static double
time_graph(const struct setup *st, int what, int pdl)
{
	cudaStream_t s;
	cudaGraph_t g;
	cudaGraphExec_t ge;
	cudaEvent_t a, b;
	struct rs_err err;
	float ms;

	die("stream", cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	die("capture", cudaStreamBeginCapture(s,
	    cudaStreamCaptureModeThreadLocal));
	for (int i = 0; i < PAIRS; i++) {
		if ((what & NORM) && rs_k_rmsnorm(st->x, st->n_in, st->nw,
		    st->x + st->n_in, st->n_in, st->n_in, 1, 1e-6f, st->xq, s,
		    &err) != RS_OK) {
			fprintf(stderr, "rmsnorm: %s\n", err.msg);
			exit(1);
		}
		if (what & MATVEC) {
			mv_parts p = {};
			p.w[0] = st->w[i];
			p.y[0] = st->y;
			p.n_out[0] = st->n_out;
			p.ldy[0] = st->n_out;
			p.n = 1;
			const unsigned grid = mv_parts_grid(&p, MV_WARPS * 4);
			const xq_in xc = { st->xq, 1, 0, 0, 1 };
			mv_launch(matvec_xq_kernel<RS_TYPE_Q4_K, 1, 4, 1>, grid,
			    MV_WARPS * RS_WARP, 0, s, pdl, p, st->n_in, xc);
			die("launch", cudaGetLastError());
		}
	}
	die("end capture", cudaStreamEndCapture(s, &g));
	die("instantiate", cudaGraphInstantiate(&ge, g, 0));
	die("warm", cudaGraphLaunch(ge, s));
	cudaEventCreate(&a);
	cudaEventCreate(&b);
	cudaEventRecord(a, s);
	for (int r = 0; r < REPS; r++)
		die("launch", cudaGraphLaunch(ge, s));
	cudaEventRecord(b, s);
	die("time", cudaEventSynchronize(b));
	cudaEventElapsedTime(&ms, a, b);
	cudaGraphExecDestroy(ge);
	cudaGraphDestroy(g);
	cudaStreamDestroy(s);
	return (ms * 1e3 / REPS / PAIRS);
}

int
main(void)
{
	static const struct { const char *name; int64_t n_in, n_out; } sh[] = {
		{ "ffn_up", 5120, 17408 },
		{ "ssm_out", 6144, 5120 },
	};

	for (size_t k = 0; k < sizeof(sh) / sizeof(sh[0]); k++) {
		struct setup st = {};
		st.n_in = sh[k].n_in;
		st.n_out = sh[k].n_out;
		st.rb = st.n_in / 256 * 144;
		const size_t wb = (size_t)(st.rb * st.n_out);
		uint8_t *hw = (uint8_t *)malloc(wb);
		float *hx = (float *)malloc((size_t)st.n_in * 8);

		for (size_t i = 0; i < wb; i++)
			hw[i] = (uint8_t)(i * 2654435761u >> 13);
		for (size_t off = 0; off < wb; off += 144) {
			hw[off] = 0x1f;		/* d, dmin: 0.01 */
			hw[off + 1] = 0x21;
			hw[off + 2] = 0x1f;
			hw[off + 3] = 0x21;
		}
		for (int64_t i = 0; i < 2 * st.n_in; i++)
			hx[i] = (float)((i * 7919) % 2001) / 1000.0f - 1.0f;
		const int nrot = (int)(((size_t)256 << 20) / wb + 1);
		for (int i = 0; i < PAIRS; i++) {
			if (i < nrot) {
				die("malloc", cudaMalloc(&st.w[i], wb));
				die("copy", cudaMemcpy(st.w[i], hw, wb,
				    cudaMemcpyHostToDevice));
			} else
				st.w[i] = st.w[i % nrot];
		}
		die("malloc", cudaMalloc(&st.x, (size_t)st.n_in * 8));
		die("malloc", cudaMalloc(&st.nw, (size_t)st.n_in * 4));
		die("malloc", cudaMalloc(&st.y, (size_t)st.n_out * 4));
		die("malloc", cudaMalloc(&st.xq,
		    (size_t)RS_XQ_COL_BYTES(st.n_in)));
		die("copy", cudaMemcpy(st.x, hx, (size_t)st.n_in * 8,
		    cudaMemcpyHostToDevice));
		die("copy", cudaMemcpy(st.nw, hx, (size_t)st.n_in * 4,
		    cudaMemcpyHostToDevice));
		const double norm = time_graph(&st, NORM, 0);
		const double mv0 = time_graph(&st, MATVEC, 0);
		const double mv1 = time_graph(&st, MATVEC, 1);
		const double pr0 = time_graph(&st, NORM | MATVEC, 0);
		const double pr1 = time_graph(&st, NORM | MATVEC, 1);
		printf("{\"shape\":\"%s\",\"norm_us\":%.2f,\"matvec_us\":%.2f,"
		    "\"matvec_pdl_us\":%.2f,\"pair_us\":%.2f,"
		    "\"pair_pdl_us\":%.2f,\"matvec_GB_s\":%.0f}\n", sh[k].name,
		    norm, mv0, mv1, pr0, pr1, wb / (mv0 * 1e-6) / 1e9);
		for (int i = 0; i < nrot && i < PAIRS; i++)
			cudaFree(st.w[i]);
		cudaFree(st.x);
		cudaFree(st.nw);
		cudaFree(st.y);
		cudaFree(st.xq);
		free(hw);
		free(hx);
	}
	return (0);
}
