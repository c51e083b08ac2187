/*
 * rs_pyjson.h - JSON text exactly as Python writes it.
 *
 * The chat template's `tojson` is Python's json.dumps(x, ensure_ascii=False)
 * (serving.md §2.7 item 2), and the tool-call arguments we send back use the
 * same style (§3.3 item 5), so both sides of the prompt round trip agree:
 *
 *   separators ", " and ": ", no other spaces, keys in insertion order;
 *   strings escape only '"', '\\' and code points below U+0020 (\n \r \t \b
 *   \f by name, others as \u00xx with lower-case hex); everything else,
 *   non-ASCII included, is written raw;
 *   true / false / null; integers in decimal; floats in Python repr form
 *   (shortest round-trip digits, "1.0", "1e-05", "1e+16", "100000.0").
 *
 * It also normalises literal text a model writes for a non-string tool
 * parameter (§3.4): strict JSON, or with the Python fallback single-quoted
 * strings and True/False/None, becomes canonical JSON text.  Numbers keep
 * their lexeme (serving.md edge case 46), so no precision is lost.
 *
 * All functions append to a caller's struct rs_buf; out of memory is
 * reported through the buffer's sticky OOM flag (rs_buf.h).  Stateless and
 * thread-safe.
 */
#ifndef RS_PYJSON_H
#define RS_PYJSON_H

#include <stddef.h>

#include "rs_buf.h"
#include "rs_json.h"

/* S (N bytes of UTF-8) as a quoted JSON string. */
void	rs_pyjson_str(struct rs_buf *b, const char *s, size_t n);
/* The same without the quotes, for streaming a string value in pieces. */
void	rs_pyjson_escape(struct rs_buf *b, const char *s, size_t n);
/* V as Python repr(float) ("NaN", "Infinity", "-Infinity" as json.dumps). */
void	rs_pyjson_real(struct rs_buf *b, double v);
/* J as json.dumps(J, ensure_ascii=False). */
void	rs_pyjson_dump(struct rs_buf *b, const struct rs_json *j);

/*
 * J as Python str(J) for a scalar: a string's own bytes, "True", "False",
 * "None", an integer, a float's repr.  Returns -1, appending nothing, for an
 * array or object (whose Python repr is not needed by any template).
 */
int	rs_pyjson_pystr(struct rs_buf *b, const struct rs_json *j);

enum rs_pyjson_mode {
	RS_PYJSON_STRICT,	/* RFC 8259 JSON only */
	RS_PYJSON_PYTHON	/* also 'single' quotes, True/False/None,
				   trailing commas, Python string escapes */
};

/*
 * Parse S (N bytes) as one literal value, surrounded by optional white
 * space, in MODE, and append it in canonical form (above; numbers keep
 * their lexeme, escapes are decoded and re-encoded, lone surrogates become
 * U+FFFD).  Returns 1 when S is such a literal, 0 otherwise (nothing
 * appended).  Nesting deeper than 128 levels, and an object key holding
 * U+0000 (which rs_json_parse cannot read back), are "not a literal".
 */
int	rs_pyjson_literal(struct rs_buf *b, const char *s, size_t n,
	    enum rs_pyjson_mode mode);

/* 1 if S (N bytes) is a JSON number lexeme; INTEGER: only -?(0|[1-9][0-9]*). */
int	rs_pyjson_is_number(const char *s, size_t n, int integer);

/*
 * rs_json_parse() of S (N bytes), except that a number rs_json cannot hold
 * (an integer past 64 bits, a real that overflows such as 1e400), which
 * Python's json reads, is read as an RS_JSON_WIDE holding its lexeme: a
 * request with such a number in a field it does not know, or in a tool's
 * schema, then passes; a field that wants a number or a string says it is
 * not one; and the dump and str() above write the lexeme, so the template
 * renders it unchanged wherever it is (serving.md §6, 46).
 * Errors as rs_json_parse's, but RS_ERR_LIMIT is not one of them.
 */
enum rs_status	rs_pyjson_parse(const char *s, size_t n, struct rs_json **out,
		    struct rs_err *err);

#endif /* RS_PYJSON_H */
