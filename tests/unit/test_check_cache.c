/* check/cache.c: the key of a file's entry and the entry format (what a checker's cache keeps
 * on disk must read back exactly, and anything that is not an intact entry must be a miss). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../src/check/check_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char SRC[] = "import os\nimport helper\nimport random\nrandom.seed(7)\n"
			  "os.system('ls')  # labbox: allow[LB101] the test says so\n"
			  "eval('1')\n";

static lb_check_config *config(lb_check_policy p)
{
	lb_check_config *cfg;
	assert_int_equal(lb_check_config_new(&cfg), 0);
	lb_check_config_set_policy(cfg, p);
	lb_check_config_set_trust_project(cfg, true);
	return cfg;
}

static void key_of(const lb_check_config *cfg, const char *src, bool harness, const char *syn,
		   char hex[65])
{
	ck_cache cc;
	/* the base is computed only for an open cache: build one by hand on a scratch dir */
	char dir[] = "/tmp/labbox-unit-ccache-XXXXXX";
	assert_non_null(mkdtemp(dir));
	lb_check_config *c2;
	assert_int_equal(ck_config_copy(cfg, &c2), 0);
	lb_check_config_set_cache_dir(c2, dir);
	char *none[] = {NULL};
	assert_int_equal(ck_cache_open(c2, NULL, none, 0, "", &cc), 0);
	assert_true(cc.dfd >= 0);
	ck_cache_key(&cc, src, strlen(src), harness, syn, hex);
	ck_cache_close(&cc);
	char sub[64];
	snprintf(sub, sizeof sub, "%s/check", dir);
	assert_int_equal(rmdir(sub), 0);
	assert_int_equal(rmdir(dir), 0);
	lb_check_config_free(c2);
}

static void test_key_follows_every_input(void **state)
{
	(void)state;
	lb_check_config *std = config(LB_CHECK_STANDARD), *strict = config(LB_CHECK_STRICT);
	char a[65], b[65];
	key_of(std, SRC, false, "", a);
	key_of(std, SRC, false, "", b);
	assert_string_equal(a, b); /* deterministic */
	assert_int_equal(strlen(a), 64);
	key_of(std, "import os\n", false, "", b);
	assert_string_not_equal(a, b);
	key_of(strict, SRC, false, "", b);
	assert_string_not_equal(a, b);
	key_of(std, SRC, true, "", b);
	assert_string_not_equal(a, b);
	key_of(std, SRC, false, "ok", b);
	assert_string_not_equal(a, b);
	lb_check_config *denied = config(LB_CHECK_STANDARD);
	lb_check_config_deny_module(denied, "pickle");
	key_of(denied, SRC, false, "", b);
	assert_string_not_equal(a, b);
	/* the same item as the project's (untrusted) or the operator's is another configuration */
	lb_check_config *proj = config(LB_CHECK_STANDARD);
	ck_list_add(&proj->deny_modules, "pickle", true);
	char c[65];
	key_of(proj, SRC, false, "", c);
	assert_string_not_equal(b, c);
	lb_check_config_free(std);
	lb_check_config_free(strict);
	lb_check_config_free(denied);
	lb_check_config_free(proj);
}

static void test_key_parts_do_not_run_together(void **state)
{
	(void)state;
	lb_sha256 x, y;
	uint8_t dx[32], dy[32];
	lb_sha256_init(&x);
	ck_cache_key_part(&x, "ab", "c", 1);
	lb_sha256_final(&x, dx);
	lb_sha256_init(&y);
	ck_cache_key_part(&y, "a", "bc", 2);
	lb_sha256_final(&y, dy);
	assert_memory_not_equal(dx, dy, 32);
}

