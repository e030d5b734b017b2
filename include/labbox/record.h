/* record: the run directory, staging, run.log, and the JSON documents a run leaves behind. */
#ifndef LABBOX_RECORD_H
#define LABBOX_RECORD_H

#include "labbox/sandbox.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct json_object;
struct lb_strv;

/* What a plain `labbox run` applies, that a recorded configuration may not silently exceed. */
#define LB_RECORD_GRACE_S 5.0
#define LB_RECORD_LOG_LIMIT ((uint64_t)16 << 20)
#define LB_RECORD_DISK_LIMIT_MAX ((uint64_t)10 << 30)
#define LB_RECORD_SHM_SIZE ((uint64_t)1 << 30)
/* The limits of a recorded configuration (a manifest's config, a sweep's invocation) looser
 * than a plain run's, each pushed onto out as the option that asks for it ("--disk-limit 0",
 * "--grace 1e+09", "--log-limit N", "--shm-size N", "--tmpfs SPEC"): a record this user's
 * labbox did not seal must not take them silently, as it may not take a mount. Returns how
 * many, or -ENOMEM. */
int lb_record_loose_limits(const struct json_object *cfg, struct lb_strv *out);

/* Other runs' records out of sb's sight (src/record/hide.c). Every sandbox that runs code of
 * an experiment's (a run, exec, an interpreter's probe, git's filters) hides them alike.
 * lb_record_hide_known: the user's cache, labbox's state (the seal's key, the known list) and
 * every runs directory this user's labbox has used (each looked at where the sandbox's final
 * view shows it), with the index and sweeps beside each; lb_record_hide_known_in: the same
 * with the cache and state directories given (either may be NULL).
 * lb_record_hide_runs_dir: one runs directory, its index (index_path, and its -wal, -shm,
 * -journal; may be NULL) and the sweeps beside it; make_sweeps makes the sweeps directory when
 * missing, so that a sweep started later does not appear inside the sandbox.
 * 0 or a negative errno (-ENOMEM; a damaged list of known directories hides nothing more). */
int lb_record_hide_known(lb_sandbox *sb);
int lb_record_hide_known_in(lb_sandbox *sb, const char *cache, const char *state);
int lb_record_hide_runs_dir(lb_sandbox *sb, const char *runs_dir, const char *index_path,
			    bool make_sweeps);

/* Create RUNS_DIR (and parents) and a fresh RUNS_DIR/ID with ID = UTC time + random suffix.
 * id must hold 64 bytes; *run_dir is malloc'd and absolute. -EPERM, with why naming the
 * directory, when RUNS_DIR or a directory above it is another user's or open to others
 * without the sticky bit (lb_dir_chain_trusted). */
int lb_record_create_run_dir(const char *runs_dir, char id[64], char **run_dir, char *why,
			     size_t whylen);

/* Whether a relative runs directory (the default .labbox/runs of the working directory, which
 * may be the experiment's own) reaches its records through a symbolic link: a directory on
 * its way, the runs, the index (and its -wal, -shm, -journal) or the sweeps beside them.
 * -ELOOP with the link's path in link; 0 when none is, or runs_dir is absolute (the user's
 * own choice). */
int lb_record_runs_dir_link(const char *runs_dir, char *link, size_t linklen);

/* Copy the experiment directory src into dst (created), recording "relpath": "sha256" of every
 * regular file into files (a json object). Symlinks are copied as symlinks, never followed;
 * FIFOs, sockets and devices are skipped and listed in skipped (a json array, may be NULL).
 * Directories named .git, .labbox and __pycache__ are not staged. When chown_uid is not -1 the
 * staged tree is handed to that uid/gid (the sandbox's). err gets one line on failure. */
int lb_record_stage(const char *src, const char *dst, uid_t chown_uid, gid_t chown_gid,
		    struct json_object *files, struct json_object *skipped, char *err,
		    size_t errlen);
