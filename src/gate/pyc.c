/* gate: the gate's sitecustomize compiled once per interpreter, kept in the user's cache.
 *
 * The gate's directory is bound read-only into the sandbox, so the interpreter cannot keep a
 * __pycache__ there and compiled the 700-line module from source at every start (the largest
 * single cost of a short run). Here the module is compiled by the interpreter itself, inside a
 * sandbox of its own (labbox never runs an interpreter on the host for this), as a PEP 552
 * checked-hash .pyc: the interpreter still compares it with the source it sits beside, so a
 * .pyc of another labbox's gate is never used. The entry is kept in the user's cache (a
 * private directory hidden from every run) with a record of its SHA-256, the gate source's and
 * the executable's identity; it is used only when all of these match, copied (not linked) into
 * the run's read-only gate directory, so what the run loads is the bytes labbox checked. */
#include "labbox/gate.h"
#include "labbox/env.h"
#include "labbox/sandbox.h"
#include "labbox/util.h"
#include "gate_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PYC_SCHEMA "labbox-gate-pyc 1"
#define PYC_MAX ((size_t)1 << 20)

/* Run with -I: reads the source from argv, in pieces (the kernel takes no single argument of
 * 128 KiB or more, and the gate is larger; fsencode undoes the argv decoding exactly), writes
 * the cache tag on a line of its own, then the .pyc. The file name compiled in is the one the
 * run imports it by. */
static const char compile_src[] =
	"import os, sys, py_compile\n"
	"tag = sys.implementation.cache_tag\n"
	"if not tag: sys.exit(3)\n"
	"with open('/tmp/sitecustomize.py', 'wb') as f:\n"
	"    f.write(b''.join(os.fsencode(a) for a in sys.argv[1:]))\n"
	"py_compile.compile('/tmp/sitecustomize.py', cfile='/tmp/s.pyc', dfile='" LB_GATE_PY_DIR
	"/sitecustomize.py', doraise=True, "
	"invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)\n"
	"with open('/tmp/s.pyc', 'rb') as f: data = f.read()\n"
	"sys.stdout.buffer.write(tag.encode() + b'\\n' + data)\n";

/* What the entry depends on besides its own bytes: the executable (through its symlinks) as
 * the stat finds it, and the gate's source. */
static int identity(const lb_python_info *py, char *out, size_t n)
{
	struct stat st;
	if (stat(py->executable, &st) < 0)
		return -errno;
	char src[65];
	lb_sha256_buf_hex(lb_gate_source, lb_gate_source_len, src);
	int k = snprintf(out, n,
			 "exe %s\nstat %ju %ju %jd %jd.%09ld %jd.%09ld\nsource %s\n", py->executable,
			 (uintmax_t)st.st_dev, (uintmax_t)st.st_ino, (intmax_t)st.st_size,
			 (intmax_t)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (intmax_t)st.st_ctim.tv_sec,
			 st.st_ctim.tv_nsec, src);
	return k < 0 || (size_t)k >= n ? -ENAMETOOLONG : 0;
}

#define PIECE_MAX ((size_t)64 * 1024)
#define PIECES 16

/* The source cut into pieces under PIECE_MAX, each ending at a line's end (so that no
 * character's bytes are parted), as NUL-terminated copies in pieces[]. */
static int cut_source(char *pieces[PIECES + 1])
{
	size_t at = 0, k = 0;
	while (at < lb_gate_source_len) {
		size_t n = lb_gate_source_len - at;
		if (n > PIECE_MAX) {
			const char *nl = memrchr(lb_gate_source + at, '\n', PIECE_MAX);
			if (!nl)
				return -E2BIG;
			n = (size_t)(nl - (lb_gate_source + at)) + 1;
		}
		if (k == PIECES)
			return -E2BIG;
		if (!(pieces[k] = strndup(lb_gate_source + at, n)))
			return -ENOMEM;
		k++;
		at += n;
	}
	pieces[k] = NULL;
	return 0;
}

static void free_pieces(char *pieces[PIECES + 1])
{
	for (size_t i = 0; i <= PIECES && pieces[i]; i++)
		free(pieces[i]);
}

/* Compile in a sandbox of the interpreter's own: no network, the host read-only, a private
 * /tmp. On success *tag and *pyc (with *len) are the interpreter's answer. */
static int compile_confined(const lb_python_info *py, char tag[64], lb_buf *pyc)
{
	lb_sandbox_result res;
	lb_buf out = {0};
	char *pieces[PIECES + 1] = {0};
	int r = cut_source(pieces);
	if (r == 0)
		r = lb_python_sandbox_script(py, compile_src, (const char *const *)pieces, PYC_MAX,
					     60, &out, &res);
	free_pieces(pieces);
	if (r == 0 && (res.outcome != LB_SB_EXITED || res.exit_code != 0))
		r = -ENOEXEC;
	const char *nl = r == 0 && out.data ? memchr(out.data, '\n', out.len) : NULL;
	size_t taglen = nl ? (size_t)(nl - out.data) : 0;
	/* A cache tag names a file: "cpython-311". Anything else is not an answer. */
	if (r == 0 && (!nl || taglen == 0 || taglen >= 64 || out.len - taglen - 1 < 16 ||
		       strspn(out.data, "abcdefghijklmnopqrstuvwxyz0123456789-_.") != taglen ||
		       out.data[0] == '.'))
		r = -ENOEXEC;
	if (r == 0) {
		memcpy(tag, out.data, taglen);
		tag[taglen] = '\0';
		r = lb_buf_append(pyc, nl + 1, out.len - taglen - 1);
	}
	lb_buf_free(&out);
	return r;
}

