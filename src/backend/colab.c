/* The colab backend: a Google Drive bridge. labbox cannot reach a Colab runtime; both see one
 * Drive folder, synced here by Drive for desktop and mounted there by google.colab. labbox
 * writes the staged experiment and a job file under DIR/labbox/pending/ID/ (built under tmp/
 * and renamed in whole, so a worker never sees half a job) and the worker script and notebook
 * beside them (embedded in this binary from src/backend/colab_worker.py); a worker claims the
 * job by renaming it into running/, runs it under its budget, beats a heartbeat, and moves it
 * to done/ with an exit record. labbox polls the folder, streams run.log as it grows, judges
 * the heartbeat, and brings exp/, run.log and environment.txt back into the ordinary run
 * directory. Everything a worker writes is outside input: read bounded, parsed with types
 * checked, copied without following links.
 *
 * labbox isolates nothing there: the isolation block says so, and the backend block names the
 * worker that ran the code. */
#include "labbox/backend.h"
#include "labbox/record.h"
#include "labbox/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

/* Every path here is the Drive folder plus a few short components (a run id is under 64
 * bytes), and the constructor refuses a folder path longer than PATH_MAX - DRIVE_ROOM, so the
 * fixed buffers below cannot truncate; GCC cannot see that bound. */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#define DRIVE_ROOM 512

/* The worker's source, embedded by the Makefile (od of src/backend/colab_worker.py). */
static const unsigned char worker_py[] = {
#include "colab_worker.inc"
};

#define COLAB_PROTOCOL 1
#define DEFAULT_POLL_S 5.0
/* Drive for desktop may take a minute to bring a heartbeat down. */
#define DEFAULT_STALE_S 120.0
/* labbox's own limit beyond the budget: a Colab runtime to start, Drive to sync both ways. */
#define DEFAULT_MARGIN_S 600.0
#define RECORD_MAX ((size_t)64 << 10)
#define ENV_TXT_MAX ((size_t)4 << 20)
#define TAIL_PER_POLL ((size_t)8 << 20)
#define FETCH_DEPTH_MAX 64
#define FETCH_FILES_MAX 200000

typedef enum { JOB_PENDING, JOB_RUNNING, JOB_DONE, JOB_NOWHERE } job_where;

typedef struct colab_state {
	char drive[PATH_MAX];
	char root[PATH_MAX]; /* drive/labbox */
	double poll, timeout, stale, grace;
	json_object *sandbox;
	char **metrics;
	size_t nmetrics;
	char id[64];
	char version[64]; /* PROTOCOL.sha12 of the embedded worker */
	bool submitted;   /* pending/ID exists (labbox's) */
	bool finished;    /* done/ID came back */
	bool keep;        /* what came back could not all be fetched: it stays in the folder */
	char job_dir[PATH_MAX]; /* where the job's files are now */
	char cancel_path[PATH_MAX];
	bool cancel_written;
	uint64_t log_off;
	lb_colab_exit exit;
	bool have_exit;
	lb_colab_heartbeat hb;
	bool have_hb;
	char worker_version[64];
	json_object *notes; /* what labbox said about the job, also in the backend block */
} colab_state;

static colab_state *state_of(lb_backend *b)
{
	return b->state;
}

static void note(colab_state *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(colab_state *d, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "labbox: colab: %s\n", msg);
	if (d->notes && json_object_array_length(d->notes) < 64)
		json_object_array_add(d->notes, json_object_new_string(msg));
}

/* ---- records written by a worker (outside input) ------------------------------------- */

/* A string field copied bounded, with control characters made '?': it is printed to the
 * user's terminal, and a worker's file must not drive the terminal. */
static int take_str(json_object *o, const char *key, char *dst, size_t n, bool required,
		    char *err, size_t errlen)
{
	json_object *v;
	dst[0] = '\0';
	if (!json_object_object_get_ex(o, key, &v) || !v) {
		if (required)
			snprintf(err, errlen, "'%s' is missing", key);
		return required ? -EINVAL : 0;
	}
	if (!json_object_is_type(v, json_type_string)) {
		snprintf(err, errlen, "'%s' is not a string", key);
		return -EINVAL;
	}
	snprintf(dst, n, "%s", json_object_get_string(v));
	for (unsigned char *p = (unsigned char *)dst; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			*p = '?';
	return 0;
}

static int take_num(json_object *o, const char *key, double lo, double hi, double *dst,
		    char *err, size_t errlen)
{
	json_object *v;
	if (!json_object_object_get_ex(o, key, &v) || !v)
		return 0;
	if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double)) {
		snprintf(err, errlen, "'%s' is not a number", key);
		return -EINVAL;
	}
	double x = json_object_get_double(v);
	if (!(x >= lo && x <= hi)) {
		snprintf(err, errlen, "'%s' is out of range", key);
		return -ERANGE;
	}
	*dst = x;
	return 0;
}

static int take_bool(json_object *o, const char *key, bool *dst, char *err, size_t errlen)
{
	json_object *v;
	if (!json_object_object_get_ex(o, key, &v) || !v)
		return 0;
	if (!json_object_is_type(v, json_type_boolean)) {
		snprintf(err, errlen, "'%s' is not a boolean", key);
		return -EINVAL;
	}
	*dst = json_object_get_boolean(v);
	return 0;
}

static json_object *parse_record(const char *text, size_t len, const char *schema, char *err,
				 size_t errlen)
{
	if (len > RECORD_MAX) {
		snprintf(err, errlen, "larger than %zu bytes", RECORD_MAX);
		return NULL;
	}
	json_tokener *tok = json_tokener_new_ex(16);
	if (!tok) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	json_object *o = json_tokener_parse_ex(tok, text, (int)len);
	enum json_tokener_error je = json_tokener_get_error(tok);
	if (o && (je != json_tokener_success || tok->char_offset < (int)len)) {
		/* trailing bytes after the document: only white space is allowed */
		for (size_t i = (size_t)tok->char_offset; i < len; i++)
			if (text[i] != ' ' && text[i] != '\n' && text[i] != '\t' && text[i] != '\r') {
				json_object_put(o);
				o = NULL;
				break;
			}
	}
	json_tokener_free(tok);
	if (!o) {
		snprintf(err, errlen, "not a JSON document");
		return NULL;
	}
	json_object *v;
	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, "schema", &v) ||
	    !json_object_is_type(v, json_type_string) || strcmp(json_object_get_string(v), schema) != 0) {
		snprintf(err, errlen, "not a %s document", schema);
		json_object_put(o);
		return NULL;
	}
	return o;
}

