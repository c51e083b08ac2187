/*
 * ldpattern.cu - what the one-column matvec's load pattern alone costs.
 *
 * The dp4a matvec (matvec.cu) streams Q4_K weights at ~2.7 TB/s where the
 * probe reads ~4.4, and ncu put the L1 at 83 % busy (perf-log).  These
 * kernels do the matvec's loads and nothing else (the words are XORed so
 * that no load is dead), to see how much of the gap is the pattern of the
 * addresses, and which pattern closes it.  Four rows a warp, four warps a
 * CTA, a Q4_K matrix of 5,120 columns (20 super-blocks of 144 bytes a
 * row) and the 16-bit x of rs_xq.h (hi bytes, lo bytes, meta).
 *
 *   chunk      the kernel's pattern today: lane k reads chunk k of the
 *              row (the super-block's 16-byte head and 32 bytes of qs at
 *              a 144-byte pitch) and x-block pairs at a 64-byte stride
 *   chunk-nox  the same weights, no x
 *   chunk-cx   the same weights, x laid out so that lane k's 16-byte
 *              pieces are consecutive across the warp
 *   half       8 lanes a super-block, each 16 bytes of qs (head read by
 *              all 8: one address), x laid out as in chunk-cx
 *   half-nox   the same weights, no x
 *   stream     the same bytes as consecutive 16-byte pieces
 *
 * Usage: build/dev/ldpattern [once]; prints GB/s of weight bytes for each
 * (with an argument, after one run each: for ncu).
 */
#include "dev.cuh"

#define ROWS	(17408 * 4)	/* 200 MB: four times the L2 and more */
#define SB	20		/* super-blocks a row */
#define RB	(SB * 144)	/* bytes a row */
#define NX	(SB * 256)	/* values of x */

enum { CHUNK, CHUNK_NOX, CHUNK_CX, HALF, HALF_NOX };

static __device__ __forceinline__ uint32_t
x4(uint4 v)
{
	return (v.x ^ v.y ^ v.z ^ v.w);
}

template <int V>
static __global__ void __launch_bounds__(128)
pattern(const uint8_t *__restrict__ w, const uint8_t *__restrict__ xq,
    uint32_t *__restrict__ out)
{
	const int	 lane = threadIdx.x % 32;
	const int64_t	 o0 = ((int64_t)blockIdx.x * 4 + threadIdx.x / 32) * 4;
	uint32_t	 acc = 0;

	if (V == CHUNK || V == CHUNK_NOX || V == CHUNK_CX) {
		for (int k = lane; k < SB * 4; k += 32) {
			const int sb = k / 4, c = k % 4;
#pragma unroll
			for (int r = 0; r < 4; r++) {
				const uint8_t *b = w + (o0 + r) * RB + sb * 144;
				acc ^= x4(__ldg((const uint4 *)b));
				acc ^= x4(__ldg((const uint4 *)(b + 16 + 32 * c)));
				acc ^= x4(__ldg((const uint4 *)(b + 32 + 32 * c)));
			}
#pragma unroll
			for (int blk = 0; blk < 2; blk++) {
				if (V == CHUNK) {
					const int xb = sb * 8 + 2 * c + blk;
					const uint4 *hp = (const uint4 *)(xq + 32 * xb);
					const uint4 *lp = (const uint4 *)(xq + NX + 32 * xb);
					acc ^= x4(__ldg(hp)) ^ x4(__ldg(hp + 1));
					acc ^= x4(__ldg(lp)) ^ x4(__ldg(lp + 1));
					const uint2 m = __ldg((const uint2 *)(xq + 2 * NX) + xb);
					acc ^= m.x ^ m.y;
				} else if (V == CHUNK_CX) {
					/* piece p of chunk k at (4 * (k / 32) + p) * 512 + 16 * (k % 32) */
					const uint4 *p = (const uint4 *)(xq + (int64_t)(k / 32) * 4 * 512 * 2 + blk * 4 * 512) + lane;
					acc ^= x4(__ldg(p)) ^ x4(__ldg(p + 32));
					acc ^= x4(__ldg(p + 64)) ^ x4(__ldg(p + 96));
					const uint2 m = __ldg((const uint2 *)(xq + 2 * NX) + 2 * k + blk);
					acc ^= m.x ^ m.y;
				}
			}
		}
	} else {
		/* lane j: super-block 4 i + j / 8, qs bytes 16 (j % 8) .. + 15 */
		for (int sb = lane / 8; sb < SB; sb += 4) {
#pragma unroll
			for (int r = 0; r < 4; r++) {
				const uint8_t *b = w + (o0 + r) * RB + sb * 144;
				acc ^= x4(__ldg((const uint4 *)b));
				acc ^= x4(__ldg((const uint4 *)(b + 16 + 16 * (lane % 8))));
			}
			if (V == HALF) {
				/* 32 values a lane: hi and lo of two half-blocks */
				const uint4 *p = (const uint4 *)(xq + (int64_t)(sb / 4) * 4 * 512) + lane;
				acc ^= x4(__ldg(p)) ^ x4(__ldg(p + 32));
				acc ^= x4(__ldg(p + 64)) ^ x4(__ldg(p + 96));
				const uint4 m = __ldg((const uint4 *)(xq + 2 * NX) + 4 * sb + lane % 8 / 2);
				acc ^= x4(m);
			}
		}
	}
	for (int o = 16; o > 0; o /= 2)
		acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
	if (lane == 0)
		out[o0 / 4] = acc;
}