/* lb_record_stage that writes at most limit bytes of data into dst (0: no limit): past it,
 * -EFBIG and err names the file that would pass it. Sparse files stay sparse (only their
 * data is copied; the digest is of the content with its holes read as zeros), and files
 * with several links inside src are staged once and linked again. */
int lb_record_stage_within(const char *src, const char *dst, uid_t chown_uid, gid_t chown_gid,
			   uint64_t limit, struct json_object *files, struct json_object *skipped,
			   char *err, size_t errlen);
/* The same, refusing (-EACCES, err naming both) a link out of the experiment that it would
 * stage as content from a path under, or holding, one of hide (resolved paths --hide keeps
 * out of the experiment's sight). */
int lb_record_stage_hiding(const char *src, const char *dst, uid_t chown_uid, gid_t chown_gid,
			   uint64_t limit, const char *const *hide, size_t nhide,
			   struct json_object *files, struct json_object *skipped, char *err,
			   size_t errlen);
/* The same, staging only the files (and links) that only names by relative path (a json
 * object, a manifest's files; NULL: all), as a rerun repeats what its run had: the others are
 * appended to left_out (a json array, may be NULL), and a directory that held only such files
 * is not staged. */
int lb_record_stage_listed(const char *src, const char *dst, uid_t chown_uid, gid_t chown_gid,
			   uint64_t limit, const char *const *hide, size_t nhide,
			   struct json_object *only, struct json_object *left_out,
			   struct json_object *files, struct json_object *skipped, char *err,
			   size_t errlen);

/* Copy the regular file open as in to out (empty) as staging copies one: only its data, so
 * a sparse file stays sparse, streamed. 0, -EINVAL (not a regular file), -EINTR (labbox was
 * asked to stop) or another negative errno. */
int lb_record_copy_sparse(int in, int out);

/* JSON pieces shared by `run` and `exec`. */
struct json_object *lb_record_isolation_json(const lb_isolation *iso);
struct json_object *lb_record_resources_json(const lb_sandbox_result *res);
/* A JSON number with a fixed number of decimals (seconds are printed as 1.234). */
struct json_object *lb_record_fixed(double v, int decimals);

/* Serialise pretty-printed (two spaces) and write atomically. */
int lb_record_write_json(const char *path, struct json_object *doc);
/* The same without the fsync, for a provisional record that a synced one replaces. */
int lb_record_write_json_nosync(const char *path, struct json_object *doc);

/* The records' seal (mac.c): an HMAC-SHA256 of "DOMAIN\n" and data with this user's record
 * key (domain: what the bytes are, "manifest.json", "sweep.json"), kept in the
 * user's private cache (made on first use; hidden from every run), as 64 hex digits. It tells
 * a record this user's labbox wrote from one that came from elsewhere or was changed since:
 * result.json's manifest_mac is manifest.json's. 0 or a negative errno (no cache directory,
 * a key another user or others could read: -EPERM). */
int lb_record_mac(const char *domain, const void *data, size_t len, char hex[65]);
/* The same of the regular file dir/name (not followed if a link), its domain the name. */
int lb_record_mac_file(const char *dir, const char *name, char hex[65]);
/* Whether dir/name's seal is want (64 hex digits); false on any error. */
bool lb_record_mac_matches(const char *dir, const char *name, const char *want);
/* What a run directory's or sweep document's seal says of it (lb_record_run_seal,
 * lb_record_sweep_seal_of), weakest first. */