int lb_colab_exit_parse(const char *text, size_t len, lb_colab_exit *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	out->exit_code = -1;
	json_object *o = parse_record(text, len, "labbox.colab.exit/1", err, errlen);
	if (!o)
		return -EINVAL;
	int r = take_str(o, "status", out->status, sizeof out->status, true, err, errlen);
	static const char *const ok[] = {"exited", "signaled", "timeout", "cancelled", "error"};
	bool known = false;
	for (size_t i = 0; r == 0 && i < sizeof ok / sizeof *ok; i++)
		known |= strcmp(out->status, ok[i]) == 0;
	if (r == 0 && !known) {
		snprintf(err, errlen, "'status' '%s' is not one of exited, signaled, timeout, "
			 "cancelled, error", out->status);
		r = -EINVAL;
	}
	double code = -1, sig = 0, rss = 0, uid = -1;
	if (r == 0)
		r = take_num(o, "exit_code", 0, 255, &code, err, errlen);
	if (r == 0)
		r = take_num(o, "signal", 1, 64, &sig, err, errlen);
	if (r == 0)
		r = take_num(o, "wall_s", 0, 1e9, &out->wall_s, err, errlen);
	if (r == 0)
		r = take_num(o, "cpu_user_s", 0, 1e9, &out->cpu_user_s, err, errlen);
	if (r == 0)
		r = take_num(o, "cpu_sys_s", 0, 1e9, &out->cpu_sys_s, err, errlen);
	if (r == 0)
		r = take_num(o, "max_rss_bytes", 0, 1e15, &rss, err, errlen);
	if (r == 0)
		r = take_num(o, "uid", 0, 4294967294.0, &uid, err, errlen);
	if (r == 0)
		r = take_bool(o, "timed_out", &out->timed_out, err, errlen);
	if (r == 0)
		r = take_bool(o, "cancelled", &out->cancelled, err, errlen);
	if (r == 0)
		r = take_str(o, "worker", out->worker, sizeof out->worker, false, err, errlen);
	if (r == 0)
		r = take_str(o, "host", out->host, sizeof out->host, false, err, errlen);
	if (r == 0)
		r = take_str(o, "version", out->version, sizeof out->version, false, err, errlen);
	if (r == 0)
		r = take_str(o, "python", out->python, sizeof out->python, false, err, errlen);
	if (r == 0)
		r = take_str(o, "error", out->error, sizeof out->error, false, err, errlen);
	if (r == 0 && strcmp(out->status, "exited") == 0 && code < 0) {
		snprintf(err, errlen, "status exited without an exit_code");
		r = -EINVAL;
	}
	if (r == 0 && strcmp(out->status, "signaled") == 0 && sig == 0) {
		snprintf(err, errlen, "status signaled without a signal");
		r = -EINVAL;
	}
	out->exit_code = (int)code;
	out->signal = (int)sig;
	out->max_rss_bytes = (uint64_t)rss;
	out->uid = (long)uid;
	json_object_put(o);
	return r;
}

int lb_colab_heartbeat_parse(const char *text, size_t len, lb_colab_heartbeat *out, char *err,
			     size_t errlen)
{
	memset(out, 0, sizeof *out);
	json_object *o = parse_record(text, len, "labbox.colab.heartbeat/1", err, errlen);
	if (!o)
		return -EINVAL;
	double beat = -1, bytes = 0;
	int r = take_num(o, "beat", 0, 9e15, &beat, err, errlen);
	if (r == 0 && beat < 0) {
		snprintf(err, errlen, "'beat' is missing");
		r = -EINVAL;
	}
	if (r == 0)
		r = take_num(o, "elapsed_s", 0, 1e9, &out->elapsed_s, err, errlen);
	if (r == 0)
		r = take_num(o, "log_bytes", 0, 9e15, &bytes, err, errlen);
	if (r == 0)
		r = take_str(o, "worker", out->worker, sizeof out->worker, true, err, errlen);
	if (r == 0)
		r = take_str(o, "host", out->host, sizeof out->host, false, err, errlen);
	if (r == 0)
		r = take_str(o, "version", out->version, sizeof out->version, false, err, errlen);
	if (r == 0)
		r = take_str(o, "time", out->time, sizeof out->time, false, err, errlen);
	if (r == 0)
		r = take_str(o, "state", out->state, sizeof out->state, false, err, errlen);
	out->beat = (int64_t)beat;
	out->log_bytes = (uint64_t)bytes;
	json_object_put(o);
	return r;
}

/* A worker's file, bounded, never through a link. */
static int read_record(const char *dir, const char *name, size_t max, char **text, size_t *len)
{
	LB_AUTOCLOSE int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	return lb_read_file_at(dfd, name, max, text, len);
}

/* ---- the worker files -------------------------------------------------------------------- */

/* PROTOCOL.sha256[:12] of a worker script, as the worker computes it of its own file. */
static void version_of(const void *src, size_t len, int protocol, char out[64])
{
	char hex[65];
	lb_sha256_buf_hex(src, len, hex);
	snprintf(out, 64, "%d.%.12s", protocol, hex);
}

static void worker_version(char out[64])
{
	version_of(worker_py, sizeof worker_py, COLAB_PROTOCOL, out);
}

/* Where Colab mounts the same folder: the part below "My Drive/" (Drive for desktop's name
 * for the root) under /content/drive/MyDrive; a folder synced elsewhere gets that guess with
 * its last component, and the notebook says to check it. */
static void colab_path(const char *drive, char *out, size_t n, bool *guessed)
{
	const char *p = strstr(drive, "/My Drive/");
	size_t len = strlen(drive);
	*guessed = false;
	if (p) {
		snprintf(out, n, "/content/drive/MyDrive/%s", p + strlen("/My Drive/"));
	} else if (len >= 9 && strcmp(drive + len - 9, "/My Drive") == 0) {
		snprintf(out, n, "/content/drive/MyDrive"); /* the root of the Drive itself */
	} else {
		const char *base = strrchr(drive, '/');
		snprintf(out, n, "/content/drive/MyDrive/%s", base && base[1] ? base + 1 : drive);
		*guessed = true;
	}
}

static json_object *nb_cell(const char *type, const char *const *lines)
{
	json_object *c = json_object_new_object();
	json_object_object_add(c, "cell_type", json_object_new_string(type));
	json_object_object_add(c, "metadata", json_object_new_object());
	json_object *src = json_object_new_array();
	for (size_t i = 0; lines[i]; i++)
		json_object_array_add(src, json_object_new_string(lines[i]));
	json_object_object_add(c, "source", src);
	if (strcmp(type, "code") == 0) {
		json_object_object_add(c, "execution_count", NULL);
		json_object_object_add(c, "outputs", json_object_new_array());
	}
	return c;
}

