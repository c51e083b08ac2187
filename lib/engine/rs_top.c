/*
 * rs_top.c - top-K selection over a row of logits, the reference
 * (rs_top.h).  One pass keeping the K best seen so far sorted, best first;
 * a logit worse than the current K-th costs one comparison, so the pass is
 * O(n) on real rows (insertions are rare once the list is full).
 */
#include <math.h>
#include <stddef.h>

#include "rs_top.h"

/* A is better than B in rs_top.h's order. */
static int
better(float la, int32_t ia, float lb, int32_t ib)
{
	return (la > lb || (la == lb && ia < ib));
}

int64_t
rs_top_select(const float *x, int64_t n, int32_t k,
    const unsigned char *skip, struct rs_top *out)
{
	int64_t	bad = -1;
	int32_t	m = 0;

	for (int64_t i = 0; i < n; i++) {
		float	 l = x[i];
		int32_t	 j;

		if (!isfinite(l)) {
			if (bad < 0)
				bad = i;
			continue;
		}
		if (skip != NULL && skip[i])
			continue;
		if (m == k && !better(l, (int32_t)i, out[k - 1].logit,
		    out[k - 1].id))
			continue;
		j = m < k ? m++ : k - 1;
		for (; j > 0 && better(l, (int32_t)i, out[j - 1].logit,
		    out[j - 1].id); j--)
			out[j] = out[j - 1];
		out[j].id = (int32_t)i;
		out[j].logit = l;
	}
	for (; m < k; m++) {
		out[m].id = -1;
		out[m].logit = -INFINITY;
	}
	return (bad);
}
