/* record/export: the run history written in MLflow's file-store layout and in Sacred's
 * FileStorageObserver layout, so the tools people already browse runs with (mlflow ui, Sacred's
 * file readers, Omniboard-style loaders) show labbox runs. docs/export.md has the layouts and
 * the decisions; the comments here say why the code is the way it is. */
#include "labbox/record.h"
#include "labbox/util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define JSON_MAX ((size_t)256 << 20)    /* result.json, manifest.json */
#define SOURCE_MAX ((size_t)16 << 20)   /* one staged source file copied into Sacred's _sources */
#define SOURCES_MAX 1000                /* source files per run */
#define MLFLOW_KEY_MAX 250              /* MLflow's limit on metric, param and tag keys */
#define PATH_DEPTH_MAX 64

/* The files labbox itself writes into a run directory: the only ones an export copies. */
static const char *const run_files[] = {"result.json", "manifest.json", "environment.txt",
					"run.log"};

/* ---- small pure helpers ------------------------------------------------------------------ */

void lb_export_run_uuid(const char *labbox_id, char out[33])
{
	lb_sha256 c;
	uint8_t d[32];
	char hex[65];
	lb_sha256_init(&c);
	lb_sha256_update(&c, labbox_id, strlen(labbox_id));
	lb_sha256_final(&c, d);
	lb_sha256_hex(d, hex);
	memcpy(out, hex, 32);
	out[32] = '\0';
}

int lb_export_mlflow_status(const char *status)
{
	/* mlflow.entities.RunStatus: RUNNING 1, SCHEDULED 2, FINISHED 3, FAILED 4, KILLED 5.
	 * KILLED is for runs that were stopped from outside (the budget, a dead labbox); every
	 * other way of not finishing well, invalid metrics included, is FAILED. */
	if (!status)
		return 4;
	if (strcmp(status, "running") == 0)
		return 1;
	if (strcmp(status, "completed") == 0)
		return 3;
	if (strcmp(status, "timeout") == 0 || strcmp(status, "interrupted") == 0)
		return 5;
	return 4;
}

const char *lb_export_sacred_status(const char *status)
{
	/* Sacred's run statuses: QUEUED, RUNNING, COMPLETED, FAILED, INTERRUPTED (Ctrl-C) and
	 * TIMEOUT (its TimeoutInterrupt). */
	if (!status)
		return "FAILED";
	if (strcmp(status, "running") == 0)
		return "RUNNING";
	if (strcmp(status, "completed") == 0)
		return "COMPLETED";
	if (strcmp(status, "timeout") == 0)
		return "TIMEOUT";
	if (strcmp(status, "interrupted") == 0)
		return "INTERRUPTED";
	return "FAILED";
}

/* Plain (unquoted) only where no YAML 1.1 or 1.2 resolver can read anything but a string:
 * starting with a letter or '/', made of [A-Za-z0-9_./:-], no ':' at the end, and not one of
 * the words a loader turns into a boolean or null. Everything else is quoted. */
static bool yaml_plain_ok(const char *s)
{
	static const char *const words[] = {"y", "n", "yes", "no", "true", "false",
					    "on", "off", "null"};
	size_t n = strlen(s);
	if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '/'))
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!(isalnum(c) || c == '_' || c == '.' || c == '/' || c == '-' || c == ':') || c > 0x7e)
			return false;
	}
	if (s[n - 1] == ':')
		return false;
	for (size_t i = 0; i < sizeof words / sizeof *words; i++)
		if (strcasecmp(s, words[i]) == 0)
			return false;
	return true;
}

/* Length of the valid UTF-8 sequence at s (1-4) with its code point, or 0 when invalid. */
static size_t utf8_decode(const unsigned char *s, uint32_t *cp)
{
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	size_t len;
	uint32_t c, min;
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2, c = s[0] & 0x1f, min = 0x80;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3, c = s[0] & 0x0f, min = 0x800;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4, c = s[0] & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

int lb_export_yaml_string(struct lb_buf *b, const char *s)
{
	if (yaml_plain_ok(s))
		return lb_buf_puts(b, s);
	bool printable_ascii = true;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			printable_ascii = false;
	if (printable_ascii) {
		/* Single quotes: nothing is special inside but the quote itself, doubled. */
		if (lb_buf_puts(b, "'") < 0)
			return -ENOMEM;
		for (const char *p = s; *p; p++)
			if (lb_buf_append(b, p, 1) < 0 || (*p == '\'' && lb_buf_append(b, p, 1) < 0))
				return -ENOMEM;
		return lb_buf_puts(b, "'");
	}
	/* Double quotes: the only style that can carry line breaks and control characters
	 * without a loader folding or rejecting them. */
	if (lb_buf_puts(b, "\"") < 0)
		return -ENOMEM;
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		uint32_t cp;
		size_t len = utf8_decode(p, &cp);
		int r;
		if (len == 0) {
			/* Not UTF-8, which YAML must be: keep the byte as a \x escape. */
			r = lb_buf_printf(b, "\\x%02X", *p);
			p++;
		} else {
			switch (cp) {
			case '"': r = lb_buf_puts(b, "\\\""); break;
			case '\\': r = lb_buf_puts(b, "\\\\"); break;
			case '\n': r = lb_buf_puts(b, "\\n"); break;
			case '\t': r = lb_buf_puts(b, "\\t"); break;
			case '\r': r = lb_buf_puts(b, "\\r"); break;
			case 0x85: r = lb_buf_puts(b, "\\N"); break;
			case 0x2028: r = lb_buf_puts(b, "\\L"); break;
			case 0x2029: r = lb_buf_puts(b, "\\P"); break;
			default:
				if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
					r = lb_buf_printf(b, "\\x%02X", (unsigned)cp);
				else if (cp == 0xfeff || cp == 0xfffe || cp == 0xffff)
					r = lb_buf_printf(b, "\\u%04X", (unsigned)cp);
				else
					r = lb_buf_append(b, p, len);
			}
			p += len;
		}
		if (r < 0)
			return -ENOMEM;
	}
	return lb_buf_puts(b, "\"");
}

void lb_export_py_float(double v, char out[32])
{
	if (isnan(v)) {
		snprintf(out, 32, "nan");
		return;
	}
	if (isinf(v)) {
		snprintf(out, 32, "%s", v < 0 ? "-inf" : "inf");
		return;
	}
	if (v == 0) {
		snprintf(out, 32, "%s", signbit(v) ? "-0.0" : "0.0");
		return;
	}
	/* The shortest digit string that reads back as v (what repr() prints since Python 3.1),
	 * then Python's layout: exponent form when the exponent is below -4 or at least 16. */
	char e[48];
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(e, sizeof e, "%.*e", prec - 1, v);
		if (strtod(e, NULL) == v)
			break;
	}
	const char *s = e;
	bool neg = *s == '-';
	if (neg)
		s++;
	char digits[24];
	size_t nd = 0;
	for (; *s && *s != 'e'; s++)
		if (isdigit((unsigned char)*s) && nd < sizeof digits - 1)
			digits[nd++] = *s;
	int exp10 = *s == 'e' ? atoi(s + 1) : 0;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = '\0';
	int decpt = exp10 + 1;
	char body[32];
	size_t o = 0;
	if (decpt > 16 || decpt < -3) {
		body[o++] = digits[0];
		if (nd > 1) {
			body[o++] = '.';
			memcpy(body + o, digits + 1, nd - 1);
			o += nd - 1;
		}
		snprintf(body + o, sizeof body - o, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
	} else if (decpt <= 0) {
		body[o++] = '0';
		body[o++] = '.';
		for (int i = 0; i < -decpt; i++)
			body[o++] = '0';
		memcpy(body + o, digits, nd);
		body[o + nd] = '\0';
	} else if ((size_t)decpt < nd) {
		memcpy(body, digits, (size_t)decpt);
		o = (size_t)decpt;
		body[o++] = '.';
		memcpy(body + o, digits + decpt, nd - (size_t)decpt);
		body[o + nd - (size_t)decpt] = '\0';
	} else {
		memcpy(body, digits, nd);
		o = nd;
		for (size_t i = nd; i < (size_t)decpt; i++)
			body[o++] = '0';
		memcpy(body + o, ".0", 3);
	}
	snprintf(out, 32, "%s%s", neg ? "-" : "", body);
}

static bool mlflow_key_char(unsigned char c)
{
	return isalnum(c) || c == '_' || c == '-' || c == '.' || c == ' ' || c == '/';
}

/* Fix the path components of key (in place, room for cap bytes): MLflow refuses a name that
 * os.path.normpath() would change, because such a name is also a file path. */