static int notebook_text(colab_state *d, lb_buf *out)
{
	char where[PATH_MAX + 64], line[PATH_MAX + 128];
	bool guessed;
	colab_path(d->drive, where, sizeof where, &guessed);
	LB_AUTOFREE char *esc = NULL;
	json_object *js = json_object_new_string(where);
	esc = strdup(json_object_to_json_string_ext(js, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(js);
	if (!esc)
		return -ENOMEM;
	/* json-c's string form is a valid Python string literal for these characters. */
	snprintf(line, sizeof line, "DRIVE = %s%s\n", esc,
		 guessed ? "  # check: the folder labbox was given as --drive, as Colab sees it" : "");
	const char *const md[] = {
		"# labbox Colab worker\n",
		"\n",
		"Runs the jobs `labbox run --mode colab --drive DIR` leaves in this Drive folder. ",
		"Choose a runtime (a GPU one for GPU work), then run the cells. The worker serves until ",
		"the cell is interrupted; labbox shows a job's progress from its heartbeat.\n",
		"labbox does not isolate the code run here: it runs with this runtime's user, network ",
		"and files.\n", NULL};
	const char *const setup[] = {
		line,
		"import os, sys\n",
		"try:\n",
		"    from google.colab import drive as _gdrive\n",
		"    _gdrive.mount('/content/drive')\n",
		"except ImportError:\n",
		"    print('not in Colab: using DRIVE as it is')\n",
		"assert os.path.isdir(os.path.join(DRIVE, 'labbox')), DRIVE + '/labbox is not there: set DRIVE'\n",
		NULL};
	const char *const run[] = {
		"import subprocess\n",
		"subprocess.run([sys.executable, os.path.join(DRIVE, 'labbox', 'labbox_worker.py'), '--drive', DRIVE])\n",
		NULL};
	json_object *nb = json_object_new_object();
	json_object *cells = json_object_new_array();
	json_object_array_add(cells, nb_cell("markdown", md));
	json_object_array_add(cells, nb_cell("code", setup));
	json_object_array_add(cells, nb_cell("code", run));
	json_object_object_add(nb, "cells", cells);
	json_object *meta = json_object_new_object();
	json_object *ks = json_object_new_object();
	json_object_object_add(ks, "name", json_object_new_string("python3"));
	json_object_object_add(ks, "display_name", json_object_new_string("Python 3"));
	json_object_object_add(meta, "kernelspec", ks);
	json_object *lbx = json_object_new_object();
	json_object_object_add(lbx, "worker_version", json_object_new_string(d->version));
	json_object_object_add(meta, "labbox", lbx);
	json_object *acc = json_object_new_object();
	json_object_object_add(acc, "provenance", json_object_new_array());
	json_object_object_add(meta, "colab", acc);
	json_object_object_add(nb, "metadata", meta);
	json_object_object_add(nb, "nbformat", json_object_new_int(4));
	json_object_object_add(nb, "nbformat_minor", json_object_new_int(0));
	int r = lb_buf_puts(out, json_object_to_json_string_ext(nb, JSON_C_TO_STRING_PRETTY |
								    JSON_C_TO_STRING_NOSLASHESCAPE));
	if (r == 0)
		r = lb_buf_puts(out, "\n");
	json_object_put(nb);
	return r;
}

/* Written when missing or different (a new version), atomically: a worker starting now reads
 * the old file or the new one. */
static int install_file(const char *dir, const char *name, const void *data, size_t len,
			bool *changed)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	LB_AUTOCLOSE int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	LB_AUTOFREE char *old = NULL;
	size_t olen = 0;
	*changed = false;
	if (dfd >= 0 && lb_read_file_at(dfd, name, len + 1, &old, &olen) == 0 && olen == len &&
	    memcmp(old, data, len) == 0)
		return 0;
	*changed = true;
	return lb_write_file_atomic_mode(path, data, len, 0644);
}

static int install_worker(colab_state *d, bool *changed)
{
	bool c1 = false, c2 = false;
	int r = install_file(d->root, "labbox_worker.py", worker_py, sizeof worker_py, &c1);
	lb_buf nb = {0};
	if (r == 0)
		r = notebook_text(d, &nb);
	if (r == 0)
		r = install_file(d->root, "labbox_worker.ipynb", nb.data, nb.len, &c2);
	lb_buf_free(&nb);
	*changed = c1 || c2;
	return r;
}

static int layout(colab_state *d, char *err, size_t errlen)
{
	struct stat st;
	if (stat(d->drive, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen,
			 "the Drive folder '%s' %s (is Google Drive for desktop running, and the "
			 "folder synced? `ls -ld '%s'` shows it)",
			 d->drive, stat(d->drive, &st) < 0 ? "does not exist" : "is not a directory",
			 d->drive);
		return -ENOENT;
	}
	static const char *const sub[] = {"", "/pending", "/running", "/done", "/cancel",
					  "/workers", "/tmp"};
	for (size_t i = 0; i < sizeof sub / sizeof *sub; i++) {
		char p[PATH_MAX + 16];
		snprintf(p, sizeof p, "%s%s", d->root, sub[i]);
		if (mkdir(p, 0755) < 0 && errno != EEXIST) {
			int e = errno;
			snprintf(err, errlen, "cannot create %s in the Drive folder: %s", p, strerror(e));
			return -e;
		}
	}
	if (access(d->root, W_OK) < 0) {
		int e = errno;
		snprintf(err, errlen, "the Drive folder '%s' is not writable: %s", d->root, strerror(e));
		return -e;
	}
	return 0;
}

/* ---- prepare: the job into pending/ -------------------------------------------------------- */

static void colab_owner(lb_backend *b, uid_t *uid, gid_t *gid)
{
	(void)b;
	*uid = getuid();
	*gid = getgid();
}

static void add_env_pair(json_object *env, const char *kv)
{
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv)
		return;
	char name[256];
	snprintf(name, sizeof name, "%.*s", (int)(eq - kv), kv);
	json_object_object_add(env, name, json_object_new_string(eq + 1));
}

