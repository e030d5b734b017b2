/* seccomp: deny what experiments never need. Denied calls fail with EPERM, so Python raises
 * a PermissionError the diagnosis can name, instead of the process dying of SIGSYS.
 *
 * The filter is built in the supervisor (allocation and errors stay outside the sandbox) and
 * loaded by the payload as the last step before exec. Calls through another ABI than the
 * native one (i386, x32) all fail with ENOSYS, so the rules cannot be sidestepped there. */
#include "seccomp.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* Calls an experiment has no business making, denied whatever their arguments. */
static const char *const denied[] = {
	/* other processes' memory */
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	/* the file system tree and namespaces */
	"mount", "umount", "umount2", "pivot_root", "chroot", "unshare", "setns",
	"open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	"open_by_handle_at", "quotactl", "quotactl_fd",
	/* the kernel */
	"bpf", "perf_event_open", "kexec_load", "kexec_file_load", "init_module", "finit_module",
	"delete_module", "reboot", "swapon", "swapoff", "acct", "syslog", "iopl", "ioperm",
	"lookup_dcookie", "vhangup", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	/* keyrings */
	"keyctl", "add_key", "request_key",
	/* fault handling other processes can be stalled with */
	"userfaultfd",
	/* io_uring performs socket and file operations this filter would never see */
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	/* rules of the payload's own that a later exec inherits: a Landlock layer or a filter
	 * that fails the interpreter's reading of the runtime gate, which site then passes over
	 * (the exec guard sees the same interpreter, name and environment) */
	"landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self", "seccomp",
};

/* ... and CLONE_UNTRACED, which starts a process or thread the exec guard's trace does not
 * follow (no auto-attach): no program's own use needs it. */
static const unsigned long ns_flags[] = {CLONE_NEWNS,   CLONE_NEWUSER, CLONE_NEWPID,
					  CLONE_NEWNET,  CLONE_NEWIPC,  CLONE_NEWUTS,
					  CLONE_NEWCGROUP, CLONE_NEWTIME, CLONE_UNTRACED};

static int deny_all(scmp_filter_ctx ctx, const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR)
		return 0; /* not a call on these architectures */
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
}

