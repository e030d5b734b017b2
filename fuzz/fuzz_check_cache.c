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

typedef struct fuzz_walk_span {
	const char *data;
	size_t len;
} fuzz_walk_span;

static int fuzz_walk_visit(const ck_walk_rec *rec, void *arg)
{
	const fuzz_walk_span *sp = arg;
	if (rec->rel < sp->data || rec->rel + rec->rel_len > sp->data + sp->len ||
	    (rec->kind != 'd' && rec->kind != 'v' && rec->kind != 'f') ||
	    memchr(rec->rel, '\0', rec->rel_len))
		abort();
	return 0;
}

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
	/* The same bytes as the whole answer of a check (check/answer.c), and, resealed with a
	 * valid head and checksum, as its body: what parses lies inside and writes back the
	 * same. */
	static const unsigned char digest[32] = {1, 2, 3};
	lb_buf sealed = {0}, body = {0};
	char hex[65];
	uint8_t d[32];
	lb_sha256_hex(digest, hex);
	lb_buf_printf(&body, "%s\n", hex);
	lb_buf_append(&body, size ? data + 1 : data, size ? size - 1 : 0);
	lb_checksum c;
	lb_checksum_init(&c);
	lb_checksum_update(&c, body.data, body.len);
	lb_checksum_final(&c, d);
	lb_sha256_hex(d, hex);
	lb_buf_printf(&sealed, "labbox.check-answer/2\n%s\n", hex);
	lb_buf_append(&sealed, body.data, body.len);
	const lb_buf *as[2] = {&in, &sealed};
	for (int k = 0; k < 2; k++) {
		lb_check_answer a;
		const char *base = as[k]->data ? as[k]->data : "";
		size_t len = as[k]->len;
		/* the pieces the loader reads from the file: a head shorter than the file, and the
		 * stderr line from a window of the rest, stay inside what they were given */
		for (size_t avail = 0; avail <= len && avail <= 512; avail += 37) {
			int rc;
			size_t oo, ol, el;
			if (ck_answer_layout(base, avail, len, digest, &rc, &oo, &ol) == 0 &&
			    (oo > avail || oo + ol > len || rc < 0 || rc > 255))
				abort();
			size_t rest = len - (avail < len ? avail : len);
			size_t w = rest < 24 ? rest : 24;
			if (ck_answer_err_len(base + len - rest, w, rest, &el) == 0 && el > rest)
				abort();
		}
		if (ck_answer_parse(base, len, digest, &a) != 0)
			continue;
		if (a.out < base || a.out + a.out_len > base + as[k]->len || a.err < base ||
		    a.err + a.err_len > base + as[k]->len || a.rc < 0 || a.rc > 255)
			abort();
		lb_buf again = {0};
		lb_check_answer b;
		if (ck_answer_format(digest, a.rc, a.out, a.out_len, a.err, a.err_len, &again) != 0 ||
		    ck_answer_parse(again.data, again.len, digest, &b) != 0 || b.rc != a.rc ||
		    b.out_len != a.out_len || b.err_len != a.err_len ||
		    memcmp(b.out, a.out, a.out_len) != 0 || memcmp(b.err, a.err, a.err_len) != 0)
			abort();
		lb_buf_free(&again);
	}
	lb_buf_free(&sealed);
	lb_buf_free(&body);
	/* The same bytes as the walk's kept listing, raw and as the records of one sealed with a
	 * valid checksum: each record visited lies inside the bytes, with a name of its length. */
	lb_buf walk = {0};
	if (ck_walk_format(1, "/exp", in.data, in.len, &walk) == 0) {
		const lb_buf *ws[2] = {&in, &walk};
		for (int k = 0; k < 2; k++) {
			fuzz_walk_span sp = {ws[k]->data, ws[k]->len};
			int wr = ck_walk_parse(ws[k]->data ? ws[k]->data : "", ws[k]->len,
					      k ? "/exp" : NULL, fuzz_walk_visit, &sp);
			if (wr != 0 && wr != -EBADMSG)
				abort();
		}
	}
	lb_buf_free(&walk);
	lb_buf_free(&in);
	return 0;
}
