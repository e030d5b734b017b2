/* Run index in SQLite (WAL): written at the start and at the end of every run.
 *
 * Liveness: a run row keeps the pid and the kernel start time of the labbox that ran it. A
 * row still "running" whose labbox no longer exists (or whose pid now belongs to another
 * process) is turned into "interrupted" the next time the index is read. */
#include "labbox/collect.h"
#include "labbox/record.h"
#include "labbox/util.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* About a hundred runs' rows (a run writes 10-20 pages): the WAL stays under 400 KiB. */
#define INDEX_WAL_PAGES "100"

struct lb_index {
	sqlite3 *db;
};

static const char schema[] =
	"CREATE TABLE IF NOT EXISTS runs ("
	"  id TEXT PRIMARY KEY,"
	"  run_dir TEXT NOT NULL,"
	"  expdir TEXT,"
	"  status TEXT NOT NULL,"
	"  started_at TEXT,"
	"  ended_at TEXT,"
	"  exit_code INTEGER,"
	"  labbox_exit_code INTEGER,"
	"  wall_s REAL,"
	"  labbox_pid INTEGER,"
	"  labbox_start INTEGER"
	");"
	"CREATE TABLE IF NOT EXISTS metrics ("
	"  run_id TEXT NOT NULL REFERENCES runs(id),"
	"  condition TEXT NOT NULL DEFAULT '',"
	"  name TEXT NOT NULL,"
	"  value REAL,"
	"  text TEXT,"
	"  PRIMARY KEY (run_id, condition, name)"
	");"
	/* Values of results files (final_info.json, results.json, results.csv) by dotted path
	 * inside their file; a table of their own, so that the same path in two files, or a
	 * stdout metric of the same name, never overwrites another. */
	"CREATE TABLE IF NOT EXISTS file_metrics ("
	"  run_id TEXT NOT NULL REFERENCES runs(id),"
	"  file TEXT NOT NULL,"
	"  name TEXT NOT NULL,"
	"  value REAL,"
	"  text TEXT,"
	"  PRIMARY KEY (run_id, file, name)"
	");"
	"CREATE INDEX IF NOT EXISTS runs_started ON runs(started_at);"
	/* Cells of sweeps: a table of their own, so an index made before sweeps existed gets
	 * it by CREATE IF NOT EXISTS, with no migration of the runs table. */
	"CREATE TABLE IF NOT EXISTS sweep_runs ("
	"  run_id TEXT PRIMARY KEY REFERENCES runs(id),"
	"  sweep_id TEXT NOT NULL,"
	"  cell INTEGER,"
	"  condition TEXT,"
	"  params TEXT,"
	"  seed INTEGER"
	");"
	"CREATE INDEX IF NOT EXISTS sweep_runs_sweep ON sweep_runs(sweep_id);";

/* Results-file values indexed per run: enough for any summary of means and stderrs, bounded
 * for a results.json that holds a whole training log (result.json keeps everything). */
#define INDEX_FILE_VALUES_MAX 2000

