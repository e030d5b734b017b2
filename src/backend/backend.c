/* The backends' registry: which modes exist in this build; and the guard they share. */
#include "labbox/backend.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

bool lb_backend_known(const char *mode)
{
	return mode && (strcmp(mode, "local") == 0 || strcmp(mode, "docker") == 0 ||
			strcmp(mode, "ssh") == 0 ||
			strcmp(mode, "slurm") == 0 ||
			strcmp(mode, "colab") == 0);
}

void lb_backend_free(lb_backend *b)
{
	if (b && b->ops->free)
		b->ops->free(b);
	free(b);
}

int lb_guard_start(lb_guard *g, void (*on_orphan)(void *arg), void *arg)
{
	g->wr = -1;
	g->pid = -1;
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
		setsid();
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		char c;
		ssize_t n;
		while ((n = read(p[0], &c, 1)) < 0 && errno == EINTR)
			;
		if (n == 1)
			_exit(0);
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
		}
		on_orphan(arg);
		_exit(0);
	}
	close(p[0]);
	g->wr = p[1];
	g->pid = pid;
	return 0;
}

void lb_guard_stop(lb_guard *g)
{
	if (g->wr < 0)
		return;
	(void)!write(g->wr, "x", 1);
	close(g->wr);
	g->wr = -1;
	while (waitpid(g->pid, NULL, 0) < 0 && errno == EINTR)
		;
	g->pid = -1;
}
