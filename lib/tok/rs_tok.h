/*
 * rs_tok.h - byte-level BPE tokenizer and streaming detokenizer for the
 * Qwen vocabularies stored in GGUF (serving.md §1, qwen35-model.md §2.4).
 *
 * Encoding (text -> ids), serving.md §1.2:
 *
 *   UTF-8 text
 *     -> invalid bytes become U+FFFD, one per byte (rs_utf8.h, §1.7, as
 *        llama.cpp; HF tokenizers only ever sees valid text)
 *     -> added tokens cut out, leftmost-longest, as single ids (§1.3)
 *     -> per remaining fragment: NFC when the tokenizer normalizes (below)
 *        -> pre-tokenizer regex splits it into words (rs_pretok.h, §1.4)
 *        -> each word's bytes are symbols; BPE merges the adjacent pair of
 *           lowest rank, leftmost first, until none applies (§1.6)
 *     -> ids in order; no BOS/EOS is ever added (add_bos is only reported)
 *
 * Decoding (ids -> text), §1.8: NORMAL tokens give their bytes (the token
 * text with the GPT-2 byte-to-unicode map undone), USER_DEFINED tokens their
 * text, CONTROL tokens their text only with RS_TOK_DEC_SPECIAL, BYTE tokens
 * "<0xXX>" that byte, UNUSED and UNKNOWN nothing.  Invalid or incomplete
 * UTF-8 in the bytes then becomes one U+FFFD per maximal subpart (rs_utf8.h,
 * §1.2: HF tokenizers and the Unicode standard's recommended practice), so
 * decoded text is always valid UTF-8.  No normalization on decode.
 *
 * Normalization.  The GGUF does not record the HF normalizer, so the
 * default comes from the pre type, in one table in rs_tok.c: both the
 * Qwen2/Qwen3 (pre "qwen2") and the Qwen3.5/3.8 (pre "qwen35") tokenizer.json
 * have an NFC normalizer (serving.md §1.2, corrected 2026-12-01: "e\u0301"
 * is the one token 933 of "é" in the real vocabulary).  Added tokens are cut
 * out before it, so "</think>" followed by U+0338 stays "</think>" although
 * ">" U+0338 composes to U+226F.  RS_TOK_NORM_NONE keeps the raw text, as
 * llama.cpp (which ignores normalizers) does.
 *
 * Lifecycle: rs_tok_new() copies what it needs out of an open GGUF (which
 * may be closed afterwards) and builds hash maps for the vocabulary and the
 * merges.  The struct rs_tok is then immutable: encode/decode may run on it
 * from several threads at once.  rs_tok_free() releases it.  A struct
 * rs_detok is per stream and belongs to one thread.
 */
#ifndef RS_TOK_H
#define RS_TOK_H

#include <stddef.h>
#include <stdint.h>

#include "rs_err.h"
#include "rs_gguf.h"

/* tokenizer.ggml.token_type values. */
enum rs_tok_type {
	RS_TOK_NORMAL = 1,
	RS_TOK_UNKNOWN = 2,
	RS_TOK_CONTROL = 3,
	RS_TOK_USER_DEFINED = 4,
	RS_TOK_UNUSED = 5,
	RS_TOK_BYTE = 6
};

enum rs_tok_norm {
	RS_TOK_NORM_DEFAULT = 0,	/* by pre type: NFC for qwen35, qwen2 */
	RS_TOK_NORM_NONE,
	RS_TOK_NORM_NFC			/* NFC (utf8proc) before the split */
};

/* Which added tokens rs_tok_encode() matches in the text (serving.md §1.3). */
enum rs_tok_special {
	RS_TOK_SPECIAL_ALL = 0,	/* CONTROL, USER_DEFINED and UNKNOWN: the
				   reference with special parsing on */
	RS_TOK_SPECIAL_USER,	/* USER_DEFINED only (<think>, <tool_call>..):
				   the reference with special parsing off;
				   "<|im_end|>" is then plain text */
	RS_TOK_SPECIAL_NONE	/* none: every added token's text is text */
};

/* Decode flags. */
#define RS_TOK_DEC_SPECIAL	0x1	/* render CONTROL tokens' text */

/* What the GGUF says besides the vocabulary; ids are -1 when absent. */
struct rs_tok_meta {
	const char	*pre;		/* "qwen35" or "qwen2" */
	int		 nfc;		/* 1 when encode normalizes to NFC */
	int32_t		 n_vocab;	/* entries of tokenizer.ggml.tokens */
	int32_t		 n_merges;
	int32_t		 n_added;	/* CONTROL + USER_DEFINED + UNKNOWN */
	int32_t		 bos, eos, eot, eom, pad;
	int		 add_bos, add_eos;	/* flags, default 0 */
	int		 jit;		/* the pre-tokenizer regex is JIT-ed */
};

struct rs_tok;

/* A growable id list: zero it or rs_tok_ids_init() it; owns V. */
struct rs_tok_ids {
	int32_t	*v;
	size_t	 n;
	size_t	 cap;
};

/*
 * Build a tokenizer from the tokenizer.ggml.* keys of G with normalization
 * NORM.  Caller frees *OUT with rs_tok_free().  Fails with
 * RS_ERR_UNSUPPORTED (model not "gpt2", pre not "qwen35"/"qwen2"),
 * RS_ERR_FORMAT (a key missing or mistyped, token_type length differs from
 * tokens, a NORMAL token with a code point outside the byte-level alphabet,
 * a merge without a space or naming a symbol or result not in the
 * vocabulary, a byte without a token, a special id out of range; the
 * message names the key, index and text), RS_ERR_INVALID_ARG (NORM),
 * RS_ERR_NOMEM.
 */
