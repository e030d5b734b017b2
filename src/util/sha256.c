/* SHA-256 (FIPS 180-4), used to fingerprint every staged file in the manifest. */
#include "labbox/util.h"
#include <unistd.h>
#include <errno.h>

#include <stdio.h>
#include <string.h>

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t ror(uint32_t x, int n)
{
	return (x >> n) | (x << (32 - n));
}

static void compress_portable(uint32_t *hs, const uint8_t *p)
{
	uint32_t w[64];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	uint32_t a = hs[0], b = hs[1], cc = hs[2], d = hs[3];
	uint32_t e = hs[4], f = hs[5], g = hs[6], h = hs[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
		uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & cc) ^ (b & cc));
		h = g;
		g = f;
		f = e;
		e = d + t1;
		d = cc;
		cc = b;
		b = a;
		a = t1 + t2;
	}
	hs[0] += a;
	hs[1] += b;
	hs[2] += cc;
	hs[3] += d;
	hs[4] += e;
	hs[5] += f;
	hs[6] += g;
	hs[7] += h;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#include <stdatomic.h>
#define HAVE_SHANI_PATH 1

/* Whether the CPU has the SHA extensions (CPUID 7.0 EBX bit 29) and the SSSE3/SSE4.1 the
 * schedule uses. Remembered, as libgcc remembers __cpu_model: a fact about the hardware, the
 * same for every thread, and CPUID is too slow to ask per block. (__builtin_cpu_supports
 * does not know "sha" in every compiler that builds this.) */
static bool shani_usable(void)
{
	static atomic_int memo; /* 0 not asked yet, 1 yes, 2 no */
	int v = atomic_load_explicit(&memo, memory_order_relaxed);
	if (!v) {
		unsigned a, b, c, d;
		bool ok = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 9)) && (c & (1u << 19)) &&
			  __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 29));
		v = ok ? 1 : 2;
		atomic_store_explicit(&memo, v, memory_order_relaxed);
	}
	return v == 1;
}

/* The x86 SHA extensions (Intel since Goldmont/Ice Lake, AMD since Zen): about ten times the
 * portable loop, which was a quarter of a warm check's instructions (every cache entry's
 * checksum and key). The message schedule runs four words ahead in M[], as in Intel's
 * reference code. */
__attribute__((target("sha,ssse3,sse4.1"))) static void compress_shani(uint32_t *hs, const uint8_t *p,
								    size_t blocks)
{
	const __m128i mask = _mm_set_epi64x(0x0c0d0e0f08090a0bull, 0x0405060700010203ull);
	__m128i tmp = _mm_loadu_si128((const __m128i *)&hs[0]);
	__m128i s1 = _mm_loadu_si128((const __m128i *)&hs[4]);
	tmp = _mm_shuffle_epi32(tmp, 0xB1);	     /* CDAB */
	s1 = _mm_shuffle_epi32(s1, 0x1B);	     /* EFGH */
	__m128i s0 = _mm_alignr_epi8(tmp, s1, 8); /* ABEF */
	s1 = _mm_blend_epi16(s1, tmp, 0xF0);	     /* CDGH */
	for (; blocks; blocks--, p += 64) {
		__m128i abef = s0, cdgh = s1, m[4];
#pragma GCC unroll 16
		for (int i = 0; i < 16; i++) {
			__m128i *cur = &m[i % 4], *prev = &m[(i + 3) % 4], *next = &m[(i + 1) % 4];
			if (i < 4)
				*cur = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), mask);
			__m128i msg = _mm_add_epi32(*cur, _mm_loadu_si128((const __m128i *)&K[4 * i]));
			s1 = _mm_sha256rnds2_epu32(s1, s0, msg);
			if (i >= 3 && i <= 14) {
				*next = _mm_add_epi32(*next, _mm_alignr_epi8(*cur, *prev, 4));
				*next = _mm_sha256msg2_epu32(*next, *cur);
			}
			msg = _mm_shuffle_epi32(msg, 0x0E);
			s0 = _mm_sha256rnds2_epu32(s0, s1, msg);
			if (i >= 1 && i <= 12)
				*prev = _mm_sha256msg1_epu32(*prev, *cur);
		}
		s0 = _mm_add_epi32(s0, abef);
		s1 = _mm_add_epi32(s1, cdgh);
	}
	tmp = _mm_shuffle_epi32(s0, 0x1B);	  /* FEBA */
	s1 = _mm_shuffle_epi32(s1, 0xB1);	  /* DCHG */
	s0 = _mm_blend_epi16(tmp, s1, 0xF0); /* DCBA */
	s1 = _mm_alignr_epi8(s1, tmp, 8);	  /* ABEF */
	_mm_storeu_si128((__m128i *)&hs[0], s0);
	_mm_storeu_si128((__m128i *)&hs[4], s1);
}
#endif

