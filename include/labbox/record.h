/* record: the run directory, staging, run.log, and the JSON documents a run leaves behind. */
#ifndef LABBOX_RECORD_H
#define LABBOX_RECORD_H

#include "labbox/sandbox.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct json_object;

/* Create RUNS_DIR (and parents) and a fresh RUNS_DIR/ID with ID = UTC time + random suffix.
 * id must hold 64 bytes; *run_dir is malloc'd and absolute. */
int lb_record_create_run_dir(const char *runs_dir, char id[64], char **run_dir);

/* Copy the experiment directory src into dst (created), recording "relpath": "sha256" of every
 * regular file into files (a json object). Symlinks are copied as symlinks, never followed;
 * FIFOs, sockets and devices are skipped and listed in skipped (a json array, may be NULL).
 * Directories named .git, .labbox and __pycache__ are not staged. When chown_uid is not -1 the
 * staged tree is handed to that uid/gid (the sandbox's). err gets one line on failure. */
int lb_record_stage(const char *src, const char *dst, uid_t chown_uid, gid_t chown_gid,
		    struct json_object *files, struct json_object *skipped, char *err,
		    size_t errlen);

/* JSON pieces shared by `run` and `exec`. */
struct json_object *lb_record_isolation_json(const lb_isolation *iso);
struct json_object *lb_record_resources_json(const lb_sandbox_result *res);
/* A JSON number with a fixed number of decimals (seconds are printed as 1.234). */
struct json_object *lb_record_fixed(double v, int decimals);

/* Serialise pretty-printed (two spaces) and write atomically. */
int lb_record_write_json(const char *path, struct json_object *doc);
/* The same serialisation as a string owned by doc. */
const char *lb_record_json_text(struct json_object *doc);

/* {"commit", "branch", "dirty"} of the git repository holding dir, or NULL when it is not in
 * one (or git is not installed). */
struct json_object *lb_record_git_info(const char *dir);

/* run.log: output as the experiment wrote it, capped. The first half of the cap is written as
 * it comes; after that the newest half is kept, and at close a note saying how much was cut
 * is written between the two, so the head and the tail both survive. */
typedef struct lb_runlog lb_runlog;
int lb_runlog_open(const char *path, uint64_t cap, lb_runlog **out);
void lb_runlog_write(lb_runlog *l, const char *data, size_t len);
/* Finish the file; returns total bytes seen, bytes written and whether anything was cut. */
void lb_runlog_close(lb_runlog *l, uint64_t *seen, uint64_t *written, bool *truncated);
/* The last lines written (at most max bytes), for diagnosis; a copy owned by the caller. */
char *lb_runlog_tail(const lb_runlog *l, size_t max);

/* Run index: the run history, an SQLite database in WAL mode (default .labbox/labbox.db beside
 * the runs directory). A run is written when it starts and when it ends; a run whose labbox
 * died in between is shown as interrupted, never lost. */
typedef struct lb_index lb_index;

/* The index of a runs directory: RUNS_DIR/../labbox.db. *out is malloc'd. */
int lb_index_path_for(const char *runs_dir, char **out);
/* Open (creating the file and schema when missing). err gets one line on failure. */
int lb_index_open(const char *path, lb_index **out, char *err, size_t errlen);
void lb_index_close(lb_index *ix);

int lb_index_run_started(lb_index *ix, const char *id, const char *run_dir, const char *expdir,
			 const char *started_at);
/* From the final result.json document: status, codes, times, resources and every metric. */
int lb_index_run_finished(lb_index *ix, struct json_object *result);

typedef struct lb_index_filter {
	const char *status; /* NULL: any */
	const char *metric; /* "name" (present), or "name<op>value" with op one of < <= > >= = != */
	const char *since;  /* ISO-8601 prefix compared as text: "2026-11-29" */
	const char *until;
	long limit;         /* 0: no limit */
} lb_index_filter;

/* Rows newest first: [{id, status, started_at, ended_at, wall_s, expdir, run_dir, exit_code,
 * labbox_exit_code, metrics: {"cond/name" or "name": value}}]. -EINVAL with err for a bad
 * filter. */
int lb_index_list(lb_index *ix, const lb_index_filter *f, struct json_object **rows, char *err,
		  size_t errlen);
/* One row by id or unique id prefix; -ENOENT when absent, -EEXIST when ambiguous. */
int lb_index_get(lb_index *ix, const char *id, struct json_object **row);

#endif