static size_t fix_components(char *key, size_t len, size_t cap)
{
	char tmp[2 * MLFLOW_KEY_MAX + 8];
	size_t o = 0;
	size_t start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && key[i] != '/')
			continue;
		size_t clen = i - start;
		const char *comp = key + start;
		if (clen == 0 || (clen == 1 && comp[0] == '.')) {
			tmp[o++] = '_';
		} else if (clen == 2 && comp[0] == '.' && comp[1] == '.') {
			tmp[o++] = '_';
			tmp[o++] = '_';
		} else {
			memcpy(tmp + o, comp, clen);
			o += clen;
		}
		if (i < len)
			tmp[o++] = '/';
		start = i + 1;
		if (o > sizeof tmp - 4)
			break;
	}
	if (o > cap - 1)
		o = cap - 1;
	memcpy(key, tmp, o);
	key[o] = '\0';
	return o;
}

int lb_export_mlflow_key(const char *name, char *out, size_t outlen)
{
	if (outlen < MLFLOW_KEY_MAX + 1)
		return -ENOSPC;
	char key[MLFLOW_KEY_MAX + 1];
	size_t o = 0;
	const unsigned char *p = (const unsigned char *)name;
	while (*p && o < MLFLOW_KEY_MAX) {
		uint32_t cp;
		size_t len = utf8_decode(p, &cp);
		if (len == 0)
			len = 1;
		/* One '_' for each character MLflow refuses, however many bytes it takes. */
		key[o++] = (len == 1 && mlflow_key_char(*p)) ? (char)*p : '_';
		p += len;
	}
	key[o] = '\0';
	o = fix_components(key, o, sizeof key);
	/* A cut may leave "x/" or "x/." at the end: fix once more, then cut what was added. */
	while (o > 0 && key[o - 1] == '/')
		key[--o] = '\0';
	o = fix_components(key, o, sizeof key);
	memcpy(out, key, o + 1);
	return strcmp(out, name) != 0;
}

int lb_export_file_uri(const char *abs_path, struct lb_buf *out)
{
	/* pathlib.Path.as_uri(): file:// and the path quoted with '/' kept. */
	if (lb_buf_puts(out, "file://") < 0)
		return -ENOMEM;
	for (const unsigned char *p = (const unsigned char *)abs_path; *p; p++) {
		int r;
		if (isalnum(*p) || *p == '/' || *p == '_' || *p == '.' || *p == '-' || *p == '~')
			r = lb_buf_append(out, p, 1);
		else
			r = lb_buf_printf(out, "%%%02X", *p);
		if (r < 0)
			return -ENOMEM;
	}
	return 0;
}

int lb_export_iso_ms(const char *iso, int64_t *ms)
{
	int y, mo, d, h, mi, s, n = 0;
	if (!iso || sscanf(iso, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &n) != 6 ||
	    n != 19)
		return -EINVAL;
	const char *p = iso + n;
	int frac = 0, nfrac = 0;
	if (*p == '.') {
		p++;
		for (; isdigit((unsigned char)*p); p++, nfrac++)
			if (nfrac < 3)
				frac = frac * 10 + (*p - '0');
		if (nfrac == 0)
			return -EINVAL;
		for (int i = nfrac; i < 3; i++)
			frac *= 10;
	}
	if (*p == 'Z')
		p++;
	else if (strcmp(p, "+00:00") == 0)
		p += 6;
	if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
		return -EINVAL;
	struct tm tm = {0};
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = s;
	*ms = (int64_t)timegm(&tm) * 1000 + frac;
	return 0;
}

/* ---- MD5 (RFC 1321): Sacred names stored sources by it ---------------------------------- */

static void md5_block(uint32_t st[4], const uint8_t blk[64])
{
	static const uint32_t k[64] = {
		0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613,
		0xfd469501, 0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193,
		0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d,
		0x02441453, 0xd8a1e681, 0xe7d3fbc8, 0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed,
		0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122,
		0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa,
		0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665, 0xf4292244,
		0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
		0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb,
		0xeb86d391};
	static const uint8_t r[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
				      5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
				      4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
				      6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};
	uint32_t m[16];
	for (int i = 0; i < 16; i++)
		m[i] = (uint32_t)blk[4 * i] | (uint32_t)blk[4 * i + 1] << 8 |
		       (uint32_t)blk[4 * i + 2] << 16 | (uint32_t)blk[4 * i + 3] << 24;
	uint32_t a = st[0], b = st[1], c = st[2], d = st[3];
	for (int i = 0; i < 64; i++) {
		uint32_t f;
		int g;
		if (i < 16) {
			f = (b & c) | (~b & d);
			g = i;
		} else if (i < 32) {
			f = (d & b) | (~d & c);
			g = (5 * i + 1) % 16;
		} else if (i < 48) {
			f = b ^ c ^ d;
			g = (3 * i + 5) % 16;
		} else {
			f = c ^ (b | ~d);
			g = (7 * i) % 16;
		}
		uint32_t t = d;
		d = c;
		c = b;
		uint32_t x = a + f + k[i] + m[g];
		b = b + ((x << r[i]) | (x >> (32 - r[i])));
		a = t;
	}
	st[0] += a;
	st[1] += b;
	st[2] += c;
	st[3] += d;
}

