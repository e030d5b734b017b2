/* The whole answer of a check kept between checks.
 *
 * When every file of a check is answered by its metadata (check/cache.c's file table), the
 * check's output is decided by: labbox and the configuration (the key base), the files'
 * paths as shown and as opened, each file's entry bytes (which carry its key: content,
 * harness, compile() verdict), the experiment's module list (the entries' facts), what was
 * read of the interpreter (syntax_by, stdlib_by) and what of labbox.yaml the keys do not hold
 * (budget, plan, entry point). rep->answer is the sha256 of all of it, call after call.
 * Printing the answer also depends on how the command was asked (its arguments, its working
 * directory): those name the answer's file. The file holds the exact bytes printed on stdout
 * and stderr and the exit status, so a hit prints what the check printed, decoding nothing.
 *
 * Format: "labbox.check-answer/2\n", the checksum of the rest (lb_checksum: a damaged file,
 * not a forged one, is what it finds; it is read whole at every warm check, where sha256
 * was a tenth of the time) in hex and "\n", then the
 * answer's digest in hex and "\n", "rc N\n", "OUTLEN\n", the stdout bytes, "ERRLEN\n", the
 * stderr bytes. Anything else, or another answer's digest, is a miss. The files are bounded
 * like packs (least recently used past 512 of them or 512 MiB). */
#include "check_internal.h"
#include "labbox/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ANSWER_MAGIC "labbox.check-answer/2\n"
#define ANSWER_MAGIC_LEN (sizeof ANSWER_MAGIC - 1)
#define ANSWER_MAX (256u << 20)
#define ANSWER_TOUCH_S (6 * 3600)

static void part_str(lb_sha256 *c, const char *name, const char *s)
{
	ck_cache_key_part(c, name, s, s ? strlen(s) : 0);
}

void ck_answer_fail(lb_check_report *rep)
{
	rep->answer_state = -1;
}

/* The fields of a file's record, in a fixed layout for the digest. */
static void part_stat(lb_sha256 *c, const char *name, const ck_filestat *f)
{
	int64_t v[6] = {(int64_t)f->dev, (int64_t)f->ino, (int64_t)f->size, (int64_t)f->mode,
			f->mtime_ns, f->ctime_ns};
	ck_cache_key_part(c, name, v, sizeof v);
}

void ck_answer_fold_files(lb_check_report *rep, const lb_check_config *cfg, const ck_cache *cc,
			  char *const shown[], char *const abs[], size_t n, const char *entry_abs,
			  const ck_filestat fst[])
{
	if (rep->answer_state < 0)
		return;
	struct stat pst;
	ck_filestat pack;
	bool whole = cc->dfd >= 0 && fst &&
		     fstatat(cc->dfd, cc->name, &pst, AT_SYMLINK_NOFOLLOW) == 0 &&
		     ck_filestat_from(&pst, &pack);
	for (size_t i = 0; whole && i < n; i++)
		whole = fst[i].ok;
	if (!whole) {
		rep->answer_state = -1;
		return;
	}
	lb_sha256 c;
	lb_sha256_init(&c);
	ck_cache_key_part(&c, "schema", ANSWER_MAGIC, ANSWER_MAGIC_LEN);
	ck_cache_key_part(&c, "before", rep->answer, sizeof rep->answer);
	ck_cache_key_part(&c, "base", cc->base, sizeof cc->base);
	part_str(&c, "pack", cc->name);
	part_stat(&c, "pack-stat", &pack);
	for (size_t i = 0; i < cfg->local_modules.n; i++)
		part_str(&c, cfg->local_modules.v[i].project ? "local-p" : "local-o",
			 cfg->local_modules.v[i].s);
	part_str(&c, "entry", entry_abs);
	part_str(&c, "python", cfg->python);
	part_str(&c, "syntax_by", rep->syntax_by);
	part_str(&c, "stdlib_by", rep->stdlib_by);
	uint64_t nums[3] = {rep->stdlib_floor, rep->syntax_cached, n};
	ck_cache_key_part(&c, "numbers", nums, sizeof nums);
	/* A directory's files are opened as its real path, "/" and the name shown: the opened
	 * path is folded whole only where it is not the prefix of the last one folded whole
	 * (when that one was such a path), "/" and the name shown; the parts are framed, so the
	 * digest still reads back every path opened. */
	const char *dir = NULL;
	size_t dlen = 0;
	for (size_t i = 0; i < n; i++) {
		size_t sl = strlen(shown[i]), al = strlen(abs[i]);
		part_str(&c, "shown", shown[i]);
		bool derived = al > sl && abs[i][al - sl - 1] == '/' &&
			       memcmp(abs[i] + al - sl, shown[i], sl) == 0;
		if (derived && dir && al - sl - 1 == dlen && memcmp(abs[i], dir, dlen) == 0) {
			ck_cache_key_part(&c, "abs-in-dir", NULL, 0);
		} else {
			ck_cache_key_part(&c, "abs", abs[i], al);
			dir = derived ? abs[i] : NULL;
			dlen = derived ? al - sl - 1 : 0;
		}
		part_stat(&c, "stat", &fst[i]);
	}
	lb_sha256_final(&c, rep->answer);
	rep->answer_state = 1;
}