static __global__ void
stream(const uint4 *__restrict__ w, int64_t n, uint32_t *__restrict__ out)
{
	uint32_t acc = 0;

	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	    i += (int64_t)gridDim.x * blockDim.x)
		acc ^= x4(__ldg(w + i));
	if (acc == 0x12345678u)
		out[0] = acc;
}

struct ctx {
	int		 v;
	const uint8_t	*w, *xq;
	uint32_t	*out;
};

static void
run(void *p)
{
	const struct ctx *c = (const struct ctx *)p;
	const dim3 grid(ROWS / 16);

	switch (c->v) {
	case CHUNK: pattern<CHUNK><<<grid, 128>>>(c->w, c->xq, c->out); break;
	case CHUNK_NOX: pattern<CHUNK_NOX><<<grid, 128>>>(c->w, c->xq, c->out); break;
	case CHUNK_CX: pattern<CHUNK_CX><<<grid, 128>>>(c->w, c->xq, c->out); break;
	case HALF: pattern<HALF><<<grid, 128>>>(c->w, c->xq, c->out); break;
	case HALF_NOX: pattern<HALF_NOX><<<grid, 128>>>(c->w, c->xq, c->out); break;
	default:
		stream<<<132 * 8, 256>>>((const uint4 *)c->w,
		    (int64_t)ROWS * RB / 16, c->out);
	}
	die("launch", cudaGetLastError());
}

int
main(int argc, char **argv)
{
	static const char *name[] = { "chunk", "chunk-nox", "chunk-cx", "half",
	    "half-nox", "stream" };
	const size_t	 wb = (size_t)ROWS * RB;
	struct ctx	 c;

	die("malloc", cudaMalloc((void **)&c.w, wb));
	die("malloc", cudaMalloc((void **)&c.xq, 4 * NX + 64 * 1024));
	die("malloc", cudaMalloc((void **)&c.out, ROWS * 4));
	die("memset", cudaMemset((void *)c.w, 0x5a, wb));
	die("memset", cudaMemset((void *)c.xq, 0x33, 4 * NX + 64 * 1024));
	for (c.v = 0; c.v < 6; c.v++) {
		/* any argument: one run each (for ncu) */
		const double ms = dev_time_ms(run, &c, argc > 1 ? 1 : 20);
		printf("%-10s %8.1f us  %6.0f GB/s\n", name[c.v], ms * 1e3,
		    wb / ms / 1e6);
	}
	return (0);
}
