/*
 * rs_utf8.h - strict UTF-8 scanning and the one replacement policy shared by
 * the tokenizer (invalid input text) and the detokenizer (token bytes that do
 * not form UTF-8), serving.md §1.7 and §1.8.
 *
 * Valid UTF-8 is RFC 3629: the shortest encoding of a Unicode scalar value,
 * so no overlong forms (C0, C1, E0 80..9F, F0 80..8F), no surrogates
 * (ED A0..BF) and nothing above U+10FFFF (F4 90.., F5..FF).
 *
 * Two replacement policies, both scanning left to right and copying every
 * valid sequence:
 *
 *   RS_UTF8_PER_BYTE     where no valid sequence starts, the ONE byte at
 *                        that position becomes U+FFFD (EF BF BD) and the
 *                        scan resumes at the next byte: "e\xe2\x82x" gives
 *                        "e\uFFFD\uFFFDx".  llama.cpp's rule for invalid
 *                        tokenizer input (serving.md §1.7) and the rule of
 *                        rs_json_strn(), so a text passes through both
 *                        unchanged.
 *   RS_UTF8_PER_SUBPART  the maximal subpart there (the longest prefix of
 *                        some valid sequence, at least one byte) becomes ONE
 *                        U+FFFD: "e\xe2\x82x" gives "e\uFFFDx", and the
 *                        bytes f0 9f 9a at the end give one U+FFFD.  The
 *                        Unicode standard's recommended practice (§3.9,
 *                        "U+FFFD substitution of maximal subparts") and what
 *                        HF tokenizers' decoders do (Rust's from_utf8_lossy),
 *                        so it is the rule for decoded text (serving.md
 *                        §1.2, §1.8).
 *
 * Both policies are prefix-stable: the output for bytes [0, k) never changes
 * when more bytes are appended, provided k is not inside a sequence that is
 * still a valid prefix (RS_UTF8_SHORT below).  A maximal subpart that is not
 * such a prefix ends before a byte that is present, the one that broke it.
 * That is what lets the streaming detokenizer hold back at most 3 bytes and
 * still emit exactly what a decode of the whole sequence gives.  Pure
 * functions; thread-safe.
 */
#ifndef RS_UTF8_H
#define RS_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* U+FFFD REPLACEMENT CHARACTER in UTF-8. */
#define RS_UTF8_REPL		"\xef\xbf\xbd"
#define RS_UTF8_REPL_LEN	3

enum rs_utf8_policy {
	RS_UTF8_PER_BYTE,	/* one U+FFFD per invalid byte (input text) */
	RS_UTF8_PER_SUBPART	/* one U+FFFD per maximal subpart (decoding) */
};

/* rs_utf8_seq() results besides a length 1..4. */
#define RS_UTF8_INVALID	(-1)	/* no valid sequence starts here */
#define RS_UTF8_SHORT	0	/* a valid prefix cut short by the end */

/*
 * Classify the N >= 1 bytes at S: the length (1..4) of the valid sequence
 * starting at S[0], RS_UTF8_SHORT when S[0..N) is a proper prefix of some
 * valid sequence, or RS_UTF8_INVALID.  When CP is not NULL and a length is
 * returned, *CP is the code point.
 */
int		 rs_utf8_seq(const unsigned char *s, size_t n, uint32_t *cp);

/*
 * The length (1..3) of the maximal subpart at S[0..N), N >= 1, where
 * rs_utf8_seq() does not return a length: the longest prefix of S that is a
 * prefix of some valid sequence, or 1 when S[0] starts none.
 */
size_t		 rs_utf8_subpart(const unsigned char *s, size_t n);

/*
 * 1 when the N bytes at S are valid UTF-8; otherwise 0, with the offset of
 * the first invalid byte in *BAD (when BAD is not NULL).
 */
int		 rs_utf8_valid(const char *s, size_t n, size_t *bad);

/*
 * Apply POLICY to the N bytes at S, writing to OUT, which needs room for
 * 3 * N bytes.  Returns the number of bytes written.  With FINAL set every
 * byte is consumed (a sequence cut short by the end is invalid: U+FFFD per
 * byte, or one U+FFFD for the whole of it); otherwise a trailing
 * RS_UTF8_SHORT sequence (at most 3 bytes) is left unconsumed.  *USED (when
 * not NULL) receives the number of input bytes consumed.
 */
size_t		 rs_utf8_sanitize(const char *s, size_t n,
		    enum rs_utf8_policy policy, char *out, int final,
		    size_t *used);

/* Write code point CP (a scalar value) as UTF-8 to OUT; returns 1..4. */
int		 rs_utf8_put(uint32_t cp, char *out);

/*
 * The N bytes at S as an error message quotes them, into OUT (at least
 * RS_UTF8_QUOTE_SIZE bytes, NUL-terminated): at most RS_UTF8_QUOTE_MAX
 * bytes of text, then "..." when S does not fit, never cutting a
 * character.  Control bytes (a NUL among them: printf's %s stopped
 * there), bytes that are not valid UTF-8 and the characters that move or
 * hide text on a terminal come out as \xHH, a backslash as two.  Returns
 * OUT.  For strings from a file or a client; the bound leaves room in an
 * rs_err message for what the quote is about.
 */
#define RS_UTF8_QUOTE_MAX	64
#define RS_UTF8_QUOTE_SIZE	(RS_UTF8_QUOTE_MAX + 4)
const char	*rs_utf8_quote(const char *s, size_t n, char *out);

#endif /* RS_UTF8_H */