/* A settled report of SRC, with the local-module fact its analysis recorded. */
static void analysed(lb_check_config *cfg, lb_check_report *rep, ck_deps *deps)
{
	ck_syntax syn;
	assert_int_equal(ck_syntax_init(&syn), 0);
	TSParser *p = ts_parser_new();
	ts_parser_set_language(p, syn.lang);
	TSTree *t = ts_parser_parse_string(p, NULL, SRC, (uint32_t)strlen(SRC));
	ck_raws raws = {0};
	ck_analysis_in in = {.cfg = cfg, .syn = &syn, .src = SRC, .len = strlen(SRC),
			     .root = ts_tree_root_node(t), .harness = false, .deps = deps};
	assert_int_equal(ck_analyze(&in, &raws), 0);
	rep->policy = cfg->policy;
	assert_int_equal(ck_settle(cfg, "exp/a.py", SRC, in.root, &raws, rep), 0);
	ck_raws_free(&raws);
	ts_tree_delete(t);
	ts_parser_delete(p);
	ck_syntax_free(&syn);
}

static const char KEY[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

static void test_entry_round_trip(void **state)
{
	(void)state;
	lb_check_config *cfg = config(LB_CHECK_STANDARD);
	lb_check_report rep = {0}, back = {.policy = LB_CHECK_STANDARD};
	ck_deps deps = {0}, bdeps = {0};
	analysed(cfg, &rep, &deps);
	assert_true(rep.n >= 3);
	assert_non_null(rep.seeds);
	/* `helper` is not one of this experiment's modules: that is what the analysis relied on */
	size_t h = deps.n;
	for (size_t i = 0; i < deps.n; i++)
		if (strcmp(deps.v[i].name, "helper") == 0)
			h = i;
	assert_true(h < deps.n);
	assert_false(deps.v[h].local);
	lb_buf b = {0};
	assert_int_equal(ck_cache_encode(KEY, &rep, &deps, &b), 0);
	assert_int_equal(ck_cache_decode(b.data, b.len, KEY, "other/b.py", &back, &bdeps), 0);
	assert_int_equal(back.n, rep.n);
	bool saw_suppressed = false;
	for (size_t i = 0; i < rep.n; i++) {
		lb_check_finding *x = &rep.items[i], *y = &back.items[i];
		assert_string_equal(y->file, "other/b.py");
		assert_int_equal(x->line, y->line);
		assert_int_equal(x->col, y->col);
		assert_string_equal(x->id, y->id);
		assert_ptr_equal(x->category, y->category);
		assert_int_equal(x->severity, y->severity);
		assert_string_equal(x->message, y->message);
		assert_true((x->name == NULL) == (y->name == NULL));
		if (x->name)
			assert_string_equal(x->name, y->name);
		assert_int_equal(x->rejects, y->rejects);
		assert_int_equal(x->suppressed, y->suppressed);
		if (x->suppressed) {
			saw_suppressed = true;
			assert_string_equal(x->suppression, y->suppression);
		}
	}
	assert_true(saw_suppressed);
	/* the file's imports come back too */
	assert_non_null(rep.imports);
	assert_non_null(back.imports);
	assert_int_equal(json_object_object_length(back.imports), json_object_object_length(rep.imports));
	assert_true(json_object_object_get_ex(back.imports, "helper", NULL));
	/* seed calls come back as this reader's file's */
	assert_int_equal(json_object_array_length(back.seeds), json_object_array_length(rep.seeds));
	json_object *s = json_object_array_get_idx(back.seeds, 0), *f;
	assert_true(json_object_object_get_ex(s, "file", &f));
	assert_string_equal(json_object_get_string(f), "other/b.py");
	assert_int_equal(bdeps.n, deps.n);
	/* the fact holds while helper is not local, and not once it is */
	assert_true(ck_deps_hold(cfg, &bdeps));
	ck_list_add(&cfg->local_modules, "helper", false);
	assert_false(ck_deps_hold(cfg, &bdeps));
	lb_buf_free(&b);
	ck_deps_free(&deps);
	ck_deps_free(&bdeps);
	lb_check_report_free(&rep);
	lb_check_report_free(&back);
	lb_check_config_free(cfg);
}

static void test_damaged_entries_are_misses(void **state)
{
	(void)state;
	lb_check_config *cfg = config(LB_CHECK_STANDARD);
	lb_check_report rep = {0};
	ck_deps deps = {0};
	analysed(cfg, &rep, &deps);
	lb_buf b = {0};
	assert_int_equal(ck_cache_encode(KEY, &rep, &deps, &b), 0);
	/* every truncation, every single flipped bit in a sample of positions, another key */
	for (size_t n = 0; n < b.len; n++) {
		lb_check_report o = {0};
		ck_deps d = {0};
		assert_int_equal(ck_cache_decode(b.data, n, KEY, "a.py", &o, &d), -EBADMSG);
		lb_check_report_free(&o);
		ck_deps_free(&d);
	}
	for (size_t i = 0; i < b.len; i += 7) {
		for (int bit = 0; bit < 8; bit += 3) {
			lb_check_report o = {0};
			ck_deps d = {0};
			b.data[i] ^= (char)(1 << bit);
			assert_int_equal(ck_cache_decode(b.data, b.len, KEY, "a.py", &o, &d), -EBADMSG);
			b.data[i] ^= (char)(1 << bit);
			lb_check_report_free(&o);
			ck_deps_free(&d);
		}
	}
	char other[65];
	memcpy(other, KEY, sizeof other);
	other[0] = 'f';
	lb_check_report o = {0};
	ck_deps d = {0};
	assert_int_equal(ck_cache_decode(b.data, b.len, other, "a.py", &o, &d), -EBADMSG);
	assert_int_equal(o.n, 0);
	lb_buf_free(&b);
	ck_deps_free(&deps);
	lb_check_report_free(&rep);
	lb_check_config_free(cfg);
}

/* An entry whose checksum is right but whose body is not labbox's: an unknown rule id. */
static void test_wellformed_but_foreign_body_is_a_miss(void **state)
{
	(void)state;
	const char *bodies[] = {
		"{\"deps\":[],\"findings\":[{\"line\":1,\"col\":1,\"id\":\"LB999\",\"severity\":2,"
		"\"message\":\"m\",\"name\":null,\"rejects\":true,\"suppressed\":false,"
		"\"suppression\":null}],\"seeds\":[]}",
		"{\"deps\":[],\"findings\":[{\"line\":-1,\"col\":1,\"id\":\"LB101\",\"severity\":2,"
		"\"message\":\"m\",\"name\":null,\"rejects\":true,\"suppressed\":false,"
		"\"suppression\":null}],\"seeds\":[]}",
		"{\"deps\":[],\"findings\":[],\"seeds\":[{\"file\":\"x\"}]}",
		"{\"deps\":[[\"a\"]],\"findings\":[],\"seeds\":[]}",
		"{\"deps\":[],\"findings\":[]}",
		"{\"deps\":[],\"findings\":[],\"seeds\":[]} trailing",
	};
	for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
		uint8_t dg[32];
		char hex[65];
		lb_sha256 c;
		lb_sha256_init(&c);
		lb_sha256_update(&c, bodies[i], strlen(bodies[i]));
		lb_sha256_final(&c, dg);
		lb_sha256_hex(dg, hex);
		lb_buf b = {0};
		lb_buf_printf(&b, "labbox.check-cache/1\n%s\n%s\n%s", KEY, hex, bodies[i]);
		lb_check_report o = {0};
		ck_deps d = {0};
		assert_int_equal(ck_cache_decode(b.data, b.len, KEY, "a.py", &o, &d), -EBADMSG);
		lb_check_report_free(&o);
		ck_deps_free(&d);
		lb_buf_free(&b);
	}
}

