/*
 * rs_pretok.h - pre-tokenization: cut a plain-text fragment into "words"
 * with the tokenizer's split regex (serving.md §1.4), before byte-level BPE.
 *
 * Two regexes are known, selected by the GGUF key tokenizer.ggml.pre:
 *
 *   qwen35  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|
 *           \p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *   qwen2   the same without the \p{M} terms (combining marks then fall into
 *           the punctuation run instead of joining letters)
 *
 * These are the HF tokenizer.json patterns, matched with PCRE2 in UTF mode
 * (JIT-compiled when the library supports it) with Perl semantics: leftmost
 * match, ordered alternation, repeatedly from the end of the previous word.
 * \s is spelled out as the Unicode White_Space set of serving.md §1.4 (PCRE2's
 * own \s would also take U+180E).  Text between matches, if the regex ever
 * skipped any, is a word of its own, so the words always tile the fragment.
 * Letter, mark and number classes are PCRE2's Unicode tables together with
 * the characters Unicode 14.0 and 15.0 added (rs_unidelta.h), so that an
 * older PCRE2 (Debian 12's knows 14.0) still splits by the Unicode 15
 * categories (see rs_pretok_lib_version()).
 *
 * Lifecycle: rs_pretok_new() compiles the pattern once; the object is then
 * immutable and rs_pretok_split() may run on it from several threads at once
 * (each call allocates its own match state).  rs_pretok_free() releases it.
 */
#ifndef RS_PRETOK_H
#define RS_PRETOK_H

#include <stddef.h>

#include "rs_err.h"

enum rs_pretok_kind {
	RS_PRETOK_QWEN35,	/* tokenizer.ggml.pre = "qwen35" */
	RS_PRETOK_QWEN2		/* tokenizer.ggml.pre = "qwen2" */
};

struct rs_pretok;

/*
 * The kind named by the N bytes at NAME ("qwen35", "qwen2"): 0 and *OUT on a
 * match, -1 for an unknown name.
 */
int		 rs_pretok_kind_parse(const char *name, size_t n,
		    enum rs_pretok_kind *out);
/* "qwen35" or "qwen2". */
const char	*rs_pretok_kind_name(enum rs_pretok_kind kind);

/*
 * Compile the regex of KIND.  Caller frees *OUT with rs_pretok_free().
 * Fails with RS_ERR_INVALID_ARG (unknown kind), RS_ERR_UNSUPPORTED (PCRE2
 * rejects the pattern, e.g. built without Unicode support), RS_ERR_NOMEM.
 */
enum rs_status	 rs_pretok_new(struct rs_pretok **out, enum rs_pretok_kind kind,
		    struct rs_err *err);
void		 rs_pretok_free(struct rs_pretok *p);

/* 1 when the pattern runs JIT-compiled, 0 when PCRE2 interprets it. */
int		 rs_pretok_jit(const struct rs_pretok *p);

/*
 * Called once per word, in order: the word is LEN >= 1 bytes at OFF within
 * the fragment.  Returning anything but RS_OK stops the split, which then
 * returns that status (the callback fills ERR itself).
 */
typedef enum rs_status (*rs_pretok_fn)(void *arg, size_t off, size_t len,
		    struct rs_err *err);

/*
 * Split the LEN bytes at TEXT, which must be valid UTF-8 (the caller
 * sanitizes: see rs_utf8.h), calling FN for each word.  The end of TEXT is
 * the end of the fragment for the look-ahead (?!\S).  Fails with
 * RS_ERR_NOMEM, RS_ERR_LIMIT (PCRE2 ran out of match resources), or what FN
 * returned.
 */
enum rs_status	 rs_pretok_split(const struct rs_pretok *p, const char *text,
		    size_t len, rs_pretok_fn fn, void *arg, struct rs_err *err);

/* "pcre2 10.42 (jit, unicode 14.0.0)": static storage. */
const char	*rs_pretok_lib_version(void);

#endif /* RS_PRETOK_H */