void ck_answer_fold_config(lb_check_report *rep, const lb_check_config *cfg)
{
	if (rep->answer_state <= 0)
		return;
	lb_sha256 c;
	lb_sha256_init(&c);
	ck_cache_key_part(&c, "before", rep->answer, sizeof rep->answer);
	double budget = cfg->budget;
	int64_t plan[4] = {cfg->plan_conditions, cfg->plan_seeds, cfg->plan_iterations,
			   cfg->plan_line};
	ck_cache_key_part(&c, "budget", &budget, sizeof budget);
	ck_cache_key_part(&c, "plan", plan, sizeof plan);
	part_str(&c, "entry", cfg->entry);
	lb_sha256_final(&c, rep->answer);
}

/* ---- the answer's file ----------------------------------------------------------------------- */

static void answer_sum(const char *data, size_t len, uint8_t out[32])
{
	lb_checksum c;
	lb_checksum_init(&c);
	lb_checksum_update(&c, data, len);
	lb_checksum_final(&c, out);
}

static bool read_len(const char **pp, const char *end, const char *prefix, size_t *out)
{
	const char *p = *pp;
	size_t k = strlen(prefix);
	if ((size_t)(end - p) < k || memcmp(p, prefix, k) != 0)
		return false;
	p += k;
	size_t v = 0, digits = 0;
	while (p < end && *p >= '0' && *p <= '9' && digits < 10)
		v = v * 10 + (size_t)(*p++ - '0'), digits++;
	if (!digits || p >= end || *p != '\n')
		return false;
	*out = v;
	*pp = p + 1;
	return true;
}

/* The answer's head: the checksum line is skipped (ck_answer_parse and the loader check it),
 * then the answer's digest, "rc N" and the stdout length, from the avail bytes at data of a
 * file of len bytes (avail <= len). *out_off: where stdout's bytes start. */
int ck_answer_layout(const char *data, size_t avail, size_t len, const unsigned char answer[32],
		     int *rc, size_t *out_off, size_t *out_len)
{
	size_t head = ANSWER_MAGIC_LEN + 65;
	if (avail > len || avail < head + 65 || memcmp(data, ANSWER_MAGIC, ANSWER_MAGIC_LEN) != 0 ||
	    data[head - 1] != '\n')
		return -EBADMSG;
	char hex[65];
	lb_sha256_hex(answer, hex);
	const char *p = data + head, *end = data + avail;
	if (memcmp(p, hex, 64) != 0 || p[64] != '\n')
		return -EBADMSG;
	p += 65;
	size_t v, ol;
	if (!read_len(&p, end, "rc ", &v) || v > 255 || !read_len(&p, end, "", &ol))
		return -EBADMSG;
	size_t at = (size_t)(p - data);
	if (ol > len - at)
		return -EBADMSG;
	*rc = (int)v;
	*out_off = at;
	*out_len = ol;
	return 0;
}

/* The stderr length line, from the avail bytes at data, which start rest bytes before the
 * end of the file: the length must be exactly what follows the line. */
int ck_answer_err_len(const char *data, size_t avail, size_t rest, size_t *err_len)
{
	const char *p = data;
	size_t el;
	if (avail > rest || !read_len(&p, data + avail, "", &el) ||
	    el != rest - (size_t)(p - data))
		return -EBADMSG;
	*err_len = el;
	return 0;
}

int ck_answer_parse(const char *data, size_t len, const unsigned char answer[32],
		    lb_check_answer *out)
{
	size_t head = ANSWER_MAGIC_LEN + 65;
	if (len < head + 65 || memcmp(data, ANSWER_MAGIC, ANSWER_MAGIC_LEN) != 0)
		return -EBADMSG;
	uint8_t d[32];
	char hex[65];
	answer_sum(data + head, len - head, d);
	lb_sha256_hex(d, hex);
	if (memcmp(hex, data + ANSWER_MAGIC_LEN, 64) != 0)
		return -EBADMSG;
	int rc;
	size_t oo, ol, el;
	if (ck_answer_layout(data, len, len, answer, &rc, &oo, &ol) < 0 ||
	    ck_answer_err_len(data + oo + ol, len - oo - ol, len - oo - ol, &el) < 0)
		return -EBADMSG;
	memset(out, 0, sizeof *out);
	out->fd = -1;
	out->rc = rc;
	out->out = data + oo;
	out->out_len = ol;
	out->err = data + len - el;
	out->err_len = el;
	return 0;
}