/* A file table block (length line included) with body, appended to pack; returns where
 * the pack continues after it. */
static size_t files_table(lb_buf *pack, const char *body)
{
	uint8_t d[32];
	char hex[65];
	ck_content_digest(body, strlen(body), d);
	lb_sha256_hex(d, hex);
	lb_buf_printf(pack, "%zu\nlabbox.check-files/1\n%s\n%s",
		      strlen("labbox.check-files/1\n") + 65 + strlen(body), hex, body);
	return pack->len;
}

/* A pack: its entries by key; a damaged length ends it, the entries before it stay. */
static void test_pack_index(void **state)
{
	(void)state;
	lb_check_config *cfg = config(LB_CHECK_STANDARD);
	lb_check_report rep = {0};
	ck_deps deps = {0};
	analysed(cfg, &rep, &deps);
	char keys[3][65];
	lb_buf e[3] = {{0}}, pack = {0};
	lb_buf_puts(&pack, "labbox.check-pack/2\n");
	size_t table = files_table(&pack, "stamp 5000000000\n");
	for (int i = 0; i < 3; i++) {
		snprintf(keys[i], sizeof keys[i], "%064d", 3 - i); /* not in sorted order */
		assert_int_equal(ck_cache_encode(keys[i], &rep, &deps, &e[i]), 0);
		lb_buf_printf(&pack, "%zu\n", e[i].len);
		lb_buf_append(&pack, e[i].data, e[i].len);
	}
	ck_cache cc = {.dfd = -1, .pack = pack.data, .pack_len = pack.len};
	assert_int_equal(ck_cache_index(&cc), 0);
	assert_int_equal(cc.nslots, 3);
	for (size_t i = 0; i < 3; i++) {
		assert_memory_equal(cc.slots[i].key, keys[2 - i], 64);
		lb_check_report o = {0};
		ck_deps d = {0};
		assert_int_equal(ck_cache_decode(cc.slots[i].data, cc.slots[i].len, keys[2 - i],
						 "a.py", &o, &d), 0);
		assert_int_equal(o.n, rep.n);
		lb_check_report_free(&o);
		ck_deps_free(&d);
	}
	/* the third entry's length line damaged: two entries remain */
	size_t at = table;
	for (int i = 0; i < 2; i++)
		at += (size_t)snprintf(NULL, 0, "%zu\n", e[i].len) + e[i].len;
	pack.data[at + (size_t)snprintf(NULL, 0, "%zu", e[2].len)] = 'x';
	assert_int_equal(ck_cache_index(&cc), -EBADMSG);
	assert_int_equal(cc.nslots, 2);
	/* not a pack */
	pack.data[0] = 'X';
	assert_int_equal(ck_cache_index(&cc), -EBADMSG);
	assert_int_equal(cc.nslots, 0);
	free(cc.slots);
	free(cc.recs);
	for (int i = 0; i < 3; i++)
		lb_buf_free(&e[i]);
	lb_buf_free(&pack);
	ck_deps_free(&deps);
	lb_check_report_free(&rep);
	lb_check_config_free(cfg);
}

