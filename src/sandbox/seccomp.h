/* seccomp filter of the sandbox (internal). */
#ifndef LABBOX_SANDBOX_SECCOMP_H
#define LABBOX_SANDBOX_SECCOMP_H

#include <seccomp.h>
#include <stdbool.h>
#include <stddef.h>

/* Build the filter; allow_network keeps sockets of every family; disk_limited answers
 * fallocate with EOPNOTSUPP; no_memfd refuses memfd_create (EPERM). */
int lb_seccomp_build(scmp_filter_ctx *out, bool allow_network, bool disk_limited,
		     bool no_memfd, char *err, size_t errlen);
/* Load it into the calling thread (no_new_privs must be set). */
int lb_seccomp_load(scmp_filter_ctx ctx);
void lb_seccomp_free(scmp_filter_ctx ctx);
/* Write the compiled BPF program to fd (a memfd), so it can be built while the sandbox is
 * being set up and loaded later with one prctl. */
int lb_seccomp_export(scmp_filter_ctx ctx, int fd);
/* Load a program written by lb_seccomp_export (no_new_privs must be set). */
int lb_seccomp_load_bpf(int fd);

#endif