int ck_answer_format(const unsigned char answer[32], int rc, const char *out, size_t out_len,
		     const char *err, size_t err_len, lb_buf *buf)
{
	lb_buf body = {0};
	char hex[65];
	lb_sha256_hex(answer, hex);
	int r = lb_buf_printf(&body, "%s\nrc %d\n%zu\n", hex, rc, out_len);
	if (r == 0)
		r = lb_buf_append(&body, out ? out : "", out_len);
	if (r == 0)
		r = lb_buf_printf(&body, "%zu\n", err_len);
	if (r == 0)
		r = lb_buf_append(&body, err ? err : "", err_len);
	uint8_t d[32];
	if (r == 0) {
		answer_sum(body.data, body.len, d);
		lb_sha256_hex(d, hex);
		r = lb_buf_printf(buf, "%s%s\n", ANSWER_MAGIC, hex);
	}
	if (r == 0)
		r = lb_buf_append(buf, body.data, body.len);
	lb_buf_free(&body);
	return r;
}

/* cache_dir/check/answers (its own directory: the packs' readers and bounds stay as they
 * were), and the answer file's name there: the context (how the command was asked). One file
 * per context, replaced when the answer changes. */
static int answer_dir(const lb_check_config *cfg, const char *const ctx[], size_t nctx,
		      char name[65])
{
	char path[PATH_MAX];
	if (!cfg->cache_dir ||
	    snprintf(path, sizeof path, "%s/check/answers", cfg->cache_dir) >= (int)sizeof path)
		return -ENOENT;
	lb_sha256 c;
	uint8_t d[32];
	lb_sha256_init(&c);
	ck_cache_key_part(&c, "schema", ANSWER_MAGIC, ANSWER_MAGIC_LEN);
	for (size_t i = 0; i < nctx; i++)
		part_str(&c, "ctx", ctx[i]);
	lb_sha256_final(&c, d);
	lb_sha256_hex(d, name);
	int fd = lb_open_private_dir(path);
	return fd < 0 ? -ENOENT : fd;
}

/* pread until n bytes or the end; how many came. */
static size_t pread_all(int fd, char *buf, size_t n, uint64_t off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t k = pread(fd, buf + got, n - got, (off_t)(off + got));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	return got;
}

/* The answer is read from its open file in pieces: its head and the stderr length line, then
 * the whole checksummed in blocks through one small buffer. Nothing of it is kept in memory:
 * it is copied to the output from the same file (lb_check_answer_print), whose bytes are
 * only replaced by a rename (a new file), never written in place by labbox. */
static int load_fd(int fd, uint64_t len, const unsigned char answer[32], lb_check_answer *out)
{
	char buf[1u << 16];
	size_t head = ANSWER_MAGIC_LEN + 65;
	size_t hl = len < sizeof buf ? (size_t)len : sizeof buf;
	int rc;
	size_t oo, ol, el;
	if (len < head + 65 || pread_all(fd, buf, hl, 0) != hl ||
	    ck_answer_layout(buf, hl, (size_t)len, answer, &rc, &oo, &ol) < 0)
		return -EBADMSG;
	char expect[64];
	memcpy(expect, buf + ANSWER_MAGIC_LEN, sizeof expect);
	uint64_t at = (uint64_t)oo + ol, rest = len - at;
	size_t k = rest < 24 ? (size_t)rest : 24;
	char line[24];
	if (pread_all(fd, line, k, at) != k || ck_answer_err_len(line, k, (size_t)rest, &el) < 0)
		return -EBADMSG;
	lb_checksum c;
	uint8_t d[32];
	char hex[65];
	lb_checksum_init(&c);
	lb_checksum_update(&c, buf + head, hl - head);
	for (uint64_t off = hl; off < len;) {
		size_t n = len - off < sizeof buf ? (size_t)(len - off) : sizeof buf;
		if (pread_all(fd, buf, n, off) != n)
			return -EBADMSG;
		lb_checksum_update(&c, buf, n);
		off += n;
	}
	lb_checksum_final(&c, d);
	lb_sha256_hex(d, hex);
	if (memcmp(hex, expect, sizeof expect) != 0)
		return -EBADMSG;
	memset(out, 0, sizeof *out);
	out->rc = rc;
	out->out_len = ol;
	out->err_len = el;
	out->out_off = oo;
	out->err_off = len - el;
	out->fd = fd;
	return 0;
}

