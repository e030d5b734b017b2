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

#endif
