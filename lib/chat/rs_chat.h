/*
 * rs_chat.h - the Qwen3.5 / 3.6 / 3.8 chat templates, rendered by hand
 * (serving.md §2).
 *
 * The model's GGUF carries its Jinja template as tokenizer.chat_template.  We
 * do not interpret Jinja: rs_chat_identify() recognises the exact text of
 * the three known templates and rs_chat_render() reproduces what real Jinja2
 * renders for them in the Hugging Face configuration (§2.7: trim_blocks,
 * lstrip_blocks, tojson = json.dumps(ensure_ascii=False)), byte for byte,
 * including the templates' own errors (same messages).  The variants differ
 * as in the table of §2.1:
 *
 *   QWEN35  no reasoning effort; past reasoning kept only after the last
 *           real user query; reasoning taken from <think> in content when
 *           reasoning_content is absent; non-string, non-container argument
 *           values in Python str() form (True, None).
 *   QWEN36  as QWEN35, but preserve_thinking=true keeps all past reasoning,
 *           and argument values other than strings use tojson.
 *   QWEN38  reasoning-effort instruction in the system turn (xhigh default,
 *           medium, low); past reasoning kept unless preserve_thinking is
 *           false; no <think> extraction from content; arguments == ""
 *           renders no parameters.
 *
 * Input is the conversation as the template sees it, after the server's
 * normalisation (§2.3 is the caller's job: developer -> system, merged
 * system messages, string arguments parsed to objects, tools rebuilt).
 * Rendering is a pure function: thread-safe, nothing kept between calls.
 *
 * Output is the prompt plus a segment map (§1.3): every byte is marked as
 * written by the template or copied from the client (message content,
 * reasoning, tool JSON, tool-call names, argument keys and values), so the
 * tokenizer can refuse to turn client text into control tokens.
 */
#ifndef RS_CHAT_H
#define RS_CHAT_H

#include <stddef.h>

#include "rs_err.h"
#include "rs_json.h"

struct rs_gguf;

enum rs_chat_variant {
	RS_CHAT_UNKNOWN = 0,
	RS_CHAT_QWEN35,		/* Qwen3.5 (llama.cpp Qwen3.5-4B.jinja) */
	RS_CHAT_QWEN36,		/* Qwen3.6 */
	RS_CHAT_QWEN38		/* Qwen3.8: the served model's template */
};

/* A template variable that may be left undefined (Jinja "is undefined"). */
#define RS_CHAT_UNSET	(-1)

struct rs_chat_opts {
	enum rs_chat_variant	 variant;
	const struct rs_json	*tools;		/* array of tools, or NULL */
	int	add_generation_prompt;	/* 0/1: append the assistant opener */
	int	enable_thinking;	/* RS_CHAT_UNSET (= on), 0 or 1 */
	const char *reasoning_effort;	/* NULL = undefined (= "xhigh");
					   QWEN38 only; checked verbatim */
	int	preserve_thinking;	/* RS_CHAT_UNSET, 0 or 1 (QWEN36/38) */
	int	add_vision_id;		/* 0/1: "Picture N: " before images */
};

/* One run of prompt bytes with one origin. */
struct rs_chat_seg {
	size_t	off;		/* byte offset in the prompt text */
	size_t	len;		/* bytes, > 0 */
	int	client;		/* 1: client-supplied, 0: template-authored */
};

struct rs_chat_prompt {
	char			*text;	/* NUL-terminated, LEN bytes (malloc'd) */
	size_t			 len;
	struct rs_chat_seg	*segs;	/* in order, covering TEXT exactly */
	size_t			 n_segs;
};

/* Defaults for VARIANT: everything undefined, add_generation_prompt = 1. */
void		 rs_chat_opts_init(struct rs_chat_opts *o,
		    enum rs_chat_variant variant);

/*
 * Render MESSAGES (an array of message objects: role, content as string,
 * null or array of parts, reasoning_content, tool_calls) with O into *OUT,
 * which the caller releases with rs_chat_prompt_cleanup() (also on error:
 * *OUT is then empty).
 *
 * Errors: RS_ERR_INVALID_ARG when the template raises, with the template's
 * exact message ("No messages provided.", "No user query found in
 * messages.", "System message must be at the beginning.", "Unexpected
 * message role.", "Unexpected reasoning effort X. Supported types are xhigh
 * (default), medium, and low.", "System message cannot contain images.",
 * "Unexpected item type in content.", "Unexpected content type.", "Can only
 * get item pairs from a mapping.", Jinja's "'dict object' has no attribute
 * 'name'", Python's "can only concatenate str (not \"int\") to str" and
 * "argument of type 'int' is not iterable", with the actual type names),
 * or for inputs outside what the template can be given (MESSAGES or TOOLS
 * not arrays, a content part's text that is an array or object);
 * RS_ERR_UNSUPPORTED for an unknown variant; RS_ERR_NOMEM.
 */
enum rs_status	 rs_chat_render(const struct rs_chat_opts *o,
		    const struct rs_json *messages, struct rs_chat_prompt *out,
		    struct rs_err *err);

/* Free OUT's storage and leave it empty (NULL is fine). */
void		 rs_chat_prompt_cleanup(struct rs_chat_prompt *out);

/*
 * Which template TEXT (N bytes) is.  The text is canonicalised the way Jinja
 * reads it (CR LF and lone CR become LF, one trailing newline dropped) and
 * compared by SHA-256 with the known templates, so only an exact copy is
 * accepted: the renderer implements those texts and nothing else.  On RS_OK
 * *OUT is the variant.  RS_ERR_UNSUPPORTED for any other text, with its
 * length and hash in the message.
 */
enum rs_status	 rs_chat_identify(const char *text, size_t n,
		    enum rs_chat_variant *out, struct rs_err *err);

/*
 * GGUF key naming the variant ("qwen38", as rs_chat_variant_name spells
 * it) of a file without tokenizer.chat_template: what rs-bench --synth
 * writes, since Redshift carries no template text of its own.
 */
#define RS_CHAT_VARIANT_KEY	"redshift.chat_template_variant"

/*
 * The variant of G's tokenizer.chat_template (rs_chat_identify()), or,
 * when the file has none, of its RS_CHAT_VARIANT_KEY.  RS_ERR_FORMAT when
 * neither key is there or the template is not a string,
 * RS_ERR_UNSUPPORTED for an unknown template or variant name.
 */
enum rs_status	 rs_chat_identify_gguf(const struct rs_gguf *g,
		    enum rs_chat_variant *out, struct rs_err *err);

/*
 * SHA-256 of TEXT's canonical form (as compared by rs_chat_identify()), 64
 * hex digits plus NUL, for logging at startup.
 */
void		 rs_chat_template_hash(const char *text, size_t n,
		    char hex[65]);

/* "qwen35", "qwen36", "qwen38" or "unknown". */
const char	*rs_chat_variant_name(enum rs_chat_variant v);

#endif /* RS_CHAT_H */
