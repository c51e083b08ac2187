/*
 * rs_tok_impl.h - internal: the tokenizer's tables, shared by rs_tok.c
 * (loading, lookups), rs_tok_encode.c (BPE) and rs_detok.c (decoding).
 *
 * Symbols during BPE are token ids, not strings: a word starts as one
 * single-byte token per byte (byte_id[]), and the merge table maps an ordered
 * pair of ids (A, B) to the merge's rank and the id of the token A+B, both
 * resolved once at load.  The ids name the same strings as the merge list
 * does, so merging ids is merging strings, without hashing text per step.
 */
#ifndef RS_TOK_IMPL_H
#define RS_TOK_IMPL_H

#include <stdint.h>

#include "rs_pretok.h"
#include "rs_tok.h"

/* One vocabulary entry: its decoded bytes in the arena. */
struct rs_tok_entry {
	uint32_t	off;		/* into rs_tok.bytes */
	uint32_t	len;		/* bytes */
	uint8_t		type;		/* effective enum rs_tok_type */
};

/*
 * One slot of the vocabulary hash table; id -1 marks an empty slot.  TAG
 * holds other bits of the text's hash, so that a probe of a different text
 * rarely has to touch its bytes (a cache miss each, at load time).
 */
struct rs_tok_slot {
	int32_t		id;
	uint32_t	tag;
};

/* One slot of the merge hash table; key UINT64_MAX marks an empty slot. */
struct rs_tok_merge {
	uint64_t	key;		/* (uint64)A << 32 | B */
	uint32_t	rank;		/* index in tokenizer.ggml.merges */
	int32_t		res;		/* id of A+B */
};

#define RS_TOK_MERGE_EMPTY	UINT64_MAX

struct rs_tok {
	struct rs_tok_meta	 meta;
	struct rs_tok_entry	*tokens;	/* (n_vocab) */
	char			*bytes;		/* token bytes, back to back */
	size_t			 max_piece;	/* longest token, bytes */
	int32_t			 byte_id[256];	/* single-byte NORMAL tokens */

	/* NORMAL tokens by bytes: open addressing */
	struct rs_tok_slot	*vocab;		/* (1 << vocab_bits) */
	int			 vocab_bits;

	/* merges by id pair: open addressing */
	struct rs_tok_merge	*merges;	/* (1 << merge_bits) */
	int			 merge_bits;

	/*
	 * Added tokens (CONTROL, USER_DEFINED, UNKNOWN with non-empty text),
	 * sorted by first byte, then longest first: the candidates starting
	 * with byte c are added[added_at[c] .. added_at[c + 1]).
	 */
	int32_t			*added;		/* (meta.n_added) */
	uint32_t		 added_at[257];

	uint8_t			*eog;		/* bitset over ids */
	struct rs_pretok	*pretok;
};

/* 64-bit multiplicative hash (Fibonacci hashing) down to BITS bits. */
static inline uint64_t
rs_tok_hash64(uint64_t key, int bits)
{
	return ((key * 0x9e3779b97f4a7c15ULL) >> (64 - bits));
}

/* The merge of ids (A, B), or NULL when the pair does not merge. */
static inline const struct rs_tok_merge *
rs_tok_merge_find(const struct rs_tok *tok, int32_t a, int32_t b)
{
	uint64_t	key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
	uint64_t	mask = ((uint64_t)1 << tok->merge_bits) - 1;
	uint64_t	i = rs_tok_hash64(key, tok->merge_bits);

	for (;; i = (i + 1) & mask) {
		const struct rs_tok_merge *m = &tok->merges[i];

		if (m->key == key)
			return (m);
		if (m->key == RS_TOK_MERGE_EMPTY)
			return (NULL);
	}
}

/* Bytes of entry ID. */
static inline const char *
rs_tok_entry_bytes(const struct rs_tok *tok, int32_t id)
{
	return (tok->bytes + tok->tokens[id].off);
}

#endif /* RS_TOK_IMPL_H */
