/* diskfs: exp/ on a file system of its own, sized to the disk limit (diskfs.c). */
#ifndef LABBOX_SANDBOX_DISKFS_H
#define LABBOX_SANDBOX_DISKFS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

typedef struct lb_diskfs {
	char mountpoint[PATH_MAX]; /* exp/ */
	char image[PATH_MAX];      /* exp.img beside it */
	char device[32];           /* the loop device, while mounted */
	int host_fd;               /* the staged tree the mount covers */
	int lock_fd;               /* the image, locked while this labbox holds it */
	bool mounted;
	uint64_t limit;            /* bytes of data the file system holds */
	uint64_t room;             /* of which the staged tree left free */
	uint64_t allocated0;       /* bytes the image held on the host when the run began */
	struct timespec t_mount;   /* coarse realtime when the run's writes could begin */
	struct diskfs_map *staged; /* the staged files' inodes in the image, by path */
	ino_t lost_found, reserve; /* the file system's own: never merged, wherever moved */
	int signal;                /* SIGINT/SIGTERM/SIGHUP that came during the merge, or 0 */
} lb_diskfs;

/* Whether this process can give exp/ a file system of its own; why not, when it cannot. */
bool lb_diskfs_available(char *why, size_t len);

/* Makes an ext4 image of dir's staged tree (limit bytes of data, inodes files), owned by
 * uid:gid at its root, and mounts it over dir. */
int lb_diskfs_setup(lb_diskfs *fs, const char *dir, uint64_t limit, uint64_t inodes, uid_t uid,
		    gid_t gid, char *err, size_t errlen);

/* True when the file system is full (bytes or inodes); detail says which. final: the tree has
 * ended; whether it was ever full is asked too. */
bool lb_diskfs_full(const lb_diskfs *fs, bool final, char *detail, size_t len);

/* Once the run has ended: merges what it changed into the staged tree, unmounts, removes
 * the image. On failure, or when the merge is still going at until (monotonic; 0: no
 * bound), the image is kept with what was not merged, and err names it. */
int lb_diskfs_finish(lb_diskfs *fs, double until, char *err, size_t errlen);

/* Unmounts and removes without merging (setup failed before the run). */
void lb_diskfs_abandon(lb_diskfs *fs);

/* Brings back the exp/ of runs under runs_dir whose labbox died while its file system was
 * mounted (their image is not locked any more): merged into the staged tree, unmounted,
 * removed. Returns how many were brought back. */
int lb_diskfs_reap(const char *runs_dir);

#endif