/* Kernel start time (clock ticks since boot) of pid, 0 when it does not exist. */
static unsigned long long proc_start(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* Field 22; the command name (field 2) may hold spaces, so count from its ')'. */
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	int field = 2;
	for (; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	return strtoull(p, NULL, 10);
}

int lb_index_path_for(const char *runs_dir, char **out)
{
	return lb_records_place(runs_dir, "labbox.db", out);
}

/* Another user's file in the index's place (a runs directory under /tmp puts the index in
 * /tmp) would get this user's records to read, and give back runs it made up: the database
 * and the files SQLite keeps beside it must be this user's own, or none, in a directory where
 * nobody else can replace them (its own, or one with the sticky bit, as /tmp). */
static int index_own(const char *path, char *err, size_t errlen)
{
	char p[PATH_MAX], why[64];
	const char *problem = NULL;
	snprintf(p, sizeof p, "%s", path);
	char *slash = strrchr(p, '/');
	if (slash)
		*(slash == p ? slash + 1 : slash) = '\0';
	if (lb_dir_open_to_others(slash ? p : "."))
		problem = "its directory is writable by others";
	static const char *const sides[] = {"", "-wal", "-shm", "-journal"};
	for (size_t i = 0; !problem && i < sizeof sides / sizeof *sides; i++) {
		if (snprintf(p, sizeof p, "%s%s", path, sides[i]) >= (int)sizeof p)
			return -ENAMETOOLONG;
		int r = lb_path_own(p, false, why, sizeof why);
		if (r == -EPERM)
			problem = why;
		else if (r < 0) {
			snprintf(err, errlen, "cannot open the run index %s: %s", p, strerror(-r));
			return r;
		}
	}
	if (!problem)
		return 0;
	snprintf(err, errlen, "the run index %s is not this user's own (%s): its records could "
		 "be read or made up by another user; remove it, or choose --runs-dir in a "
		 "directory of your own", p, problem);
	return -EPERM;
}

int lb_record_runs_dir_link(const char *runs_dir, char *link, size_t linklen)
{
	if (!runs_dir || runs_dir[0] == '/')
		return 0;
	LB_AUTOFREE char *index = NULL;
	if (lb_index_path_for(runs_dir, &index) < 0)
		return -ENOMEM;
	/* Every directory on the way to the runs, the runs, the index and its side files, and
	 * the sweeps beside the runs. */
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s", runs_dir);
	size_t n = strlen(p);
	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0';
	const char *side[] = {"", "-wal", "-shm", "-journal"};
	char extra[6][PATH_MAX];
	size_t ne = 0;
	for (size_t i = 0; i < 4; i++)
		snprintf(extra[ne++], PATH_MAX, "%s%s", index, side[i]);
	LB_AUTOFREE char *sweeps = NULL;
	if (lb_records_place(runs_dir, "sweeps", &sweeps) < 0)
		return -ENOMEM;
	snprintf(extra[ne++], PATH_MAX, "%s", sweeps);
	for (char *c = p;; c++) {
		if (*c != '/' && *c != '\0')
			continue;
		char keep = *c;
		*c = '\0';
		struct stat st;
		if (*p && lstat(p, &st) == 0 && S_ISLNK(st.st_mode)) {
			snprintf(link, linklen, "%s", p);
			return -ELOOP;
		}
		*c = keep;
		if (!keep)
			break;
	}
	for (size_t i = 0; i < ne; i++) {
		struct stat st;
		if (lstat(extra[i], &st) == 0 && S_ISLNK(st.st_mode)) {
			snprintf(link, linklen, "%s", extra[i]);
			return -ELOOP;
		}
	}
	return 0;
}

int lb_index_open(const char *path, lb_index **out, char *err, size_t errlen)
{
	int own = index_own(path, err, errlen);
	if (own < 0)
		return own;
	lb_index *ix = calloc(1, sizeof *ix);
	if (!ix)
		return -ENOMEM;
	/* The index is the user's own record (commands, metrics, paths): made 0600, and SQLite
	 * gives its -wal and -shm files the mode of the database. */
	int cfd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (cfd >= 0)
		close(cfd);
	int rc = sqlite3_open_v2(path, &ix->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
	if (rc != SQLITE_OK) {
		/* The reason first: a long path would cut it off. */
		snprintf(err, errlen, "cannot open the run index (%s): %s",
			 ix->db ? sqlite3_errmsg(ix->db) : sqlite3_errstr(rc), path);
		sqlite3_close(ix->db);
		free(ix);
		return -EIO;
	}
	/* The -wal and -shm files are kept when the last connection closes (which still
	 * checkpoints, so what was committed is in the database as before): deleting them cost
	 * every run an unlink at its end and a new WAL with a directory sync at its start.
	 * journal_size_limit makes that last close truncate the kept WAL to nothing: a WAL left
	 * full of checkpointed but valid frames is read whole (a pread per frame, hundreds) by
	 * the next process's first connection, to rebuild its index. */
	/* The index may have come with the experiment (a committed .labbox/): its schema is not
	 * labbox's word. A trigger there would rewrite the user's own rows as they are written
	 * (a run's metrics), a view would stand in for a table; labbox's schema has neither. */
	sqlite3_db_config(ix->db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, (int *)NULL);
	sqlite3_db_config(ix->db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, (int *)NULL);
	sqlite3_db_config(ix->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)NULL);
	sqlite3_db_config(ix->db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL);
	int persist = 1;
	sqlite3_file_control(ix->db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
	/* No checkpoint at every close: it cost each run two syncs (the WAL, the database), and
	 * the next run a third (the new WAL's header), 10-40 ms waited on this machine's disk.
	 * Commits stay in the WAL (synchronous=NORMAL: consistent, durable at the next
	 * checkpoint) and the connection whose commit passes INDEX_WAL_PAGES checkpoints them
	 * all, so the WAL a new process reads whole to rebuild its index stays small. */
	sqlite3_db_config(ix->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
	/* Several labbox processes may write at once (a sweep): wait for the lock. */
	sqlite3_busy_timeout(ix->db, 10000);
	char *msg = NULL;
	/* Switching a new index to WAL takes a lock the busy handler does not always wait for
	 * (two sweep cells opening it at once): a busy answer is tried again, for seconds. */
	for (int attempt = 0;; attempt++) {
		sqlite3_free(msg);
		msg = NULL;
		rc = sqlite3_exec(ix->db,
				  "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
				  " PRAGMA journal_size_limit=1048576;"
				  " PRAGMA wal_autocheckpoint=" INDEX_WAL_PAGES ";",
				  NULL,
				  NULL, &msg);
		if (rc == SQLITE_OK)
			rc = sqlite3_exec(ix->db, schema, NULL, NULL, &msg);
		if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || attempt >= 100)
			break;
		struct timespec pause = {0, 50 * 1000 * 1000};
		nanosleep(&pause, NULL);
	}
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "run index %s: %s", path, msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		sqlite3_close(ix->db);
		free(ix);
		return -EIO;
	}
	/* Again, now that the files are open: one made by another user between the first look
	 * and SQLite's open is theirs, and is refused all the same. */
	own = index_own(path, err, errlen);
	if (own < 0) {
		sqlite3_close(ix->db);
		free(ix);
		return own;
	}
	*out = ix;
	return 0;
}

void lb_index_checkpoint(lb_index *ix)
{
	if (!ix)
		return;
	/* Not behind a reader (another labbox's `runs list`): a WAL that cannot be emptied
	 * now is checkpointed by a later commit, and nobody waits out the busy timeout. */
	sqlite3_busy_timeout(ix->db, 0);
	sqlite3_wal_checkpoint_v2(ix->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	sqlite3_busy_timeout(ix->db, 10000);
}

void lb_index_close(lb_index *ix)
{
	if (!ix)
		return;
	sqlite3_close(ix->db);
	free(ix);
}

/* The keeper: nothing of the caller's but the pipe it waits on (a caller reading labbox's
 * output must not wait for it), and gone with the caller. It goes at a byte on the pipe
 * (stop) or at its end (the caller died): the cells forked after it hold the pipe too, and
 * some of their helpers may outlive them. */
static void keeper_main(const char *path, int rfd)
{
	prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
	signal(SIGINT, SIG_IGN); /* Ctrl-C is the sweep's to handle; the keeper ends with it */
	if (rfd < 3) { /* above the standard descriptors, which are made /dev/null below */
		int moved = fcntl(rfd, F_DUPFD_CLOEXEC, 3);
		if (moved < 0)
			_exit(0);
		rfd = moved;
	}
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd < 3 && nul >= 0; fd++)
		if (fd != nul)
			dup2(nul, fd);
	if (rfd > 3)
		close_range(3, (unsigned)rfd - 1, 0);
	close_range((unsigned)rfd + 1, ~0U, 0);
	lb_index *ix = NULL;
	char err[256];
	if (lb_index_open(path, &ix, err, sizeof err) == 0) {
		char c;
		while (read(rfd, &c, 1) < 0 && errno == EINTR)
			;
		/* The sweep's rows durable, and the WAL empty, at its end. */
		lb_index_checkpoint(ix);
		lb_index_close(ix);
	}
	_exit(0);
}

int lb_index_keeper_start(const char *path, lb_index_keeper *k)
{
	k->pid = -1;
	k->fd = -1;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid == 0) {
		close(p[1]);
		keeper_main(path, p[0]);
	}
	close(p[0]);
	k->pid = pid;
	k->fd = p[1];
	return 0;
}