/* The file table: a file is trusted by its metadata only when every field matches and its
 * timestamps are older than the table's stamp by more than a tick; a damaged table trusts
 * nothing. */
static void test_file_table(void **state)
{
	(void)state;
	char dig[65];
	memset(dig, 'a', 64);
	dig[64] = '\0';
	char body[1024];
	/* stamp at 100.5 s: trusted are timestamps before 99 s */
	snprintf(body, sizeof body,
		 "stamp 100500000000\n"
		 "1 2 3 33188 98999999999 98999999999 %s /x/old.py\n"
		 "1 3 3 33188 99000000000 98000000000 %s /x/racy.py\n"
		 "1 4 3 33188 98000000000 99500000000 %s /x/racyc.py\n"
		 "1 5 3 33188 -5000000000 98000000000 %s /x/1969.py\n", dig, dig, dig, dig);
	lb_buf pack = {0};
	lb_buf_puts(&pack, "labbox.check-pack/2\n");
	files_table(&pack, body);
	ck_cache cc = {.dfd = -1, .pack = pack.data, .pack_len = pack.len};
	assert_int_equal(ck_cache_index(&cc), 0);
	assert_int_equal(cc.nrecs, 4);
	ck_filestat st = {.dev = 1, .ino = 2, .size = 3, .mode = 33188, .mtime_ns = 98999999999,
			  .ctime_ns = 98999999999};
	uint8_t content[32];
	assert_true(ck_filestat_trusted(&cc, "/x/old.py", &st, content));
	assert_int_equal(content[0], 0xaa);
	assert_false(ck_filestat_trusted(&cc, "/x/other.py", &st, content));
	/* each field on its own */
	ck_filestat t = st;
	t.dev = 9;
	assert_false(ck_filestat_trusted(&cc, "/x/old.py", &t, content));
	t = st, t.ino = 9;
	assert_false(ck_filestat_trusted(&cc, "/x/old.py", &t, content));
	t = st, t.size = 4;
	assert_false(ck_filestat_trusted(&cc, "/x/old.py", &t, content));
	t = st, t.mode = 33261;
	assert_false(ck_filestat_trusted(&cc, "/x/old.py", &t, content));
	t = st, t.mtime_ns++;
	assert_false(ck_filestat_trusted(&cc, "/x/old.py", &t, content));
	t = st, t.ctime_ns++;
	assert_false(ck_filestat_trusted(&cc, "/x/old.py", &t, content));
	/* racy: mtime, or ctime, not older than the stamp's tick */
	t = st, t.ino = 3, t.mtime_ns = 99000000000, t.ctime_ns = 98000000000;
	assert_false(ck_filestat_trusted(&cc, "/x/racy.py", &t, content));
	t = st, t.ino = 4, t.mtime_ns = 98000000000, t.ctime_ns = 99500000000;
	assert_false(ck_filestat_trusted(&cc, "/x/racyc.py", &t, content));
	/* an mtime before 1970 (touch -d 1969-12-31) reads back as it was */
	t = st, t.ino = 5, t.mtime_ns = -5000000000ll, t.ctime_ns = 98000000000;
	assert_true(ck_filestat_trusted(&cc, "/x/1969.py", &t, content));
	free(cc.slots);
	free(cc.recs);
	/* one byte of the table changed: its checksum fails, nothing is trusted */
	char *p = strstr(pack.data, "/x/old.py");
	p[1] = 'y';
	cc = (ck_cache){.dfd = -1, .pack = pack.data, .pack_len = pack.len};
	assert_int_equal(ck_cache_index(&cc), -EBADMSG);
	assert_int_equal(cc.nrecs, 0);
	assert_false(ck_filestat_trusted(&cc, "/y/old.py", &st, content));
	free(cc.slots);
	free(cc.recs);
	lb_buf_free(&pack);
}