typedef enum lb_record_seal {
	LB_SEAL_NONE = 0,	/* no seal of this user's matches: made elsewhere, changed since */
	LB_SEAL_RESULT_CHANGED, /* manifest.json as sealed, result.json not (a run) */
	LB_SEAL_OLD_SCOPE,	/* sealed by a labbox before records were sealed whole: a run's
				 * manifest.json only, a sweep's invocation and plan only */
	LB_SEAL_WHOLE,		/* every record as labbox wrote it */
} lb_record_seal;
/* Whether run_dir holds a run as this user's labbox recorded it: its manifest.json matches
 * the seal result.json carries (manifest_mac), the sealed manifest's id is result.json's
 * and, when id is not NULL, id (an index row naming another run's directory is not that
 * run); and, when the sealed manifest says `result_sealed`, result.json matches its own
 * `result_mac` (lb_record_result_seal). A manifest without `result_sealed` is an older
 * labbox's: LB_SEAL_OLD_SCOPE. */
lb_record_seal lb_record_run_seal(const char *run_dir, const char *id);
/* The same, and at LB_SEAL_WHOLE the parsed result.json that was checked (the caller's to
 * put) in *sealed_result; NULL otherwise. */
lb_record_seal lb_record_run_seal_read(const char *run_dir, const char *id,
				       struct json_object **sealed_result);
/* Why a run directory's record has no seal of this user's (lb_record_run_seal at
 * LB_SEAL_NONE), as far as its files tell: said truthfully rather than all as "made
 * elsewhere". detail gets a clause ("its result.json is not JSON: ... at byte N"). */
typedef enum lb_record_unsealed {
	LB_UNSEALED_FOREIGN = 0, /* a readable record no seal of this user's matches: made
				  * elsewhere, changed since, or older than seals */
	LB_UNSEALED_UNREADABLE,	 /* result.json missing, unreadable, not JSON, not an object */
	LB_UNSEALED_UNFINISHED,	 /* result.json still says "running": its labbox runs it (and
				  * seals it at the end), or was killed before it sealed it */
} lb_record_unsealed;
lb_record_unsealed lb_record_run_unsealed(const char *run_dir, char *detail, size_t len);
/* lb_record_run_seal at LB_SEAL_OLD_SCOPE or better: what `runs list`, `runs show` and
 * `report` mark or refuse; false on any error. */
bool lb_record_run_sealed(const char *run_dir, const char *id);
/* Set result's `result_mac`: the seal of the document without it, as json-c prints a parsed
 * copy (so the file read back gives the same text). Called at every write of a result.json
 * whose manifest carries `result_sealed`. 0 or a negative errno (then no result_mac). */
int lb_record_result_seal(struct json_object *result);
/* The seal of a sweep document (sweep.json): the whole document but its `seal`, as json-c
 * prints a parsed copy. -EINVAL for a document without invocation and plan. */
int lb_record_sweep_seal(struct json_object *doc, char hex[65]);
/* What doc's own `seal` says of it: LB_SEAL_WHOLE, LB_SEAL_OLD_SCOPE (the seal of an older
 * labbox, of invocation and plan only) or LB_SEAL_NONE. */
lb_record_seal lb_record_sweep_seal_of(struct json_object *doc);
/* lb_record_sweep_seal_of(doc) == LB_SEAL_WHOLE. */
bool lb_record_sweep_sealed(struct json_object *doc);
/* doc's text under a temporary name beside path, neither synced nor renamed: *tmp names it,
 * for lb_fsync_all and lb_commit_file (util.h). */
int lb_record_write_json_pending(const char *path, struct json_object *doc, char **tmp);
/* The same serialisation as a string owned by doc. */
const char *lb_record_json_text(struct json_object *doc);
/* The same, indented or as one line (what --json prints into a pipe: a reader pays for every
 * byte, and indentation was a fifth of a large document). */
const char *lb_record_json_text_as(struct json_object *doc, bool indented);

/* {"commit", "branch", "dirty"} of the git repository holding dir, or NULL when it is not in
 * one (or git is not installed). */
struct json_object *lb_record_git_info(const char *dir);

/* run.log: output as the experiment wrote it, capped. The first half of the cap is written as
 * it comes; after that the newest half is kept, and at close a note saying how much was cut
 * is written between the two, so the head and the tail both survive. */