enum rs_status	 rs_tok_new(struct rs_tok **out, const struct rs_gguf *g,
		    enum rs_tok_norm norm, struct rs_err *err);
void		 rs_tok_free(struct rs_tok *tok);

/* Borrowed; valid until rs_tok_free(). */
const struct rs_tok_meta *rs_tok_meta(const struct rs_tok *tok);

/* Effective type of ID (USER_DEFINED "<|...|>" texts count as CONTROL, as in
   llama.cpp); 0 for an id out of range. */
int		 rs_tok_type(const struct rs_tok *tok, int32_t id);

/*
 * The id whose decoded bytes are exactly the N bytes at TEXT: an added
 * token's text ("<|im_end|>"), or a NORMAL token's bytes (" world").
 * -1 when there is none.
 */
int32_t		 rs_tok_find(const struct rs_tok *tok, const char *text,
		    size_t n);

/*
 * 1 when ID ends generation (serving.md §0): the eos/eot/eom ids, and the
 * added tokens <|im_end|>, <|endoftext|>, <|fim_pad|>, <|repo_name|>,
 * <|file_sep|>.
 */
int		 rs_tok_is_eog(const struct rs_tok *tok, int32_t id);

/*
 * Check that the chat markup tokens exist as single added tokens:
 * <|im_start|> <|im_end|> <think> </think> <tool_call> </tool_call>
 * <tool_response> </tool_response> (serving.md §0).  RS_ERR_UNSUPPORTED
 * naming the first one missing.
 */
enum rs_status	 rs_tok_check_chat(const struct rs_tok *tok, struct rs_err *err);

void		 rs_tok_ids_init(struct rs_tok_ids *ids);
void		 rs_tok_ids_cleanup(struct rs_tok_ids *ids);

/*
 * Tokenize LEN bytes at TEXT (any bytes: invalid UTF-8 is replaced, NULs are
 * text) and APPEND the ids to OUT, so that pieces can be concatenated.
 * SPECIAL selects the added tokens matched in the text.  On failure OUT is
 * as it was.  Fails with RS_ERR_INVALID_ARG (SPECIAL), RS_ERR_NOMEM,
 * RS_ERR_LIMIT (the regex engine ran out of resources).
 */
enum rs_status	 rs_tok_encode(const struct rs_tok *tok, const char *text,
		    size_t len, enum rs_tok_special special,
		    struct rs_tok_ids *out, struct rs_err *err);

/*
 * Decode N ids into a malloc'd, NUL-terminated, valid UTF-8 string *TEXT of
 * *LEN bytes (caller frees with free()).  FLAGS: RS_TOK_DEC_*.  Fails with
 * RS_ERR_INVALID_ARG (an id outside [0, n_vocab); the message gives its
 * index and value), RS_ERR_NOMEM.
 */
enum rs_status	 rs_tok_decode(const struct rs_tok *tok, const int32_t *ids,
		    size_t n, unsigned flags, char **text, size_t *len,
		    struct rs_err *err);

/*
 * The raw bytes token ID decodes to under FLAGS, before the UTF-8 policy
 * (possibly a partial character): *LEN bytes, borrowed until rs_tok_free().
 * NULL for an id out of range.
 */
const char	*rs_tok_piece(const struct rs_tok *tok, int32_t id,
		    unsigned flags, size_t *len);

/* Longest piece in bytes, over all tokens (sizes rs_detok_feed() output). */
size_t		 rs_tok_max_piece(const struct rs_tok *tok);

/*
 * The GPT-2 byte-level alphabet (serving.md §1.5): the code point standing
 * for byte B in NORMAL token texts.
 */
uint32_t	 rs_tok_byte_cp(unsigned char b);

/* "pcre2 10.42 (jit, unicode 14.0.0); utf8proc 2.8.0 (unicode 15.0.0)". */
const char	*rs_tok_lib_versions(void);

/*
 * Streaming detokenizer (serving.md §1.8): feed ids one at a time; each call
 * releases the longest prefix of the decoded bytes that can no longer change,
 * holding back at most 3 bytes of an incomplete UTF-8 sequence until the
 * next token completes it (an emoji split across tokens comes out whole, in
 * one piece) or breaks it (one U+FFFD), or the stream ends.  The
 * concatenation of every feed and the final flush equals rs_tok_decode() of
 * all the ids with the same FLAGS, byte for byte.  Embed it and set it up
 * with rs_detok_init(); it allocates nothing.
 */
struct rs_detok {
	const struct rs_tok	*tok;
	unsigned		 flags;		/* RS_TOK_DEC_* */
	unsigned char		 hold[4];	/* incomplete sequence */
	int			 nhold;		/* 0..3 */
};

/* Room one rs_detok_feed() may need: 3 * (rs_tok_max_piece() + 3). */
size_t		 rs_detok_max(const struct rs_tok *tok);

void		 rs_detok_init(struct rs_detok *d, const struct rs_tok *tok,
		    unsigned flags);

/*
 * Decode ID and write the bytes now complete to OUT (CAP bytes of room,
 * at least rs_detok_max()); *N gets their count (maybe 0).  Fails with
 * RS_ERR_INVALID_ARG (ID out of range, or CAP too small), leaving D as it
 * was.
 */
enum rs_status	 rs_detok_feed(struct rs_detok *d, int32_t id, char *out,
		    size_t cap, size_t *n, struct rs_err *err);

/*
 * End of stream: write what is held back (an incomplete sequence, as one
 * U+FFFD) to OUT, which needs 3 bytes; return the count (0 or 3) and reset
 * D for a new stream.
 */
size_t		 rs_detok_flush(struct rs_detok *d, char *out);

#endif /* RS_TOK_H */