void lb_index_keeper_stop(lb_index_keeper *k)
{
	if (k->fd >= 0) {
		while (write(k->fd, "x", 1) < 0 && errno == EINTR)
			;
		close(k->fd);
	}
	k->fd = -1;
	if (k->pid > 0)
		while (waitpid(k->pid, NULL, 0) < 0 && errno == EINTR)
			;
	k->pid = -1;
}

int lb_index_run_started(lb_index *ix, const char *id, const char *run_dir, const char *expdir,
			 const char *started_at)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(ix->db,
				    "INSERT OR REPLACE INTO runs (id, run_dir, expdir, status, started_at,"
				    " labbox_pid, labbox_start) VALUES (?, ?, ?, 'running', ?, ?, ?)",
				    -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 2, run_dir, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 3, expdir, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 4, started_at, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 5, getpid());
		sqlite3_bind_int64(st, 6, (sqlite3_int64)proc_start(getpid()));
		rc = sqlite3_step(st);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

int lb_index_tag_sweep(lb_index *ix, const char *run_id, json_object *sweep)
{
	json_object *id, *cell, *cond, *params, *seed;
	if (!json_object_object_get_ex(sweep, "id", &id) || !id)
		return -EINVAL;
	json_object_object_get_ex(sweep, "cell", &cell);
	json_object_object_get_ex(sweep, "condition", &cond);
	json_object_object_get_ex(sweep, "params", &params);
	json_object_object_get_ex(sweep, "seed", &seed);
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(ix->db,
				    "INSERT OR REPLACE INTO sweep_runs (run_id, sweep_id, cell, condition,"
				    " params, seed) VALUES (?, ?, ?, ?, ?, ?)",
				    -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, run_id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 2, json_object_get_string(id), -1, SQLITE_TRANSIENT);
		if (cell)
			sqlite3_bind_int64(st, 3, json_object_get_int64(cell));
		if (cond)
			sqlite3_bind_text(st, 4, json_object_get_string(cond), -1, SQLITE_TRANSIENT);
		if (params)
			sqlite3_bind_text(st, 5,
					  json_object_to_json_string_ext(params, JSON_C_TO_STRING_PLAIN),
					  -1, SQLITE_TRANSIENT);
		if (seed)
			sqlite3_bind_int64(st, 6, json_object_get_int64(seed));
		rc = sqlite3_step(st);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

static const char *str_field(json_object *o, const char *key)
{
	json_object *v;
	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v)
		       : NULL;
}

