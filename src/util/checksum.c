/* A fast checksum of labbox's own files, against damage (a torn disk block, a bad sector),
 * not against anyone: whoever can write a file of the user's cache can write its checksum
 * too, whatever the function. sha256 stays for what names content (cache keys, digests).
 *
 * Four independent 64-bit lanes take 32 bytes a step (a multiply, a rotate and a multiply
 * each), so the multiplies of one step overlap; each lane is then mixed with the length and
 * the other lanes into 64 bits of the 256-bit result. Every input bit reaches its lane
 * through an odd multiply (a bijection), so any change of one word changes its lane. */
#include "labbox/util.h"

#include <string.h>

#define K1 0xc2b2ae3d27d4eb4full
#define K2 0x9e3779b185ebca87ull
#define K3 0x165667b19e3779f9ull

static inline uint64_t rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return v; /* this host's byte order: the sum is checked where it was written */
}

static inline uint64_t lane(uint64_t acc, uint64_t w)
{
	return rotl(acc + w * K2, 31) * K1;
}

static void steps(lb_checksum *c, const uint8_t *p, size_t nblocks)
{
	uint64_t a = c->v[0], b = c->v[1], d = c->v[2], e = c->v[3];
	for (size_t i = 0; i < nblocks; i++, p += 32) {
		a = lane(a, load64(p));
		b = lane(b, load64(p + 8));
		d = lane(d, load64(p + 16));
		e = lane(e, load64(p + 24));
	}
	c->v[0] = a, c->v[1] = b, c->v[2] = d, c->v[3] = e;
}

void lb_checksum_init(lb_checksum *c)
{
	memset(c, 0, sizeof *c);
	c->v[0] = K1 + K2;
	c->v[1] = K2;
	c->v[2] = 0;
	c->v[3] = 0 - K1;
}

void lb_checksum_update(lb_checksum *c, const void *data, size_t len)
{
	const uint8_t *p = data;
	c->n += len;
	if (c->fill) {
		size_t take = 32 - c->fill < len ? 32 - c->fill : len;
		memcpy(c->buf + c->fill, p, take);
		c->fill += take;
		p += take;
		len -= take;
		if (c->fill < 32)
			return;
		steps(c, c->buf, 1);
		c->fill = 0;
	}
	steps(c, p, len / 32);
	p += len / 32 * 32;
	len %= 32;
	memcpy(c->buf, p, len);
	c->fill = len;
}

static uint64_t avalanche(uint64_t h)
{
	h ^= h >> 33;
	h *= K2;
	h ^= h >> 29;
	h *= K3;
	h ^= h >> 32;
	return h;
}

void lb_checksum_final(lb_checksum *c, uint8_t out[32])
{
	/* the tail, padded with zeros, and its length: "ab" and "ab\0" differ by n */
	memset(c->buf + c->fill, 0, 32 - c->fill);
	steps(c, c->buf, 1);
	uint64_t all = c->v[0] ^ rotl(c->v[1], 7) ^ rotl(c->v[2], 12) ^ rotl(c->v[3], 18);
	for (int i = 0; i < 4; i++) {
		uint64_t h = avalanche(c->v[i] ^ c->n * K3 ^ rotl(all, 8 * i + 1) ^ (uint64_t)i);
		for (int k = 0; k < 8; k++)
			out[8 * i + k] = (uint8_t)(h >> (8 * k));
	}
}
