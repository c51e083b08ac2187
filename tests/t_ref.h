/*
 * t_ref.h - test helpers for the engine suites: the prompts and greedy
 * continuation of tiny/reference.json, llama.cpp's peer errors, and a
 * model + engine + state opened in one call.
 */
#ifndef T_REF_H
#define T_REF_H

#include <stdint.h>

#include "rs_engine.h"
#include "rs_model.h"
#include "rs_state.h"
#include "t_util.h"

#define T_REF_MAX_PROMPTS	16
#define T_MAX_REL		1e-4	/* f16 file vs the float64 reference */

struct t_ref {
	int	 n_prompts;
	int32_t	*prompt[T_REF_MAX_PROMPTS];	/* token ids */
	int32_t	 len[T_REF_MAX_PROMPTS];
	int64_t	 row0[T_REF_MAX_PROMPTS];	/* first row in ref-logits */
	int64_t	 rows;				/* sum of len */
	int	 greedy_prompt;			/* index into prompt[] */
	int32_t	*greedy;			/* the greedy continuation */
	int32_t	 n_greedy;
	int32_t	*seq;		/* prompt[greedy_prompt] + greedy */
	int32_t	 n_seq;
};

/* Load tiny/reference.json; fails the test on a malformed file. */
void	t_ref_load(struct t_ref *r);
void	t_ref_free(struct t_ref *r);

/* demo/reference.json: the trained model's prompts and greedy runs. */
#define T_DEMO_MAX	4
struct t_demo {
	int	 n;				/* sequences */
	int32_t	*seq[T_DEMO_MAX];		/* prompt + greedy ids */
	int32_t	 n_prompt[T_DEMO_MAX];
	int32_t	 n_seq[T_DEMO_MAX];
};

/* Load demo/reference.json; fails the test on a malformed file. */
void	t_demo_load(struct t_demo *d);
void	t_demo_free(struct t_demo *d);

/*
 * llama.cpp's relative error per prompt for FILE ("q8_0") from
 * tiny/peer-errors.json into OUT (room for MAX); returns the count.
 */
int	t_peer_errors(const char *file, double *out, int max);

struct t_lm {
	struct rs_model		*m;
	struct rs_engine	*e;
	struct rs_state		*st;
};

/*
 * Open fixture FIXTURE ("tiny/model-f16.gguf") with an engine of THREADS
 * threads and MAX_BATCH tokens per chunk (0: defaults) and a state with
 * N_SNAP snapshots and a checkpoint when CKPT.  Fails the test on error.
 */
void	t_lm_open(struct t_lm *lm, const char *fixture, int threads,
	    int max_batch, int n_snap, int ckpt);
void	t_lm_close(struct t_lm *lm);

/* A fresh state for LM's model (fails the test on error). */
struct rs_state *t_state(const struct t_lm *lm, int n_snap, int ckpt);

/* Row-wise argmax of N rows of V logits into OUT. */
void	t_argmax_rows(const float *logits, int64_t n, int64_t v, int32_t *out);

/*
 * demo/eval-tokens.npy and demo/eval-argmax.npy: windows of the demo
 * model's evaluation text and the float32 reference's argmax of every
 * trunk row and MTP row (row p of the MTP: token p, trunk hidden at
 * p − 1).  t_eval_load checks their shapes against each other.
 */
struct t_eval {
	struct t_npy	 tok;	/* (windows, n) token ids */
	struct t_npy	 am;	/* (2, windows, n): trunk, MTP */
	int64_t		 windows, n;
};
void	t_eval_load(struct t_eval *ev);
void	t_eval_free(struct t_eval *ev);
/* Window W's ids (N of them) into IDS; its reference argmax rows. */
void	t_eval_ids(const struct t_eval *ev, int w, int32_t *ids);
const float *t_eval_ref(const struct t_eval *ev, int mtp, int w);

/*
 * Rows of ours against another's argmax (the reference's, or another
 * backend's): equal, or not equal but at a near-tie of our row (the
 * other's token within TIE of our best logit); top-1 against the text
 * (row p predicts token p + 1), ours and the other's, over SCORED rows.
 */
struct t_tally {
	int64_t	rows, agree, ties, scored, top1, ref_top1;
};
/* N rows of V logits, REF the reference's argmax, IDS the window */
void	t_tally_rows(struct t_tally *t, const float *logits, int64_t n,
	    int64_t v, const float *ref, const int32_t *ids, double tie);
/* One line: WHAT ("x vs y"), then the tally's counts and rates. */
void	t_tally_print(const char *what, const struct t_tally *t);

#endif /* T_REF_H */