void lb_export_md5_hex(const void *data, size_t len, char out[33])
{
	uint32_t st[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
	const uint8_t *p = data;
	size_t left = len;
	for (; left >= 64; left -= 64, p += 64)
		md5_block(st, p);
	uint8_t tail[128] = {0};
	if (left)
		memcpy(tail, p, left);
	tail[left] = 0x80;
	size_t tlen = left < 56 ? 64 : 128;
	uint64_t bits = (uint64_t)len * 8;
	for (int i = 0; i < 8; i++)
		tail[tlen - 8 + (size_t)i] = (uint8_t)(bits >> (8 * i));
	md5_block(st, tail);
	if (tlen == 128)
		md5_block(st, tail + 64);
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", (st[i / 4] >> (8 * (i % 4))) & 0xff);
}

/* ---- files -------------------------------------------------------------------------------- */

static void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static void warn(json_object *warnings, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(json_object *warnings, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	json_object_array_add(warnings, json_object_new_string(line));
}

static int write_text(const char *path, const char *text, size_t len)
{
	return lb_write_file_atomic(path, text, len);
}

/* path = dir/rel, creating the directories rel needs. */
static int write_at(const char *dir, const char *rel, const char *text, size_t len)
{
	LB_AUTOFREE char *path = NULL;
	if (asprintf(&path, "%s/%s", dir, rel) < 0)
		return -ENOMEM;
	char *slash = strrchr(path, '/');
	*slash = '\0';
	int r = lb_mkdir_p(path, 0755);
	*slash = '/';
	return r < 0 ? r : write_text(path, text, len);
}

/* Copy srcdirfd/name (a regular file, never through a symlink) to dst, atomically. */
static int copy_file(int srcdirfd, const char *name, const char *dst)
{
	LB_AUTOCLOSE int in = openat(srcdirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in < 0)
		return -errno;
	struct stat st;
	if (fstat(in, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	LB_AUTOFREE char *tmp = NULL;
	if (asprintf(&tmp, "%s.tmp.%d", dst, (int)getpid()) < 0)
		return -ENOMEM;
	LB_AUTOCLOSE int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (out < 0)
		return -errno;
	char buf[1 << 16];
	int r = 0;
	for (;;) {
		ssize_t n = read(in, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		r = lb_write_all(out, buf, (size_t)n);
		if (r < 0)
			break;
	}
	if (r == 0 && fsync(out) < 0)
		r = -errno;
	if (close(lb_steal_fd(&out)) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, dst) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

/* Remove dirfd/name and everything below it without following a symlink: used to clear what
 * an earlier export wrote, so a re-export leaves exactly the current files. */
static int rm_tree_at(int dirfd, const char *name, int depth)
{
	if (depth > PATH_DEPTH_MAX)
		return -ELOOP;
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno == ENOTDIR || errno == ELOOP)
			return unlinkat(dirfd, name, 0) < 0 ? -errno : 0;
		return -errno;
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = errno;
		close(fd);
		return -e;
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		bool is_dir = de->d_type == DT_DIR;
		if (de->d_type == DT_UNKNOWN) {
			struct stat st;
			is_dir = fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
		}
		if (is_dir)
			r = rm_tree_at(fd, de->d_name, depth + 1);
		else if (unlinkat(fd, de->d_name, 0) < 0 && errno != ENOENT)
			r = -errno;
	}
	closedir(d);
	if (r == 0 && unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		r = -errno;
	return r;
}

static json_object *load_json_at(int dirfd, const char *name)
{
	LB_AUTOFREE char *text = NULL;
	if (lb_read_file_at(dirfd, name, JSON_MAX, &text, NULL) < 0)
		return NULL;
	json_object *o = json_tokener_parse(text);
	if (o && !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* ---- one run, as read from the index and its run directory -------------------------------- */

typedef struct export_run {
	json_object *row;      /* borrowed: the index row */
	json_object *result;   /* owned; NULL when result.json is missing or unreadable */
	json_object *manifest; /* owned; may be NULL */
	json_object *metrics;  /* owned: {"name" or "cond/name": value} */
	json_object *warnings; /* owned: array of lines */
	const char *id;
	const char *status;
	const char *run_dir;
	const char *expdir;
	const char *started_at;
	const char *ended_at;
	int dirfd;
} export_run;

static const char *str_of(json_object *o, const char *key)
{
	json_object *v;
	if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v) ||
	    !v || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static json_object *obj_of(json_object *o, const char *key, json_type type)
{
	json_object *v;
	if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v) ||
	    !v || !json_object_is_type(v, type))
		return NULL;
	return v;
}

static void run_free(export_run *r)
{
	json_object_put(r->result);
	json_object_put(r->manifest);
	json_object_put(r->metrics);
	json_object_put(r->warnings);
	if (r->dirfd >= 0)
		close(r->dirfd);
	memset(r, 0, sizeof *r);
	r->dirfd = -1;
}

/* Metrics as `runs list` shows them: "name" for lines before any condition, "cond/name" for
 * the others. result.json is preferred (it keeps the experiment's order); the index row
 * stands in when result.json is gone. */
static void flatten_metrics(export_run *r)
{
	r->metrics = json_object_new_object();
	json_object *m = obj_of(r->result, "metrics", json_type_object);
	if (!m) {
		json_object *im = obj_of(r->row, "metrics", json_type_object);
		if (im) {
			json_object_object_foreach(im, k, v)
			{
				json_object_object_add(r->metrics, k, json_object_get(v));
			}
		}
		return;
	}
	json_object *vals = obj_of(m, "values", json_type_object);
	if (vals) {
		json_object_object_foreach(vals, k, v)
		{
			json_object_object_add(r->metrics, k, json_object_get(v));
		}
	}
	json_object *conds = obj_of(m, "conditions", json_type_object);
	if (conds) {
		json_object_object_foreach(conds, c, group)
		{
			if (!json_object_is_type(group, json_type_object))
				continue;
			json_object_object_foreach(group, k, v)
			{
				LB_AUTOFREE char *key = NULL;
				if (asprintf(&key, "%s/%s", c, k) >= 0)
					json_object_object_add(r->metrics, key, json_object_get(v));
			}
		}
	}
}

/* 0 when the run can be exported; otherwise a reason (a static string). */
static const char *run_load(json_object *row, export_run *r)
{
	memset(r, 0, sizeof *r);
	r->dirfd = -1;
	r->row = row;
	r->warnings = json_object_new_array();
	r->id = str_of(row, "id");
	if (!r->id || !r->id[0])
		return "index row without an id";
	r->run_dir = str_of(row, "run_dir");
	if (!r->run_dir)
		return "index row without a run directory";
	r->dirfd = open(r->run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r->dirfd < 0)
		return "its run directory is gone";
	r->result = load_json_at(r->dirfd, "result.json");
	r->manifest = load_json_at(r->dirfd, "manifest.json");
	if (!r->result)
		warn(r->warnings, "result.json missing or unreadable; exported from the run index");
	/* The index knows a run was interrupted even when its result.json still says running. */
	r->status = str_of(row, "status");
	if (!r->status)
		r->status = str_of(r->result, "status");
	if (!r->status)
		r->status = "unknown";
	r->started_at = str_of(row, "started_at");
	if (!r->started_at)
		r->started_at = str_of(r->result, "started_at");
	r->ended_at = str_of(row, "ended_at");
	if (!r->ended_at)
		r->ended_at = str_of(r->result, "ended_at");
	r->expdir = str_of(row, "expdir");
	if (!r->expdir)
		r->expdir = str_of(obj_of(r->manifest, "config", json_type_object), "expdir");
	int64_t ms;
	if (lb_export_iso_ms(r->started_at, &ms) < 0)
		return "no readable start time";
	flatten_metrics(r);
	return NULL;
}

/* Experiment name: the experiment directory's base name. */
static void experiment_name(const export_run *r, char *out, size_t outlen)
{
	const char *e = r->expdir ? r->expdir : "";
	size_t len = strlen(e);
	while (len > 1 && e[len - 1] == '/')
		len--;
	size_t start = len;
	while (start > 0 && e[start - 1] != '/')
		start--;
	if (len - start == 0 || (len - start == 1 && e[start] == '/'))
		snprintf(out, outlen, "labbox");
	else
		snprintf(out, outlen, "%.*s", (int)(len - start), e + start);
}

enum metric_kind { METRIC_NONE, METRIC_NUMBER, METRIC_TEXT };

/* result.json spells non-finite numbers "NaN", "Infinity" and "-Infinity": those are numbers. */
static enum metric_kind metric_value(json_object *v, double *num, const char **text)
{
	if (!v)
		return METRIC_NONE;
	switch (json_object_get_type(v)) {
	case json_type_double:
	case json_type_int:
		*num = json_object_get_double(v);
		return METRIC_NUMBER;
	case json_type_string: {
		const char *s = json_object_get_string(v);
		if (strcmp(s, "NaN") == 0)
			*num = NAN;
		else if (strcmp(s, "Infinity") == 0)
			*num = INFINITY;
		else if (strcmp(s, "-Infinity") == 0)
			*num = -INFINITY;
		else {
			*text = s;
			return METRIC_TEXT;
		}
		return METRIC_NUMBER;
	}
	default:
		*text = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
		return METRIC_TEXT;
	}
}

static int user_of(const export_run *r, char *out, size_t outlen)
{
	struct stat st;
	if (fstatat(r->dirfd, "result.json", &st, AT_SYMLINK_NOFOLLOW) < 0 && fstat(r->dirfd, &st) < 0) {
		snprintf(out, outlen, "unknown");
		return 0;
	}
	struct passwd pw, *res = NULL;
	char buf[4096];
	if (getpwuid_r(st.st_uid, &pw, buf, sizeof buf, &res) == 0 && res)
		snprintf(out, outlen, "%s", pw.pw_name);
	else
		snprintf(out, outlen, "%u", (unsigned)st.st_uid);
	return 0;
}

/* Make dir (and parents) and return its absolute path. */
static int prepare_root(const char *dir, char **abs, char *err, size_t errlen)
{
	if (!dir || !dir[0]) {
		set_err(err, errlen, "no export directory given");
		return -EINVAL;
	}
	int r = lb_mkdir_p(dir, 0755);
	if (r < 0) {
		set_err(err, errlen, "cannot create %s: %s", dir, strerror(-r));
		return r;
	}
	*abs = realpath(dir, NULL);
	if (!*abs) {
		r = -errno;
		set_err(err, errlen, "cannot resolve %s: %s", dir, strerror(-r));
		return r;
	}
	return 0;
}

/* ---- MLflow ------------------------------------------------------------------------------- */

/* A key not yet used among the files of one folder (metrics/, params/): MLflow keeps each key
 * as a file, so "loss" and "loss/val" cannot both exist, nor can two names that sanitise to
 * the same one. used maps each taken path to "f" (a file) or "d" (a folder on the way). */
static int claim_key(json_object *used, const char *wanted, char *out, size_t outlen)
{
	char base[MLFLOW_KEY_MAX + 1];
	lb_export_mlflow_key(wanted, base, sizeof base);
	for (int n = 1; n < 10000; n++) {
		char cand[MLFLOW_KEY_MAX + 16];
		if (n == 1) {
			snprintf(cand, sizeof cand, "%s", base);
		} else {
			char suffix[16];
			int sl = snprintf(suffix, sizeof suffix, "_%d", n);
			size_t keep = strlen(base);
			if (keep + (size_t)sl > MLFLOW_KEY_MAX)
				keep = MLFLOW_KEY_MAX - (size_t)sl;
			snprintf(cand, sizeof cand, "%.*s%s", (int)keep, base, suffix);
		}
		bool clash = json_object_object_get_ex(used, cand, NULL);
		for (char *s = strchr(cand, '/'); s && !clash; s = strchr(s + 1, '/')) {
			*s = '\0';
			json_object *v;
			clash = json_object_object_get_ex(used, cand, &v) &&
				strcmp(json_object_get_string(v), "f") == 0;
			*s = '/';
		}
		if (clash)
			continue;
		json_object_object_add(used, cand, json_object_new_string("f"));
		for (char *s = strchr(cand, '/'); s; s = strchr(s + 1, '/')) {
			*s = '\0';
			json_object_object_add(used, cand, json_object_new_string("d"));
			*s = '/';
		}
		snprintf(out, outlen, "%s", cand);
		return 0;
	}
	return -EEXIST;
}

typedef struct mlflow_out {
	const char *root;     /* absolute export directory */
	const char *run_path; /* root/<exp_id>/<run_uuid> */
	json_object *renamed; /* {"mlflow key": "labbox name"} */
	json_object *used_params;
} mlflow_out;

static int mlflow_file(const mlflow_out *mo, const char *folder, const char *key, const char *value)
{
	LB_AUTOFREE char *rel = NULL;
	if (asprintf(&rel, "%s/%s", folder, key) < 0)
		return -ENOMEM;
	/* Params and tags are stored as the bare value, no newline, as MLflow's write_to does. */
	return write_at(mo->run_path, rel, value, strlen(value));
}

static int mlflow_param(mlflow_out *mo, const char *name, const char *value)
{
	char key[MLFLOW_KEY_MAX + 16];
	int r = claim_key(mo->used_params, name, key, sizeof key);
	if (r < 0)
		return r;
	if (strcmp(key, name) != 0)
		json_object_object_add(mo->renamed, key, json_object_new_string(name));
	return mlflow_file(mo, "params", key, value);
}

/* A JSON array of strings as Python's json.dumps writes it ("[]", "[\"a\", \"b\"]"), so the
 * param reads the same as one an MLflow user logged from Python. */
static int mlflow_json_param(mlflow_out *mo, const char *name, json_object *arr)
{
	lb_buf b = {0};
	int r = lb_buf_puts(&b, "[");
	for (size_t i = 0; r == 0 && i < json_object_array_length(arr); i++) {
		json_object *e = json_object_array_get_idx(arr, i);
		if (i)
			r = lb_buf_puts(&b, ", ");
		if (r == 0)
			r = lb_buf_puts(&b, e ? json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN |
										  JSON_C_TO_STRING_NOSLASHESCAPE)
					      : "null");
	}
	if (r == 0)
		r = lb_buf_puts(&b, "]");
	if (r == 0)
		r = mlflow_param(mo, name, b.data);
	lb_buf_free(&b);
	return r;
}

static int yaml_line(lb_buf *b, const char *key, const char *value)
{
	if (lb_buf_printf(b, "%s: ", key) < 0 || lb_export_yaml_string(b, value) < 0 ||
	    lb_buf_puts(b, "\n") < 0)
		return -ENOMEM;
	return 0;
}

static int uri_of(const char *path, char **out)
{
	lb_buf b = {0};
	if (lb_export_file_uri(path, &b) < 0) {
		lb_buf_free(&b);
		return -ENOMEM;
	}
	*out = b.data;
	return 0;
}

/* DIR/<id>/meta.yaml of an experiment, as FileStore._create_experiment_with_id writes it
 * (yaml.safe_dump, keys sorted, tags kept in their own folder). An existing one is left as
 * it is: the experiment may have been renamed or tagged in MLflow since. */
static int mlflow_experiment(const char *root, const char *id, const char *name, int64_t created,
			     int64_t updated)
{
	LB_AUTOFREE char *dir = NULL;
	LB_AUTOFREE char *meta = NULL;
	LB_AUTOFREE char *uri = NULL;
	if (asprintf(&dir, "%s/%s", root, id) < 0 || asprintf(&meta, "%s/meta.yaml", dir) < 0)
		return -ENOMEM;
	if (access(meta, F_OK) == 0)
		return 0;
	int r = lb_mkdir_p(dir, 0755);
	if (r < 0 || (r = uri_of(dir, &uri)) < 0)
		return r;
	lb_buf b = {0};
	if (yaml_line(&b, "artifact_location", uri) < 0 ||
	    lb_buf_printf(&b, "creation_time: %" PRId64 "\n", created) < 0 ||
	    yaml_line(&b, "experiment_id", id) < 0 ||
	    lb_buf_printf(&b, "last_update_time: %" PRId64 "\n", updated) < 0 ||
	    lb_buf_puts(&b, "lifecycle_stage: active\n") < 0 || yaml_line(&b, "name", name) < 0) {
		lb_buf_free(&b);
		return -ENOMEM;
	}
	r = write_text(meta, b.data, b.len);
	lb_buf_free(&b);
	return r;
}

/* Experiment ids are integers as strings in MLflow (its own are 18-19 random digits); ours
 * come from the name, so the same experiment directory always lands in the same place. */
static void experiment_id(const char *name, char out[24])
{
	lb_sha256 c;
	uint8_t d[32];
	lb_sha256_init(&c);
	lb_sha256_update(&c, "labbox-experiment:", 18);
	lb_sha256_update(&c, name, strlen(name));
	lb_sha256_final(&c, d);
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | d[i];
	v &= ((uint64_t)1 << 63) - 1;
	if (v == 0)
		v = 1; /* "0" is the Default experiment */
	snprintf(out, 24, "%" PRIu64, v);
}

static int mlflow_run(const char *root, export_run *r, const char *exp_id, json_object *report,
		      char *err, size_t errlen)
{
	char uuid[33];
	lb_export_run_uuid(r->id, uuid);
	LB_AUTOFREE char *run_path = NULL;
	LB_AUTOFREE char *art_path = NULL;
	LB_AUTOFREE char *art_uri = NULL;
	if (asprintf(&run_path, "%s/%s/%s", root, exp_id, uuid) < 0 ||
	    asprintf(&art_path, "%s/artifacts", run_path) < 0 || uri_of(art_path, &art_uri) < 0)
		return -ENOMEM;
	int rc = lb_mkdir_p(art_path, 0755);
	if (rc < 0) {
		set_err(err, errlen, "cannot create %s: %s", art_path, strerror(-rc));
		return rc;
	}
	/* A re-export replaces what the previous one wrote, so nothing stale survives. */
	{
		LB_AUTOCLOSE int rfd = open(run_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (rfd < 0)
			return -errno;
		const char *folders[] = {"metrics", "params", "tags"};
		for (int i = 0; i < 3; i++) {
			rc = rm_tree_at(rfd, folders[i], 0);
			if (rc == 0 && mkdirat(rfd, folders[i], 0755) < 0 && errno != EEXIST)
				rc = -errno;
			if (rc < 0) {
				set_err(err, errlen, "cannot clear %s/%s: %s", run_path, folders[i],
					strerror(-rc));
				return rc;
			}
		}
	}
	mlflow_out mo = {root, run_path, json_object_new_object(), json_object_new_object()};
	json_object *used_metrics = json_object_new_object();
	int64_t start_ms = 0, end_ms = 0;
	lb_export_iso_ms(r->started_at, &start_ms);
	bool has_end = strcmp(r->status, "running") != 0 && lb_export_iso_ms(r->ended_at, &end_ms) == 0;
	/* Every metric is known when the run ends: one point, at the end, step 0. */
	int64_t ts = has_end ? end_ms : start_ms;
	json_object *cfg = obj_of(r->manifest, "config", json_type_object);
	json_object *interp = obj_of(r->manifest, "interpreter", json_type_object);
	json_object *git = obj_of(r->manifest, "git", json_type_object);

	/* labbox's own params first, so that an experiment's string metric gives way to them. */
	const char *entry = str_of(cfg, "entry");
	json_object *v;
	if (rc == 0 && entry)
		rc = mlflow_param(&mo, "entry", entry);
	if (rc == 0 && (v = obj_of(cfg, "args", json_type_array)))
		rc = mlflow_json_param(&mo, "args", v);
	if (rc == 0 && str_of(interp, "version"))
		rc = mlflow_param(&mo, "python_version", str_of(interp, "version"));
	if (rc == 0 && str_of(interp, "path"))
		rc = mlflow_param(&mo, "python", str_of(interp, "path"));
	if (rc == 0 && cfg && json_object_object_get_ex(cfg, "budget_s", &v) && v) {
		char num[32];
		lb_export_py_float(json_object_get_double(v), num);
		rc = mlflow_param(&mo, "budget_s", num);
	}
	if (rc == 0 && (v = obj_of(cfg, "metrics", json_type_array)) && json_object_array_length(v))
		rc = mlflow_json_param(&mo, "declared_metrics", v);

	int nonfinite = 0;
	json_object_object_foreach(r->metrics, name, mv)
	{
		if (rc < 0)
			break;
		double num = 0;
		const char *text = NULL;
		enum metric_kind kind = metric_value(mv, &num, &text);
		if (kind == METRIC_TEXT) {
			rc = mlflow_param(&mo, name, text);
			continue;
		}
		if (kind != METRIC_NUMBER)
			continue;
		char key[MLFLOW_KEY_MAX + 16];
		rc = claim_key(used_metrics, name, key, sizeof key);
		if (rc < 0)
			break;
		if (strcmp(key, name) != 0)
			json_object_object_add(mo.renamed, key, json_object_new_string(name));
		/* FileStore._log_run_metric: "<timestamp> <value> <step>\n", the value as
		 * Python's str(float), so NaN and Inf are "nan", "inf", "-inf" as MLflow's own
		 * file store writes them. */
		char num_text[32], line[96];
		lb_export_py_float(num, num_text);
		if (!isfinite(num))
			nonfinite++;
		int n = snprintf(line, sizeof line, "%" PRId64 " %s 0\n", ts, num_text);
		LB_AUTOFREE char *rel = NULL;
		if (asprintf(&rel, "metrics/%s", key) < 0)
			rc = -ENOMEM;
		else
			rc = write_at(run_path, rel, line, (size_t)n);
	}

	char user[256];
	user_of(r, user, sizeof user);
	/* Tags: MLflow's own (the UI shows them as run name, source, user, git commit, and the
	 * note as the run's description) and labbox's verdict. */
	struct {
		const char *key;
		const char *value;
	} tags[16];
	int nt = 0;
#define TAG(k, v) (tags[nt].key = (k), tags[nt].value = (v), nt++)
	LB_AUTOFREE char *source = NULL;
	if (asprintf(&source, "%s%s%s", r->expdir ? r->expdir : r->run_dir, entry ? "/" : "",
		     entry ? entry : "") < 0)
		rc = rc < 0 ? rc : -ENOMEM;
	char exit_text[32] = "";
	json_object *lec;
	if (json_object_object_get_ex(r->row, "labbox_exit_code", &lec) && lec)
		snprintf(exit_text, sizeof exit_text, "%d", json_object_get_int(lec));
	json_object *failure = obj_of(r->result, "failure", json_type_object);
	TAG("mlflow.runName", r->id);
	TAG("mlflow.source.name", source ? source : "");
	TAG("mlflow.source.type", "LOCAL");
	TAG("mlflow.user", user);
	if (str_of(git, "commit"))
		TAG("mlflow.source.git.commit", str_of(git, "commit"));
	if (str_of(git, "branch"))
		TAG("mlflow.source.git.branch", str_of(git, "branch"));
	if (str_of(failure, "summary"))
		TAG("mlflow.note.content", str_of(failure, "summary"));
	TAG("labbox.status", r->status);
	TAG("labbox.run_dir", r->run_dir);
	if (exit_text[0])
		TAG("labbox.exit_code", exit_text);
	if (str_of(failure, "class"))
		TAG("labbox.failure_class", str_of(failure, "class"));
	if (git)
		TAG("labbox.git_dirty",
		    json_object_get_boolean(json_object_object_get(git, "dirty")) ? "true" : "false");
#undef TAG
	for (int i = 0; i < nt && rc == 0; i++)
		rc = mlflow_file(&mo, "tags", tags[i].key, tags[i].value);
	if (rc == 0 && json_object_object_length(mo.renamed))
		rc = mlflow_file(&mo, "tags", "labbox.renamed_keys",
				 json_object_to_json_string_ext(mo.renamed, JSON_C_TO_STRING_PLAIN |
									     JSON_C_TO_STRING_NOSLASHESCAPE));

	/* Artifacts: labbox's own files, copied without following a symlink. */
	for (size_t i = 0; rc == 0 && i < sizeof run_files / sizeof *run_files; i++) {
		LB_AUTOFREE char *dst = NULL;
		if (asprintf(&dst, "%s/%s", art_path, run_files[i]) < 0) {
			rc = -ENOMEM;
			break;
		}
		int c = copy_file(r->dirfd, run_files[i], dst);
		if (c == -ENOENT)
			continue;
		if (c == -ELOOP || c == -EINVAL)
			warn(r->warnings, "%s is not a regular file; not copied", run_files[i]);
		else if (c < 0)
			rc = c;
	}

	/* meta.yaml last: FileStore._make_persisted_run_info_dict's keys, sorted as
	 * yaml.safe_dump writes them; status is RunStatus's number. */
	lb_buf b = {0};
	if (rc == 0) {
		char end_text[32] = "null";
		if (has_end)
			snprintf(end_text, sizeof end_text, "%" PRId64, end_ms);
		if (yaml_line(&b, "artifact_uri", art_uri) < 0 ||
		    lb_buf_printf(&b, "end_time: %s\n", end_text) < 0 ||
		    lb_buf_puts(&b, "entry_point_name: ''\n") < 0 ||
		    yaml_line(&b, "experiment_id", exp_id) < 0 ||
		    lb_buf_puts(&b, "lifecycle_stage: active\n") < 0 || yaml_line(&b, "run_id", uuid) < 0 ||
		    yaml_line(&b, "run_name", r->id) < 0 || yaml_line(&b, "run_uuid", uuid) < 0 ||
		    lb_buf_puts(&b, "source_name: ''\nsource_type: 4\nsource_version: ''\n") < 0 ||
		    lb_buf_printf(&b, "start_time: %" PRId64 "\n", start_ms) < 0 ||
		    lb_buf_printf(&b, "status: %d\n", lb_export_mlflow_status(r->status)) < 0 ||
		    lb_buf_puts(&b, "tags: []\n") < 0 || yaml_line(&b, "user_id", user) < 0)
			rc = -ENOMEM;
		else
			rc = write_at(run_path, "meta.yaml", b.data, b.len);
	}
	lb_buf_free(&b);
	if (rc < 0) {
		set_err(err, errlen, "writing run %s into %s failed: %s", r->id, run_path, strerror(-rc));
	} else if (report) {
		json_object *e = json_object_new_object();
		json_object_object_add(e, "id", json_object_new_string(r->id));
		json_object_object_add(e, "experiment_id", json_object_new_string(exp_id));
		json_object_object_add(e, "run_uuid", json_object_new_string(uuid));
		json_object_object_add(e, "path", json_object_new_string(run_path));
		if (nonfinite)
			warn(r->warnings, "%d metric value%s not finite (written as MLflow writes them: nan, inf)",
			     nonfinite, nonfinite == 1 ? " is" : "s are");
		json_object_object_add(e, "warnings", json_object_get(r->warnings));
		json_object_array_add(report, e);
	}
	json_object_put(mo.renamed);
	json_object_put(mo.used_params);
	json_object_put(used_metrics);
	return rc;
}

static void report_skip(json_object *report, json_object *row, const char *why)
{
	if (!report)
		return;
	json_object *e = json_object_new_object();
	const char *id = str_of(row, "id");
	json_object_object_add(e, "id", id ? json_object_new_string(id) : NULL);
	json_object_object_add(e, "skipped", json_object_new_string(why));
	json_object_array_add(report, e);
}

int lb_export_mlflow(const char *dir, struct json_object *runs, struct json_object *exported,
		     char *err, size_t errlen)
{
	if (!runs || !json_object_is_type(runs, json_type_array)) {
		set_err(err, errlen, "no runs to export");
		return -EINVAL;
	}
	LB_AUTOFREE char *root = NULL;
	int r = prepare_root(dir, &root, err, errlen);
	if (r < 0)
		return r;
	/* What FileStore creates in an empty root: the Default experiment "0" and .trash. */
	LB_AUTOFREE char *trash = NULL;
	if (asprintf(&trash, "%s/.trash", root) < 0)
		return -ENOMEM;
	int64_t now = (int64_t)(lb_time_now() * 1000);
	if ((r = lb_mkdir_p(trash, 0755)) < 0 || (r = mlflow_experiment(root, "0", "Default", now, now)) < 0) {
		set_err(err, errlen, "cannot write into %s: %s", root, strerror(-r));
		return r;
	}
	size_t n = json_object_array_length(runs);
	/* First pass: each experiment's first start and last end, for its meta.yaml. */
	json_object *exps = json_object_new_object();
	for (size_t i = 0; i < n; i++) {
		json_object *row = json_object_array_get_idx(runs, i);
		export_run er = {0};
		if (run_load(row, &er) == NULL) {
			char name[256];
			experiment_name(&er, name, sizeof name);
			int64_t s = 0, e = 0;
			lb_export_iso_ms(er.started_at, &s);
			if (lb_export_iso_ms(er.ended_at, &e) < 0)
				e = s;
			json_object *x = obj_of(exps, name, json_type_array);
			if (!x) {
				x = json_object_new_array();
				json_object_array_add(x, json_object_new_int64(s));
				json_object_array_add(x, json_object_new_int64(e));
				json_object_object_add(exps, name, x);
			} else {
				if (s < json_object_get_int64(json_object_array_get_idx(x, 0)))
					json_object_array_put_idx(x, 0, json_object_new_int64(s));
				if (e > json_object_get_int64(json_object_array_get_idx(x, 1)))
					json_object_array_put_idx(x, 1, json_object_new_int64(e));
			}
		}
		run_free(&er);
	}
	json_object_object_foreach(exps, ename, span)
	{
		char id[24];
		experiment_id(ename, id);
		r = mlflow_experiment(root, id, ename, json_object_get_int64(json_object_array_get_idx(span, 0)),
				      json_object_get_int64(json_object_array_get_idx(span, 1)));
		if (r < 0) {
			set_err(err, errlen, "cannot write experiment '%s' into %s: %s", ename, root,
				strerror(-r));
			json_object_put(exps);
			return r;
		}
	}
	json_object_put(exps);
	/* Rows come newest first; export oldest first, as the runs happened. */
	for (size_t i = n; i-- > 0 && r == 0;) {
		json_object *row = json_object_array_get_idx(runs, i);
		export_run er;
		const char *why = run_load(row, &er);
		if (why) {
			report_skip(exported, row, why);
		} else {
			char name[256], id[24];
			experiment_name(&er, name, sizeof name);
			experiment_id(name, id);
			r = mlflow_run(root, &er, id, exported, err, errlen);
		}
		run_free(&er);
	}
	return r;
}

/* ---- Sacred ------------------------------------------------------------------------------- */

/* A deep copy with object keys sorted: Sacred writes its JSON files with sort_keys=True. */
static json_object *sorted_copy(json_object *o)
{
	if (!o)
		return NULL;
	if (json_object_is_type(o, json_type_array)) {
		json_object *a = json_object_new_array();
		for (size_t i = 0; i < json_object_array_length(o); i++)
			json_object_array_add(a, sorted_copy(json_object_array_get_idx(o, i)));
		return a;
	}
	if (!json_object_is_type(o, json_type_object))
		return json_object_get(o);
	size_t n = (size_t)json_object_object_length(o), i = 0;
	const char **keys = calloc(n ? n : 1, sizeof *keys);
	if (!keys)
		return NULL;
	json_object_object_foreach(o, k, v)
	{
		(void)v;
		keys[i++] = k;
	}
	for (size_t a = 1; a < n; a++) /* insertion sort: objects here are small */
		for (size_t b = a; b > 0 && strcmp(keys[b - 1], keys[b]) > 0; b--) {
			const char *t = keys[b];
			keys[b] = keys[b - 1];
			keys[b - 1] = t;
		}
	json_object *out = json_object_new_object();
	for (i = 0; i < n; i++)
		json_object_object_add(out, keys[i], sorted_copy(json_object_object_get(o, keys[i])));
	free(keys);
	return out;
}

/* A number as Python's json.dump writes it: repr() for finite floats, NaN/Infinity else. */
static json_object *py_json_number(double v)
{
	char text[32];
	if (isnan(v))
		snprintf(text, sizeof text, "NaN");
	else if (isinf(v))
		snprintf(text, sizeof text, "%s", v < 0 ? "-Infinity" : "Infinity");
	else
		lb_export_py_float(v, text);
	return json_object_new_double_s(v, text);
}

/* datetime.isoformat() of a naive UTC datetime, as Sacred stores times: microseconds, no
 * zone, and no fraction at all when it is zero. */
static void sacred_time(int64_t ms, char out[40])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	size_t n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
	if (ms % 1000)
		snprintf(out + n, 40 - n, ".%03d000", (int)(ms % 1000));
}

/* os.path.splitext of a base name: the extension is from the last dot, unless only dots
 * come before it. */
static void split_ext(const char *base, size_t *stem_len)
{
	const char *dot = strrchr(base, '.');
	*stem_len = strlen(base);
	if (!dot)
		return;
	for (const char *p = base; p < dot; p++)
		if (*p != '.') {
			*stem_len = (size_t)(dot - base);
			return;
		}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "name==version" lines of environment.txt's pip freeze, sorted as Sacred sorts them. */
static json_object *dependencies_of(const export_run *r)
{
	json_object *deps = json_object_new_array();
	LB_AUTOFREE char *text = NULL;
	if (lb_read_file_at(r->dirfd, "environment.txt", 16u << 20, &text, NULL) < 0)
		return deps;
	size_t cap = 0, n = 0;
	LB_AUTOFREE const char **lines = NULL;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#' || !strstr(line, "=="))
			continue;
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 64;
			const char **nl = realloc(lines, nc * sizeof *nl);
			if (!nl)
				break;
			lines = nl;
			cap = nc;
		}
		lines[n++] = line;
	}
	if (n)
		qsort(lines, n, sizeof *lines, cmp_str);
	for (size_t i = 0; i < n; i++)
		json_object_array_add(deps, json_object_new_string(lines[i]));
	return deps;
}

/* Read one staged source file whose content still has the sha256 the manifest recorded: from
 * the run's exp/ (which the experiment could write to, so nothing is followed and the hash
 * decides), else from the original experiment directory. */
static int read_source(const export_run *r, const char *rel, const char *sha, char **data, size_t *len)
{
	LB_AUTOCLOSE int expfd = openat(r->dirfd, "exp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	LB_AUTOCLOSE int origfd = r->expdir ? open(r->expdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	int fds[2] = {expfd, origfd};
	for (int i = 0; i < 2; i++) {
		if (fds[i] < 0)
			continue;
		const char *base = NULL;
		LB_AUTOCLOSE int pfd = lb_open_parent_beneath(fds[i], rel, false, &base);
		if (pfd < 0)
			continue;
		LB_AUTOFREE char *buf = NULL;
		size_t n = 0;
		if (lb_read_file_at(pfd, base, SOURCE_MAX, &buf, &n) < 0)
			continue;
		lb_sha256 c;
		uint8_t d[32];
		char hex[65];
		lb_sha256_init(&c);
		lb_sha256_update(&c, buf, n);
		lb_sha256_final(&c, d);
		lb_sha256_hex(d, hex);
		if (strcmp(hex, sha) != 0)
			continue;
		*data = lb_steal_ptr(&buf);
		*len = n;
		return 0;
	}
	return -ENOENT;
}

/* Sacred's experiment.sources: [[relative name, "_sources/<stem>_<md5><ext>"]] with each file
 * stored once under root/_sources, named by its MD5 as FileStorageObserver.find_or_save does. */
static int sacred_sources(const char *root, export_run *r, json_object *sources)
{
	json_object *files = obj_of(r->manifest, "files", json_type_object);
	if (!files)
		return 0;
	int count = 0;
	json_object_object_foreach(files, rel, shav)
	{
		size_t len = strlen(rel);
		if (len < 4 || strcmp(rel + len - 3, ".py") != 0 || !json_object_is_type(shav, json_type_string))
			continue;
		if (++count > SOURCES_MAX) {
			warn(r->warnings, "more than %d source files; the rest are not stored", SOURCES_MAX);
			break;
		}
		LB_AUTOFREE char *data = NULL;
		size_t n = 0;
		if (read_source(r, rel, json_object_get_string(shav), &data, &n) < 0) {
			warn(r->warnings, "source %s: no copy with the recorded sha256 left; not stored", rel);
			continue;
		}
		char md5[33];
		lb_export_md5_hex(data, n, md5);
		const char *base = strrchr(rel, '/');
		base = base ? base + 1 : rel;
		size_t stem;
		split_ext(base, &stem);
		LB_AUTOFREE char *store = NULL;
		LB_AUTOFREE char *path = NULL;
		if (asprintf(&store, "_sources/%.*s_%s%s", (int)stem, base, md5, base + stem) < 0 ||
		    asprintf(&path, "%s/%s", root, store) < 0)
			return -ENOMEM;
		if (access(path, F_OK) != 0) {
			int w = write_at(root, store, data, n);
			if (w < 0)
				return w;
		}
		json_object *pair = json_object_new_array();
		json_object_array_add(pair, json_object_new_string(rel));
		json_object_array_add(pair, json_object_new_string(store));
		json_object_array_add(sources, pair);
	}
	return 0;
}

static int write_json_file(const char *dir, const char *name, json_object *doc)
{
	/* json.dump(..., sort_keys=True, indent=2): keys were sorted when the document was built. */
	const char *text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
								 JSON_C_TO_STRING_SPACED |
								 JSON_C_TO_STRING_NOSLASHESCAPE);
	return write_at(dir, name, text, strlen(text));
}

static json_object *str_or_null(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

static json_object *copy_or_null(json_object *o)
{
	return o ? sorted_copy(o) : NULL;
}

/* Sacred's host_info: hostname, os ([platform.system(), platform.platform()]), python_version,
 * cpu (the model name), gpus ({"gpus": [{model, total_memory in MiB}], "driver_version"}) and
 * ENV (the environment variables it captured: here, those labbox set for the run). */
static json_object *sacred_host(json_object *manifest, json_object *cfg, json_object *interp)
{
	json_object *m = obj_of(manifest, "machine", json_type_object);
	if (!m)
		m = obj_of(manifest, "host", json_type_object);
	json_object *host = json_object_new_object();
	json_object *env = obj_of(cfg, "environment", json_type_object);
	json_object_object_add(host, "ENV", env ? sorted_copy(env) : json_object_new_object());
	const char *cpu = str_of(m, "cpu");
	if (!cpu)
		cpu = str_of(obj_of(m, "cpu", json_type_object), "model");
	json_object_object_add(host, "cpu", str_or_null(cpu));
	json_object *gpus = obj_of(m, "gpus", json_type_array);
	if (gpus && json_object_array_length(gpus)) {
		json_object *g = json_object_new_object(), *list = json_object_new_array();
		const char *driver = NULL;
		for (size_t i = 0; i < json_object_array_length(gpus); i++) {
			json_object *src = json_object_array_get_idx(gpus, i), *mem;
			json_object *one = json_object_new_object();
			json_object_object_add(one, "model", str_or_null(str_of(src, "name")));
			json_object_object_add(one, "total_memory",
					       json_object_object_get_ex(src, "memory_total_bytes", &mem) && mem
						       ? json_object_new_int64(json_object_get_int64(mem) >> 20)
						       : NULL);
			json_object_array_add(list, one);
			if (!driver)
				driver = str_of(src, "driver_version");
		}
		json_object_object_add(g, "driver_version", str_or_null(driver));
		json_object_object_add(g, "gpus", list);
		json_object_object_add(host, "gpus", g);
	}
	json_object_object_add(host, "hostname", str_or_null(str_of(m, "hostname")));
	json_object *os = obj_of(m, "os", json_type_array);
	if (os) {
		json_object_object_add(host, "os", sorted_copy(os));
	} else if (str_of(m, "kernel")) {
		char plat[512];
		snprintf(plat, sizeof plat, "Linux-%s%s%s", str_of(m, "kernel"), str_of(m, "arch") ? "-" : "",
			 str_of(m, "arch") ? str_of(m, "arch") : "");
		json_object *pair = json_object_new_array();
		json_object_array_add(pair, json_object_new_string("Linux"));
		json_object_array_add(pair, json_object_new_string(plat));
		json_object_object_add(host, "os", pair);
	} else {
		json_object_object_add(host, "os", NULL);
	}
	json_object_object_add(host, "python_version", str_or_null(str_of(interp, "version")));
	return host;
}

static int sacred_run(const char *root, export_run *r, long seq, json_object *report, char *err,
		      size_t errlen)
{
	LB_AUTOFREE char *run_path = NULL;
	if (asprintf(&run_path, "%s/%ld", root, seq) < 0)
		return -ENOMEM;
	json_object *cfg = obj_of(r->manifest, "config", json_type_object);
	json_object *interp = obj_of(r->manifest, "interpreter", json_type_object);
	json_object *git = obj_of(r->manifest, "git", json_type_object);
	const char *entry = str_of(cfg, "entry");
	const char *sstatus = lb_export_sacred_status(r->status);
	int64_t start_ms = 0, end_ms = 0;
	lb_export_iso_ms(r->started_at, &start_ms);
	bool has_end = strcmp(sstatus, "RUNNING") != 0 && lb_export_iso_ms(r->ended_at, &end_ms) == 0;
	char start_text[40], end_text[40];
	sacred_time(start_ms, start_text);
	sacred_time(has_end ? end_ms : start_ms, end_text);

	int rc = 0;
	json_object *sources = json_object_new_array();
	rc = sacred_sources(root, r, sources);

	/* experiment: Ingredient.get_experiment_info's keys. */
	char name[256];
	experiment_name(r, name, sizeof name);
	json_object *exp = json_object_new_object();
	json_object_object_add(exp, "base_dir", str_or_null(r->expdir));
	json_object_object_add(exp, "dependencies", dependencies_of(r));
	json_object_object_add(exp, "mainfile", str_or_null(entry));
	json_object_object_add(exp, "name", json_object_new_string(name));
	json_object *repos = json_object_new_array();
	if (git) {
		json_object *repo = json_object_new_object();
		json_object_object_add(repo, "commit", str_or_null(str_of(git, "commit")));
		json_object_object_add(repo, "dirty", json_object_new_boolean(json_object_get_boolean(
							      json_object_object_get(git, "dirty"))));
		json_object_object_add(repo, "url", str_or_null(str_of(git, "url")));
		json_object_array_add(repos, repo);
	}
	json_object_object_add(exp, "repositories", repos);
	json_object_object_add(exp, "sources", sources);

	/* host: sacred.host_info's default gatherers, from the machine block of manifest.json.
	 * What the run did not record stays null. */
	json_object *host = sacred_host(r->manifest, cfg, interp);

	/* The run's metrics: metrics.json for numbers (one point at the end, step 0), and all of
	 * them, strings included, as the result of a completed run. */
	json_object *metrics = json_object_new_object();
	json_object *flat = json_object_new_object();
	json_object_object_foreach(r->metrics, mname, mval)
	{
		double num = 0;
		const char *text = NULL;
		enum metric_kind kind = metric_value(mval, &num, &text);
		if (kind == METRIC_TEXT) {
			json_object_object_add(flat, mname, json_object_new_string(text));
		} else if (kind == METRIC_NUMBER) {
			json_object_object_add(flat, mname, py_json_number(num));
			json_object *m = json_object_new_object();
			json_object *steps = json_object_new_array(), *times = json_object_new_array(),
				    *values = json_object_new_array();
			json_object_array_add(steps, json_object_new_int(0));
			json_object_array_add(times, json_object_new_string(end_text));
			json_object_array_add(values, py_json_number(num));
			json_object_object_add(m, "steps", steps);
			json_object_object_add(m, "timestamps", times);
			json_object_object_add(m, "values", values);
			json_object_object_add(metrics, mname, m);
		}
	}
	json_object *sorted_metrics = sorted_copy(metrics);
	json_object_put(metrics);

	char command[256];
	snprintf(command, sizeof command, "%s", entry ? entry : "main");
	size_t clen = strlen(command);
	if (clen > 3 && strcmp(command + clen - 3, ".py") == 0)
		command[clen - 3] = '\0';
	json_object *meta = json_object_new_object();
	json_object_object_add(meta, "command", json_object_new_string(command));
	json_object_object_add(meta, "config_updates", json_object_new_object());
	json_object_object_add(meta, "named_configs", json_object_new_array());
	json_object *opts = json_object_new_object();
	json_object_object_add(opts, "argv", copy_or_null(obj_of(r->manifest, "command", json_type_array)));
	json_object_object_add(opts, "args", copy_or_null(obj_of(cfg, "args", json_type_array)));
	json_object_object_add(meta, "options", opts);

	json_object *artifacts = json_object_new_array();
	json_object *run = json_object_new_object();
	json_object_object_add(run, "artifacts", artifacts);
	json_object_object_add(run, "command", json_object_new_string(command));
	json_object_object_add(run, "experiment", exp);
	json_object *failure = obj_of(r->result, "failure", json_type_object);
	if (strcmp(sstatus, "FAILED") == 0) {
		/* fail_trace is the traceback as a list of lines: labbox's evidence for it. */
		json_object *trace = json_object_new_array();
		char line[2048];
		snprintf(line, sizeof line, "labbox: run %s %s%s%s\n", r->id, r->status,
			 str_of(failure, "summary") ? ": " : "",
			 str_of(failure, "summary") ? str_of(failure, "summary") : "");
		json_object_array_add(trace, json_object_new_string(line));
		json_object *ev = obj_of(failure, "evidence", json_type_array);
		for (size_t i = 0; ev && i < json_object_array_length(ev); i++) {
			snprintf(line, sizeof line, "%s\n", json_object_get_string(json_object_array_get_idx(ev, i)));
			json_object_array_add(trace, json_object_new_string(line));
		}
		json_object *issues = obj_of(r->result, "metric_issues", json_type_array);
		for (size_t i = 0; issues && i < json_object_array_length(issues); i++) {
			const char *msg = str_of(json_object_array_get_idx(issues, i), "message");
			if (msg) {
				snprintf(line, sizeof line, "%s\n", msg);
				json_object_array_add(trace, json_object_new_string(line));
			}
		}
		json_object_object_add(run, "fail_trace", trace);
	}
	json_object_object_add(run, "heartbeat", json_object_new_string(end_text));
	json_object_object_add(run, "host", host);
	json_object_object_add(run, "meta", meta);
	json_object_object_add(run, "resources", json_object_new_array());
	json_object_object_add(run, "result", strcmp(sstatus, "COMPLETED") == 0 &&
							      json_object_object_length(flat)
						      ? json_object_get(flat)
						      : NULL);
	json_object_object_add(run, "start_time", json_object_new_string(start_text));
	json_object_object_add(run, "status", json_object_new_string(sstatus));
	if (has_end)
		json_object_object_add(run, "stop_time", json_object_new_string(end_text));

	/* info.json: labbox's verdict, and the id by which a later export finds this run. */
	json_object *lb = json_object_new_object();
	json_object_object_add(lb, "id", json_object_new_string(r->id));
	json_object_object_add(lb, "run_dir", json_object_new_string(r->run_dir));
	json_object_object_add(lb, "status", json_object_new_string(r->status));
	json_object *x;
	json_object_object_add(lb, "exit_code", json_object_object_get_ex(r->row, "exit_code", &x) && x
							? json_object_get(x)
							: NULL);
	json_object_object_add(lb, "labbox_exit_code",
			       json_object_object_get_ex(r->row, "labbox_exit_code", &x) && x
				       ? json_object_get(x)
				       : NULL);
	json_object_object_add(lb, "partial", r->result && json_object_object_get_ex(r->result, "partial", &x) && x
						      ? json_object_get(x)
						      : json_object_new_boolean(0));
	json_object_object_add(lb, "failure", copy_or_null(failure));
	json_object_object_add(lb, "metric_issues",
			       copy_or_null(obj_of(r->result, "metric_issues", json_type_array)));
	json_object_object_add(lb, "metrics", json_object_get(flat));
	json_object_object_add(lb, "resources", copy_or_null(obj_of(r->result, "resources", json_type_object)));
	json_object_object_add(lb, "isolation", copy_or_null(obj_of(r->result, "isolation", json_type_object)));
	json_object *info = json_object_new_object();
	json_object_object_add(info, "labbox", lb);

	json_object *config = cfg ? sorted_copy(cfg) : json_object_new_object();
	json_object *sorted_run = NULL, *sorted_info = NULL;
	if (rc == 0) {
		/* Artifacts: labbox's files beside Sacred's own; run.log is cout.txt. */
		for (size_t i = 0; rc == 0 && i < sizeof run_files / sizeof *run_files; i++) {
			bool is_log = strcmp(run_files[i], "run.log") == 0;
			LB_AUTOFREE char *dst = NULL;
			if (asprintf(&dst, "%s/%s", run_path, is_log ? "cout.txt" : run_files[i]) < 0) {
				rc = -ENOMEM;
				break;
			}
			int c = copy_file(r->dirfd, run_files[i], dst);
			if (c == -ENOENT) {
				if (is_log) /* Sacred always has a cout.txt */
					c = write_text(dst, "", 0);
				else
					continue;
			}
			if (c == -ELOOP || c == -EINVAL) {
				warn(r->warnings, "%s is not a regular file; not copied", run_files[i]);
				if (!is_log)
					continue;
				c = write_text(dst, "", 0);
			}
			if (c < 0) {
				rc = c;
				break;
			}
			if (!is_log)
				json_object_array_add(artifacts, json_object_new_string(run_files[i]));
		}
	}
	if (rc == 0) {
		sorted_run = sorted_copy(run);
		sorted_info = sorted_copy(info);
		if ((rc = write_json_file(run_path, "config.json", config)) == 0 &&
		    (rc = write_json_file(run_path, "metrics.json", sorted_metrics)) == 0 &&
		    (rc = write_json_file(run_path, "info.json", sorted_info)) == 0)
			rc = write_json_file(run_path, "run.json", sorted_run);
	}
	if (rc < 0) {
		set_err(err, errlen, "writing run %s into %s failed: %s", r->id, run_path, strerror(-rc));
	} else if (report) {
		json_object *e = json_object_new_object();
		json_object_object_add(e, "id", json_object_new_string(r->id));
		json_object_object_add(e, "sacred_id", json_object_new_int64(seq));
		json_object_object_add(e, "path", json_object_new_string(run_path));
		json_object_object_add(e, "warnings", json_object_get(r->warnings));
		json_object_array_add(report, e);
	}
	json_object *objs[] = {run, info, config, sorted_run, sorted_info, sorted_metrics, flat};
	for (size_t i = 0; i < sizeof objs / sizeof *objs; i++)
		json_object_put(objs[i]);
	return rc;
}

static bool all_digits(const char *s)
{
	if (!*s || strlen(s) > 18)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* The numbered run folders already in root: the largest number, and which labbox run each
 * one holds (from the info.json an earlier export wrote). */
static int sacred_scan(const char *root, json_object *by_id, long *max)
{
	*max = 0;
	LB_AUTOCLOSE int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = lb_dir_stream(fd);
	if (!d)
		return -errno;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!all_digits(de->d_name))
			continue;
		struct stat st;
		if (fstatat(fd, de->d_name, &st, 0) < 0 || !S_ISDIR(st.st_mode))
			continue;
		long n = strtol(de->d_name, NULL, 10);
		if (n > *max)
			*max = n;
		LB_AUTOCLOSE int rfd = openat(fd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (rfd < 0)
			continue;
		json_object *info = load_json_at(rfd, "info.json");
		const char *id = str_of(obj_of(info, "labbox", json_type_object), "id");
		if (id && !json_object_object_get_ex(by_id, id, NULL))
			json_object_object_add(by_id, id, json_object_new_int64(n));
		json_object_put(info);
	}
	closedir(d);
	return 0;
}

int lb_export_sacred(const char *dir, struct json_object *runs, struct json_object *exported,
		     char *err, size_t errlen)
{
	if (!runs || !json_object_is_type(runs, json_type_array)) {
		set_err(err, errlen, "no runs to export");
		return -EINVAL;
	}
	LB_AUTOFREE char *root = NULL;
	int r = prepare_root(dir, &root, err, errlen);
	if (r < 0)
		return r;
	json_object *by_id = json_object_new_object();
	long max = 0;
	r = sacred_scan(root, by_id, &max);
	if (r < 0)
		set_err(err, errlen, "cannot read %s: %s", root, strerror(-r));
	for (size_t i = json_object_array_length(runs); i-- > 0 && r == 0;) {
		json_object *row = json_object_array_get_idx(runs, i);
		export_run er;
		const char *why = run_load(row, &er);
		if (why) {
			report_skip(exported, row, why);
			run_free(&er);
			continue;
		}
		json_object *known;
		long num;
		if (json_object_object_get_ex(by_id, er.id, &known)) {
			num = (long)json_object_get_int64(known);
		} else {
			/* FileStorageObserver._make_run_dir: the next number after the largest,
			 * taken with mkdir so that a concurrent writer gets another one. */
			for (num = max + 1;; num++) {
				char path[PATH_MAX];
				snprintf(path, sizeof path, "%s/%ld", root, num);
				if (mkdir(path, 0755) == 0)
					break;
				if (errno != EEXIST || num > max + 1000) {
					r = -errno;
					set_err(err, errlen, "cannot create %s: %s", path, strerror(errno));
					break;
				}
			}
			if (r == 0) {
				max = num;
				json_object_object_add(by_id, er.id, json_object_new_int64(num));
			}
		}
		if (r == 0)
			r = sacred_run(root, &er, num, exported, err, errlen);
		run_free(&er);
	}
	json_object_put(by_id);
	return r;
}
