/* A JSON document computed by a child process while the run goes on (the git state, the
 * fingerprints of mounted data): one way to start it, one way to collect it. */
#include "labbox/record.h"
#include "labbox/util.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int lb_record_job_start(lb_record_job *job, struct json_object *(*fn)(void *arg), void *arg,
			int nice_inc)
{
	job->pid = 0;
	job->fd = -1;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid == 0) {
		close(p[0]);
		/* Ctrl-C reaches the whole foreground group; labbox records the run as interrupted
		 * and still wants what the child says. It leaves the terminal's process group too
		 * (what it starts takes the default dispositions back), and dies with labbox. */
		signal(SIGINT, SIG_IGN);
		signal(SIGQUIT, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		setsid();
		if (nice_inc && setpriority(PRIO_PROCESS, 0, nice_inc) < 0) {
			/* a priority it cannot lower is no reason to record nothing */
		}
		json_object *doc = fn(arg);
		const char *text = doc ? json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN)
				       : NULL;
		_exit(text && lb_write_all(p[1], text, strlen(text)) == 0 ? 0 : 1);
	}
	close(p[1]);
	job->pid = pid;
	job->fd = p[0];
	return 0;
}

static double since(const struct timespec *t0)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

struct json_object *lb_record_job_collect(lb_record_job *job, double wait_s, bool *late)
{
	if (late)
		*late = false;
	if (job->pid <= 0)
		return NULL;
	lb_buf b = {0};
	char chunk[65536];
	bool lost = false, out_of_time = false;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int timeout = -1;
		if (wait_s >= 0) {
			double left = wait_s - since(&t0);
			timeout = left > 0 ? (int)(left * 1000) + 1 : 0;
		}
		struct pollfd pfd = {.fd = job->fd, .events = POLLIN};
		int pr = poll(&pfd, 1, timeout);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			out_of_time = pr == 0;
			break;
		}
		ssize_t n = read(job->fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		/* Read to the end even when memory runs out, so the child can finish. */
		if (!lost && lb_buf_append(&b, chunk, (size_t)n) < 0)
			lost = true;
	}
	if (out_of_time)
		kill(job->pid, SIGKILL);
	close(job->fd);
	int st = 0;
	while (waitpid(job->pid, &st, 0) < 0 && errno == EINTR)
		;
	job->pid = 0;
	job->fd = -1;
	json_object *doc = NULL;
	if (!out_of_time && !lost && WIFEXITED(st) && WEXITSTATUS(st) == 0 && b.data) {
		struct json_tokener *tok = json_tokener_new_ex(8);
		if (tok) {
			doc = json_tokener_parse_ex(tok, b.data, (int)b.len);
			json_tokener_free(tok);
		}
	}
	lb_buf_free(&b);
	if (late)
		*late = out_of_time;
	return doc;
}
