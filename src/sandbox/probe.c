/* probe: what isolation this host offers this user, each item tried for real. */
#include "cgroup.h"
#include "sandbox_internal.h"
#include "seccomp.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* Run fn in a forked child; true when it exits 0. The child may change anything about
 * itself: it never returns to the caller. */
static bool in_child(int (*fn)(unsigned long), unsigned long arg)
{
	pid_t pid = fork();
	if (pid < 0)
		return false;
	if (pid == 0)
		_exit(fn(arg) == 0 ? 0 : 1);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return false;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static int try_unshare(unsigned long flag)
{
	/* The sandbox always makes a user namespace first; probe the same way. */
	return unshare(CLONE_NEWUSER | flag);
}

static int try_seccomp(unsigned long unused)
{
	(void)unused;
	scmp_filter_ctx ctx;
	char err[128];
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	if (lb_seccomp_build(&ctx, false, false, false, err, sizeof err) < 0)
		return -1;
	int r = lb_seccomp_load(ctx);
	lb_seccomp_free(ctx);
	return r;
}

static long read_long(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	long v = -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

int lb_sandbox_probe(lb_probe *p)
{
	memset(p, 0, sizeof *p);
	p->uid = getuid();
	p->user_ns = in_child(try_unshare, 0);
	p->pid_ns = in_child(try_unshare, CLONE_NEWPID);
	p->mount_ns = in_child(try_unshare, CLONE_NEWNS);
	p->net_ns = in_child(try_unshare, CLONE_NEWNET);
	p->ipc_ns = in_child(try_unshare, CLONE_NEWIPC);
	p->uts_ns = in_child(try_unshare, CLONE_NEWUTS);
	p->cgroup_ns = in_child(try_unshare, CLONE_NEWCGROUP);
	p->max_user_namespaces = read_long("/proc/sys/user/max_user_namespaces");
	p->unprivileged_userns = (int)read_long("/proc/sys/kernel/unprivileged_userns_clone");
	p->apparmor_restrict_userns =
		(int)read_long("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
	p->seccomp = in_child(try_seccomp, 0);
	p->seccomp_api = (unsigned)seccomp_api_get();

	lb_cgroup_support cs;
	lb_cgroup_probe(&cs);
	p->cgroup_version = cs.memory || cs.pids || cs.cpu ? cs.version : 0;
	p->cgroup_memory = cs.memory;
	p->cgroup_pids = cs.pids;
	p->cgroup_cpu = cs.cpu;
	snprintf(p->cgroup_where, sizeof p->cgroup_where, "%s",
		 cs.version == 2 ? cs.v2_dir : cs.v1_memory[0] ? cs.v1_memory : "");

	lb_sandbox *sb;
	if (lb_sandbox_new(&sb) < 0)
		return -ENOMEM;
	char *argv[] = {"/bin/true", NULL};
	lb_sandbox_set_argv(sb, argv);
	/* optional: the sandbox works without it, and the result says whether it was in */
	lb_sandbox_set_exec_guard(sb, LB_EXEC_GATED_PYTHON, true);
	lb_sandbox_result res;
	int r = lb_sandbox_run(sb, &res);
	if (r < 0)
		snprintf(p->sandbox_error, sizeof p->sandbox_error, "supervision failed: %s",
			 strerror(-r));
	else if (res.outcome != LB_SB_EXITED || res.exit_code != 0)
		snprintf(p->sandbox_error, sizeof p->sandbox_error, "%s: %s",
			 res.setup_step[0] ? res.setup_step : "run", res.setup_error);
	else
		p->sandbox_works = true;
	p->exec_guard = p->sandbox_works && res.isolation.exec_guard != NULL;
	lb_sandbox_free(sb);
	return 0;
}
