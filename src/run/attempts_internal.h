/* run: what attempts.c (the loop) needs from repair.c (the repair command, the copies of the
 * experiment, their diffs). Private to the run module. */
#ifndef LABBOX_RUN_ATTEMPTS_INTERNAL_H
#define LABBOX_RUN_ATTEMPTS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* snprintf for paths and messages built from run directories, which run.c keeps under
 * PATH_MAX: a cut message is still a message. Returns what snprintf returns. */
int run_fmt(char *out, size_t n, const char *f, ...) __attribute__((format(printf, 3, 4)));

/* cmd.log keeps this much of the repair command's output (head and tail, as run.log). */
#define REPAIR_LOG_CAP ((uint64_t)1 << 20)
/* Between SIGTERM and SIGKILL of a repair command past its time. */
#define REPAIR_GRACE_S 2.0

typedef struct repair_cmd_result {
	int exit_code;	   /* its exit status; -1 when a signal ended it */
	int signal;	   /* the signal that ended it, else 0 */
	bool timed_out;	   /* labbox ended it at its time limit */
	double duration_s;
	uint64_t log_bytes; /* output seen; cmd.log holds at most REPAIR_LOG_CAP of it */
	bool log_truncated;
} repair_cmd_result;

/* Run `sh -c CMD` on the host as this user in cwd, beneath a keeper process (a child
 * subreaper) that holds its whole tree, stdin from stdin_path, stdout and stderr into log_path
 * (capped), with env_extra (NAME=VALUE strings, NULL-terminated) added to labbox's
 * environment; the whole tree, what left the command's process group or session included, is
 * ended (SIGTERM, REPAIR_GRACE_S, SIGKILL) at timeout seconds or when labbox dies, and whatever
 * it left running is killed when the command itself exits. 0 with res filled, or a negative
 * errno when it could not be started. */
int repair_run_cmd(const char *cmd, const char *cwd, const char *stdin_path,
		   char *const *env_extra, double timeout, const char *log_path,
		   repair_cmd_result *res, char *err, size_t errlen);
/* Copy an experiment as staging does (no .git, .labbox, __pycache__) into dst (created). */
int repair_copy(const char *src, const char *dst, char *err, size_t errlen);
/* `diff -ruN` of old and new (as a/ and b/) into patch_path; *changed whether they differ.
 * Negative errno, err set, when diff could not run or said it was in trouble. */
int repair_diff(const char *old_dir, const char *new_dir, const char *patch_path, bool *changed,
		char *err, size_t errlen);
/* Make dst what final is where it differs from base (the copy dst was taken as): files that
 * final adds or changes are written into dst, files base had and final lacks are removed from
 * dst. Other files of dst (its .git, say) are left alone. *nchanged counts the paths touched. */
int repair_apply(const char *base, const char *final, const char *dst, size_t *nchanged,
		 char *err, size_t errlen);
/* rm -r that never follows a symbolic link; 0 when path is gone. */
int repair_remove_tree(const char *path);

#endif