static void bind_int_or_null(sqlite3_stmt *st, int col, json_object *o, const char *key)
{
	json_object *v;
	if (json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_int))
		sqlite3_bind_int64(st, col, json_object_get_int64(v));
	else
		sqlite3_bind_null(st, col);
}

/* An integer a double cannot hold exactly. */
static bool wide_int(json_object *v)
{
	if (!json_object_is_type(v, json_type_int))
		return false;
	int64_t i = json_object_get_int64(v);
	return i == INT64_MAX || i >= ((int64_t)1 << 53) || i <= -((int64_t)1 << 53);
}

static json_object *column_json(sqlite3_stmt *st, int col);

/* A metric's value as stored: a number, a wide integer's digits beside its double, or text. */
static json_object *metric_json(sqlite3_stmt *st, int value_col, int text_col)
{
	if (sqlite3_column_type(st, value_col) != SQLITE_FLOAT)
		return column_json(st, text_col);
	const char *t = (const char *)sqlite3_column_text(st, text_col);
	if (t && *t) {
		char *end;
		errno = 0;
		if (*t == '-') {
			long long i = strtoll(t, &end, 10);
			if (!errno && !*end)
				return json_object_new_int64(i);
		} else {
			unsigned long long u = strtoull(t, &end, 10);
			if (!errno && !*end)
				return u > INT64_MAX ? json_object_new_uint64(u)
						     : json_object_new_int64((int64_t)u);
		}
	}
	return lb_json_number(sqlite3_column_double(st, value_col));
}

static int insert_metric(sqlite3_stmt *st, const char *run_id, const char *cond, const char *name,
			 json_object *v)
{
	sqlite3_reset(st);
	sqlite3_bind_text(st, 1, run_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, cond, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 3, name, -1, SQLITE_TRANSIENT);
	if (json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)) {
		sqlite3_bind_double(st, 4, json_object_get_double(v));
		/* The REAL column rounds integers past 2^53 (checksums, hashes, counts) to one
		 * double: their digits are kept beside it, and read back and compared as the
		 * integer (wide_int). */
		if (wide_int(v))
			sqlite3_bind_text(st, 5, json_object_get_string(v), -1, SQLITE_TRANSIENT);
		else
			sqlite3_bind_null(st, 5);
	} else {
		/* Strings, and the "NaN"/"Infinity" spellings of non-finite numbers, are kept as
		 * text: SQLite has no NaN, and a NULL value keeps them out of comparisons. */
		sqlite3_bind_null(st, 4);
		sqlite3_bind_text(st, 5, json_object_get_string(v), -1, SQLITE_TRANSIENT);
	}
	return sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
}

