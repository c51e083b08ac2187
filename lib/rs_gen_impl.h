/*
 * rs_gen_impl.h - internal: the generator's fields and the helpers its
 * files share (rs_gen.c the run, rs_gen_req.c the JSON fields,
 * rs_gen_norm.c the §2.3 normalisation, rs_gen_prompt.c rendering and
 * tokenization, rs_gen_json.c the JSON views).
 */
#ifndef RS_GEN_IMPL_H
#define RS_GEN_IMPL_H

#include "rs_gen.h"

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
	int32_t			 id_think_end;
	int32_t			 id_call_end;
	struct rs_logit_bias	*ban;		/* never sampled in chat mode */
	size_t			 n_ban;
	float			*logits;	/* (n_vocab) */
	char			*piece;		/* rs_detok_max() bytes */
	size_t			 piece_cap;
	uint64_t		 n_runs;	/* varies the tool-call ids */
};

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
 * 1 when NAME (N bytes) can be a tool name (§4.3): 1 to
 * RS_GEN_MAX_TOOL_NAME bytes, no white space, control characters, quotes,
 * <, >, {, }, =.
 */
int		rs_gen_tool_name_ok(const char *name, size_t n);

#endif /* RS_GEN_IMPL_H */
