/* The interruption of labbox by SIGINT, SIGTERM or SIGHUP, remembered for every step of a
 * command that runs something (docs/decisions.md, "A signal before the run starts"). The
 * flags are process-wide because a signal handler can reach nothing else. */
#include "labbox/util.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

static volatile sig_atomic_t installed;
static volatile sig_atomic_t caught;

static const int interrupt_signals[] = {SIGINT, SIGTERM, SIGHUP};

static void on_interrupt(int sig)
{
	/* The first one says what labbox was asked, and the steps stop at their next check; a
	 * second one (Ctrl-C again during a long step, a hash of a large file) is the user's
	 * insistence: labbox dies of it at once, as it would have without this handler. */
	if (!caught) {
		caught = sig;
		return;
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

int lb_interrupt_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_interrupt;
	/* Restarted: no read or wait of labbox's is to fail with EINTR because of it; each step
	 * asks lb_interrupt_pending where stopping is safe. */
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof interrupt_signals / sizeof *interrupt_signals; i++)
		if (sigaction(interrupt_signals[i], &sa, NULL) < 0)
			return -errno;
	installed = 1;
	return 0;
}

int lb_interrupt_pending(void)
{
	if (caught)
		return caught;
	if (!installed)
		return 0;
	/* Blocked (a sandbox's supervisor between its block and its read): still one that came. */
	sigset_t pend;
	if (sigpending(&pend) < 0)
		return 0;
	for (size_t i = 0; i < sizeof interrupt_signals / sizeof *interrupt_signals; i++)
		if (sigismember(&pend, interrupt_signals[i]))
			return interrupt_signals[i];
	return 0;
}

void lb_interrupt_note(int sig)
{
	if (installed && !caught)
		caught = sig;
}

int lb_interrupt_caught(void)
{
	return caught;
}

void lb_interrupt_rearm(void)
{
	if (caught)
		raise(caught);
}