int lb_seccomp_build(scmp_filter_ctx *out, bool allow_network, bool disk_limited,
		     bool no_memfd, char *err, size_t errlen)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r = 0;
	const char *what = "init";
	if (!ctx) {
		snprintf(err, errlen, "seccomp_init failed");
		return -ENOMEM;
	}
	/* A binary tree of syscall numbers instead of a list: the kernel runs the filter for every
	 * syscall number of every architecture when it is loaded (its action cache), so a short
	 * path per number is start-up time saved. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (r < 0) {
		snprintf(err, errlen, "seccomp optimisation: %s", strerror(-r));
		seccomp_release(ctx);
		return r;
	}
	/* Other system-call ABIs (i386's int 0x80, x32 on x86_64) number their calls differently,
	 * so rules written for the native one would not hold there. Research code never uses
	 * them: every call through them fails with ENOSYS. This also keeps the filter to one
	 * architecture, which the kernel evaluates much faster when it is loaded. */
	if (r == 0) {
		what = "other architectures";
		r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(ENOSYS));
	}
	for (size_t i = 0; r == 0 && i < sizeof denied / sizeof *denied; i++) {
		what = denied[i];
		r = deny_all(ctx, denied[i]);
	}
	/* New namespaces through clone(): flags are the first argument (on x86_64; libseccomp
	 * places it for each architecture). clone3 passes flags in memory a filter cannot read,
	 * so it reports ENOSYS and the C library falls back to clone. */
	for (size_t i = 0; r == 0 && i < sizeof ns_flags / sizeof *ns_flags; i++) {
		what = "clone";
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
	}
	if (r == 0) {
		what = "clone3";
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	}
	/* ... and a filter through prctl, as through seccomp() */
	if (r == 0) {
		what = "prctl";
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prctl), 1,
				     SCMP_A0(SCMP_CMP_EQ, PR_SET_SECCOMP));
	}
	/* Another process's limits: a process the exec guard has let through, lowered from
	 * outside while its interpreter reads the runtime gate, fails that read (too many open
	 * files), and site passes over a sitecustomize it could not read. A process's own
	 * limits (setrlimit is prlimit64 on pid 0) stay its own to set; reading another's is
	 * fine. */
	if (r == 0) {
		what = "prlimit64";
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prlimit64), 2,
				     SCMP_A0(SCMP_CMP_NE, 0), SCMP_A2(SCMP_CMP_NE, 0));
	}
	/* Changing the execution domain (READ_IMPLIES_EXEC and friends); querying it is fine. */
	if (r == 0) {
		what = "personality";
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), 1,
				     SCMP_A0(SCMP_CMP_NE, 0xffffffffUL));
	}
	/* Typing into a terminal or poking the console; the kernel reads the command as 32 bits,
	 * so the high half of the argument must not hide it. */
	static const unsigned long tty_cmds[] = {TIOCSTI, TIOCLINUX};
	for (size_t i = 0; r == 0 && i < 2; i++) {
		what = "ioctl";
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, tty_cmds[i]));
	}
	/* Set-user-ID and set-group-ID bits: the run's files stay on the host after the run,
	 * where they are not on a nosuid mount. Which argument holds the mode: */
	static const struct {
		const char *name;
		unsigned arg;
	} mode_calls[] = {{"chmod", 1},	 {"fchmod", 1},	 {"fchmodat", 2}, {"fchmodat2", 2},
			  {"creat", 1},	 {"open", 2},	 {"openat", 3},	  {"mknod", 1},
			  {"mknodat", 2}};
	static const unsigned long id_bits[] = {S_ISUID, S_ISGID};
	for (size_t i = 0; r == 0 && i < sizeof mode_calls / sizeof *mode_calls; i++) {
		int nr = seccomp_syscall_resolve_name(mode_calls[i].name);
		if (nr == __NR_SCMP_ERROR)
			continue;
		what = mode_calls[i].name;
		for (size_t b = 0; r == 0 && b < 2; b++) {
			struct scmp_arg_cmp cmp = {mode_calls[i].arg, SCMP_CMP_MASKED_EQ, id_bits[b],
						   id_bits[b]};
			r = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &cmp);
		}
	}
	/* openat2 passes its mode in memory the filter cannot read; the C library falls back. */
	if (r == 0 && seccomp_syscall_resolve_name("openat2") != __NR_SCMP_ERROR) {
		what = "openat2";
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), seccomp_syscall_resolve_name("openat2"),
				     0);
	}
	/* vsock reaches the hypervisor, whatever the network namespace. */
	if (r == 0 && allow_network) {
		what = "socket";
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
				     SCMP_A0(SCMP_CMP_EQ, AF_VSOCK));
	}
	if (r == 0 && !allow_network) {
		what = "socket";
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
				     SCMP_A0(SCMP_CMP_NE, AF_UNIX));
	}
	/* fallocate reserves gigabytes in one call, faster than any check of the disk limit can
	 * see, and with FALLOC_FL_KEEP_SIZE past the file size RLIMIT_FSIZE bounds: under a
	 * disk limit it answers "not supported", as many file systems do, and the C library's
	 * posix_fallocate writes instead, which the file size limit bounds. */
	if (r == 0 && disk_limited) {
		what = "fallocate";
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EOPNOTSUPP), SCMP_SYS(fallocate), 0);
	}
	/* A memfd is a file on no mount, so the noexec of every place the run writes does not
	 * hold for it: bytes written there run (execve of /proc/self/fd/N, or a mapping). Where
	 * the exec guard lists the programs, none of them needs one. */
	if (r == 0 && no_memfd) {
		what = "memfd_create";
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(memfd_create), 0);
	}
	if (r < 0) {
		snprintf(err, errlen, "seccomp rule for %s: %s", what, strerror(-r));
		seccomp_release(ctx);
		return r;
	}
	*out = ctx;
	return 0;
}

int lb_seccomp_load(scmp_filter_ctx ctx)
{
	return seccomp_load(ctx);
}

int lb_seccomp_export(scmp_filter_ctx ctx, int fd)
{
	return seccomp_export_bpf(ctx, fd);
}

int lb_seccomp_load_bpf(int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size <= 0 || st.st_size % (off_t)sizeof(struct sock_filter) ||
	    st.st_size > (off_t)(BPF_MAXINSNS * sizeof(struct sock_filter)))
		return -EINVAL;
	struct sock_filter *prog = malloc((size_t)st.st_size);
	if (!prog)
		return -ENOMEM;
	ssize_t n = pread(fd, prog, (size_t)st.st_size, 0);
	if (n != st.st_size) {
		free(prog);
		return n < 0 ? -errno : -EIO;
	}
	struct sock_fprog fprog = {.len = (unsigned short)(st.st_size / (off_t)sizeof *prog),
				   .filter = prog};
	int r = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) < 0 ? -errno : 0;
	free(prog);
	return r;
}

void lb_seccomp_free(scmp_filter_ctx ctx)
{
	if (ctx)
		seccomp_release(ctx);
}
