/*
 * t_tok.h - helpers shared by the tokenizer suites (check_tok.c,
 * check_tokenize.c): every function fails the running test on error.
 */
#ifndef T_TOK_H
#define T_TOK_H

#include <stddef.h>
#include <stdint.h>

#include "rs_json.h"
#include "rs_tok.h"

#define T_TINY		"tiny/model-f16.gguf"
#define T_QWEN3		"tokenizer/qwen3-vocab.gguf"
#define T_QWEN35	"tokenizer/qwen35-vocab.gguf"
#define T_CASES		"tokenizer/tokenizer-cases.json"
#define T_VECTORS	"tokenizer/qwen35-llamacpp-vectors.json"
#define T_CASES35	"tokenizer/qwen35-cases.json"

/* The tokenizer of the GGUF at PATH, or of fixture REL; rs_tok_free(). */
struct rs_tok	*t_tok_load_path(const char *path, enum rs_tok_norm norm);
struct rs_tok	*t_tok_load(const char *rel, enum rs_tok_norm norm);

/* Fixture REL parsed; rs_json_free(). */
struct rs_json	*t_json_load(const char *rel);
/* OBJ[KEY] as a string (borrowed, *N bytes). */
const char	*t_json_str(const struct rs_json *obj, const char *key,
		    size_t *n);
/* Integer array OBJ[KEY] into IDS, replacing its contents. */
void		 t_json_ids(const struct rs_json *obj, const char *key,
		    struct rs_tok_ids *ids);

/* IDS = encode(S[0..N)) (reset first). */
void		 t_tok_encode(const struct rs_tok *tok, const char *s, size_t n,
		    enum rs_tok_special special, struct rs_tok_ids *ids);
/* decode(IDS): malloc'd, *N bytes. */
char		*t_tok_decode(const struct rs_tok *tok,
		    const struct rs_tok_ids *ids, unsigned flags, size_t *n);
/* Fail naming the first difference ("WHAT K: ids differ at ..."). */
void		 t_tok_assert_ids(const struct rs_tok_ids *got,
		    const struct rs_tok_ids *want, const char *what, size_t k);

/* 1 when S[0..N) is valid UTF-8 by utf8proc's (independent) decoder. */
int		 t_utf8proc_valid(const char *s, size_t n);

/*
 * Feed IDS one at a time through a streaming detokenizer with FLAGS; every
 * chunk must be valid UTF-8 on its own, and the chunks and the final flush
 * together must equal WANT[0..WN).
 */
void		 t_tok_assert_stream(const struct rs_tok *tok,
		    const struct rs_tok_ids *ids, unsigned flags,
		    const char *want, size_t wn);

/*
 * A synthetic tokenizer: the 256 byte tokens (ids 0..255 in byte order,
 * spelled with the fixture's byte_to_unicode table, the independent source
 * of the alphabet) minus DROP_BYTE, then EXTRA tokens of types ETYPES, and
 * MERGES.  Fields left NULL/0 take working defaults; each bad_input case
 * breaks one.
 */
struct t_synth {
	const char	*model, *pre;
	int		 drop_byte;		/* -1: none */
	const char	**extra;
	const int	*etypes;
	size_t		 n_extra;
	const char	**merges;
	size_t		 n_merges;
	int		 short_types;		/* token_type one too short */
	int64_t		 eos;			/* -1: absent */
	int		 no_tokens;
};

/*
 * Build S as a vocabulary-only GGUF in memory and make a tokenizer of it
 * (no normalization).  Returns rs_tok_new()'s status; *TOK only on RS_OK.
 */
enum rs_status	 t_synth_tok(const struct t_synth *s, struct rs_tok **tok,
		    struct rs_err *err);

#endif /* T_TOK_H */
