/*
 * rs_json.h - JSON values for JSON-lines I/O, over one library (jansson),
 * which only rs_json.c includes.
 *
 * A struct rs_json is a reference-counted JSON value.  Builders return a new
 * value (NULL only when out of memory); rs_json_set()/rs_json_push() take
 * ownership of the value they are given, also on failure.  Getters borrow:
 * what they return lives as long as the container.  Values are not
 * thread-safe; use one per thread.  Integers are 64-bit: the parser rejects
 * larger ones rather than altering them (serving.md edge case 46).
 */
#ifndef RS_JSON_H
#define RS_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rs_err.h"

struct rs_json;

/*
 * RS_JSON_WIDE: a number rs_json cannot hold (an integer past 64 bits, a
 * real past a double such as 1e400), kept as its lexeme.  Only
 * rs_pyjson_parse() makes them; they are stored as a string of U+0000
 * U+0001 and the lexeme (RS_JSON_WIDE_MARK), so a client's string that is
 * exactly that is one as well.  rs_json_as_str() refuses them,
 * rs_json_as_wide() gives the lexeme, and rs_json_dumps() writes it as a
 * bare number, as it came in.
 */
enum rs_json_kind {
	RS_JSON_NULL, RS_JSON_BOOL, RS_JSON_INT, RS_JSON_REAL,
	RS_JSON_STRING, RS_JSON_ARRAY, RS_JSON_OBJECT, RS_JSON_WIDE
};
#define RS_JSON_WIDE_MARK	"\\u0000\\u0001"	/* as JSON text */

/*
 * Parse exactly one JSON value from N bytes at TEXT (trailing white space is
 * allowed, anything else is an error).  An unpaired UTF-16 surrogate escape
 * in a string ("\ud83d" alone, or a lone low half) reads as U+FFFD
 * (serving.md §1.7).  RS_ERR_FORMAT with line/column and the parser's
 * reason, RS_ERR_LIMIT for an integer beyond 64 bits, RS_ERR_NOMEM.
 * Caller frees *OUT with rs_json_free().
 */
enum rs_status	 rs_json_parse(const char *text, size_t n, struct rs_json **out,
		    struct rs_err *err);
/*
 * How many unpaired surrogate escapes rs_json_parse() would read as U+FFFD
 * in TEXT (N bytes of JSON): for a server's log line.
 */
size_t		 rs_json_lone_surrogates(const char *text, size_t n);
void		 rs_json_free(struct rs_json *j);	/* drops one reference */
/*
 * Take one more reference to J (NULL is fine) and return it, so that a value
 * can sit in two containers or outlive its parent: each holder frees it once.
 */
struct rs_json	*rs_json_ref(struct rs_json *j);
/* A deep copy of J (NULL for NULL, or when out of memory). */
struct rs_json	*rs_json_copy(const struct rs_json *j);

/* ---- building ---- */
struct rs_json	*rs_json_obj(void);
struct rs_json	*rs_json_arr(void);
/* A string from N bytes; invalid UTF-8 bytes become U+FFFD. */
struct rs_json	*rs_json_strn(const char *s, size_t n);
struct rs_json	*rs_json_str(const char *s);
struct rs_json	*rs_json_int(int64_t v);
struct rs_json	*rs_json_real(double v);	/* NaN/Inf become null */
struct rs_json	*rs_json_bool(int v);
struct rs_json	*rs_json_null(void);
/* OBJ[KEY] = VAL, taking VAL; -1 when out of memory or not an object. */
int		 rs_json_set(struct rs_json *obj, const char *key,
		    struct rs_json *val);
int		 rs_json_push(struct rs_json *arr, struct rs_json *val);

/*
 * Write J compactly on one line plus '\n' to FP and flush; floats use %.9g
 * (round-trips f32).  Returns -1 on a write error.
 */
int		 rs_json_write_line(const struct rs_json *j, FILE *fp);
/* J as a compact string; caller frees with free(). NULL when out of memory. */
char		*rs_json_dumps(const struct rs_json *j);

/* ---- reading ---- */
enum rs_json_kind rs_json_kind(const struct rs_json *j);
/* OBJ[KEY], or NULL when absent or OBJ is not an object. */
struct rs_json	*rs_json_get(const struct rs_json *obj, const char *key);
size_t		 rs_json_arr_len(const struct rs_json *arr);
struct rs_json	*rs_json_arr_at(const struct rs_json *arr, size_t i);
/* 0 on success; -1 when J is not of that kind. as_real accepts integers. */
int		 rs_json_as_int(const struct rs_json *j, int64_t *out);
/*
 * as_int, or a real that is a whole number inside int64_t (5.0: what
 * clients that compute a count in floating point send; 5.5 is refused)
 */
int		 rs_json_as_whole(const struct rs_json *j, int64_t *out);
int		 rs_json_as_real(const struct rs_json *j, double *out);
int		 rs_json_as_bool(const struct rs_json *j, int *out);
/*
 * The length of the JSON number (RFC 8259: -?(0|[1-9][0-9]*)(.[0-9]+)?
 * ([eE][+-]?[0-9]+)?) at the start of S[0..N), 0 when none starts there
 * (S need not be terminated past a number: any other byte ends it).
 */
size_t		 rs_json_number_len(const char *s, size_t n);
/* RS_JSON_WIDE's lexeme, borrowed: *LEX, *N bytes (not NUL-terminated). */
int		 rs_json_as_wide(const struct rs_json *j, const char **lex,
		    size_t *n);
/* Borrowed bytes (NUL-terminated, may hold NULs: use *N). */
int		 rs_json_as_str(const struct rs_json *j, const char **s,
		    size_t *n);
/* Iterate an object: I from 0 while it returns 0. */
int		 rs_json_obj_at(const struct rs_json *obj, size_t i,
		    const char **key, struct rs_json **val);
size_t		 rs_json_obj_len(const struct rs_json *obj);
/*
 * Iterate OBJ's members in insertion order, O(1) per step: start with
 * *IT = NULL; each call moves *IT to the next member, stores its key (KLEN
 * bytes, NUL-terminated) and value, and returns 0; returns -1 after the
 * last member or when OBJ is not an object.  OBJ must not change meanwhile.
 */
int		 rs_json_obj_next(const struct rs_json *obj, void **it,
		    const char **key, size_t *klen, struct rs_json **val);

/* Version of the JSON library underneath ("jansson 2.14"). */
const char	*rs_json_lib_version(void);

#endif /* RS_JSON_H */
