/*
 * rs_gen_impl.h - internal: the generator's fields, a run's working set
 * and the helpers the module's files share (rs_gen.c the generator and a
 * run, rs_gen_loop.c its token loop, rs_gen_req.c the JSON fields,
 * rs_gen_norm.c the §2.3 normalisation, rs_gen_prompt.c rendering and
 * tokenization, rs_gen_json.c the JSON views).
 */
#ifndef RS_GEN_IMPL_H
#define RS_GEN_IMPL_H

#include "rs_buf.h"
#include "rs_gen.h"
#include "rs_parse.h"
#include "rs_stop.h"
#include "rs_time.h"

struct rs_gen {
	struct rs_engine	*e;		/* borrowed */
	struct rs_state		*st;		/* borrowed, ours to use */
	const struct rs_tok	*tok;		/* borrowed */
	struct rs_gen_opts	 o;
	int32_t			 n_ctx;		/* state positions */
	int32_t			 n_vocab;	/* logit rows of the model */
	enum rs_chat_variant	 variant;
	int			 chat_ok;
	struct rs_err		 chat_err;	/* why not, when !chat_ok */
	int32_t			 id_im_start;	/* -1 when absent */
	int32_t			 asst[16];	/* "assistant" as the tokenizer
						   encodes it after
						   "<|im_start|>" */
	int			 n_asst;	/* 0: unknown */
	struct rs_ckcache	*ckc;		/* borrowed, or NULL */
	int32_t			 id_think_end;
	int32_t			 id_call_start;
	int32_t			 id_call_end;
	struct rs_logit_bias	*ban;		/* never sampled in chat mode */
	size_t			 n_ban;
	unsigned char		*banned;	/* (n_vocab) the same as flags:
						   left out of chat logprobs */
	float			*logits;	/* (1 + draft_max, n_vocab) */
	struct rs_top		*top;		/* (1 + draft_max, RS_TOP_MAX):
						   the rows' best tokens, when
						   they are all the sampler
						   needs (job top_k) */
	struct rs_drafter	*drafter;	/* NULL without drafts */
	float			*hidden;	/* (max(prefill_chunk, 1 +
						   draft_max), n_embd) trunk
						   rows for an MTP drafter,
						   else NULL */
	char			*piece;		/* rs_detok_max() bytes */
	size_t			 piece_cap;
	uint64_t		 n_runs;	/* varies the tool-call ids */
};

/* How the decode loop ended. */
enum rs_gen_end {
	RS_GEN_END_NONE,
	RS_GEN_END_TOKEN,	/* end-of-generation or stop token, or the
				   first </tool_call> without parallel calls */
	RS_GEN_END_STRING,	/* a stop string completed */
	RS_GEN_END_LENGTH	/* max_tokens or the context end */
};

/*
 * Where a run is in the call that tool_choice required or named forces
 * (§3.8; rs_gen_loop.c): the output must hold a valid call whatever the
 * model would write.
 */
enum rs_gen_tc {
	RS_GEN_TC_OFF,		/* no forced call */
	RS_GEN_TC_THINK,	/* reasoning: "<tool_call>" and end-of-
				   generation become "</think>", which is also
				   forced when only the call's tokens are left */
	RS_GEN_TC_FORCE,	/* taking the forced "<tool_call>\n<function="
				   (and "NAME>\n" when named) */
	RS_GEN_TC_NAME,		/* required: sampling the name among the
				   tools' "NAME>\n" sequences only */
	RS_GEN_TC_CALL		/* the call is open: the model writes the
				   arguments, the parser closes them at any
				   end (named: the first "</tool_call>" ends) */
};

