/*
 * rs_draft.h - prompt-lookup drafting: propose the tokens that followed
 * the last occurrence of the sequence's own ending.
 *
 * Coding assistants re-emit what is already in the context (the file being
 * edited, a function being renamed), so the best guess for the next tokens
 * is often "what came after these same tokens last time".  With the
 * history H = A ++ B (prompt, then output), for n = RS_DRAFT_MAX_NGRAM down
 * to 1, find the latest j < |H| − n with H[j .. j+n) equal to the last n
 * tokens, and propose H[j+n ..], at most MAX tokens.  The drafts cost
 * nothing to make; the verification pass decides which are kept
 * (rs_drafter.h: the ngram and mtp+ngram drafters).  Pure, thread-safe.
 */
#ifndef RS_DRAFT_H
#define RS_DRAFT_H

#include <stdint.h>

#define RS_DRAFT_MAX_NGRAM	4

/*
 * Up to MAX drafts for what follows A (NA tokens) then B (NB tokens) into
 * OUT; returns their count (0 when no ending recurs).  *NGRAM (may be
 * NULL) gets the length n of the ending that matched (0 with no drafts):
 * how much evidence the drafts have.  Cost: one backward scan of the
 * history per n-gram length tried.
 */
int	rs_draft_lookup(const int32_t *a, int32_t na, const int32_t *b,
	    int32_t nb, int32_t *out, int max, int *ngram);

#endif /* RS_DRAFT_H */