static void test_prune_keeps_the_most_recent(void **state)
{
	(void)state;
	char dir[] = "/tmp/labbox-unit-ccache-XXXXXX";
	assert_non_null(mkdtemp(dir));
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	char names[40][65];
	for (int i = 0; i < 40; i++) {
		snprintf(names[i], sizeof names[i], "%064x", i);
		assert_int_equal(lb_replace_file_at(dfd, names[i], "x", 1), 0);
		struct timespec t[2] = {{.tv_sec = 1000000 + i}, {.tv_sec = 1000000 + i}};
		assert_int_equal(utimensat(dfd, names[i], t, 0), 0);
	}
	ck_cache_prune(dfd, 20, 1u << 20);
	for (int i = 0; i < 40; i++)
		assert_int_equal(faccessat(dfd, names[i], F_OK, 0) == 0, i >= 25);
	/* by bytes too: 15 entries of 1 byte over a bound of 10 bytes leave 7 */
	ck_cache_prune(dfd, 1000, 10);
	for (int i = 0; i < 40; i++) {
		assert_int_equal(faccessat(dfd, names[i], F_OK, 0) == 0, i >= 33);
		unlinkat(dfd, names[i], 0);
	}
	close(dfd);
	assert_int_equal(rmdir(dir), 0);
}

/* check/answer.c: an answer file reads back as written, only for its own digest, and any
 * byte changed or cut is a miss. */
static void test_answer_file(void **state)
{
	(void)state;
	unsigned char digest[32], other[32];
	memset(digest, 7, sizeof digest);
	memset(other, 7, sizeof other);
	other[31] = 8;
	static const char out[] = "{\n  \"files\": 2\n}\n", err[] = "labbox check: 2 files\n";
	lb_buf b = {0};
	assert_int_equal(ck_answer_format(digest, 3, out, strlen(out), err, strlen(err), &b), 0);
	lb_check_answer a;
	assert_int_equal(ck_answer_parse(b.data, b.len, digest, &a), 0);
	assert_int_equal(a.rc, 3);
	assert_int_equal(a.out_len, strlen(out));
	assert_memory_equal(a.out, out, a.out_len);
	assert_int_equal(a.err_len, strlen(err));
	assert_memory_equal(a.err, err, a.err_len);
	assert_int_equal(ck_answer_parse(b.data, b.len, other, &a), -EBADMSG);
	for (size_t i = 0; i < b.len; i++) {
		char *copy = malloc(b.len);
		assert_non_null(copy);
		memcpy(copy, b.data, b.len);
		copy[i] ^= 0x20;
		assert_int_equal(ck_answer_parse(copy, b.len, digest, &a), -EBADMSG);
		assert_int_equal(ck_answer_parse(b.data, i, digest, &a), -EBADMSG);
		free(copy);
	}
	/* empty output and error are answers too */
	lb_buf e = {0};
	assert_int_equal(ck_answer_format(digest, 0, NULL, 0, NULL, 0, &e), 0);
	assert_int_equal(ck_answer_parse(e.data, e.len, digest, &a), 0);
	assert_int_equal(a.out_len + a.err_len, 0);
	lb_buf_free(&e);
	lb_buf_free(&b);
}