/* One run's working set (rs_gen_run() owns it). */
struct rs_gen_job {
	struct rs_gen		*g;
	struct rs_gen_req	*r;
	rs_gen_cb		 cb;
	void			*arg;
	struct rs_sampler	*smp;
	int32_t			 top_k;		/* best tokens a row, from
						   rs_engine_forward_top into
						   g->top; 0: whole rows into
						   g->logits (logprobs, biases,
						   penalties, chat bans) */
	struct rs_stop		*stop;
	struct rs_parse		*parse;		/* RS_GEN_CHAT only */
	struct rs_detok		 dt;
	struct rs_buf		 raw;		/* stop-checked output text */
	int32_t			*out;		/* (limit) output ids */
	size_t			 n_out, limit;
	struct rs_logprob	*lp;		/* (cap_lp) with logprobs */
	size_t			 n_lp, cap_lp;
	const int32_t		*force;		/* tokens to take, not sample */
	size_t			 n_force, i_force;
	int			 forced_think;	/* forced text after </think>
						   already queued */
	int			 call_open;	/* a "<tool_call>" token out of
						   the reasoning, not yet
						   closed */
	enum rs_gen_tc		 tc;
	unsigned char		*cand;		/* (n_names) names still
						   possible (RS_GEN_TC_NAME) */
	size_t			 name_k;	/* name tokens taken */
	float			*masked;	/* (n_vocab) the logits the name
						   is sampled from */
	int			 stopped;	/* a stop string matched */
	enum rs_gen_end		 end;		/* how decoding ended */
	int			 cancelled;
	int64_t			 cached;	/* prompt tokens reused */
	int64_t			 prefilled;	/* prompt tokens computed: all
					   but the cached ones, fewer
					   when cancelled in the prefill */
	int64_t			 ck_hit, ck_miss, ck_tokens, ck_saves;
	int64_t			 reasoning;	/* reasoning tokens */
	double			 t0, t_prefill, t_first;	/* ms */
	double			 t_text;	/* the first text event, ms */
	double			 t_reuse;	/* reuse() began, ms */
	int64_t			 n_text;	/* output tokens by then */
	/* the time-to-first-token breakdown (rs_gen.h), filled as the run
	   goes; result() copies it */
	struct rs_gen_timings	 bd;
	struct rs_err		 err;
};

/*
 * 1 when an assistant turn starts at P[Q] (of N tokens): "<|im_start|>"
 * and then the ids of "assistant".  When those are unknown: ANY.
 */
int		rs_gen_turn_at(const struct rs_gen *g, const int32_t *p,
		    int32_t n, int32_t q, int any);

/* Hand EV to U's callback; -1 once the run is cancelled. */
int		rs_gen_emit(struct rs_gen_job *u,
		    const struct rs_gen_event *ev);

/*
 * Reuse the cached prefix and run the rest of the prompt; the last
 * prompt token's logits end in g->logits.  Returns RS_OK also when
 * cancelled (U->cancelled), else the engine's failure.
 */
enum rs_status	rs_gen_prefill(struct rs_gen_job *u);

/*
 * Generate until an end (U->end) or cancellation, streaming events and
 * flushing what was held back at the end.
 */
enum rs_status	rs_gen_decode(struct rs_gen_job *u);

/*
 * Fill GE: status ST, message FMT, PARAM (NULL: none); the type and code
 * follow from ST (RS_ERR_NOMEM, _IO, _CUDA: server_error 500; others:
 * invalid_request_error 400).  Returns ST.  GE may be NULL.
 */
enum rs_status	rs_gen_fail(struct rs_gen_error *ge, enum rs_status st,
		    const char *param, const char *fmt, ...)
		    __attribute__((format(printf, 4, 5)));

/* BODY[KEY], or NULL when absent or null (null means the default, §4.2). */
struct rs_json	*rs_gen_field(const struct rs_json *body, const char *key);

/*
 * §2.3 steps 1-8: MSGS (the request's "messages") into *OUT, a new array
 * of {role, content, reasoning_content?, tool_calls?} for the renderer.
 */
enum rs_status	rs_gen_norm_messages(const struct rs_json *msgs,
		    struct rs_json **out, struct rs_gen_error *ge);

/*
 * §2.3 step 9 and §4.3: TOOLS (the request's "tools") into *OUT, the
 * rebuilt array, or NULL for an empty list.
 */
enum rs_status	rs_gen_norm_tools(const struct rs_json *tools,
		    struct rs_json **out, struct rs_gen_error *ge);

/*
 * 1 when NAME (N bytes of UTF-8) can be a tool name (§4.3): 1 to
 * RS_GEN_MAX_TOOL_NAME characters, no white space (Unicode's too),
 * control characters, quotes, <, >, {, }, =.
 */
int		rs_gen_tool_name_ok(const char *name, size_t n);

#endif /* RS_GEN_IMPL_H */