/* The cached .pyc when its record matches this interpreter and this gate and its bytes hash
 * to what the record says; else -ENOENT. */
static int lookup(int dfd, const char *name, const char *ident, char tag[64], char **pyc,
		  size_t *len)
{
	char meta_name[NAME_MAX], pyc_name[NAME_MAX];
	snprintf(meta_name, sizeof meta_name, "%s.rec", name);
	snprintf(pyc_name, sizeof pyc_name, "%s.pyc", name);
	LB_AUTOFREE char *meta = NULL;
	size_t mlen = 0;
	if (lb_read_file_at(dfd, meta_name, 16384, &meta, &mlen) < 0)
		return -ENOENT;
	/* PYC_SCHEMA, the identity as identity() writes it, "tag T", "pyc SHA". */
	size_t hl = strlen(PYC_SCHEMA), il = strlen(ident);
	if (mlen < hl + 1 + il || memcmp(meta, PYC_SCHEMA "\n", hl + 1) != 0 ||
	    memcmp(meta + hl + 1, ident, il) != 0)
		return -ENOENT;
	char want[65];
	int consumed = 0;
	if (sscanf(meta + hl + 1 + il, "tag %63[a-z0-9._-]\npyc %64[0-9a-f]\n%n", tag, want,
		   &consumed) != 2 || consumed <= 0 || hl + 1 + il + (size_t)consumed != mlen ||
	    strlen(want) != 64 || tag[0] == '.')
		return -ENOENT;
	char *data = NULL;
	if (lb_read_file_at(dfd, pyc_name, PYC_MAX, &data, len) < 0)
		return -ENOENT;
	char got[65];
	lb_sha256_buf_hex(data, *len, got);
	if (strcmp(got, want) != 0) {
		free(data);
		return -ENOENT;
	}
	*pyc = data;
	return 0;
}

static void store(int dfd, const char *name, const char *ident, const char *tag, const void *pyc,
		  size_t len)
{
	char meta_name[NAME_MAX], pyc_name[NAME_MAX], sha[65];
	snprintf(meta_name, sizeof meta_name, "%s.rec", name);
	snprintf(pyc_name, sizeof pyc_name, "%s.pyc", name);
	lb_sha256_buf_hex(pyc, len, sha);
	lb_buf m = {0};
	/* The .pyc first: a record never names bytes that are not there yet. */
	if (lb_replace_file_at(dfd, pyc_name, pyc, len) == 0 &&
	    lb_buf_printf(&m, PYC_SCHEMA "\n%stag %s\npyc %s\n", ident, tag, sha) == 0 &&
	    lb_replace_file_at(dfd, meta_name, m.data, m.len) == 0)
		lb_cache_bound_like(dfd, meta_name, LB_CACHE_PER_INTERPRETER_MAX);
	lb_buf_free(&m);
}

int lb_gate_pyc_get(const lb_python_info *py, const char *cache_dir, char tag[64], char **data,
		    size_t *len, bool *hit)
{
	*hit = false;
	*data = NULL;
	*len = 0;
	/* An interpreter the experiment named is its code: nothing of it is kept for later. */
	if (!py || py->confined || !cache_dir)
		return -EOPNOTSUPP;
	char ident[PATH_MAX + 256];
	int r = identity(py, ident, sizeof ident);
	if (r < 0)
		return r;
	char name[48], key[65];
	lb_sha256_buf_hex(py->executable, strlen(py->executable), key);
	snprintf(name, sizeof name, "gate-%.32s", key);
	LB_AUTOCLOSE int dfd = lb_open_private_dir(cache_dir);
	if (dfd < 0)
		return dfd;
	if (lookup(dfd, name, ident, tag, data, len) == 0) {
		char rec[NAME_MAX];
		snprintf(rec, sizeof rec, "%s.rec", name);
		lb_cache_entry_used(dfd, rec);
		*hit = true;
		return 0;
	}
	/* A cache it cannot keep would have every run pay for the compile instead of once. */
	if (faccessat(dfd, ".", W_OK, AT_EACCESS) < 0)
		return -errno;
	lb_buf pyc = {0};
	r = compile_confined(py, tag, &pyc);
	if (r == 0) {
		store(dfd, name, ident, tag, pyc.data, pyc.len);
		*data = pyc.data;
		*len = pyc.len;
		return 0;
	}
	lb_buf_free(&pyc);
	return r;
}