int lb_index_run_finished(lb_index *ix, json_object *result)
{
	const char *id = str_field(result, "id");
	if (!id)
		return -EINVAL;
	int r = 0;
	if (sqlite3_exec(ix->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(ix->db,
				    "UPDATE runs SET status = ?, ended_at = ?, exit_code = ?,"
				    " labbox_exit_code = ?, wall_s = ? WHERE id = ?",
				    -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, str_field(result, "status"), -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 2, str_field(result, "ended_at"), -1, SQLITE_TRANSIENT);
		bind_int_or_null(st, 3, result, "exit_code");
		bind_int_or_null(st, 4, result, "labbox_exit_code");
		json_object *res, *w;
		if (json_object_object_get_ex(result, "resources", &res) &&
		    json_object_object_get_ex(res, "wall_s", &w))
			sqlite3_bind_double(st, 5, json_object_get_double(w));
		else
			sqlite3_bind_null(st, 5);
		sqlite3_bind_text(st, 6, id, -1, SQLITE_TRANSIENT);
		rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (rc != SQLITE_OK)
		r = -EIO;
	json_object *metrics = NULL;
	if (r == 0 && json_object_object_get_ex(result, "metrics", &metrics) &&
	    sqlite3_prepare_v2(ix->db,
			       "INSERT OR REPLACE INTO metrics (run_id, condition, name, value, text)"
			       " VALUES (?, ?, ?, ?, ?)",
			       -1, &st, NULL) == SQLITE_OK) {
		json_object *vals, *conds;
		if (json_object_object_get_ex(metrics, "values", &vals)) {
			json_object_object_foreach(vals, k, v)
			{
				if (r == 0 && v)
					r = insert_metric(st, id, "", k, v);
			}
		}
		if (json_object_object_get_ex(metrics, "conditions", &conds)) {
			json_object_object_foreach(conds, c, group)
			{
				json_object_object_foreach(group, k, v)
				{
					if (r == 0 && v)
						r = insert_metric(st, id, c, k, v);
				}
			}
		}
	}
	sqlite3_finalize(st);
	st = NULL;
	json_object *files = NULL;
	if (r == 0 && metrics && json_object_object_get_ex(metrics, "files", &files) && files &&
	    sqlite3_prepare_v2(ix->db,
			       "INSERT OR REPLACE INTO file_metrics (run_id, file, name, value, text)"
			       " VALUES (?, ?, ?, ?, ?)",
			       -1, &st, NULL) == SQLITE_OK) {
		size_t left = INDEX_FILE_VALUES_MAX;
		json_object_object_foreach(files, fname, fdoc)
		{
			json_object *flat = json_object_new_object();
			if (!flat || lb_results_flatten(fdoc, LB_FLATTEN_ARRAY_MAX, false, left, flat,
							NULL) < 0)
				r = -ENOMEM;
			json_object_object_foreach(flat, k, v)
			{
				if (r == 0 && v)
					r = insert_metric(st, id, fname, k, v);
			}
			left -= (size_t)json_object_object_length(flat);
			json_object_put(flat);
		}
	}
	sqlite3_finalize(st);
	if (sqlite3_exec(ix->db, r == 0 ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK)
		r = -EIO;
	return r;
}

/* Runs left "running" by a labbox that is gone are interrupted. */
static void reap_stale(lb_index *ix)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(ix->db,
			       "SELECT id, labbox_pid, labbox_start FROM runs WHERE status = 'running'",
			       -1, &st, NULL) != SQLITE_OK)
		return;
	char **stale = NULL;
	size_t n = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		pid_t pid = (pid_t)sqlite3_column_int64(st, 1);
		unsigned long long start = (unsigned long long)sqlite3_column_int64(st, 2);
		if (pid > 0 && proc_start(pid) == start && start != 0)
			continue; /* its labbox is still working on it */
		char **ns = realloc(stale, (n + 1) * sizeof *ns);
		if (!ns)
			break;
		stale = ns;
		stale[n] = strdup((const char *)sqlite3_column_text(st, 0));
		if (stale[n])
			n++;
	}
	sqlite3_finalize(st);
	for (size_t i = 0; i < n; i++) {
		if (sqlite3_prepare_v2(ix->db,
				       "UPDATE runs SET status = 'interrupted' WHERE id = ?"
				       " AND status = 'running'",
				       -1, &st, NULL) == SQLITE_OK) {
			sqlite3_bind_text(st, 1, stale[i], -1, SQLITE_TRANSIENT);
			sqlite3_step(st);
		}
		sqlite3_finalize(st);
		free(stale[i]);
	}
	free(stale);
}

static json_object *column_json(sqlite3_stmt *st, int col)
{
	switch (sqlite3_column_type(st, col)) {
	case SQLITE_INTEGER:
		return json_object_new_int64(sqlite3_column_int64(st, col));
	case SQLITE_FLOAT:
		return lb_record_fixed(sqlite3_column_double(st, col), 3);
	case SQLITE_TEXT:
		return json_object_new_string((const char *)sqlite3_column_text(st, col));
	default:
		return NULL;
	}
}