static json_object *job_json(colab_state *d, const lb_backend_job *job, json_object *files,
			     const char *exp_copy)
{
	json_object *j = json_object_new_object();
	char now[40], host[256] = "";
	lb_time_iso8601(lb_time_now(), now);
	gethostname(host, sizeof host - 1);
	json_object_object_add(j, "schema", json_object_new_string("labbox.colab.job/1"));
	json_object_object_add(j, "protocol", json_object_new_int(COLAB_PROTOCOL));
	json_object_object_add(j, "id", json_object_new_string(job->id));
	json_object_object_add(j, "created_at", json_object_new_string(now));
	json_object_object_add(j, "labbox_version", json_object_new_string(LABBOX_VERSION));
	json_object_object_add(j, "worker_version", json_object_new_string(d->version));
	json_object_object_add(j, "submitted_from", json_object_new_string(host));
	/* argv[0] is the local interpreter of the static check; there it is the worker's. */
	json_object_object_add(j, "python", json_object_new_string("python3"));
	json_object_object_add(j, "entry", json_object_new_string(job->argv[1]));
	json_object *args = json_object_new_array();
	for (size_t i = 2; job->argv[1] && job->argv[i]; i++)
		json_object_array_add(args, json_object_new_string(job->argv[i]));
	json_object_object_add(j, "args", args);
	json_object_object_add(j, "budget_s", job->budget > 0 ? json_object_new_double(job->budget) : NULL);
	json_object_object_add(j, "grace_s", json_object_new_double(d->grace));
	json_object_object_add(j, "heartbeat_s", json_object_new_double(d->poll < 5 ? d->poll : 5));
	json_object *env = json_object_new_object();
	for (size_t i = 0; i < job->nenv; i++)
		add_env_pair(env, job->env[i]);
	json_object *v;
	if (d->sandbox && json_object_object_get_ex(d->sandbox, "env", &v) &&
	    json_object_is_type(v, json_type_array))
		for (size_t i = 0; i < json_object_array_length(v); i++)
			add_env_pair(env, json_object_get_string(json_object_array_get_idx(v, i)));
	json_object_object_add(j, "env", env);
	/* Secrets by name only: a value never goes into a shared folder. */
	json_object *sec = json_object_new_array();
	if (d->sandbox && json_object_object_get_ex(d->sandbox, "secret_env", &v) &&
	    json_object_is_type(v, json_type_array))
		for (size_t i = 0; i < json_object_array_length(v); i++)
			json_object_array_add(sec, json_object_get(json_object_array_get_idx(v, i)));
	json_object_object_add(j, "secret_env", sec);
	json_object *m = json_object_new_array();
	for (size_t i = 0; i < d->nmetrics; i++)
		json_object_array_add(m, json_object_new_string(d->metrics[i]));
	json_object_object_add(j, "metrics", m);
	/* Each file with its size, so a worker claims the job only once Drive has brought all
	 * of it (Drive syncs file by file, so the rename here is not atomic there). */
	json_object *fl = json_object_new_object();
	LB_AUTOCLOSE int efd = open(exp_copy, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	json_object_object_foreach(files, rel, sha)
	{
		struct stat st;
		json_object *f = json_object_new_object();
		const char *s = json_object_get_string(sha);
		bool link = strcmp(s, "symlink") == 0;
		if (efd >= 0 && fstatat(efd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 && !link)
			json_object_object_add(f, "size", json_object_new_int64((int64_t)st.st_size));
		json_object_object_add(f, link ? "kind" : "sha256", json_object_new_string(s));
		json_object_object_add(fl, rel, f);
	}
	json_object_object_add(j, "files", fl);
	return j;
}

static int remove_tree(const char *path);

static int colab_prepare(lb_backend *b, const lb_backend_job *job, char *err, size_t errlen)
{
	colab_state *d = state_of(b);
	snprintf(d->id, sizeof d->id, "%s", job->id);
	int r = layout(d, err, errlen);
	if (r < 0)
		return r;
	bool changed = false;
	if ((r = install_worker(d, &changed)) < 0) {
		snprintf(err, errlen, "cannot write the worker into %s: %s", d->root, strerror(-r));
		return r;
	}
	if (changed)
		note(d, "wrote the worker %s/labbox_worker.py and labbox_worker.ipynb (version %s)",
		     d->root, d->version);
	char rnd[17] = "";
	lb_random_hex(rnd, 8);
	char tmp[PATH_MAX + 128], exp_copy[PATH_MAX + 160], pend[PATH_MAX + 128];
	snprintf(tmp, sizeof tmp, "%s/tmp/%s.%s", d->root, job->id, rnd);
	snprintf(exp_copy, sizeof exp_copy, "%s/exp", tmp);
	snprintf(pend, sizeof pend, "%s/pending/%s", d->root, job->id);
	if (mkdir(tmp, 0755) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(-r));
		return r;
	}
	json_object *files = json_object_new_object();
	r = lb_record_stage_within(job->exp_dir, exp_copy, (uid_t)-1, (gid_t)-1, 0, files, NULL,
				   err, errlen);
	if (r == 0) {
		json_object *j = job_json(d, job, files, exp_copy);
		char jp[PATH_MAX + 160];
		snprintf(jp, sizeof jp, "%s/job.json", tmp);
		r = lb_record_write_json(jp, j);
		json_object_put(j);
		if (r < 0)
			snprintf(err, errlen, "cannot write %s: %s", jp, strerror(-r));
	} else {
		char e2[512];
		snprintf(e2, sizeof e2, "%s", err);
		snprintf(err, errlen, "cannot copy the experiment into the Drive folder: %s", e2);
	}
	json_object_put(files);
	/* One rename: a worker on this file system sees the whole job or none of it. */
	if (r == 0 && rename(tmp, pend) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot place the job at %s: %s", pend, strerror(-r));
	}
	if (r < 0) {
		remove_tree(tmp);
		return r;
	}
	d->submitted = true;
	snprintf(d->job_dir, sizeof d->job_dir, "%s", pend);
	snprintf(d->cancel_path, sizeof d->cancel_path, "%s/cancel/%s", d->root, job->id);
	note(d, "job %s is waiting in %s", job->id, pend);
	return 0;
}

/* ---- run: wait, stream, judge --------------------------------------------------------------- */

static bool is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static job_where locate(colab_state *d, char out[PATH_MAX])
{
	static const char *const where[] = {"done", "running", "pending"};
	static const job_where w[] = {JOB_DONE, JOB_RUNNING, JOB_PENDING};
	for (size_t i = 0; i < 3; i++) {
		char p[PATH_MAX];
		snprintf(p, sizeof p, "%s/%s/%s", d->root, where[i], d->id);
		if (!is_dir(p))
			continue;
		/* done/ counts once its exit record is there (Drive may bring it last). */
		if (w[i] == JOB_DONE) {
			char e[PATH_MAX + 16];
			struct stat st;
			snprintf(e, sizeof e, "%s/exit.json", p);
			if (lstat(e, &st) < 0)
				continue;
		}
		snprintf(out, PATH_MAX, "%s", p);
		return w[i];
	}
	return JOB_NOWHERE;
}

/* What run.log gained since the last look, into the pipeline (terminal, run.log, metrics). */
static void tail_log(colab_state *d, const lb_backend_job *job, const char *dir, bool all)
{
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/run.log", dir);
	LB_AUTOCLOSE int fd = open(p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size <= d->log_off)
		return;
	if (lseek(fd, (off_t)d->log_off, SEEK_SET) < 0)
		return;
	char buf[65536];
	size_t got = 0;
	while (all || got < TAIL_PER_POLL) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n <= 0)
			break;
		got += (size_t)n;
		d->log_off += (uint64_t)n;
		if (job->output)
			job->output(job->output_ctx, LB_STREAM_STDOUT, buf, (size_t)n);
	}
}

static void read_heartbeat(colab_state *d, const char *dir, bool *changed)
{
	LB_AUTOFREE char *text = NULL;
	size_t len = 0;
	char err[256];
	lb_colab_heartbeat hb;
	*changed = false;
	if (read_record(dir, "heartbeat.json", RECORD_MAX, &text, &len) < 0 ||
	    lb_colab_heartbeat_parse(text, len, &hb, err, sizeof err) < 0)
		return;
	if (!d->have_hb || hb.beat != d->hb.beat || strcmp(hb.worker, d->hb.worker) != 0)
		*changed = true;
	d->hb = hb;
	d->have_hb = true;
}

/* The claim record a worker writes (claimed.json), for the user's eyes only. */
static void claimed_by(const char *dir, char *out, size_t n)
{
	LB_AUTOFREE char *text = NULL;
	size_t len = 0;
	snprintf(out, n, "a worker");
	if (read_record(dir, "claimed.json", RECORD_MAX, &text, &len) < 0)
		return;
	json_tokener *tok = json_tokener_new_ex(4);
	json_object *o = tok ? json_tokener_parse_ex(tok, text, (int)len) : NULL;
	if (tok)
		json_tokener_free(tok);
	char w[128], h[128], err[64];
	if (o && json_object_is_type(o, json_type_object) &&
	    take_str(o, "worker", w, sizeof w, true, err, sizeof err) == 0 &&
	    take_str(o, "host", h, sizeof h, false, err, sizeof err) == 0)
		snprintf(out, n, "worker %s%s%s", w, h[0] ? " on " : "", h);
	json_object_put(o);
}

static void start_command(colab_state *d, char *out, size_t n)
{
	snprintf(out, n,
		 "open %s/labbox_worker.ipynb in Colab and run it, or run `python3 "
		 "'%s/labbox_worker.py' --drive '%s'` where the folder is synced",
		 d->root, d->root, d->drive);
}

