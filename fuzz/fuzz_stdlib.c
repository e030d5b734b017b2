/* libFuzzer target: the standard library summaries never crash, leak or read out of bounds on
 * any library source (an experiment's own interpreter brings its own library) nor on any
 * cached summary text. The input is two modules separated by a NUL byte, written as a.py and
 * pkg/__init__.py of a library in a directory of this process's own; the whole input is also
 * read as a summary. */
#include "../src/check/check_internal.h"
#include "labbox/util.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put(const char *path, const uint8_t *d, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		abort();
	if (n && fwrite(d, 1, n, f) != n)
		abort();
	fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char dir[64], a[96], pkg[96], init[128];
	snprintf(dir, sizeof dir, "/tmp/labbox-fuzz-stdlib-%d", (int)getpid());
	snprintf(a, sizeof a, "%s/a.py", dir);
	snprintf(pkg, sizeof pkg, "%s/pkg", dir);
	snprintf(init, sizeof init, "%s/__init__.py", pkg);
	mkdir(dir, 0700);
	mkdir(pkg, 0700);
	const uint8_t *nul = memchr(data, 0, size);
	size_t na = nul ? (size_t)(nul - data) : size;
	put(a, data, na);
	put(init, nul ? nul + 1 : data, nul ? size - na - 1 : 0);
	ck_stdlib *s = NULL;
	char err[256];
	if (ck_stdlib_build(dir, 1, &s, err, sizeof err) == 0) {
		const char *via = NULL;
		char real[256];
		(void)ck_stdlib_caps(s, "a.f", &via);
		(void)ck_stdlib_rename(s, "a.x.y", real, sizeof real);
		(void)ck_stdlib_method_caps(s, "run", &via);
		ck_stdlib_free(s);
	}
	size_t mods, hl;
	uint8_t d[32];
	if (ck_stdlib_header((const char *)data, size, &mods, d, &hl) == 0 && hl > size)
		abort();
	/* the input as it is, and its records resealed under a header that names them (the
	 * digest gate would otherwise keep every mutation away from the record parser) */
	for (int seal = 0; seal < 2; seal++) {
		const uint8_t *body = data;
		size_t blen = size;
		const uint8_t *nl = seal ? memchr(data, '\n', size) : NULL;
		if (seal && nl) {
			body = nl + 1;
			blen = size - (size_t)(body - data);
		}
		char head[128] = "";
		if (seal) {
			lb_sha256 c;
			char hex[65];
			lb_sha256_init(&c);
			lb_sha256_update(&c, body, blen);
			lb_sha256_final(&c, d);
			lb_sha256_hex(d, hex);
			snprintf(head, sizeof head, "labbox.stdlib/3\t%zu\t%s\n", size % 7, hex);
		}
		size_t hlen = strlen(head);
		char *text = malloc(hlen + blen + 1);
		if (!text)
			return 0;
		memcpy(text, head, hlen);
		memcpy(text + hlen, body, blen);
		text[hlen + blen] = '\0';
		if (ck_stdlib_parse(text, &s) == 0) {
			const char *via = NULL;
			char real[256];
			size_t capable;
			(void)ck_stdlib_caps(s, "pydoc.pipepager", &via);
			(void)ck_stdlib_rename(s, "tempfile._os.system", real, sizeof real);
			(void)ck_stdlib_method_caps(s, "run", &via);
			ck_stdlib_counts(s, &mods, &capable);
			if (ck_stdlib_drifted(s))
				abort(); /* a summary parsed whole is the one it names */
			ck_stdlib_free(s);
		}
	}
	return 0;
}
