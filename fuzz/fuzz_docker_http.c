/* libFuzzer target: an engine's HTTP/1.1 response as the docker backend reads it from the
 * engine's socket (src/backend/docker_api.c) never crashes or reads out of bounds; a whole
 * response has a status of three digits, not 1xx, and a NUL-terminated body within the limit;
 * a response that is whole before the peer's close reads the same after it. */
#include "../src/backend/docker_api.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const lb_docker_http *r)
{
	if (r->status < 200 || r->status > 999 || !r->body.data || r->body.len > LB_DOCKER_API_MAX_BODY ||
	    r->body.data[r->body.len] != '\0')
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Exact-size copy: a read past the end is ASan's to see. */
	char *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	lb_docker_http open = {0}, closed = {0};
	int a = lb_docker_http_parse(buf, size, false, &open);
	int b = lb_docker_http_parse(buf, size, true, &closed);
	if (a == 0)
		check(&open);
	if (b == 0)
		check(&closed);
	if (b == -EAGAIN)
		abort(); /* after the close nothing more can come */
	if (a == 0 && (b != 0 || open.status != closed.status || open.body.len != closed.body.len ||
		       memcmp(open.body.data, closed.body.data, open.body.len) != 0))
		abort();
	lb_docker_http_free(&open);
	lb_docker_http_free(&closed);
	free(buf);
	return 0;
}