static void setup_failed(lb_sandbox_result *res, const char *step, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void setup_failed(lb_sandbox_result *res, const char *step, const char *fmt, ...)
{
	res->outcome = LB_SB_SETUP_FAILED;
	res->exit_code = -1;
	snprintf(res->setup_step, sizeof res->setup_step, "%s", step);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(res->setup_error, sizeof res->setup_error, fmt, ap);
	va_end(ap);
}

/* A job nobody claimed is withdrawn by renaming it away (atomic against a worker's claim);
 * a claimed one gets a cancel file the worker honours. Returns true when it was withdrawn. */
static bool withdraw_or_cancel(colab_state *d)
{
	char pend[PATH_MAX], gone[PATH_MAX + 64];
	snprintf(pend, sizeof pend, "%s/pending/%s", d->root, d->id);
	snprintf(gone, sizeof gone, "%s/tmp/%s.withdrawn", d->root, d->id);
	if (rename(pend, gone) == 0) {
		remove_tree(gone);
		d->submitted = false;
		return true;
	}
	if (!d->cancel_written) {
		char when[40];
		lb_time_iso8601(lb_time_now(), when);
		char body[96];
		int n = snprintf(body, sizeof body, "cancelled by labbox at %s\n", when);
		if (lb_write_file_atomic_mode(d->cancel_path, body, (size_t)n, 0644) == 0)
			d->cancel_written = true;
	}
	return false;
}

static void fill_isolation(colab_state *d, lb_sandbox_result *res)
{
	lb_isolation *iso = &res->isolation;
	memset(iso, 0, sizeof *iso);
	/* Nothing of labbox's sandbox applies on a Colab runtime: say so, field by field. */
	iso->network = "host";
	iso->uid = d->have_exit && d->exit.uid >= 0 ? (uid_t)d->exit.uid : (uid_t)-1;
	iso->gid = (gid_t)-1;
	iso->filesystem = "not isolated by labbox: the Colab runtime's own file system, as the "
			  "worker's user; the job ran in the Drive folder's copy of exp/";
}

static int colab_run(lb_backend *b, const lb_backend_job *job, lb_sandbox_result *res)
{
	colab_state *d = state_of(b);
	res->exit_code = -1;
	res->peak_source = "rusage";
	res->peak_memory_source = "rusage maxrss of the largest process (reported by the worker)";
	fill_isolation(d, res);
	sigset_t mask, old;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, &old);
	LB_AUTOCLOSE int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	/* A signal that came before the block was caught by labbox's handler: read here too. */
	lb_interrupt_rearm();
	if (sfd < 0) {
		int e = -errno;
		sigprocmask(SIG_SETMASK, &old, NULL);
		return e;
	}
	double t0 = lb_time_monotonic();
	double limit = d->timeout > 0 ? d->timeout
			: job->budget > 0 ? job->budget + DEFAULT_MARGIN_S : 0;
	double last_change = t0, last_progress = t0, cancel_at = 0;
	job_where prev = JOB_PENDING;
	bool noted_wait = false, stopping = false, seen_beat = false, noted_pick = false;
	double running_since = 0;
	enum { WHY_NONE, WHY_SIGNAL, WHY_TIMEOUT } why = WHY_NONE;
	char cmd[PATH_MAX * 3 + 200];
	start_command(d, cmd, sizeof cmd);
	char here[PATH_MAX] = "";
	for (;;) {
		double now = lb_time_monotonic();
		if (!is_dir(d->root)) {
			setup_failed(res, "colab", "the Drive folder vanished during the run: %s is gone "
				     "(was Drive disconnected or the folder moved? `ls -ld '%s'`)",
				     d->root, d->drive);
			break;
		}
		job_where w = locate(d, here);
		if (w == JOB_DONE) {
			snprintf(d->job_dir, sizeof d->job_dir, "%s", here);
			/* A short job can be claimed and done between two looks: who ran it is said
			 * all the same. */
			if (!noted_pick) {
				char who[300];
				claimed_by(here, who, sizeof who);
				note(d, "job %s picked up by %s", d->id, who);
			}
			break;
		}
		if (w == JOB_RUNNING) {
			snprintf(d->job_dir, sizeof d->job_dir, "%s", here);
			bool changed;
			read_heartbeat(d, here, &changed);
			if (prev != JOB_RUNNING) {
				last_change = now;
				running_since = now;
			}
			if (!noted_pick) {
				/* The claim's record follows the rename that claimed it: named once it
				 * is there (or after two looks without it). */
				char who[300];
				claimed_by(here, who, sizeof who);
				if (strcmp(who, "a worker") != 0 || now - running_since >= 2 * d->poll) {
					note(d, "job %s picked up by %s", d->id, who);
					noted_pick = true;
				}
			}
			if (changed && !seen_beat) {
				seen_beat = true;
				note(d, "first heartbeat from %s%s%s at %s: the job is running", d->hb.worker,
				     d->hb.host[0] ? " on " : "", d->hb.host, d->hb.time);
			}
			if (changed)
				last_change = now;
			tail_log(d, job, here, false);
			if (now - last_progress >= (d->poll * 6 > 30 ? d->poll * 6 : 30) && d->have_hb) {
				last_progress = now;
				note(d, "job %s running on %s for %.0fs, %llu bytes of log, last heartbeat %s",
				     d->id, d->hb.worker, d->hb.elapsed_s,
				     (unsigned long long)d->hb.log_bytes, d->hb.time);
			}
			if (now - last_change > d->stale) {
				if (d->have_hb)
					setup_failed(res, "colab",
						     "the worker '%s'%s%s stopped sending heartbeats: the "
						     "last one was at %s (beat %lld, %.0fs ago here; "
						     "--colab-stale %g); the worker died or lost Drive. "
						     "The job is left in %s",
						     d->hb.worker, d->hb.host[0] ? " on " : "", d->hb.host,
						     d->hb.time[0] ? d->hb.time : "an unknown time",
						     (long long)d->hb.beat, now - last_change, d->stale, here);
				else
					setup_failed(res, "colab",
						     "job %s was claimed (it is in %s) but no heartbeat came "
						     "for %.0fs (--colab-stale %g): the worker died. %s",
						     d->id, here, now - last_change, d->stale, cmd);
				withdraw_or_cancel(d);
				break;
			}
		} else if (w == JOB_PENDING) {
			if (!noted_wait && now - t0 >= 3 * d->poll) {
				noted_wait = true;
				note(d, "no worker has picked up job %s yet: %s", d->id, cmd);
			}
			last_change = now;
		} else if (now - last_change > d->stale) {
			setup_failed(res, "colab", "job %s is in none of pending/, running/, done/ of %s "
				     "(for %.0fs): something removed it", d->id, d->root, now - last_change);
			break;
		}
		prev = w == JOB_NOWHERE ? prev : w;

		if (!stopping && limit > 0 && now - t0 >= limit) {
			stopping = true;
			why = WHY_TIMEOUT;
		}
		struct signalfd_siginfo si;
		if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si && !stopping) {
			stopping = true;
			why = WHY_SIGNAL;
			res->interrupted = true;
			res->interrupt_signal = (int)si.ssi_signo;
		}
		if (stopping && cancel_at == 0) {
			cancel_at = now;
			if (withdraw_or_cancel(d)) {
				if (why == WHY_SIGNAL) {
					res->outcome = LB_SB_INTERRUPTED;
					note(d, "job %s withdrawn from pending/ before any worker took it", d->id);
				} else {
					setup_failed(res, "colab",
						     "no worker picked up job %s within %.0fs "
						     "(--colab-timeout); the job was withdrawn. Start a "
						     "worker: %s",
						     d->id, limit, cmd);
				}
				break;
			}
			note(d, "asked the worker to stop job %s (%s)", d->id, d->cancel_path);
		}
		/* The worker confirms a stop by moving the job to done/; it may take the grace and
		 * a sync both ways. */
		if (stopping && now - cancel_at > d->grace + 5 * d->poll + 10) {
			note(d, "the worker did not confirm the stop of job %s within %.0fs; the cancel "
			     "file %s stays for it", d->id, now - cancel_at, d->cancel_path);
			break;
		}
		struct pollfd pf = {.fd = sfd, .events = POLLIN};
		double wait = d->poll;
		if (!stopping && limit > 0 && t0 + limit - now < wait)
			wait = t0 + limit - now;
		if (wait < 0.01)
			wait = 0.01;
		poll(&pf, 1, (int)(wait * 1000));
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	res->wall_s = lb_time_monotonic() - t0;

	char here2[PATH_MAX];
	if (res->outcome != LB_SB_SETUP_FAILED && locate(d, here2) == JOB_DONE) {
		snprintf(d->job_dir, sizeof d->job_dir, "%s", here2);
		d->finished = true;
		tail_log(d, job, here2, true);
		LB_AUTOFREE char *text = NULL;
		size_t len = 0;
		char err[256] = "";
		int r = read_record(here2, "exit.json", RECORD_MAX, &text, &len);
		if (r == 0)
			r = lb_colab_exit_parse(text, len, &d->exit, err, sizeof err);
		else
			snprintf(err, sizeof err, "%s", strerror(-r));
		if (r < 0) {
			setup_failed(res, "colab", "the worker's exit record %s/exit.json is unusable: %s",
				     here2, err);
			d->keep = true; /* the evidence stays in the folder */
			return 0;
		}
		d->have_exit = true;
		snprintf(d->worker_version, sizeof d->worker_version, "%s", d->exit.version);
		fill_isolation(d, res);
		res->wall_s = d->exit.wall_s;
		res->cpu_user_s = d->exit.cpu_user_s;
		res->cpu_sys_s = d->exit.cpu_sys_s;
		res->peak_rss_bytes = res->max_rss_bytes = res->peak_memory_bytes = d->exit.max_rss_bytes;
		res->term_signal = d->exit.signal;
		if (why == WHY_SIGNAL) {
			res->outcome = LB_SB_INTERRUPTED;
		} else if (why == WHY_TIMEOUT || strcmp(d->exit.status, "timeout") == 0) {
			res->outcome = LB_SB_TIMEOUT;
			res->timed_out = true;
		} else if (strcmp(d->exit.status, "exited") == 0) {
			res->outcome = LB_SB_EXITED;
			res->exit_code = d->exit.exit_code;
		} else if (strcmp(d->exit.status, "signaled") == 0) {
			res->outcome = LB_SB_SIGNALED;
		} else {
			setup_failed(res, "colab", "the worker '%s' could not run job %s: %s",
				     d->exit.worker, d->id,
				     d->exit.error[0] ? d->exit.error
						      : strcmp(d->exit.status, "cancelled") == 0
							? "it was cancelled by someone else"
							: "no reason given");
		}
		return 0;
	}
	if (res->outcome != LB_SB_SETUP_FAILED) {
		/* Stopped without the worker's confirmation: the verdict is labbox's own. */
		tail_log(d, job, d->job_dir, true);
		if (why == WHY_SIGNAL)
			res->outcome = LB_SB_INTERRUPTED;
		else if (why == WHY_TIMEOUT) {
			res->outcome = LB_SB_TIMEOUT;
			res->timed_out = true;
		}
	} else if (d->job_dir[0] && is_dir(d->job_dir)) {
		tail_log(d, job, d->job_dir, true); /* what a dead worker's job wrote */
	}
	return 0;
}

