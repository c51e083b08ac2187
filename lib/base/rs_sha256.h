/*
 * rs_sha256.h - SHA-256 (FIPS 180-4), used to name chat templates by their
 * content (serving.md §2.1: "log its length and a hash at startup") so the
 * hash matches what sha256sum(1) prints for the same bytes.
 *
 * Streaming use: rs_sha256_init(), any number of rs_sha256_update(), then
 * rs_sha256_final().  A context is plain data, owned by the caller.
 */
#ifndef RS_SHA256_H
#define RS_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define RS_SHA256_LEN	32	/* digest bytes */

struct rs_sha256 {
	uint32_t	h[8];		/* chaining state */
	uint64_t	nbytes;		/* message length so far */
	uint8_t		block[64];	/* pending partial block */
	size_t		fill;		/* bytes used in BLOCK */
};

void	rs_sha256_init(struct rs_sha256 *c);
void	rs_sha256_update(struct rs_sha256 *c, const void *p, size_t n);
/* Write the digest of everything fed so far; C must be re-initialised. */
void	rs_sha256_final(struct rs_sha256 *c, uint8_t out[RS_SHA256_LEN]);

/* One-shot digest of N bytes at P as 64 lower-case hex digits plus NUL. */
void	rs_sha256_hex(const void *p, size_t n, char hex[2 * RS_SHA256_LEN + 1]);

#endif /* RS_SHA256_H */
