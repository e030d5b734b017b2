/* The check's result cache reads packs of entries from disk: whatever bytes a pack holds, the
 * index and the entry reader must return intact entries or -EBADMSG, never crash, and what
 * they return must write back out and read again to the same findings. */
#include "../src/check/check_internal.h"
#include "fuzz_common.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char KEY[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	lb_buf in = {0};
	/* First byte odd: the rest is an entry's body, wrapped with a valid head and checksum so
	 * that the JSON and its validation are reached; even: the bytes are the whole entry. */
	if (size && (data[0] & 1)) {
		uint8_t d[32];
		char hex[65];
		lb_sha256 c;
		lb_sha256_init(&c);
		lb_sha256_update(&c, data + 1, size - 1);
		lb_sha256_final(&c, d);
		lb_sha256_hex(d, hex);
		lb_buf_printf(&in, "labbox.check-cache/1\n%s\n%s\n", KEY, hex);
		lb_buf_append(&in, data + 1, size - 1);
	} else {
		lb_buf_append(&in, size ? data + 1 : data, size ? size - 1 : 0);
	}
	lb_check_report rep = {.policy = LB_CHECK_STANDARD};
	ck_deps deps = {0};
	int r = ck_cache_decode(in.data ? in.data : "", in.len, KEY, "fuzz.py", &rep, &deps);
	if (r != 0 && r != -EBADMSG && r != -ENOMEM)
		abort();
	if (r == 0) {
		lb_buf out = {0};
		lb_check_report back = {.policy = LB_CHECK_STANDARD};
		ck_deps bdeps = {0};
		if (ck_cache_encode(KEY, &rep, &deps, &out) == 0) {
			if (ck_cache_decode(out.data, out.len, KEY, "fuzz.py", &back, &bdeps) != 0 ||
			    back.n != rep.n || bdeps.n != deps.n)
				abort();
			for (size_t i = 0; i < rep.n; i++)
				if (strcmp(rep.items[i].message, back.items[i].message) != 0 ||
				    strcmp(rep.items[i].id, back.items[i].id) != 0 ||
				    rep.items[i].line != back.items[i].line)
					abort();
		}
		lb_check_finish(&rep);
		struct json_object *doc = lb_check_report_json(&rep);
		fuzz_assert_strict_json(doc);
		json_object_put(doc);
		lb_buf_free(&out);
		lb_check_report_free(&back);
		ck_deps_free(&bdeps);
	}
	lb_check_report_free(&rep);
	ck_deps_free(&deps);
	/* The same bytes as a pack: every slot it indexes lies inside it and decodes or is bad. */
	ck_cache cc = {.dfd = -1, .pack = in.data, .pack_len = in.len};
	if (ck_cache_index(&cc) == -ENOMEM)
		abort();
	for (size_t i = 0; i < cc.nslots; i++) {
		const ck_slot *s = &cc.slots[i];
		if (s->data < in.data || s->data + s->len > in.data + in.len)
			abort();
		lb_check_report one = {0};
		ck_deps d = {0};
		char key[65];
		memcpy(key, s->key, 64);
		key[64] = '\0';
		ck_cache_decode(s->data, s->len, key, "fuzz.py", &one, &d);
		lb_check_report_free(&one);
		ck_deps_free(&d);
	}
	/* the file table: every record's path lies inside the pack, and a record is found by
	 * its own path and fields only when it is not racy */
	for (size_t i = 0; i < cc.nrecs; i++) {
		const ck_filerec *f = &cc.recs[i];
		uint8_t content[32];
		if (f->path < in.data || f->path >= in.data + in.len)
			abort();
		bool racy = f->st.mtime_ns >= cc.trust_before_ns || f->st.ctime_ns >= cc.trust_before_ns;
		if (ck_filestat_trusted(&cc, f->path, &f->st, content) && racy)
			abort();
	}
	free(cc.recs);
	free(cc.slots);
	lb_buf_free(&in);
	return 0;
}