static void add_metrics(lb_index *ix, json_object *row, const char *id)
{
	json_object *m = json_object_new_object();
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(ix->db,
			       "SELECT condition, name, value, text FROM metrics WHERE run_id = ?"
			       " ORDER BY rowid",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
		while (sqlite3_step(st) == SQLITE_ROW) {
			const char *cond = (const char *)sqlite3_column_text(st, 0);
			const char *name = (const char *)sqlite3_column_text(st, 1);
			char key[600];
			snprintf(key, sizeof key, "%s%s%s", cond && *cond ? cond : "",
				 cond && *cond ? "/" : "", name);
			json_object *v = metric_json(st, 2, 3);
			json_object_object_add(m, key, v);
		}
	}
	sqlite3_finalize(st);
	st = NULL;
	/* Results-file values under their dotted path ("shakespeare_char.means.val_loss"), the
	 * same key for run_0/final_info.json and run_1/final_info.json so that runs compare;
	 * one that a stdout metric or an earlier file already has is "FILE:path". */
	if (sqlite3_prepare_v2(ix->db,
			       "SELECT file, name, value, text FROM file_metrics WHERE run_id = ?"
			       " ORDER BY rowid",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
		while (sqlite3_step(st) == SQLITE_ROW) {
			const char *file = (const char *)sqlite3_column_text(st, 0);
			const char *name = (const char *)sqlite3_column_text(st, 1);
			char key[2200];
			if (!file || !name)
				continue;
			if (json_object_object_get_ex(m, name, NULL))
				snprintf(key, sizeof key, "%s:%s", file, name);
			else
				snprintf(key, sizeof key, "%s", name);
			json_object *v = metric_json(st, 2, 3);
			json_object_object_add(m, key, v);
		}
	}
	sqlite3_finalize(st);
	json_object_object_add(row, "metrics", m);
}

static const char row_cols[] =
	"SELECT id, status, started_at, ended_at, wall_s, expdir, run_dir, exit_code,"
	" labbox_exit_code, sweep_id, cell, sweep_runs.condition, params, seed FROM runs"
	" LEFT JOIN sweep_runs ON sweep_runs.run_id = runs.id";

static json_object *row_json(lb_index *ix, sqlite3_stmt *st)
{
	static const char *const names[] = {"id",      "status",  "started_at",
					    "ended_at", "wall_s", "expdir",
					    "run_dir", "exit_code", "labbox_exit_code"};
	json_object *row = json_object_new_object();
	for (int i = 0; i < 9; i++)
		json_object_object_add(row, names[i], column_json(st, i));
	json_object *sweep = NULL;
	if (sqlite3_column_type(st, 9) == SQLITE_TEXT) {
		sweep = json_object_new_object();
		json_object_object_add(sweep, "id", column_json(st, 9));
		json_object_object_add(sweep, "cell", column_json(st, 10));
		json_object_object_add(sweep, "condition", column_json(st, 11));
		const char *params = (const char *)sqlite3_column_text(st, 12);
		json_object_object_add(sweep, "params", params ? json_tokener_parse(params) : NULL);
		json_object_object_add(sweep, "seed", column_json(st, 13));
	}
	json_object_object_add(row, "sweep", sweep);
	add_metrics(ix, row, (const char *)sqlite3_column_text(st, 0));
	return row;
}

/* "name<op>value" -> SQL condition on the metrics table. */
static int metric_clause(const char *spec, char *name, size_t nlen, const char **op, double *value)
{
	static const char *const ops[] = {"<=", ">=", "!=", "<", ">", "="};
	const char *at = NULL;
	*op = NULL;
	for (const char *p = spec; *p && !at; p++)
		for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
			if (strncmp(p, ops[i], strlen(ops[i])) == 0) {
				at = p;
				*op = ops[i];
				break;
			}
	size_t len = at ? (size_t)(at - spec) : strlen(spec);
	if (len == 0 || len >= nlen)
		return -EINVAL;
	memcpy(name, spec, len);
	name[len] = '\0';
	if (!at)
		return 0;
	const char *num = at + strlen(*op);
	char *end;
	*value = strtod(num, &end);
	if (end == num || *end || !isfinite(*value))
		return -EINVAL;
	return 0;
}

int lb_index_list(lb_index *ix, const lb_index_filter *f, json_object **rows, char *err,
		  size_t errlen)
{
	reap_stale(ix);
	lb_buf sql = {0};
	lb_buf_puts(&sql, row_cols);
	lb_buf_puts(&sql, " WHERE 1");
	char mname[2200] = "";
	const char *op = NULL;
	double mval = 0;
	if (f->metric) {
		if (metric_clause(f->metric, mname, sizeof mname, &op, &mval) < 0) {
			snprintf(err, errlen,
				 "--metric '%s' is not NAME or NAME<op>NUMBER (op: < <= > >= = !=)",
				 f->metric);
			lb_buf_free(&sql);
			return -EINVAL;
		}
		/* A "cond/name" matches one condition; a bare name matches any. A results-file
		 * value is matched by its dotted path ("ds.means.val_loss", in any file) or as
		 * "FILE:path" in one file. */
		/* A wide integer compares as its digits say (CAST gives the 64-bit integer). */
		char cmp[160] = "";
		if (op)
			snprintf(cmp, sizeof cmp,
				 " AND (CASE WHEN text IS NOT NULL AND value IS NOT NULL THEN"
				 " CAST(text AS INTEGER) ELSE value END) %s ?2", op);
		lb_buf_printf(&sql, " AND (id IN (SELECT run_id FROM metrics WHERE"
				    " (name = ?1 OR condition || '/' || name = ?1)%s)"
				    " OR id IN (SELECT run_id FROM file_metrics WHERE"
				    " (name = ?1 OR file || ':' || name = ?1)%s))",
			      cmp, cmp);
	}
	if (f->status)
		lb_buf_puts(&sql, " AND status = ?3");
	if (f->since)
		lb_buf_puts(&sql, " AND started_at >= ?4");
	if (f->until)
		lb_buf_puts(&sql, " AND started_at < ?5");
	if (f->sweep)
		lb_buf_puts(&sql, " AND sweep_id = ?6");
	lb_buf_puts(&sql, " ORDER BY started_at DESC, runs.rowid DESC");
	if (f->limit > 0)
		lb_buf_printf(&sql, " LIMIT %ld", f->limit);
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(ix->db, sql.data, -1, &st, NULL);
	lb_buf_free(&sql);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "run index query failed: %s", sqlite3_errmsg(ix->db));
		return -EIO;
	}
	if (f->metric) {
		sqlite3_bind_text(st, 1, mname, -1, SQLITE_TRANSIENT);
		/* An integer asked for is compared as one: 2^53+1 is not 2^53. */
		const char *num = op ? strstr(f->metric, op) + strlen(op) : NULL;
		char *end;
		errno = 0;
		long long ival = num ? strtoll(num, &end, 10) : 0;
		if (op && !errno && end != num && !*end)
			sqlite3_bind_int64(st, 2, ival);
		else if (op)
			sqlite3_bind_double(st, 2, mval);
	}
	if (f->status)
		sqlite3_bind_text(st, 3, f->status, -1, SQLITE_TRANSIENT);
	if (f->since)
		sqlite3_bind_text(st, 4, f->since, -1, SQLITE_TRANSIENT);
	if (f->until)
		sqlite3_bind_text(st, 5, f->until, -1, SQLITE_TRANSIENT);
	if (f->sweep)
		sqlite3_bind_text(st, 6, f->sweep, -1, SQLITE_TRANSIENT);
	json_object *a = json_object_new_array();
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		json_object_array_add(a, row_json(ix, st));
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		json_object_put(a);
		snprintf(err, errlen, "run index query failed: %s", sqlite3_errmsg(ix->db));
		return -EIO;
	}
	*rows = a;
	return 0;
}

