/*
 * matvec_cs.cuh - (playground) the tensor-core matvec of matvec_mma.cuh
 * with each tile row split over NS CTAs by chunk: the same bits, fewer
 * registers a warp.
 *
 * Why: at 8 and 16 columns the engine's kernel is held by its warps'
 * dependent chains at low occupancy (docs/perf-log.md sessions 10, 16,
 * 20): a lane keeps 4·G partial sums a quad of columns (one a virtual
 * lane it plays), 64 floats at 16 columns, and the launch runs at its
 * register cap, three 4-warp CTAs an SM.  A virtual lane is chunk c =
 * v % 4 of the super-blocks of group v / 4, and the canonical reduction
 * (xq_lanes_sum: partners 16, 8, 4, then 2, 1 apart) adds the eight
 * virtual lanes of one chunk first, (T0 + T2) + (T1 + T3) last, where
 * T_c is the tree over the lanes v ≡ c (mod 4).  So CTA s of NS = 4 can
 * play only chunk s's lanes and find T_s by the first three rounds, and
 * CTA s of NS = 2 chunks s and s + 2 and find T_s + T_{s+2} by four: the
 * CTA's last to finish (an atomic count a tile row, reset by it) adds
 * the NS results in the remaining rounds and writes y.  Every partial
 * sum gets the same terms in the same order as in the engine's kernel,
 * and the tree is the same tree: the same bits, with NS-fold fewer
 * partials and weight words a lane.  The price: each CTA loads its rows'
 * heads (16 bytes a row and super-block) again, and a tile row's results
 * cross the L2 once (NS x 16 rows x NT floats).
 *
 * CM: CTA order chunk-major (all tile rows' chunk 0 first: x's blocks of
 * one chunk, a quarter of x, shared by the CTAs an SM runs at a time) or
 * tile-major (a tile row's NS CTAs side by side).  Block-major batches
 * of whole quads only (8 and 16 columns).
 */
#ifndef RS_MATVEC_CS_CUH
#define RS_MATVEC_CS_CUH

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
/* the raw words of chunks S, S + NS, ... of a super-block (mmac's load) */
template <int TYPE, int NS, int S>
static __device__ __forceinline__ void
cs_load(const uint8_t *tile, int g, int t, mma_raw *w)
{
	constexpr int QS = TYPE == RS_TYPE_Q6_K ? 288 : TYPE ==
	    RS_TYPE_Q5_K ? 768 : 256;
	const int slot = 8 * t + g;

#pragma unroll
	for (int r = 0; r < 2; r++) {
		const uint4 hd = ld_weights((const uint4 *)tile + g + 8 * r);
		w->hd[r][0] = hd.x; w->hd[r][1] = hd.y;
		w->hd[r][2] = hd.z; w->hd[r][3] = hd.w;
		if (TYPE == RS_TYPE_Q6_K)
			w->d[r] = half_to_float(__ldg((const unsigned short *)
			    (tile + 256) + g + 8 * r));
	}
#pragma unroll
	for (int c = S; c < 4; c += NS) {
		const uint4 q = ld_weights((const uint4 *)(tile + QS + 512 *
		    c) + slot);
		w->q[0][c][0] = q.x; w->q[0][c][1] = q.y;
		w->q[1][c][0] = q.z; w->q[1][c][1] = q.w;
		if (TYPE == RS_TYPE_Q6_K && (c == S || (c >> 1) != (S >> 1))) {
			const int hh = c >> 1;
			const uint4 h = ld_weights((const uint4 *)(tile + 2336 +
			    512 * hh) + slot);
			w->h[0][hh][0] = h.x; w->h[0][hh][1] = h.y;
			w->h[1][hh][0] = h.z; w->h[1][hh][1] = h.w;
		}
	}
	if (TYPE == RS_TYPE_Q5_K) {
		const uint4 h = ld_weights((const uint4 *)(tile + 256) + slot);
		w->h[0][0][0] = h.x; w->h[0][0][1] = h.y;
		w->h[1][0][0] = h.z; w->h[1][0][1] = h.w;
	}
}

/* the tree of xq_lanes_sum over N values (partners N / 2, ..., 1 apart) */
template <int N>
static __device__ __forceinline__ float
cs_tree(float *s)
{
#pragma unroll
	for (int h = N / 2; h >= 1; h /= 2)
#pragma unroll
		for (int j = 0; j < h; j++)
			s[j] += s[j + h];
	return (s[0]);
}

/*
 * CTA S of NS of tile row TILE (global index, for PART and CNT): chunks
 * S, S + NS, ... of every super-block, NT columns of a block-major batch
 * (NT a multiple of 4).
 */
