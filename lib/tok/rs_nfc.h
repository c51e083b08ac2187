/*
 * rs_nfc.h - Unicode NFC of a UTF-8 string in time linear in its length
 * (serving.md §1.3: the tokenizer's normalizer), on utf8proc's tables.
 *
 * utf8proc_map(..., UTF8PROC_COMPOSE) gives the same bytes, but puts the
 * combining marks of a run in canonical order by swapping neighbours, a
 * sort whose time grows with the square of the run when the marks'
 * classes alternate: 100,000 marks took 14 s, a 2 MB request minutes, on
 * the engine's thread.  rs_nfc_map decomposes each code point with
 * utf8proc, orders every run of marks by a stable sort on the combining
 * class (what canonical ordering is, and what the swaps also compute),
 * then composes with utf8proc: the same result, O(n) for any input.
 */
#ifndef RS_NFC_H
#define RS_NFC_H

#include <stddef.h>
#include <stdint.h>

/*
 * NFC of the valid UTF-8 S[0..N) into *OUT (malloc'd, NUL-terminated;
 * the caller frees it): its length in bytes, or a negative utf8proc error
 * code (UTF8PROC_ERROR_NOMEM, _INVALIDUTF8, _OVERFLOW), *OUT then NULL.
 */
long	rs_nfc_map(const char *s, size_t n, uint8_t **out);

#endif /* RS_NFC_H */
