/* labbox: validate, run and record research experiments in a sandbox. */
#include "cli.h"
#include "labbox/util.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
	"usage: labbox COMMAND [OPTIONS]\n"
	"\n"
	"Run research experiments you do not fully trust, isolated, under a time budget, and get\n"
	"back metrics you can trust.\n"
	"\n"
	"Commands:\n"
	"  run EXPDIR [-- ARGS]   stage, run and record an experiment; collect and check metrics\n"
	"  exec -- CMD [ARGS]     run any command in the sandbox and exit with its status\n"
	"  check PATH...          static validation of experiment code (exit 3 when rejected)\n"
	"  probe                  what isolation this host offers this user\n"
	"  runs list|show|compare the run history: filter, inspect, compare two runs\n"
	"  rerun ID               run a recorded run again; say whether its metrics match\n"
	"  explain ID             why a recorded run ended so: its cause, how sure, the flag to grant\n"
	"  sweep EXPDIR           a grid of conditions x seeds, one run per cell, on every core;\n"
	"                         per condition mean, std and 95% interval (sweep.json)\n"
	"  report ID... -o FILE   a sweep's or runs' results as one self-contained HTML page\n"
	"                         (tables, plots, failures, reproducibility), or --format md|csv\n"
	"  mcp                    serve these commands to agents (Model Context Protocol, stdio)\n"
	"  version                print the version\n"
	"\n"
	"`labbox COMMAND --help` documents each command's flags.\n";

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return CLI_EXIT_USAGE;
	}
	/* A reader that goes away (`labbox run exp | head`) must not kill labbox mid-run: the
	 * run is still recorded, only the echo stops. */
	signal(SIGPIPE, SIG_IGN);
	/* A closed stdin, stdout or stderr would be handed out by the next open() and confused with
	 * the descriptor's usual meaning (exec relays fd 0 into the sandbox): fill the gaps. A
	 * closed stdout gets /dev/full, not /dev/null: every write of the answer then fails, and
	 * labbox says so (cli_out_finish) instead of exiting 0 with nothing written. */
	bool out_closed = fcntl(1, F_GETFD) < 0;
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) >= 0)
			continue;
		if (fd == 1 && open("/dev/full", O_WRONLY) == 1)
			continue;
		if (open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) < 0)
			return 125;
	}
	/* `labbox --json CMD ...` means `labbox CMD --json ...`: a pipeline that puts the flag
	 * first still gets its one document. */
	if (argc > 2 && strcmp(argv[1], "--json") == 0) {
		char *cmdname = argv[2];
		argv[2] = argv[1];
		argv[1] = cmdname;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
		fputs(usage, stdout);
		return cli_out_finish(0, out_closed);
	}
	if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
		printf("labbox %s\n", LABBOX_VERSION);
		return cli_out_finish(0, out_closed);
	}
	/* The commands that run something remember a Ctrl-C or SIGTERM from their first moment:
	 * each step before the experiment starts then stops, and the run is recorded as
	 * interrupted, instead of labbox dying unrecorded or a helper sandbox of its own (the
	 * check's compile, a probe) taking the signal for itself. */
	if ((strcmp(cmd, "exec") == 0 || strcmp(cmd, "run") == 0 || strcmp(cmd, "sweep") == 0 ||
	     strcmp(cmd, "rerun") == 0) &&
	    lb_interrupt_install() < 0)
		return 125;
	int rc;
	if (strcmp(cmd, "exec") == 0)
		rc = cli_exec(argc - 1, argv + 1);
	else if (strcmp(cmd, "run") == 0)
		rc = cli_run(argc - 1, argv + 1);
	else if (strcmp(cmd, "check") == 0)
		rc = cli_check(argc - 1, argv + 1);
	else if (strcmp(cmd, "probe") == 0)
		rc = cli_probe(argc - 1, argv + 1);
	else if (strcmp(cmd, "runs") == 0)
		rc = cli_runs(argc - 1, argv + 1);
	else if (strcmp(cmd, "rerun") == 0)
		rc = cli_rerun(argc - 1, argv + 1);
	else if (strcmp(cmd, "explain") == 0)
		rc = cli_explain(argc - 1, argv + 1);
	else if (strcmp(cmd, "sweep") == 0)
		rc = cli_sweep(argc - 1, argv + 1);
	else if (strcmp(cmd, "report") == 0)
		rc = cli_report(argc - 1, argv + 1);
	else if (strcmp(cmd, "mcp") == 0)
		rc = cli_mcp(argc - 1, argv + 1);
	else {
		/* A pipeline that misspelt the command still gets its one document. */
		static const struct option json_only[] = {{"json", no_argument, NULL, 1},
							  {NULL, 0, NULL, 0}};
		if (cli_argv_has_json(argc - 1, argv + 1, "", json_only, false))
			cli_json_set(cmd);
		cli_error("", "unknown command '%s' (see labbox --help)", cmd);
		rc = CLI_EXIT_USAGE;
	}
	/* Whatever ended the command, --json gets exactly one document on stdout; and an answer
	 * that could not be written is not a success. */
	return cli_out_finish(cli_json_finish(rc), out_closed);
}