typedef struct lb_runlog lb_runlog;
int lb_runlog_open(const char *path, uint64_t cap, lb_runlog **out);
void lb_runlog_write(lb_runlog *l, const char *data, size_t len);
/* Output of one of two streams (0 stdout, 1 stderr) that run.log interleaves at line
 * boundaries: a stream's unfinished line is held until its newline, so another stream's line
 * is never glued to it. One held LB_RUNLOG_HOLD_S seconds or more (a prompt) is written on a
 * line of its own before the other stream's next line. A held line past LB_RUNLOG_HOLD bytes
 * is written as far as it goes; a line of the other stream then starts on a line of its own
 * after LB_RUNLOG_BREAK. */
void lb_runlog_write_stream(lb_runlog *l, int stream, const char *data, size_t len);
/* Writes the streams' held unfinished lines, each on a line of its own (at their end; close
 * does it too). */
void lb_runlog_end_streams(lb_runlog *l);
#define LB_RUNLOG_HOLD 8192
#define LB_RUNLOG_HOLD_S 1.0
#define LB_RUNLOG_BREAK " [labbox: line unfinished here, continued below]\n"
/* Finish the file; gives total bytes seen, bytes written and whether anything was cut.
 * Returns 0, or the first error of a write, fsync or close (run.log is then not whole: a
 * full disk, say). */
int lb_runlog_close(lb_runlog *l, uint64_t *seen, uint64_t *written, bool *truncated);
/* The same without the fsync, for a caller that syncs run.log with its other records. */
int lb_runlog_close_nosync(lb_runlog *l, uint64_t *seen, uint64_t *written, bool *truncated);
/* The newest bytes a run log keeps for diagnosis (lb_runlog_tail's most). */
#define LB_RUNLOG_RECENT 131072
/* The last lines written (at most max bytes), for diagnosis; a copy owned by the caller. */
char *lb_runlog_tail(const lb_runlog *l, size_t max);
/* The same with its length in *len: output may hold NUL bytes (torch writes one before a
 * traceback), where a C string would end. */
char *lb_runlog_tail_n(const lb_runlog *l, size_t max, size_t *len);

/* Run index: the run history, an SQLite database in WAL mode (default .labbox/labbox.db beside
 * the runs directory). A run is written when it starts and when it ends; a run whose labbox
 * died in between is shown as interrupted, never lost. */
typedef struct lb_index lb_index;

/* The index of a runs directory: RUNS_DIR/../labbox.db. *out is malloc'd. */
int lb_index_path_for(const char *runs_dir, char **out);
/* The runs directories this user's labbox has used that are still there (at most
 * LB_RECORD_KNOWN_MAX, the most recent last; a directory gone since makes room), kept in the
 * user's state directory (lb_record_state_dir) so that every run hides all of them. 1024: a lab's projects and a
 * pipeline's --runs-dir per job stay hidden (64 let the 65th used push a live one out, and
 * its records came into sight of every later run); a known directory costs a start about
 * 20 us only where the sandbox shows it (hide.c).
 * known_dirs: *out is NULL and *n 0 when there is no list yet; free with known_free. note:
 * records runs_dir (made absolute, resolved) as the most recent. 0 or negative errno. */
#define LB_RECORD_KNOWN_MAX 1024
/* The files of the records' own state: the seal's key (mac.c) and the known runs directories. */
#define LB_RECORD_KEY_FILE "record.key"
#define LB_RECORD_KNOWN_FILE "runs-dirs"
/* lb_user_state_dir, with what an older labbox kept in the user's cache (the key, the known
 * runs directories) taken over when the state has none: so that a record sealed before still
 * verifies. NULL when there is no state directory. Free it. */
