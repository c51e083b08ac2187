/*
 * rs_pystr.h - Python's notion of white space on UTF-8 text.
 *
 * The chat template trims with Python str.strip() (serving.md §2.7 item 1),
 * and the output parser trims reasoning the same way so that it re-renders
 * unchanged (§3.2).  str.isspace() is true for U+0009..U+000D, U+001C..
 * U+0020, U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F,
 * U+205F and U+3000 (not U+200B, not U+FEFF).  Pure functions.
 */
#ifndef RS_PYSTR_H
#define RS_PYSTR_H

#include <stddef.h>
#include <stdint.h>

/* 1 when code point CP is white space for Python str.isspace(). */
int	rs_pystr_isspace(uint32_t cp);

/*
 * Bytes of white space at the start (lspace) or the end (rspace) of the N
 * bytes at S, in whole code points: S[lspace..n - rspace) is S.strip() when
 * that range is not empty.  A byte that does not start a valid UTF-8
 * sequence counts as a non-space character.
 */
size_t	rs_pystr_lspace(const char *s, size_t n);
size_t	rs_pystr_rspace(const char *s, size_t n);

#endif /* RS_PYSTR_H */