int lb_index_get(lb_index *ix, const char *id, json_object **row)
{
	reap_stale(ix);
	sqlite3_stmt *st = NULL;
	lb_buf sql = {0};
	lb_buf_puts(&sql, row_cols);
	lb_buf_puts(&sql, " WHERE id = ?1 OR substr(id, 1, length(?1)) = ?1 LIMIT 2");
	int rc = sqlite3_prepare_v2(ix->db, sql.data, -1, &st, NULL);
	lb_buf_free(&sql);
	if (rc != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	json_object *found = NULL;
	int r = -ENOENT;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (found) {
			/* An exact match wins over other prefixes. */
			if (strcmp((const char *)sqlite3_column_text(st, 0), id) == 0) {
				json_object_put(found);
				found = row_json(ix, st);
				r = 0;
				break;
			}
			json_object *v;
			if (json_object_object_get_ex(found, "id", &v) &&
			    strcmp(json_object_get_string(v), id) == 0)
				break;
			json_object_put(found);
			found = NULL;
			r = -EEXIST;
			break;
		}
		found = row_json(ix, st);
		r = 0;
	}
	sqlite3_finalize(st);
	if (r == 0)
		*row = found;
	return r;
}

/* Each field the index takes from result.json (started_at: the same instant, printed the
 * same way at the run's start); the seal binds the directory and id; expdir is where the
 * run was started from, which a rerun's manifest does not repeat, and is not checked. */
static const char *const result_fields[] = {"status",	   "ended_at", "exit_code",
					    "labbox_exit_code", "wall_s",  "sweep",
					    "metrics",	   "started_at"};

int lb_index_row_agrees(json_object *row, json_object *result, bool *agrees)
{
	*agrees = false;
	const char *id = str_field(result, "id");
	if (!id || !row)
		return -EINVAL;
	lb_index ix = {0};
	if (sqlite3_open_v2(":memory:", &ix.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
			    NULL) != SQLITE_OK ||
	    sqlite3_exec(ix.db, schema, NULL, NULL, NULL) != SQLITE_OK) {
		sqlite3_close(ix.db);
		return -ENOMEM;
	}
	json_object *sw = NULL, *want = NULL;
	const char *started = str_field(result, "started_at");
	int r = lb_index_run_started(&ix, id, "", "", started ? started : "");
	if (r == 0 && json_object_object_get_ex(result, "sweep", &sw) && sw)
		r = lb_index_tag_sweep(&ix, id, sw);
	if (r == 0)
		r = lb_index_run_finished(&ix, result);
	sqlite3_stmt *st = NULL;
	if (r == 0) {
		lb_buf sql = {0};
		r = lb_buf_printf(&sql, "%s WHERE id = ?1", row_cols) < 0 ? -ENOMEM : -ENOENT;
		if (sql.data && sqlite3_prepare_v2(ix.db, sql.data, -1, &st, NULL) == SQLITE_OK) {
			sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
			if (sqlite3_step(st) == SQLITE_ROW && (want = row_json(&ix, st)))
				r = 0;
		}
		lb_buf_free(&sql);
	}
	sqlite3_finalize(st);
	sqlite3_close(ix.db);
	if (r < 0)
		return r;
	bool same = true;
	for (size_t i = 0; same && i < sizeof result_fields / sizeof *result_fields; i++) {
		json_object *have = json_object_object_get(row, result_fields[i]);
		json_object *should = json_object_object_get(want, result_fields[i]);
		/* A run whose labbox died has a "running" record; the index calls it
		 * interrupted once it finds that labbox gone (reap_stale). */
		if (i == 0 && strcmp(json_object_get_string(should), "running") == 0 &&
		    have && strcmp(json_object_get_string(have), "interrupted") == 0)
			continue;
		if (!started && strcmp(result_fields[i], "started_at") == 0)
			continue; /* a record without one says nothing of it */
		/* As shown: the index keeps the wall time labbox measured, result.json its
		 * millisecond; each is printed to the millisecond (lb_record_fixed). */
		same = strcmp(json_object_to_json_string_ext(have, JSON_C_TO_STRING_PLAIN),
			      json_object_to_json_string_ext(should, JSON_C_TO_STRING_PLAIN)) == 0;
	}
	json_object_put(want);
	*agrees = same;
	return 0;
}