/* ---- fetch: the job's files into the run directory ------------------------------------------ */

typedef struct fetch_ctx {
	uint64_t limit, written;
	size_t files, skipped;
	char *err;
	size_t errlen;
} fetch_ctx;

static bool same_content(int a, int b)
{
	char x[65536], y[65536];
	for (;;) {
		ssize_t n = read(a, x, sizeof x);
		if (n < 0)
			return false;
		if (n == 0)
			return read(b, y, 1) == 0;
		ssize_t got = 0;
		while (got < n) {
			ssize_t m = read(b, y + got, (size_t)(n - got));
			if (m <= 0)
				return false;
			got += m;
		}
		if (memcmp(x, y, (size_t)n) != 0)
			return false;
	}
}

/* One regular file: left alone when the local copy has the same bytes (so the stale-results
 * check still sees what the run did not touch), else written under a temporary name and
 * renamed over whatever is there (a link there is replaced, never written through). */
static int fetch_file(fetch_ctx *c, int sfd, int dfd, const char *name, const char *rel)
{
	LB_AUTOCLOSE int in = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st, lst;
	if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
		c->skipped++;
		return 0;
	}
	if (fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(lst.st_mode) &&
	    lst.st_size == st.st_size) {
		LB_AUTOCLOSE int mine = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (mine >= 0 && same_content(in, mine))
			return 0;
		if (lseek(in, 0, SEEK_SET) < 0)
			return -errno;
	}
	if (c->limit && c->written + (uint64_t)st.st_size > c->limit) {
		snprintf(c->err, c->errlen, "the job's exp/ passes the disk limit of %llu bytes at %s",
			 (unsigned long long)c->limit, rel);
		return -EFBIG;
	}
	char tmp[NAME_MAX + 32];
	snprintf(tmp, sizeof tmp, ".lbx-fetch.%d", (int)getpid());
	LB_AUTOCLOSE int out = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
				      0644);
	if (out < 0) {
		int e = errno;
		snprintf(c->err, c->errlen, "cannot write %s in exp/: %s", rel, strerror(e));
		return -e;
	}
	char buf[65536];
	ssize_t n;
	int r = 0;
	while ((n = read(in, buf, sizeof buf)) > 0 && r == 0) {
		if (c->limit && c->written + (uint64_t)n > c->limit) {
			snprintf(c->err, c->errlen, "the job's exp/ passes the disk limit of %llu bytes "
				 "at %s", (unsigned long long)c->limit, rel);
			r = -EFBIG;
			break;
		}
		c->written += (uint64_t)n;
		r = lb_write_all(out, buf, (size_t)n);
	}
	if (r == 0 && n < 0)
		r = -errno;
	if (r == 0 && renameat(dfd, tmp, dfd, name) < 0)
		r = -errno;
	if (r < 0) {
		unlinkat(dfd, tmp, 0);
		if (r != -EFBIG)
			snprintf(c->err, c->errlen, "cannot write %s in exp/: %s", rel, strerror(-r));
		return r;
	}
	c->files++;
	return 0;
}

static int fetch_dir(fetch_ctx *c, int sfd, int dfd, const char *rel, int depth)
{
	if (depth > FETCH_DEPTH_MAX) {
		c->skipped++;
		return 0;
	}
	int dup_fd = dup(sfd);
	DIR *dir = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!dir) {
		if (dup_fd >= 0)
			close(dup_fd);
		return 0;
	}
	int r = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(dir))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (c->files + c->skipped > FETCH_FILES_MAX) {
			snprintf(c->err, c->errlen, "the job's exp/ holds more than %d entries",
				 FETCH_FILES_MAX);
			r = -EFBIG;
			break;
		}
		char sub[PATH_MAX];
		snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
		struct stat st, lst;
		if (fstatat(sfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISREG(st.st_mode)) {
			r = fetch_file(c, sfd, dfd, e->d_name, sub);
		} else if (S_ISDIR(st.st_mode)) {
			bool there = fstatat(dfd, e->d_name, &lst, AT_SYMLINK_NOFOLLOW) == 0;
			if (there && !S_ISDIR(lst.st_mode)) {
				c->skipped++; /* a local link or file is not replaced by a directory */
				continue;
			}
			if (!there && mkdirat(dfd, e->d_name, 0755) < 0) {
				c->skipped++;
				continue;
			}
			LB_AUTOCLOSE int s2 = openat(sfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			LB_AUTOCLOSE int d2 = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (s2 >= 0 && d2 >= 0)
				r = fetch_dir(c, s2, d2, sub, depth + 1);
		} else {
			c->skipped++; /* links and special files of a worker are not brought back */
		}
	}
	closedir(dir);
	return r;
}