typedef struct walk_seen {
	char kinds[8];
	char rels[8][32];
	int64_t mtime[8];
	size_t n;
} walk_seen;

static int walk_seen_visit(const ck_walk_rec *rec, void *arg)
{
	walk_seen *s = arg;
	if (s->n >= 8 || rec->rel_len >= sizeof s->rels[0])
		return -E2BIG;
	s->kinds[s->n] = rec->kind;
	memcpy(s->rels[s->n], rec->rel, rec->rel_len);
	s->rels[s->n][rec->rel_len] = '\0';
	s->mtime[s->n] = rec->mtime_ns;
	s->n++;
	return 0;
}

/* The walk's kept listing: its records come back in order (names with spaces and newlines
 * whole); any byte changed or any cut is -EBADMSG, and
 * a listing of another root is not this one's. */
static void test_walk_listing(void **state)
{
	(void)state;
	static const char recs[] = "d 1 2 4096 16877 -5 1000000000 0:\n"
				   "f 7:main.py\n"
				   "d 1 3 4096 16877 1000000000 1000000000 5:a b\nc\n"
				   "f 10:a b\nc/x.py\n"
				   "v 1 4 4096 16877 1000000000 1000000000 4:venv\n";
	lb_buf b = {0};
	assert_int_equal(ck_walk_format(5000000000ll, "/exp", recs, strlen(recs), &b), 0);
	walk_seen seen = {0};
	assert_int_equal(ck_walk_parse(b.data, b.len, "/exp", walk_seen_visit, &seen), 0);
	assert_int_equal(seen.n, 5);
	assert_memory_equal(seen.kinds, "dfdfv", 5);
	assert_string_equal(seen.rels[0], "");
	assert_string_equal(seen.rels[2], "a b\nc");
	assert_string_equal(seen.rels[3], "a b\nc/x.py");
	assert_true(seen.mtime[0] == -5);
	assert_int_equal(ck_walk_parse(b.data, b.len, NULL, NULL, NULL), 0);
	assert_int_equal(ck_walk_parse(b.data, b.len, "/other", NULL, NULL), -EBADMSG);
	assert_int_equal(ck_walk_parse(b.data, b.len, "/ex", NULL, NULL), -EBADMSG);
	for (size_t i = 0; i < b.len; i++) {
		char *copy = malloc(b.len);
		assert_non_null(copy);
		memcpy(copy, b.data, b.len);
		copy[i] ^= 0x20;
		assert_int_equal(ck_walk_parse(copy, b.len, "/exp", NULL, NULL), -EBADMSG);
		assert_int_equal(ck_walk_parse(b.data, i, "/exp", NULL, NULL), -EBADMSG);
		free(copy);
	}
	/* well sealed but not records: a name longer than what is left, a NUL in a name, an
	 * unknown kind */
	const char *bad[] = {"f 9:main.py\n", "f 3:a\0b\n", "x 1:a\n", "d 1 2 3 4 5 0:\n"};
	size_t badlen[] = {12, 8, 6, 15};
	for (size_t i = 0; i < 4; i++) {
		lb_buf e = {0};
		assert_int_equal(ck_walk_format(5000000000ll, "/exp", bad[i], badlen[i], &e), 0);
		assert_int_equal(ck_walk_parse(e.data, e.len, "/exp", NULL, NULL), -EBADMSG);
		lb_buf_free(&e);
	}
	lb_buf_free(&b);
}

