/* util: small shared helpers (cleanup attributes, buffers, files, time, hashing, parsing of
 * sizes and durations). Nothing domain-specific lives here. Functions return 0 or a negative
 * errno unless documented otherwise. */
#ifndef LABBOX_UTIL_H
#define LABBOX_UTIL_H

#include <dirent.h>
#include <stdarg.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Cleanup helpers: a variable declared with one of these is released on every return path. */
void lb_freep(void *p);
void lb_closep(int *fd);
void lb_fclosep(FILE **f);
#define LB_AUTOFREE __attribute__((cleanup(lb_freep)))
#define LB_AUTOCLOSE __attribute__((cleanup(lb_closep)))
#define LB_AUTOFCLOSE __attribute__((cleanup(lb_fclosep)))

/* Hand ownership out of a cleanup variable. */
static inline void *lb_steal_ptr(void *pp)
{
	void **p = pp;
	void *v = *p;
	*p = NULL;
	return v;
}
static inline int lb_steal_fd(int *fd)
{
	int v = *fd;
	*fd = -1;
	return v;
}

/* Growable byte buffer, always NUL-terminated when data != NULL. */
typedef struct lb_buf {
	char *data;
	size_t len;
	size_t cap;
} lb_buf;
int lb_buf_append(lb_buf *b, const void *data, size_t len);
int lb_buf_puts(lb_buf *b, const char *s);
int lb_buf_printf(lb_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void lb_buf_free(lb_buf *b);

/* I/O that retries on EINTR and short counts. */
/* A NULL-terminated vector of strings it owns: command lines built an argument at a time. */
typedef struct lb_strv {
	char **v;
	size_t n, cap;
} lb_strv;
int lb_strv_push(lb_strv *s, const char *x);
int lb_strv_pushf(lb_strv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void lb_strv_free(lb_strv *s);

int lb_write_all(int fd, const void *data, size_t len);
/* Read a whole regular file (refusing symlinks, FIFOs and devices) of at most max bytes.
 * -EFBIG when larger, -ELOOP for a symlink, -EINVAL for a non-regular file. */
int lb_read_file_at(int dirfd, const char *path, size_t max, char **out, size_t *len);
/* A regular file at rel under dir, with no symbolic link anywhere on the way and nothing
 * above dir (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), opened without waiting (a FIFO
 * is -EINVAL, not a hang): for files a run could have changed. The descriptor, or negative
 * errno. read_file_beneath reads it as lb_read_file_at does. */
int lb_open_file_beneath(const char *dir, const char *rel);
int lb_read_file_beneath(const char *dir, const char *rel, size_t max, char **out, size_t *len);
/* Whether rel is a plain relative path, as staging names an experiment's files: not empty,
 * not absolute, no empty, `.` or `..` component, no trailing slash, each component shorter
 * than NAME_MAX + 1 and the whole shorter than PATH_MAX. Names a record brings (a manifest's
 * file list) are taken only when they are. */
bool lb_rel_path_plain(const char *rel);
/* The directory holding rel beneath dirfd, walked one component at a time with O_NOFOLLOW
 * (a symlink on the way is -ELOOP or -ENOTDIR, never followed); with make, a missing
 * directory on the way is made (mode 0755, before the umask). rel must be plain
 * (lb_rel_path_plain; -EINVAL otherwise). Returns the directory's fd with *base pointing into
 * rel at the last component, or negative errno. */
int lb_open_parent_beneath(int dirfd, const char *rel, bool make, const char **base);
/* Write through a temporary file and rename, so readers never see half a file. */
int lb_write_file_atomic(const char *path, const void *data, size_t len);
/* A file the user named for output (report -o): a new or regular file is replaced whole, as
 * lb_write_file_atomic does; a link is written through (a link to a regular file replaces
 * that file and stays a link), a device, FIFO or /dev/stdout is written into, never replaced
 * by a file; a directory is -EISDIR. 0 or a negative errno (ENOSPC of /dev/full). */
int lb_write_output_file(const char *path, const void *data, size_t len);
/* An environment variable's name as shells accept it: [A-Za-z_][A-Za-z0-9_]*. */
bool lb_env_name_valid(const char *name);
/* The same with the file's mode (before the umask): 0600 for the run records, which are the
 * user's own (they hold the command line and the environment given to the experiment). */
int lb_write_file_atomic_mode(const char *path, const void *data, size_t len, mode_t mode);
/* The same without the fsync: for a record a later, synced write replaces (readers still
 * never see half a file; a crash of the machine may leave it empty). */
int lb_write_file_atomic_nosync(const char *path, const void *data, size_t len, mode_t mode);
/* The first half of a synced atomic write: the data under PATH.tmp.PID, not yet synced nor
 * renamed; *tmp (malloc'd) names it. lb_fsync_all then lb_commit_file finish it. */
int lb_write_file_pending(const char *path, const void *data, size_t len, mode_t mode, char **tmp);
/* Renames tmp (from lb_write_file_pending) to path, or unlinks it when err < 0; frees tmp. */
int lb_commit_file(char *tmp, const char *path, int err);
/* fsync of every named file (relative to dirfd unless absolute), all at once: a disk takes
 * concurrent syncs together where one after another each waits its own turn. Returns 0 or
 * the first failure's negative errno, with *failed (may be NULL) its index. */
int lb_fsync_all(int dirfd, const char *const *names, size_t n, size_t *failed);
/* A directory stream over fd's directory that leaves fd itself open (it reads a duplicate):
 * for walks that keep using fd with the *at calls. NULL with errno set. */
DIR *lb_dir_stream(int fd);
/* The same over a description of its own (openat "."): a dup() shares fd's offset, so a second
 * listing through fd, or through another dup, would start where the first one ended. */
DIR *lb_dir_stream_own(int fd);
/* mkdir -p: mode is the last directory's; missing ones above it are made 0755. */
int lb_mkdir_p(const char *path, mode_t mode);
/* A directory only this user can change (made 0700 if missing), opened O_DIRECTORY: for
 * caches whose entries labbox trusts. -EPERM when it belongs to someone else or is writable
 * by group or others (an entry planted there must not be believed). Returns the fd. */
int lb_open_private_dir(const char *path);
/* Whether a record labbox reads back and believes (the run index, a sweep's directory) is
 * this user's own: 0 when path is absent, or is a directory (dir) or regular file owned by the
 * effective uid and writable by nobody else; -EPERM otherwise, with why saying what is wrong
 * ("owned by uid 1000", "writable by others", "a symbolic link"); other errors -errno.
 * Symbolic links are not followed. */
int lb_path_own(const char *path, bool dir, char *why, size_t whylen);
/* Whether others may rename or replace what is in dir: writable by its group or others and
 * without the sticky bit (/tmp has it). Its owner is trusted as the user is. */
bool lb_dir_open_to_others(const char *dir);
/* Whether dir, and every directory above it (symbolic links resolved), is owned by root or
 * the effective uid and closed to others unless sticky: the rule of sshd's StrictModes. Where
 * another user owns a directory on the way, or can rename entries in it, they can move the
 * runs away and put a link in their place, and every later write by path lands where they
 * chose. A dir not made yet is judged by its deepest existing part. -EPERM with why naming
 * the directory, its owner or mode; other errors -errno. */
int lb_dir_chain_trusted(const char *dir, char *why, size_t whylen);
/* Where a record kept beside the runs directory (the index, the sweeps) lives: NAME in the
 * runs directory's parent, or, when others may write that parent (/tmp, a group's shared
 * folder), NAME inside the runs directory, which must be the user's own. In a directory others
 * can write, any file SQLite or a sweep looks for could be planted between a check and the
 * open; inside the user's own runs directory nobody else can create anything. Free *out. */
int lb_records_place(const char *runs_dir, const char *name, char **out);
/* NAME in the runs directory's parent, whatever its mode: where lb_records_place put it
 * before, or while the parent was closed to others (records left there are still masked). */
int lb_records_beside(const char *runs_dir, const char *name, char **out);
/* name in dfd replaced by data through a temporary file of this writer's own and rename(), so
 * readers see the old entry or the new one, never a part. No fsync: for caches, whose entries
 * are checked when read. */
int lb_replace_file_at(int dfd, const char *name, const void *data, size_t len);
/* Entries of the user's cache kept per interpreter, named PREFIX-KEY[.EXT] (KEY: 32 hex
 * digits). lb_cache_entry_used marks name (in dfd) as used now, writing only when its mark is
 * hours old; lb_cache_bound_like, after a store of name, removes the least recently used keys
 * of name's prefix (all of a key's files) when there are more than keep of them. 0 or a
 * negative errno (-EINVAL when name is not such a name). */
void lb_cache_entry_used(int dfd, const char *name);
int lb_cache_bound_like(int dfd, const char *name, size_t keep);
/* How many interpreters each kind of those entries is kept for. */
#define LB_CACHE_PER_INTERPRETER_MAX 128
/* $XDG_CACHE_HOME/labbox, else ~/.cache/labbox, made 0700; NULL when there is none (no
 * absolute XDG_CACHE_HOME or HOME, or it cannot be made). Free it. */
char *lb_user_cache_dir(void);
/* $XDG_STATE_HOME/labbox, else ~/.local/state/labbox, made 0700, the same way: what must
 * outlive a cache clean-up (the records' key, the known runs directories). Free it. */
char *lb_user_state_dir(void);
/* Bytes allocated to everything under path (st_blocks), never following symlinks or crossing
 * into other file systems; what cannot be read counts as nothing. */
uint64_t lb_disk_usage(const char *path);
/* The same walk in full: bytes (a file with several names counted once), inodes (files,
 * directories and the rest, each once), and whether the walk saw all of it (false when a
 * directory could not be read, or the tree moved under it). Any depth: the walk keeps a
 * bounded number of descriptors open. 0 or a negative errno for path itself. */
typedef struct lb_disk_measure_t {
	uint64_t bytes;
	uint64_t inodes;
	bool complete;
} lb_disk_measure_t;
int lb_disk_measure(const char *path, lb_disk_measure_t *m);
/* Path of a regular executable file: PATH lookup when name has no slash. */
/* PATH entries that are not absolute (empty, ".", "bin") are skipped: they name the current
 * directory, often the experiment's own. */
int lb_find_executable(const char *name, char **out);

/* Time. */
double lb_time_now(void);       /* wall clock, seconds since the epoch */
double lb_time_monotonic(void); /* monotonic seconds */
/* The clock of the file system dir is on, in ns: the ctime of a file made there now (a
 * file server's clock, where the directory is remote). The wall clock when none can be. */
int64_t lb_fs_now_ns(const char *dir);
void lb_time_iso8601(double t, char out[40]); /* UTC, e.g. 2026-11-29T22:19:36.123Z */

/* Whether path is dir or lies under it, by its spelling (no symlink is resolved); an empty
 * or NULL dir holds nothing. */
bool lb_path_under(const char *path, const char *dir);
/* Whether path is absolute with no "." or ".." part: a place inside the sandbox is joined to
 * its new root by spelling, where a ".." would climb out of it onto the host's file system. */
bool lb_path_plain(const char *path);
/* The signals a supervising process reads itself through a signalfd (a stop: SIGINT, SIGTERM,
 * SIGHUP; and SIGCHLD), blocked into mask; what was blocked before into oldmask. */
void lb_block_stop_signals(sigset_t *mask, sigset_t *oldmask);
/* The directories labbox processes name PREFIX-PID-XXXXXX (mkdtemp's six characters) in dir,
 * this user's own, whose process PID is gone (killed before it could remove its own): each
 * is passed to gone, with dir's descriptor, its name and its path. */
void lb_stale_pid_dirs(const char *dir, const char *prefix,
		       void (*gone)(int dfd, const char *name, const char *path, void *ctx), void *ctx);
/* Whether path (absolute, as spelled) is the root or lies under /proc, /sys or /dev: the
 * places every sandbox builds itself, which no volume, tmpfs or hide may replace. */
bool lb_path_sandbox_own(const char *path);
/* Whether uid/gid (with no supplementary groups: the sandbox's payload has none) may write
 * the file st describes by its permission bits alone: the owner's, else the group's, else
 * the others' class decides, as the kernel does; a directory also needs search (x) to
 * create in it. ACLs and capabilities are not read. */
bool lb_mode_lets_write(const struct stat *st, uid_t uid, gid_t gid);
/* realpath(3) with the target's stat: 0, or -errno as realpath fails (-ENOENT: absent).
 * A path already spelt canonically (absolute, no `.`, `..`, `//` or trailing slash) is
 * checked in one openat2 walk that refuses symlinks, not a readlink per component: every
 * run masks each runs directory this user's labbox has used, and realpath was most of the
 * supervisor's own system calls. A symlink on the way takes realpath's own path. */
int lb_realpath_stat(const char *path, char real[PATH_MAX], struct stat *st);
/* One directory opened once, so that the names in it resolve as lb_realpath_stat would, each
 * in one fstatat rather than a walk from the root: the records beside a runs directory are
 * six names in one directory, for every runs directory this user's labbox has used. fd is -1
 * where dir is not spelt canonically or has a symlink on the way: lookups then take
 * lb_realpath_stat's own path. */
typedef struct lb_realdir {
	char path[PATH_MAX];
	int fd;
} lb_realdir;
void lb_realdir_open(lb_realdir *d, const char *dir);
void lb_realdir_close(lb_realdir *d);
/* lb_realpath_stat(path), answered from d when path is a name in d's directory (NULL d:
 * always lb_realpath_stat). */
int lb_realpath_stat_in(lb_realdir *d, const char *path, char real[PATH_MAX], struct stat *st);
/* Whether the program python names (a path, or a name on PATH) is dir's: the file resolved,
 * or any directory on the way to it as it is named (a venv's bin/ or bin/python links out of
 * it, and the interpreter reads the pyvenv.cfg beside its name and one level up). */
bool lb_program_inside(const char *python, const char *dir);

/* SHA-256. */
typedef struct lb_sha256 {
	uint32_t h[8];
	uint64_t nbytes;
	uint8_t block[64];
	size_t fill;
} lb_sha256;
void lb_sha256_init(lb_sha256 *c);
void lb_sha256_update(lb_sha256 *c, const void *data, size_t len);
void lb_sha256_final(lb_sha256 *c, uint8_t out[32]);
void lb_sha256_hex(const uint8_t digest[32], char out[65]);
/* A fast checksum (256 bits) of labbox's own files, against damage on the disk, not
 * against anyone (util/checksum.c); sha256 names content. */
typedef struct lb_checksum {
	uint64_t v[4];
	uint64_t n;
	uint8_t buf[32];
	size_t fill;
} lb_checksum;
void lb_checksum_init(lb_checksum *c);
void lb_checksum_update(lb_checksum *c, const void *data, size_t len);
void lb_checksum_final(lb_checksum *c, uint8_t out[32]);
/* The hex sha256 of len bytes at data. */
void lb_sha256_buf_hex(const void *data, size_t len, char hex[65]);
/* The hex sha256 of what fd reads from where it stands to its end: 0 or a negative errno. */
int lb_sha256_fd(int fd, char hex[65]);

/* "4g", "512m", "1.5G", "1024" (bytes), "64k": binary units as docker reads them. */
int lb_parse_size(const char *s, uint64_t *out);
/* A positive finite number of seconds ("3", "2.5"). */
int lb_parse_seconds(const char *s, double *out);
/* A non-negative decimal integer that fits in a long. */
int lb_parse_long(const char *s, long *out);

/* Length of the valid UTF-8 sequence at s (RFC 3629: no overlongs, no surrogates, nothing
 * above U+10FFFF; len > 0), or 0 when it is not one. */
size_t lb_utf8_seq_len(const unsigned char *s, size_t len);
/* The code point of a valid UTF-8 sequence of k bytes (lb_utf8_seq_len's). */
unsigned lb_utf8_code_point(const unsigned char *u, size_t k);
/* A character that is invisible and changes how text is shown or makes two names look alike
 * (bidirectional controls, zero-width characters, variation selectors, tags...): shown to a
 * person as \uXXXX. */
bool lb_unicode_format_char(unsigned cp);
/* text appended to out with each such character as \uXXXX; the rest as it is. */
int lb_text_show_format_chars(const char *text, size_t len, lb_buf *out);

/* An experiment's output made safe to echo on the user's terminal: text (valid UTF-8), \n \r
 * \t \b and the CSI sequences of colour, line erasure and cursor moves (m K A B C D G) pass;
 * every other control byte (ESC of any other sequence, OSC, DCS, C1 controls, BEL, bytes that
 * are not UTF-8) is appended shown as the four characters \xNN, so what it started is plain
 * text. Moves up stop at the echo's first line. A sequence cut between two calls is held in st
 * until the next; final flushes what is held, then resets any attribute left on and puts the
 * cursor below the lowest line the output reached. st starts zeroed. 0, or -ENOMEM. */
typedef struct lb_term_filter_state {
	unsigned char hold[32];
	size_t held;
	unsigned row, rows; /* the cursor's line and the lowest line reached, from the first */
	bool sgr; /* a colour or attribute is on */
} lb_term_filter_state;
int lb_term_filter(lb_term_filter_state *st, const char *data, size_t len, bool final,
		   lb_buf *out);

/* JSON text made valid UTF-8 without losing a byte: each byte that is not part of a valid
 * sequence becomes the escape \udcXX (XX its value), as Python's surrogateescape decodes it,
 * so os.fsencode(json.loads(text)[...]) gives the original bytes back; and each C1 control
 * (U+0080..U+009F: CSI, OSC and DCS in one character to some terminals, which json-c writes
 * as they are) becomes \u0080..\u009f, the same character. Only for text that json-c
 * serialised: there such bytes can only be inside strings. Returns 1 when out holds an escaped
 * copy, 0 when there was nothing to escape (out untouched), or a negative errno. */
int lb_json_escape_invalid_utf8(const char *text, size_t len, lb_buf *out);

/* Text made valid UTF-8 for a reader that refuses anything else (strict JSON parsers refuse
 * \udcXX, which is no character): each byte that is not part of a valid sequence becomes
 * U+FFFD. For JSON text json-c serialised (such bytes are only inside strings). Returns 1
 * when out holds the copy (out->len its length, without the NUL), 0 when text was valid
 * already (out untouched), or -ENOMEM. */
int lb_utf8_replace_invalid(const char *text, size_t len, lb_buf *out);

/* Bytes that may not be UTF-8 appended as text for a reader: each valid sequence as it is,
 * each other byte as the four characters \xNN (as lb_term_filter shows them), at most max
 * bytes appended, never a character or an escape cut in two. Returns how many of the len
 * input bytes were taken (fewer when max stopped it), or -ENOMEM. */
long lb_utf8_show(lb_buf *out, const char *text, size_t len, size_t max);

/* Text from an experiment (a metric name or value, a file name, a message) appended for a
 * line-oriented view, where it must stay one piece of one line: \n and \r as those two
 * characters, every other control byte (\v \f ESC BEL...) and DEL, each byte that is not
 * UTF-8, and C1 controls (U+0085 among them) as \xNN, the invisible characters of
 * lb_unicode_format_char (U+2028 and U+2029, the bidirectional controls) as \uXXXX; \t and
 * the rest as they are. At most max bytes appended, never an escape or a character cut in
 * two. Returns how many of the len input bytes were taken, or -ENOMEM. */
long lb_text_show(lb_buf *out, const char *text, size_t len, size_t max);
/* printf into b for such a view: the format's own text as it is (its newlines are labbox's),
 * each %s and %c argument through lb_text_show, so no argument can begin a line. Takes the
 * conversions of C17 printf but %n; 0, -ENOMEM or -EINVAL (a conversion it does not know). */
int lb_show_vprintf(lb_buf *b, const char *fmt, va_list ap);
int lb_show_printf(lb_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same onto f; 0 or a negative errno. */
int lb_show_fprintf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* len less a character cut short at the end (a lead byte whose sequence runs past len): the
 * length to keep of text that was cut at a byte count. */
size_t lb_utf8_whole_len(const char *text, size_t len);

/* Random hex string of n bytes (2n characters + NUL in out). */
int lb_random_hex(char *out, size_t nbytes);

/* Run argv (no shell) with stdout captured into out (at most max bytes) and stderr discarded
 * or merged; returns 0 and the wait status in *status, or a negative errno. */
int lb_capture(char *const argv[], size_t max, bool merge_stderr, lb_buf *out, int *status);
/* The same with a bound: a child (and what it started, its process group) still running
 * after seconds, or when labbox is interrupted, is killed and -ETIMEDOUT (-EINTR) returned.
 * For the host children whose answer labbox waits on before a run (an interpreter's probe,
 * its package list): a hung interpreter must not hang labbox past any budget. */
int lb_capture_bounded(char *const argv[], size_t max, bool merge_stderr, double seconds,
		       lb_buf *out, int *status);

/* Interruption (SIGINT, SIGTERM, SIGHUP) of a command that runs something: the commands
 * that run (run, exec, sweep) install labbox's handler first thing, so that a signal
 * which comes before the experiment starts (during the check, a probe, staging) is
 * remembered instead of killing labbox unrecorded or being taken by a helper sandbox's
 * supervisor. Every step that would start something asks lb_interrupt_pending first. */
int lb_interrupt_install(void);
/* The signal that interrupted labbox (the first one), or 0: one the handler caught, one a
 * sandbox's supervisor read (lb_interrupt_note), or one pending while blocked. */
int lb_interrupt_pending(void);
/* A supervisor that read sig from its signalfd took it from everyone else: noted here. Only
 * once lb_interrupt_install ran (a command without it keeps the old meaning). */
void lb_interrupt_note(int sig);
/* The signal labbox's handler caught or a supervisor noted, or 0; never a blocked one. */
int lb_interrupt_caught(void);
/* After a loop blocked the signals and opened its signalfd: an interruption that came
 * before is raised again, so that the loop reads it as if it had come just then. */
void lb_interrupt_rearm(void);

#endif