static int colab_fetch(lb_backend *b, const lb_backend_job *job, char *err, size_t errlen)
{
	colab_state *d = state_of(b);
	if (!d->job_dir[0] || !is_dir(d->job_dir))
		return 0; /* nothing came back (withdrawn, or the folder is gone) */
	char src[PATH_MAX + 8];
	snprintf(src, sizeof src, "%s/exp", d->job_dir);
	LB_AUTOCLOSE int sfd = open(src, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	LB_AUTOCLOSE int dfd = open(job->exp_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd >= 0 && dfd >= 0) {
		fetch_ctx c = {.limit = job->disk_limit, .err = err, .errlen = errlen};
		int r = fetch_dir(&c, sfd, dfd, "", 0);
		if (c.skipped)
			note(d, "%zu entries of the job's exp/ were not brought back (links, special "
			     "files)", c.skipped);
		if (r < 0) {
			d->keep = true;
			return r;
		}
	}
	/* The worker's environment snapshot replaces the local one: it is what ran the code. */
	LB_AUTOFREE char *env = NULL;
	size_t len = 0;
	if (read_record(d->job_dir, "environment.txt", ENV_TXT_MAX, &env, &len) == 0 && len > 7 &&
	    strncmp(env, "Python ", 7) == 0) {
		char p[PATH_MAX];
		snprintf(p, sizeof p, "%s/environment.txt", job->run_dir);
		int r = lb_write_file_atomic_mode(p, env, len, 0600);
		if (r < 0) {
			d->keep = true;
			snprintf(err, errlen, "cannot write %s: %s", p, strerror(-r));
			return r;
		}
	}
	return 0;
}

static int remove_at(int dfd, const char *name, int depth)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0) < 0 ? -errno : 0;
	if (depth > FETCH_DEPTH_MAX + 4)
		return -ELOOP;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	struct dirent *e;
	while ((e = readdir(dir)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			remove_at(dirfd(dir), e->d_name, depth + 1);
	closedir(dir);
	return unlinkat(dfd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

static int remove_tree(const char *path)
{
	char parent[PATH_MAX];
	snprintf(parent, sizeof parent, "%s", path);
	char *slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return -EINVAL;
	*slash = '\0';
	LB_AUTOCLOSE int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	return remove_at(pfd, slash + 1, 0);
}

static void colab_cleanup(lb_backend *b)
{
	colab_state *d = state_of(b);
	/* A job that came back is in the run directory now: its copy leaves the shared folder,
	 * and so does the cancel file it honoured. A job left in running/ (a dead worker) keeps
	 * its cancel file, so a worker that comes back stops it. */
	if (d->finished && !d->keep) {
		remove_tree(d->job_dir);
		if (d->cancel_written)
			unlink(d->cancel_path);
	}
}

static struct json_object *colab_describe(lb_backend *b)
{
	colab_state *d = state_of(b);
	json_object *o = json_object_new_object();
	const char *worker = d->have_exit ? d->exit.worker : d->have_hb ? d->hb.worker : "";
	const char *host = d->have_exit ? d->exit.host : d->have_hb ? d->hb.host : "";
	json_object_object_add(o, "name", json_object_new_string("colab"));
	json_object_object_add(o, "engine", json_object_new_string("labbox Colab worker (Google Drive bridge)"));
	json_object_object_add(o, "version", d->worker_version[0] ? json_object_new_string(d->worker_version)
								  : NULL);
	json_object_object_add(o, "worker_version_written", json_object_new_string(d->version));
	json_object_object_add(o, "host", host[0] ? json_object_new_string(host) : NULL);
	json_object_object_add(o, "worker", worker[0] ? json_object_new_string(worker) : NULL);
	json_object_object_add(o, "worker_python",
			       d->have_exit && d->exit.python[0] ? json_object_new_string(d->exit.python) : NULL);
	json_object_object_add(o, "drive", json_object_new_string(d->drive));
	json_object_object_add(o, "job_dir", d->job_dir[0] ? json_object_new_string(d->job_dir) : NULL);
	/* A job that came back is removed from the folder; one that did not stays there. */
	json_object_object_add(o, "job_dir_kept", json_object_new_boolean(d->job_dir[0] && is_dir(d->job_dir)));
	/* labbox's sandbox did not run this code; the worker enforced the budget only. */
	json_object_object_add(o, "isolated_by", json_object_new_string("none"));
	json_object_object_add(o, "isolation_note",
			       json_object_new_string("not isolated by labbox: the code ran on a Colab "
						      "runtime as the worker's user, with its network "
						      "and file system; the worker enforced the budget "
						      "(SIGTERM to the process group, grace, SIGKILL)"));
	json_object_object_add(o, "poll_s", json_object_new_double(d->poll));
	json_object_object_add(o, "timeout_s", d->timeout > 0 ? json_object_new_double(d->timeout) : NULL);
	json_object_object_add(o, "stale_s", json_object_new_double(d->stale));
	json_object_object_add(o, "notes", d->notes ? json_object_get(d->notes) : json_object_new_array());
	return o;
}

static void colab_free(lb_backend *b)
{
	colab_state *d = state_of(b);
	if (!d)
		return;
	json_object_put(d->sandbox);
	json_object_put(d->notes);
	for (size_t i = 0; i < d->nmetrics; i++)
		free(d->metrics[i]);
	free(d->metrics);
	free(d);
}

static void colab_gate_note(lb_backend *b, char *note, size_t n)
{
	(void)b;
	snprintf(note, n, "not installed: the code runs in a Colab runtime through the Drive "
		 "worker, outside any sandbox of labbox's, so nothing watches it as it runs; the "
		 "static check ran here");
}

static const lb_backend_ops colab_ops = {
	.name = "colab",
	.owner = colab_owner,
	.prepare = colab_prepare,
	.run = colab_run,
	.fetch = colab_fetch,
	.cleanup = colab_cleanup,
	.describe = colab_describe,
	.free = colab_free,
	.gate_note = colab_gate_note,
};

int lb_colab_check_flags(struct json_object *sandbox, char *err, size_t errlen)
{
	/* A limit labbox cannot enforce there is refused, never quietly dropped. */
	static const struct {
		const char *key, *flag;
	} k[] = {{"memory_bytes", "--memory"}, {"cpus", "--cpus"}, {"pids_limit", "--pids-limit"},
		 {"shm_size_bytes", "--shm-size"}};
	json_object *v;
	for (size_t i = 0; sandbox && i < sizeof k / sizeof *k; i++)
		if (json_object_object_get_ex(sandbox, k[i].key, &v) && v) {
			snprintf(err, errlen, "%s cannot be enforced in mode colab: the code runs on a "
				 "Colab runtime labbox does not control (choose the runtime's size in "
				 "Colab instead)", k[i].flag);
			return -EINVAL;
		}
	static const struct {
		const char *key, *flag, *why;
	} a[] = {{"volumes", "-v", "the host's files are not on the Colab runtime; put the data "
						"in the experiment or the Drive folder"},
		 {"tmpfs", "--tmpfs", "labbox mounts nothing there"},
		 {"hide", "--hide", "labbox does not control what the Colab runtime shows (the "
				     "worker mounts the whole Drive)"}};
	for (size_t i = 0; sandbox && i < sizeof a / sizeof *a; i++)
		if (json_object_object_get_ex(sandbox, a[i].key, &v) && v &&
		    json_object_is_type(v, json_type_array) && json_object_array_length(v) > 0) {
			snprintf(err, errlen, "%s cannot be honoured in mode colab: %s", a[i].flag, a[i].why);
			return -EINVAL;
		}
	return 0;
}

int lb_backend_colab(const lb_colab_config *cfg, lb_backend **out)
{
	if (!cfg->drive || !*cfg->drive)
		return -EINVAL;
	if (strlen(cfg->drive) >= PATH_MAX - DRIVE_ROOM)
		return -ENAMETOOLONG;
	lb_backend *b = calloc(1, sizeof *b);
	colab_state *d = calloc(1, sizeof *d);
	if (!b || !d) {
		free(b);
		free(d);
		return -ENOMEM;
	}
	b->ops = &colab_ops;
	b->state = d;
	/* An absolute path, so the record names the folder wherever labbox was started; a
	 * missing folder is kept as given and refused at prepare, naming it. */
	char given[PATH_MAX];
	const char *home = getenv("HOME");
	/* drive: ~/Library/CloudStorage/... as people write it in labbox.yaml. */
	if (strncmp(cfg->drive, "~/", 2) == 0 && home && home[0] == '/')
		snprintf(given, sizeof given, "%s/%s", home, cfg->drive + 2);
	else
		snprintf(given, sizeof given, "%s", cfg->drive);
	if (!realpath(given, d->drive) || strlen(d->drive) >= PATH_MAX - DRIVE_ROOM)
		snprintf(d->drive, sizeof d->drive, "%s", given);
	snprintf(d->root, sizeof d->root, "%s/labbox", d->drive);
	d->poll = cfg->poll > 0 ? cfg->poll : DEFAULT_POLL_S;
	d->timeout = cfg->timeout > 0 ? cfg->timeout : 0;
	d->stale = cfg->stale > 0 ? cfg->stale : DEFAULT_STALE_S;
	d->grace = cfg->grace > 0 ? cfg->grace : 0;
	d->sandbox = cfg->sandbox ? json_object_get(cfg->sandbox) : NULL;
	d->notes = json_object_new_array();
	worker_version(d->version);
	if (cfg->nmetrics) {
		d->metrics = calloc(cfg->nmetrics, sizeof *d->metrics);
		if (!d->metrics) {
			lb_backend_free(b);
			return -ENOMEM;
		}
		for (size_t i = 0; i < cfg->nmetrics; i++, d->nmetrics++)
			if (!(d->metrics[i] = strdup(cfg->metrics[i]))) {
				lb_backend_free(b);
				return -ENOMEM;
			}
	}
	*out = b;
	return 0;
}

/* ---- probe -------------------------------------------------------------------------------- */

static int64_t count_entries(const char *dir)
{
	DIR *dd = opendir(dir);
	if (!dd)
		return -1;
	int64_t n = 0;
	struct dirent *e;
	while ((e = readdir(dd)))
		if (e->d_name[0] != '.')
			n++;
	closedir(dd);
	return n;
}

int lb_colab_probe(const char *drive, struct json_object **out)
{
	json_object *o = json_object_new_object();
	char real[PATH_MAX], root[PATH_MAX + 16], ver[64];
	if (!o)
		return -ENOMEM;
	if (!realpath(drive, real))
		snprintf(real, sizeof real, "%s", drive);
	snprintf(root, sizeof root, "%s/labbox", real);
	worker_version(ver);
	struct stat st;
	bool exists = stat(real, &st) == 0 && S_ISDIR(st.st_mode);
	json_object_object_add(o, "drive", json_object_new_string(real));
	json_object_object_add(o, "exists", json_object_new_boolean(exists));
	json_object_object_add(o, "writable", json_object_new_boolean(exists && access(real, W_OK) == 0));
	json_object_object_add(o, "worker_version_of_this_labbox", json_object_new_string(ver));
	/* The worker script there, and whether it is this labbox's. */
	LB_AUTOFREE char *text = NULL;
	size_t len = 0;
	bool present = read_record(root, "labbox_worker.py", (size_t)4 << 20, &text, &len) == 0;
	json_object_object_add(o, "worker_present", json_object_new_boolean(present));
	/* The version of the script there, read as the worker reads its own: its PROTOCOL line
	 * and the hash of its bytes. */
	const char *pl = present ? strstr(text, "\nPROTOCOL = ") : NULL;
	char there[64];
	if (pl)
		version_of(text, len, atoi(pl + 12), there);
	json_object_object_add(o, "worker_version", pl ? json_object_new_string(there) : NULL);
	json_object_object_add(o, "worker_current",
			       json_object_new_boolean(present && len == sizeof worker_py &&
						       memcmp(text, worker_py, len) == 0));
	/* The newest heartbeat of any worker (workers/W.json). */
	json_object *best = NULL;
	char wdir[PATH_MAX + 32];
	snprintf(wdir, sizeof wdir, "%s/workers", root);
	DIR *dd = opendir(wdir);
	double best_mtime = -1;
	size_t nworkers = 0;
	for (struct dirent *e; dd && (e = readdir(dd));) {
		size_t n = strlen(e->d_name);
		if (e->d_name[0] == '.' || n < 6 || strcmp(e->d_name + n - 5, ".json") != 0)
			continue;
		LB_AUTOFREE char *wt = NULL;
		size_t wl = 0;
		struct stat ws;
		if (fstatat(dirfd(dd), e->d_name, &ws, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(ws.st_mode) ||
		    lb_read_file_at(dirfd(dd), e->d_name, RECORD_MAX, &wt, &wl) < 0)
			continue;
		char err[128];
		json_object *w = parse_record(wt, wl, "labbox.colab.worker/1", err, sizeof err);
		if (!w)
			continue;
		nworkers++;
		double mt = (double)ws.st_mtim.tv_sec + ws.st_mtim.tv_nsec / 1e9;
		if (mt > best_mtime) {
			json_object_put(best);
			best = json_object_new_object();
			static const char *const keys[] = {"worker", "host", "version", "time", "state"};
			for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
				char s[160];
				take_str(w, keys[i], s, sizeof s, false, err, sizeof err);
				json_object_object_add(best, keys[i], s[0] ? json_object_new_string(s) : NULL);
			}
			json_object_object_add(best, "seen_s_ago",
					       json_object_new_double(lb_time_now() - mt));
			best_mtime = mt;
		}
		json_object_put(w);
	}
	if (dd)
		closedir(dd);
	json_object_object_add(o, "workers_seen", json_object_new_int64((int64_t)nworkers));
	json_object_object_add(o, "last_worker_heartbeat", best);
	static const char *const q[] = {"pending", "running", "done"};
	json_object *jobs = json_object_new_object();
	for (size_t i = 0; i < 3; i++) {
		char p[PATH_MAX + 48];
		snprintf(p, sizeof p, "%s/%s", root, q[i]);
		int64_t n = count_entries(p);
		json_object_object_add(jobs, q[i], n < 0 ? NULL : json_object_new_int64(n));
	}
	json_object_object_add(o, "jobs", jobs);
	*out = o;
	return exists ? 0 : -ENOENT;
}