char *lb_record_state_dir(void);
int lb_record_known_dirs(const char *state_dir, char ***out, size_t *n);
void lb_record_known_free(char **v, size_t n);
int lb_record_known_note(const char *state_dir, const char *runs_dir);
/* Whether path (resolved) lies among labbox's own records: in runs_dir or a runs directory
 * of the known list, or beside one of them in its index or sweeps directory (the runs
 * directory's parent holds labbox.db and sweeps/). What runs write (a run's exp/) is in
 * there too. Returns the records directory it lies in (into area, of PATH_MAX bytes), or NULL;
 * *rel gets what follows it ("" for the directory itself). runs_dir may be NULL. */
/* Whether program (a name on PATH or a path) lies among labbox's records, or is named
 * through a directory there: a run's exp/ is written by sandboxed code, so such a program is
 * probed in the sandbox, never run on this host. */
bool lb_record_holds_program(const char *state_dir, const char *runs_dir, const char *program);
const char *lb_record_records_area(const char *state_dir, const char *runs_dir, const char *path,
				   char *area, const char **rel);
/* Whether a command's output named path (a file or directory, there or still to be made)
 * would be written over labbox's records: in a records area (lb_record_records_area), over a
 * directory holding runs_dir, or in labbox's state or the user's cache. Returns the
 * directory it lies in (into area, of PATH_MAX bytes) or NULL. runs_dir may be NULL. */
const char *lb_record_output_refused(const char *state_dir, const char *runs_dir, const char *path,
				     char *area);
/* Open (creating the file and schema when missing). err gets one line on failure. */
int lb_index_open(const char *path, lb_index **out, char *err, size_t errlen);
/* Every commit into the database file and the WAL emptied (closing does not checkpoint:
 * commits are durable at the next automatic checkpoint, or here). */
void lb_index_checkpoint(lb_index *ix);
void lb_index_close(lb_index *ix);
/* A process of its own that holds the index open while many runs come and go (a sweep's
 * cells): each run's connection then finds the WAL's shared index ready instead of rebuilding
 * it, and, not being the last, leaves the checkpoint (and its syncs) to the keeper's close at
 * stop. A keeper that cannot open the index changes nothing: the runs do as without one. */
typedef struct lb_index_keeper {
	pid_t pid;
	int fd;
} lb_index_keeper;
int lb_index_keeper_start(const char *path, lb_index_keeper *k);
void lb_index_keeper_stop(lb_index_keeper *k);

int lb_index_run_started(lb_index *ix, const char *id, const char *run_dir, const char *expdir,
			 const char *started_at);
/* From the final result.json document: status, codes, times, resources and every metric. */
int lb_index_run_finished(lb_index *ix, struct json_object *result);
/* The run is a cell of a sweep: sweep is {id, cell, condition, params, seed} (the cell's
 * tag); kept in the sweep_runs table, shown in rows as `sweep`. */
int lb_index_tag_sweep(lb_index *ix, const char *run_id, struct json_object *sweep);

typedef struct lb_index_filter {
	const char *status; /* NULL: any */
	const char *metric; /* "name" (present), or "name<op>value" with op one of < <= > >= = != */
	const char *since;  /* ISO-8601 prefix compared as text: "2026-11-29" */
	const char *until;
	long limit;         /* 0: no limit */
	const char *sweep;  /* only the cells of this sweep (its whole id: resolve a prefix with
			     * lb_sweep_resolve first); NULL: any */
} lb_index_filter;

/* Rows newest first: [{id, status, started_at, ended_at, wall_s, expdir, run_dir, exit_code,
 * labbox_exit_code, sweep: {id, cell, condition, params, seed} or null, metrics: {"cond/name"
 * or "name": value}}]. -EINVAL with err for a bad
 * filter. */
int lb_index_list(lb_index *ix, const lb_index_filter *f, struct json_object **rows, char *err,
		  size_t errlen);