static void compress_blocks(lb_sha256 *c, const uint8_t *p, size_t blocks)
{
#ifdef HAVE_SHANI_PATH
	if (shani_usable()) {
		compress_shani(c->h, p, blocks);
		return;
	}
#endif
	for (; blocks; blocks--, p += 64)
		compress_portable(c->h, p);
}

static void compress(lb_sha256 *c, const uint8_t *p)
{
	compress_blocks(c, p, 1);
}

void lb_sha256_init(lb_sha256 *c)
{
	static const uint32_t init[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
					 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	memcpy(c->h, init, sizeof init);
	c->nbytes = 0;
	c->fill = 0;
}

void lb_sha256_update(lb_sha256 *c, const void *data, size_t len)
{
	const uint8_t *p = data;
	c->nbytes += len;
	if (c->fill) {
		size_t take = 64 - c->fill < len ? 64 - c->fill : len;
		memcpy(c->block + c->fill, p, take);
		c->fill += take;
		p += take;
		len -= take;
		if (c->fill < 64)
			return;
		compress(c, c->block);
		c->fill = 0;
	}
	if (len >= 64) {
		compress_blocks(c, p, len / 64);
		p += len / 64 * 64;
		len %= 64;
	}
	memcpy(c->block, p, len);
	c->fill = len;
}

void lb_sha256_final(lb_sha256 *c, uint8_t out[32])
{
	uint64_t bits = c->nbytes * 8;
	uint8_t pad = 0x80;
	/* nbytes is bumped by update(); bits was captured before padding. */
	lb_sha256_update(c, &pad, 1);
	static const uint8_t zeros[64];
	lb_sha256_update(c, zeros, (56 + 64 - c->fill) % 64);
	uint8_t len[8];
	for (int i = 0; i < 8; i++)
		len[i] = (uint8_t)(bits >> (56 - 8 * i));
	lb_sha256_update(c, len, 8);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(c->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)c->h[i];
	}
}

void lb_sha256_hex(const uint8_t digest[32], char out[65])
{
	/* by hand: a snprintf per byte was a fifth of a warm check's instructions */
	static const char hexd[] = "0123456789abcdef";
	for (int i = 0; i < 32; i++) {
		out[2 * i] = hexd[digest[i] >> 4];
		out[2 * i + 1] = hexd[digest[i] & 15];
	}
	out[64] = '\0';
}

void lb_sha256_buf_hex(const void *data, size_t len, char hex[65])
{
	lb_sha256 c;
	uint8_t d[32];
	lb_sha256_init(&c);
	lb_sha256_update(&c, data, len);
	lb_sha256_final(&c, d);
	lb_sha256_hex(d, hex);
}

int lb_sha256_fd(int fd, char hex[65])
{
	lb_sha256 h;
	lb_sha256_init(&h);
	char buf[1 << 16];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		lb_sha256_update(&h, buf, (size_t)n);
	}
	uint8_t d[32];
	lb_sha256_final(&h, d);
	lb_sha256_hex(d, hex);
	return 0;
}
