/* libFuzzer target: the attach stream as the docker backend reads it from the engine's socket
 * (src/backend/docker_api_run.c): the head of the attach's answer and the multiplexed frames
 * after it. Never a crash or a read out of bounds; the frames' payload (or, framing given up,
 * every byte) comes out once, whatever the split of the input into reads: the output of one
 * read of everything equals that of reads of STEP bytes (STEP from the first byte). */
#include "../src/backend/docker_api.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct out {
	unsigned char *buf;
	size_t n, cap;
} out;

/* Each byte tagged with its stream, so both the bytes and their streams compare. */
static void emit(void *ctx, int stream, const char *p, size_t len)
{
	out *o = ctx;
	if (stream < 0 || stream > 2)
		abort();
	if (o->n + 2 * len > o->cap) {
		o->cap = (o->n + 2 * len) * 2 + 64;
		o->buf = realloc(o->buf, o->cap);
		if (!o->buf)
			abort();
	}
	for (size_t i = 0; i < len; i++) {
		o->buf[o->n++] = (unsigned char)stream;
		o->buf[o->n++] = (unsigned char)p[i];
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t step = (size_t)data[0] % 64 + 1;
	data++;
	size--;
	char *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	size_t head = 0;
	int st = lb_docker_attach_head(buf, size, &head);
	if (st >= 0 && (st < 100 || st > 999 || head > size || head < 16))
		abort();
	size_t at = st == 101 || st == 200 ? head : 0;
	lb_docker_mux a = {0}, b = {0};
	out oa = {0}, ob = {0};
	lb_docker_mux_feed(&a, buf + at, size - at, emit, &oa);
	for (size_t i = at; i < size; i += step)
		lb_docker_mux_feed(&b, buf + i, size - i < step ? size - i : step, emit, &ob);
	if (oa.n != ob.n || (oa.n && memcmp(oa.buf, ob.buf, oa.n) != 0) || oa.n / 2 > size - at)
		abort();
	free(oa.buf);
	free(ob.buf);
	free(buf);
	return 0;
}