/* One row by id or unique id prefix; -ENOENT when absent, -EEXIST when ambiguous. */
int lb_index_get(lb_index *ix, const char *id, struct json_object **row);
/* Whether an index row says what the run's result.json says (status, end, exit codes, wall
 * time, sweep tag, every metric): the row that result would make, written by the same code
 * into a private in-memory index and read back, against row. The index is outside the
 * seal: a sealed record whose row disagrees has had its row changed. 0 with *agrees set, or
 * a negative errno (nothing could be compared). */
int lb_index_row_agrees(struct json_object *row, struct json_object *result, bool *agrees);
/* The index as the sealed records say it, for one connection: a copy of its rows (TEMP
 * tables, which unqualified names mean from then on) in which rows[i] is rebuilt from
 * results[i], its sealed result.json, as lb_index_row_agrees rebuilds it. lb_index_list then
 * filters and lists the copy; the file is not written. overlay_end drops the copy. 0 or a
 * negative errno (-EIO: an index whose tables are not the schema's; nothing is overlaid). */
int lb_index_overlay(lb_index *ix, struct json_object *const *rows,
		     struct json_object *const *results, size_t n);
void lb_index_overlay_end(lb_index *ix);

/* Exports of the run history (src/record/export.c; layouts in docs/export.md). runs is an array
 * of index rows as lb_index_list returns them; each run's result.json, manifest.json,
 * environment.txt and run.log are read from its run_dir (never through a symlink). Runs are
 * exported oldest first. exported, when not NULL, is a json array that gets one object per
 * row: {"id", "path", ...} or {"id", "skipped": reason}, with "warnings": [lines]. A run that
 * cannot be read is skipped; failing to write into dir is an error: a negative errno with one
 * line in err. */
/* MLflow's FileStore layout: DIR/<experiment_id>/meta.yaml and DIR/<experiment_id>/<run_uuid>/
 * (meta.yaml, metrics/, params/, tags/, artifacts/). Exporting a run again rewrites it in place. */
int lb_export_mlflow(const char *dir, struct json_object *runs, struct json_object *exported,
		     char *err, size_t errlen);
/* Sacred's FileStorageObserver layout: DIR/<n>/ (config.json, run.json, metrics.json, info.json,
 * cout.txt) and DIR/_sources/. A run exported before (found by its labbox id in
 * DIR/<n>/info.json) is rewritten in its own <n>; a new one takes the next free number. */
int lb_export_sacred(const char *dir, struct json_object *runs, struct json_object *exported,
		     char *err, size_t errlen);

/* Pure pieces of the exports, public for their tests. */
struct lb_buf;
/* MLflow run id of a labbox run: the first 32 hex digits of sha256(id), so that exporting the
 * same run again finds the same directory. */
void lb_export_run_uuid(const char *labbox_id, char out[33]);
/* MLflow's RunStatus number (RUNNING 1, FINISHED 3, FAILED 4, KILLED 5) of a labbox status. */
int lb_export_mlflow_status(const char *status);
/* Sacred's status name (RUNNING, COMPLETED, FAILED, INTERRUPTED, TIMEOUT) of a labbox status. */
const char *lb_export_sacred_status(const char *status);
/* Append s to b as one YAML scalar that a YAML loader reads back as the same string: plain
 * when that is unambiguous, else single- or double-quoted with escapes (newlines, quotes,
 * control characters, invalid UTF-8 as \xNN). */
int lb_export_yaml_string(struct lb_buf *b, const char *s);
/* Python's repr() of a float, as MLflow writes metric values: 0.5, 1e-05, 3.0, nan, inf. */
void lb_export_py_float(double v, char out[32]);
/* A metric, param or tag key MLflow accepts: characters outside [A-Za-z0-9_ ./-] become '_',
 * empty, "." and ".." path components are replaced, at most 250 bytes. Returns 1 when the name
 * had to change, 0 when not, -ENOSPC when outlen is too small. */
