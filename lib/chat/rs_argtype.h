/*
 * rs_argtype.h - the type of a tool-call parameter, read from the tool's
 * JSON schema, and the conversion of the raw text the model wrote for it
 * into JSON (serving.md §3.4).
 *
 * The model writes every value as bare text between <parameter=P> and
 * </parameter>; whether "2" means the number 2 or the string "2" depends on
 * the schema S = parameters.properties[P]:
 *
 *   S.type a string        that type (lower-cased);
 *   S.type an array        its first non-"null" entry; nullable if "null"
 *                          is listed;
 *   S.anyOf / S.oneOf      the first option with a non-null type; nullable
 *                          if an option is null;
 *   S.enum without type    the JSON type of its first value;
 *   S.$ref                 resolved in #/$defs or #/definitions of the same
 *                          parameters object (8 hops at most);
 *   no type                UNKNOWN; P not in properties: UNDECLARED.
 *
 * Type names are matched loosely as the models and clients write them: str*,
 * text, char, varchar, enum are strings; int*, uint*, long, short integers;
 * num*, float, double numbers; bool* booleans; dict*, list*, arr*, object
 * containers; null.  Conversion never fails: text that does not fit the
 * type is kept as a JSON string, so the client can report the mistake.
 * Pure functions; thread-safe.
 */
#ifndef RS_ARGTYPE_H
#define RS_ARGTYPE_H

#include <stddef.h>

#include "rs_buf.h"
#include "rs_json.h"

enum rs_argtype_kind {
	RS_ARG_STRING,
	RS_ARG_INTEGER,
	RS_ARG_NUMBER,
	RS_ARG_BOOLEAN,
	RS_ARG_CONTAINER,	/* object or array */
	RS_ARG_NULL,
	RS_ARG_UNKNOWN,		/* declared without a usable type */
	RS_ARG_UNDECLARED	/* not in the schema's properties */
};

struct rs_argtype {
	enum rs_argtype_kind	kind;
	int			nullable;	/* "null"/"None" mean null */
};

/*
 * The "function" object of the tool named NAME (N bytes) in TOOLS (an array
 * of {"type":"function","function":{...}}), or NULL.  Borrowed from TOOLS.
 */
const struct rs_json	*rs_argtype_tool(const struct rs_json *tools,
			    const char *name, size_t n);

/* 1 when PARAMS (a tool's "parameters" schema, may be NULL) declares NAME. */
int			 rs_argtype_declared(const struct rs_json *params,
			    const char *name);

/* The type of parameter NAME under PARAMS (NULL: undeclared). */
struct rs_argtype	 rs_argtype_of(const struct rs_json *params,
			    const char *name);

/*
 * Append to B the JSON for raw value V (N bytes) of type T:
 *
 *   string      V verbatim as a JSON string; null when nullable and V is
 *               exactly "null" or "None";
 *   integer     V trimmed if it is a JSON integer (lexeme kept, any size);
 *   number      V trimmed if it is a JSON number (lexeme kept);
 *   boolean     true/false for V trimmed equal to them ignoring case;
 *   (these three give null for a trimmed "null"/"None", else the string V)
 *   container   V trimmed as JSON, else as a Python literal ({'a': True}),
 *               in canonical form (rs_pyjson.h), else the string V;
 *   null        null;
 *   unknown     V trimmed if it is any JSON value, else the string V;
 *   undeclared  the string V.
 *
 * Trimming is Python str.strip().  Out of memory shows in B's OOM flag.
 */
void			 rs_argtype_convert(struct rs_buf *b,
			    struct rs_argtype t, const char *v, size_t n);

#endif /* RS_ARGTYPE_H */