/* The tables a row is made of, as the schema makes them. */
static const char *const row_tables[] = {"runs", "metrics", "file_metrics", "sweep_runs"};

void lb_index_overlay_end(lb_index *ix)
{
	for (size_t i = 0; i < sizeof row_tables / sizeof *row_tables; i++) {
		char sql[64];
		snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS temp.%s", row_tables[i]);
		sqlite3_exec(ix->db, sql, NULL, NULL, NULL);
	}
}

/* The schema's tables made as TEMP ones (its indexes left out): unqualified names then mean
 * them, so lb_index_list and the writers work on the copy, and nothing of the file (nor a
 * trigger planted in it) is touched. */
static int overlay_tables(lb_index *ix)
{
	lb_buf sql = {0};
	for (const char *p = schema; *p;) {
		const char *end = strchr(p, ';');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		static const char make[] = "CREATE TABLE IF NOT EXISTS ";
		if (strncmp(p, make, sizeof make - 1) == 0 &&
		    lb_buf_printf(&sql, "CREATE TEMP TABLE %.*s;", (int)(n - (sizeof make - 1)),
				  p + sizeof make - 1) < 0) {
			lb_buf_free(&sql);
			return -ENOMEM;
		}
		p += n + (end ? 1 : 0);
	}
	for (size_t i = 0; i < sizeof row_tables / sizeof *row_tables; i++)
		if (lb_buf_printf(&sql, "INSERT INTO temp.%s SELECT * FROM main.%s;", row_tables[i],
				  row_tables[i]) < 0) {
			lb_buf_free(&sql);
			return -ENOMEM;
		}
	int rc = sql.data ? sqlite3_exec(ix->db, sql.data, NULL, NULL, NULL) : SQLITE_NOMEM;
	lb_buf_free(&sql);
	return rc == SQLITE_OK ? 0 : -EIO;
}

static int overlay_one(lb_index *ix, json_object *row, json_object *result)
{
	const char *id = str_field(result, "id");
	if (!id)
		return -EINVAL;
	static const char *const del[] = {
		"DELETE FROM temp.metrics WHERE run_id = ?1",
		"DELETE FROM temp.file_metrics WHERE run_id = ?1",
		"DELETE FROM temp.sweep_runs WHERE run_id = ?1",
		"DELETE FROM temp.runs WHERE id = ?1",
	};
	for (size_t i = 0; i < sizeof del / sizeof *del; i++) {
		sqlite3_stmt *st = NULL;
		if (sqlite3_prepare_v2(ix->db, del[i], -1, &st, NULL) != SQLITE_OK)
			return -EIO;
		sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
		int rc = sqlite3_step(st);
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE)
			return -EIO;
	}
	const char *dir = str_field(row, "run_dir"), *expdir = str_field(row, "expdir");
	const char *started = str_field(result, "started_at");
	json_object *sw = NULL;
	int r = lb_index_run_started(ix, id, dir ? dir : "", expdir ? expdir : "",
				     started ? started : "");
	if (r == 0 && json_object_object_get_ex(result, "sweep", &sw) && sw)
		r = lb_index_tag_sweep(ix, id, sw);
	return r == 0 ? lb_index_run_finished(ix, result) : r;
}

int lb_index_overlay(lb_index *ix, json_object *const *rows, json_object *const *results,
		     size_t n)
{
	int r = overlay_tables(ix);
	for (size_t i = 0; r == 0 && i < n; i++)
		r = overlay_one(ix, rows[i], results[i]);
	if (r < 0)
		lb_index_overlay_end(ix);
	return r;
}
