/*
 * rs_draft.c - prompt-lookup drafting (rs_draft.h).
 */
#include <stddef.h>

#include "rs_draft.h"

/* Token I of the history A ++ B. */
static int32_t
at(const int32_t *a, int32_t na, const int32_t *b, int32_t i)
{
	return (i < na ? a[i] : b[i - na]);
}

int
rs_draft_lookup(const int32_t *a, int32_t na, const int32_t *b, int32_t nb,
    int32_t *out, int max, int *ngram)
{
	int32_t	len = na + nb;

	if (ngram != NULL)
		*ngram = 0;
	for (int32_t n = RS_DRAFT_MAX_NGRAM; n >= 1; n--) {
		if (len <= n || max < 1)
			continue;
		/* latest earlier start j of the last n tokens */
		for (int32_t j = len - n - 1; j >= 0; j--) {
			int32_t i = 0;
			while (i < n && at(a, na, b, j + i) ==
			    at(a, na, b, len - n + i))
				i++;
			if (i < n)
				continue;
			int k = 0;
			for (int32_t q = j + n; q < len && k < max; q++)
				out[k++] = at(a, na, b, q);
			if (ngram != NULL)
				*ngram = (int)n;
			return (k);
		}
	}
	return (0);
}