int lb_export_mlflow_key(const char *name, char *out, size_t outlen);
/* file:// URI of an absolute path, percent-encoded as Python's pathlib does. */
int lb_export_file_uri(const char *abs_path, struct lb_buf *out);
/* Milliseconds since the epoch of a UTC ISO-8601 time (2026-11-29T22:19:36.123Z). */
int lb_export_iso_ms(const char *iso, int64_t *ms);
/* MD5 in hex, as Sacred names stored sources: <stem>_<md5><ext>. */
void lb_export_md5_hex(const void *data, size_t len, char out[33]);

/* Machine and source-tree records for manifest.json (src/record/sysinfo.c). */

/* {"os": PRETTY_NAME of /etc/os-release (else /usr/lib/os-release),
 *  "kernel": uname release, "kernel_version": uname version, "arch": uname machine,
 *  "cpu": {"model": first model line of /proc/cpuinfo, "count": processors listed there,
 *          "available": CPUs this process may run on (affinity)},
 *  "memory_total_bytes": MemTotal of /proc/meminfo,
 *  "gpus": [{"name", "memory_total_bytes", "driver_version"}] from `nvidia-smi
 *          --query-gpu=name,memory.total,driver_version --format=csv,noheader` (run with
 *          lb_capture, no shell), [] when nvidia-smi is not installed,
 *  "gpus_error": "..." only when nvidia-smi is installed but fails}.
 * What cannot be read is null. NULL only when out of memory. Note that lb_capture has no
 * timeout: a wedged driver can make nvidia-smi hang. */
struct json_object *lb_record_machine_json(void);
/* The same, with the files read under root ("" for the real ones) and nvidia_smi as the
 * program to run (NULL: nvidia-smi on PATH); for tests. */
struct json_object *lb_record_machine_json_at(const char *root, const char *nvidia_smi);

/* The uncommitted changes of the experiment: `git diff HEAD -- .` run in dir (paths relative
 * to the repository's root, so `git apply` there reproduces the tree; untracked files are not
 * in it, the manifest's sha256 list has them). Returns NULL when dir is not in a git work tree
 * with a commit, or git is missing or fails; else
 *   {"diff": text (valid UTF-8, at most max bytes, cut on a character boundary),
 *    "bytes": bytes kept, "truncated": whether the diff was longer}.
 * External diff drivers, textconv and fsmonitor are switched off. This runs git on a
 * repository the experiment's author controls: labbox calls it only inside the sandbox
 * (lb_record_git_start). */
struct json_object *lb_record_git_diff(const char *dir, size_t max);

/* Both of the above, read by a child process while the run goes on: the state recorded is
 * the one the code was staged from (an edit during a long run does not leak into it), and
 * the git commands cost the run no time. git runs inside a sandbox of its own (no network,
 * the host read-only, the homes hidden, the repository bound read-only), so whatever the
 * repository makes git run (filters, fsmonitor, hooks, in any config scope, include or nested
 * repository) cannot touch the host, and sees no more than the run (view; the records of
 * other runs hidden alike). The repository is the one holding dir (GIT_DIR is not honoured:
 * the sandbox's environment is clean); a .git file of the experiment's own that names a git
 * directory outside it is followed only when that directory names the experiment back (a
 * worktree's or a submodule's), else the record says why it was not. Status and diff read
 * the work tree as it is: every untracked file, and a copy of the index without its
 * assume-unchanged and skip-worktree flags. No child is started when neither dir nor
 * any directory above it has a .git entry. A repository git could not read is
 * {"commit": null, "error": "why"}.
 * start returns 0 (job->pid is 0 when nothing was started) or a negative errno; collect
 * always reaps the child and gives NULL for what could not be read. */
/* A child process computing one JSON document while the run goes on (src/record/job.c).
 * start runs fn(arg) in a child that ignores the terminal's signals, leaves its process group,
 * dies with labbox and runs nice_inc lower, and sends the document fn returns; collect reads
 * it for at most wait_s seconds (0: only what is there; < 0: until the child ends), then kills
 * a late child and
 * sets *late (may be NULL), always reaps it, and returns the document or NULL. */