int lb_check_answer_load(const lb_check_config *cfg, const lb_check_report *rep,
			 const char *const ctx[], size_t nctx, lb_check_answer *out)
{
	memset(out, 0, sizeof *out);
	out->fd = -1;
	char name[65];
	if (rep->answer_state <= 0)
		return -ENOENT;
	int dfd = answer_dir(cfg, ctx, nctx, name);
	if (dfd < 0)
		return -ENOENT;
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return -ENOENT;
	struct stat st;
	/* only a file of this user's, that nobody else could have written */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	    !(st.st_mode & 022) && st.st_size > 0 && (uint64_t)st.st_size <= ANSWER_MAX &&
	    load_fd(fd, (uint64_t)st.st_size, rep->answer, out) == 0) {
		/* used now: eviction goes by modification time, as for packs */
		if (time(NULL) - st.st_mtim.tv_sec > ANSWER_TOUCH_S)
			futimens(fd, NULL);
		return 0;
	}
	close(fd);
	memset(out, 0, sizeof *out);
	out->fd = -1;
	return -ENOENT;
}

/* n bytes of in from off to out: the kernel's copy where it has one for these files, else
 * through a buffer. */
static int copy_range(int in, uint64_t off, size_t n, int outfd)
{
	bool plain = false;
	while (n > 0) {
		ssize_t k;
		if (!plain) {
			off_t o = (off_t)off;
			k = sendfile(outfd, in, &o, n);
			if (k < 0 && (errno == EINVAL || errno == ENOSYS)) {
				plain = true;
				continue;
			}
		} else {
			char buf[1u << 16];
			size_t want = n < sizeof buf ? n : sizeof buf;
			size_t got = pread_all(in, buf, want, off);
			if (got != want)
				return -EIO;
			size_t w = 0;
			while (w < got) {
				ssize_t x = write(outfd, buf + w, got - w);
				if (x < 0 && errno == EINTR)
					continue;
				if (x <= 0)
					return -errno;
				w += (size_t)x;
			}
			k = (ssize_t)got;
		}
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -EIO; /* the file is shorter than it was: cut in place */
		off += (uint64_t)k;
		n -= (size_t)k;
	}
	return 0;
}

int lb_check_answer_print(const lb_check_answer *a, int out_fd, int err_fd)
{
	if (a->fd < 0) {
		int r = 0;
		for (int s = 0; s < 2 && r == 0; s++) {
			const char *p = s ? a->err : a->out;
			size_t n = s ? a->err_len : a->out_len, w = 0;
			while (w < n) {
				ssize_t x = write(s ? err_fd : out_fd, p + w, n - w);
				if (x < 0 && errno == EINTR)
					continue;
				if (x <= 0) {
					r = -errno;
					break;
				}
				w += (size_t)x;
			}
		}
		return r;
	}
	/* Into a pipe of the default 64 KiB, a large answer goes a pipeful at a time, each
	 * waiting for the reader; a larger pipe (as far as the system lets a user's pipe grow,
	 * at most 1 MiB here) takes it in a few. */
	struct stat st;
	if (a->out_len > (64u << 10) && fstat(out_fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
		int want = a->out_len < (1u << 20) ? (int)a->out_len : 1 << 20;
		int have = fcntl(out_fd, F_GETPIPE_SZ);
		if (have > 0 && have < want)
			(void)fcntl(out_fd, F_SETPIPE_SZ, want);
	}
	int r = copy_range(a->fd, a->out_off, a->out_len, out_fd);
	if (r == 0)
		r = copy_range(a->fd, a->err_off, a->err_len, err_fd);
	return r;
}

void lb_check_answer_store(const lb_check_config *cfg, const lb_check_report *rep,
			   const char *const ctx[], size_t nctx, int rc, const char *out,
			   size_t out_len, const char *err, size_t err_len)
{
	char name[65];
	if (rep->answer_state <= 0 || rep->answer_probed)
		return;
	int dfd = answer_dir(cfg, ctx, nctx, name);
	if (dfd < 0)
		return;
	lb_buf b = {0};
	if (ck_answer_format(rep->answer, rc, out, out_len, err, err_len, &b) == 0 &&
	    b.len <= ANSWER_MAX && lb_replace_file_at(dfd, name, b.data, b.len) == 0)
		ck_cache_prune_all(dfd);
	lb_buf_free(&b);
	close(dfd);
}

void lb_check_answer_free(lb_check_answer *a)
{
	if (a->fd >= 0)
		close(a->fd);
	memset(a, 0, sizeof *a);
	a->fd = -1;
}