/* The loader reads a kept answer from its file in blocks and prints it from there: the
 * bytes come out as stored, a byte changed past the first block is a miss, and a file cut in
 * place after it was loaded is an error of the print, not bytes made up. */
static void test_answer_loaded_from_its_file(void **state)
{
	(void)state;
	char dir[] = "/tmp/labbox-answer-unit-XXXXXX";
	assert_non_null(mkdtemp(dir));
	lb_check_config *cfg = NULL;
	assert_int_equal(lb_check_config_new(&cfg), 0);
	assert_int_equal(lb_check_config_set_cache_dir(cfg, dir), 0);
	lb_check_report rep;
	memset(&rep, 0, sizeof rep);
	memset(rep.answer, 9, sizeof rep.answer);
	rep.answer_state = 1;
	const char *ctx[] = {"/cwd", "check", "exp"};
	size_t n = 200000;
	char *out = malloc(n);
	assert_non_null(out);
	for (size_t i = 0; i < n; i++)
		out[i] = (char)('a' + i % 26);
	static const char err[] = "labbox check: 1 file\n";
	lb_check_answer_store(cfg, &rep, ctx, 3, 3, out, n, err, strlen(err));
	lb_check_answer a;
	assert_int_equal(lb_check_answer_load(cfg, &rep, ctx, 3, &a), 0);
	assert_int_equal(a.rc, 3);
	char po[] = "/tmp/labbox-answer-out-XXXXXX", pe[] = "/tmp/labbox-answer-err-XXXXXX";
	int fo = mkstemp(po), fe = mkstemp(pe);
	assert_true(fo >= 0 && fe >= 0);
	assert_int_equal(lb_check_answer_print(&a, fo, fe), 0);
	char *got = NULL;
	size_t len = 0;
	assert_int_equal(lb_read_file_at(AT_FDCWD, po, n + 1, &got, &len), 0);
	assert_int_equal(len, n);
	assert_memory_equal(got, out, n);
	free(got);
	assert_int_equal(lb_read_file_at(AT_FDCWD, pe, 100, &got, &len), 0);
	assert_string_equal(got, err);
	free(got);
	lb_check_answer_free(&a);
	/* the answer's file, found as the only one in check/answers */
	char adir[256], path[600];
	snprintf(adir, sizeof adir, "%s/check/answers", dir);
	DIR *d = opendir(adir);
	assert_non_null(d);
	struct dirent *e;
	path[0] = '\0';
	while ((e = readdir(d)))
		if (strlen(e->d_name) == 64)
			snprintf(path, sizeof path, "%s/%s", adir, e->d_name);
	closedir(d);
	assert_true(path[0]);
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	char c;
	assert_int_equal(pread(fd, &c, 1, 150000), 1);
	char x = (char)(c ^ 1);
	assert_int_equal(pwrite(fd, &x, 1, 150000), 1);
	assert_int_equal(lb_check_answer_load(cfg, &rep, ctx, 3, &a), -ENOENT);
	assert_int_equal(pwrite(fd, &c, 1, 150000), 1);
	assert_int_equal(lb_check_answer_load(cfg, &rep, ctx, 3, &a), 0);
	assert_int_equal(ftruncate(fd, 100000), 0);
	assert_int_not_equal(lb_check_answer_print(&a, fo, fe), 0);
	lb_check_answer_free(&a);
	close(fd);
	close(fo);
	close(fe);
	unlink(po);
	unlink(pe);
	free(out);
	lb_check_config_free(cfg);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_follows_every_input),
		cmocka_unit_test(test_key_parts_do_not_run_together),
		cmocka_unit_test(test_entry_round_trip),
		cmocka_unit_test(test_damaged_entries_are_misses),
		cmocka_unit_test(test_wellformed_but_foreign_body_is_a_miss),
		cmocka_unit_test(test_pack_index),
		cmocka_unit_test(test_file_table),
		cmocka_unit_test(test_prune_keeps_the_most_recent),
		cmocka_unit_test(test_answer_file),
		cmocka_unit_test(test_answer_loaded_from_its_file),
		cmocka_unit_test(test_walk_listing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