typedef struct lb_record_job {
	int pid;
	int fd;
} lb_record_job;
int lb_record_job_start(lb_record_job *job, struct json_object *(*fn)(void *arg), void *arg,
			int nice_inc);
struct json_object *lb_record_job_collect(lb_record_job *job, double wait_s, bool *late);

typedef lb_record_job lb_record_git_job;
/* What git's sandbox hides besides what every sandbox does (lb_record_hide_known): the run's
 * runs directory (with its index and sweeps; relative to the working directory, as the run
 * names it; may be NULL) and the paths of --hide. */
typedef struct lb_record_git_view {
	const char *runs_dir;
	const char *const *hide;
	size_t nhide;
	/* The run's limits, which git's sandbox gets too (a repository's filters are code the
	 * experiment chose); NULL: none. */
	const lb_sandbox_limits *limits;
	/* dir was named by a record this user's labbox did not seal, not by the user: a .git
	 * above it (file or directory) is no repository of the user's and is not followed (the
	 * record says why); a .git file at dir is followed as the experiment's own is. */
	bool origin_untrusted;
} lb_record_git_view;
int lb_record_git_start(const char *dir, const lb_record_git_view *view, size_t diff_max,
			lb_record_git_job *job);
void lb_record_git_collect(lb_record_git_job *job, struct json_object **info,
			   struct json_object **diff);

/* Fingerprints of mounted data (src/record/datafp.c). Content is hashed up to these bounds
 * (both must hold); beyond them the digest is of paths, sizes and mtimes, with a note. */
#define LB_DATA_CONTENT_MAX_BYTES ((uint64_t)256 << 20)
#define LB_DATA_CONTENT_MAX_FILES 10000

/* {"kind": "tree"|"file", "files", "bytes", "method": "content"|"metadata", "digest":
 * "sha256:HEX", ["note"]} of path: sha256 over every entry in sorted order (depth first,
 * symbolic links not followed but their targets hashed), each entry its type, relative path
 * and size, then the sha256 of its content when the tree holds at most max_files regular files
 * and max_bytes bytes, else its mtime. At most 200000 entries are walked. {"error": why} when
 * path cannot be opened; NULL when out of memory. */
struct json_object *lb_record_tree_fingerprint(const char *path, uint64_t max_bytes,
					       size_t max_files);

/* The fingerprints of -v volumes ("SRC:DST[:ro|rw]" strings, a json array), computed by a
 * child process while the run goes on (the data as it was when the run started; a volume the
 * run writes into may be caught mid-write). start returns 0 (job->pid 0 when there is nothing
 * to do) or a negative errno; collect waits at most wait_s for the child (then kills it), and
 * gives a json array of {source, destination, mode, and lb_record_tree_fingerprint's fields},
 * or {"error": why}, or NULL when nothing was started. */
typedef lb_record_job lb_record_data_job;
int lb_record_data_start(struct json_object *volumes, lb_record_data_job *job);
void lb_record_data_collect(lb_record_data_job *job, double wait_s, struct json_object **out);

/* A run's summary (src/record/summary.c), shared by `labbox run`'s terminal summary and the MCP
 * tools' text. lb_summary_ending: how the run ended, from a labbox.run/1 or explain document:
 * "exit N", or, with a null exit_code, what ended it ("ended by the time budget (signal 15,
 * SIGTERM); no exit status"): never a number the experiment did not exit with.
 * lb_summary_details: lines, each starting with indent, for the results files' values (the
 * first 20), stale files, progress-line values, partial results, metric issues, findings and
 * diagnosis warnings. lb_summary_value: a metric's value as the summary shows it. */
void lb_summary_ending(struct json_object *doc, char *out, size_t len);
void lb_summary_details(FILE *f, struct json_object *doc, const char *indent);
void lb_summary_value(FILE *f, struct json_object *v);

#endif