template <int TYPE, int NT, int G, int NS, int S>
static __device__ __forceinline__ void
cs_body(const mv_part &pt, int64_t n_in, const xq_in &xc, float *part,
    unsigned *cnt, unsigned tile)
{
	constexpr int	 NQ = NT / 4;
	constexpr int	 NC = 4 / NS;		/* chunks a CTA */
	constexpr int	 NV = 32 / NS;		/* its virtual lanes */
	constexpr int	 W = 8 / G;
	constexpr int	 TB = RS_TILE_ROWS * qtraits<TYPE>::qb;
	static_assert(NT % 4 == 0, "whole quads");
	__shared__ float red[NV][MMA_ROWS][NT];
	__shared__ int	 last;
	const int	 lane = threadIdx.x % RS_WARP;
	const int	 wi = threadIdx.x / RS_WARP, g = lane >> 2, t = lane & 3;
	const int64_t	 nb = n_in / 256;
	const uint8_t	*tiles = pt.w + pt.blk * nb * TB;
	const int	 lb = TYPE == RS_TYPE_Q6_K ? 4 * t : 8 * t;
	const uint32_t	 xbs = xc.nb;
	const uint8_t	*xb0 = xc.p + (g & 1) * xc.nb * n_in + 32 * (xc.t0 +
	    (g >> 1)) + lb;
	const float2	*xm0 = (const float2 *)(xc.p + 2 * xc.nb * n_in) +
	    (xc.t0 + t);
	float		 p[NQ][G * NC][2];

#pragma unroll
	for (int u = 0; u < NQ; u++)
#pragma unroll
		for (int i = 0; i < G * NC; i++)
			p[u][i][0] = p[u][i][1] = 0.0f;
	rs_pdl_trigger();
	for (int64_t b0 = wi; b0 < nb; b0 += 8) {
#pragma unroll
		for (int st = 0; st < G; st++) {
			const int64_t bi = b0 + W * st;
			if (bi >= nb)
				break;
			mma_raw raw;
			cs_load<TYPE, NS, S>(tiles + bi * TB, g, t, &raw);
			if (b0 == wi && st == 0)
				rs_pdl_wait();
			const uint32_t s0 = (uint32_t)bi * 8 * xbs;
#pragma unroll
			for (int i = 0; i < NC; i++) {
				mma_chunk k;
				mma_chunk_of<TYPE, NQ <= 2>(raw, S + NS * i,
				    &k);
#pragma unroll
				for (int blk = 0; blk < 2; blk++) {
					const uint32_t sl = s0 +
					    (uint32_t)k.xb[blk] * xbs;
					const uint8_t *bp = xb0 +
					    (uint64_t)sl * 32;
					const float2 *mp = xm0 + sl;
#pragma unroll
					for (int u = 0; u < NQ; u++)
						mma_block_dot<TYPE>(k, blk,
						    bp + 128 * u, mp + 4 * u,
						    p[u][NC * st + i]);
				}
			}
		}
	}
	rs_pdl_wait();
	/* virtual lane v = 4·(wi + W·st) + S + NS·i is the CTA's j = (v −
	   S) / NS */
#pragma unroll
	for (int u = 0; u < NQ; u++)
#pragma unroll
		for (int st = 0; st < G; st++)
#pragma unroll
			for (int i = 0; i < NC; i++) {
				const int j = (4 * (wi + W * st)) / NS + i;
				red[j][g][4 * u + t] = p[u][NC * st + i][0];
				red[j][g + 8][4 * u + t] = p[u][NC * st + i][1];
			}
	__syncthreads();
	float *mine = part + ((size_t)tile * NS + S) * MMA_ROWS * NT;
	for (int el = threadIdx.x; el < MMA_ROWS * NT; el += blockDim.x) {
		float s[NV];
#pragma unroll
		for (int j = 0; j < NV; j++)
			s[j] = red[j][el / NT][el % NT];
		__stcg(mine + el, cs_tree<NV>(s));
	}
	__threadfence();
	__syncthreads();
	if (threadIdx.x == 0)
		last = atomicAdd(cnt + tile, 1u) == NS - 1;
	__syncthreads();
	if (!last)
		return;
	__threadfence();
	const float *all = part + (size_t)tile * NS * MMA_ROWS * NT;
	for (int el = threadIdx.x; el < MMA_ROWS * NT; el += blockDim.x) {
		float s[NS];
#pragma unroll
		for (int j = 0; j < NS; j++)
			s[j] = __ldcg(all + j * MMA_ROWS * NT + el);
		const float v = cs_tree<NS>(s);
		const int64_t orow = pt.blk * MMA_ROWS + el / NT;
		const int tc = el % NT;
		if (orow < pt.n_out) {
			float *dst = pt.y + tc * pt.ldy + orow;
			*dst = pt.acc ? *dst + v : v;
		}
	}
	if (threadIdx.x == 0)
		cnt[tile] = 0;
}
#endif /* __CUDA_ARCH__ >= 800 */

/*
 * Grid: NS CTAs a tile row of every part (mv_parts_grid's count TILES
 * times NS), chunk-major if CM.  PART: TILES·NS·16·NT floats; CNT:
 * TILES counters, zero before the first launch (each launch leaves them
 * zero).
 */
template <int TYPE, int NT, int G, int MINB, int NS, bool CM>
static __global__ void __launch_bounds__(8 / G * RS_WARP, MINB)
matvec_cs_kernel(const mv_parts parts, int64_t n_in, const xq_in xc,
    float *part, unsigned *cnt, unsigned tiles)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	const unsigned b = blockIdx.x;
	const unsigned tile = CM ? b % tiles : b / NS;
	const int s = CM ? (int)(b / tiles) : (int)(b % NS);
	const mv_part pt = mv_part_of(parts, tile);

	if (s == 0)
		cs_body<TYPE, NT, G, NS, 0>(pt, n_in, xc, part, cnt, tile);
	else if constexpr (NS >= 2) {
		if (s == 1)
			cs_body<TYPE, NT, G, NS, 1>(pt, n_in, xc, part, cnt,
			    tile);
		else if constexpr (NS == 4) {
			if (s == 2)
				cs_body<TYPE, NT, G, NS, 2>(pt, n_in, xc, part,
				    cnt, tile);
			else
				cs_body<TYPE, NT, G, NS, 3>(pt, n_in, xc, part,
				    cnt, tile);
		}
	}
#else
	(void)parts; (void)n_in; (void)xc; (void)part; (void)cnt; (void)tiles;
#ifdef __CUDA_ARCH__
	__trap();
#endif
#endif
}

#endif /* RS_MATVEC_CS_CUH */
