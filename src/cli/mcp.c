/* labbox mcp: the Model Context Protocol server on stdin and stdout (src/mcp). */
#include "cli.h"
#include "labbox/mcp.h"
#include "labbox/util.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char mcp_help[] =
	"usage: labbox mcp [--root DIR] [--allow-network] [--allow-gpus] [--max-budget S]\n"
	"                  [--max-memory SIZE] [--allow-degraded WHAT]\n"
	"\n"
	"Serve labbox to an agent over the Model Context Protocol: JSON-RPC 2.0 messages, one per\n"
	"line, on stdin and stdout (MCP's stdio transport); stderr carries a log line for each\n"
	"cancelled call. Tools: check, run, explain, probe, runs_list, runs_show, runs_compare,\n"
	"rerun. Each call runs this labbox as a child; runs are recorded under .labbox/ of the\n"
	"directory the server was started in. A cancelled call ends its run as Ctrl-C would (the\n"
	"run is recorded as interrupted); so does the client going away.\n"
	"\n"
	"What the tools may do is fixed here, not by the client; a call asking for more is an\n"
	"error naming the limit:\n"
	"  --root DIR           experiment directories must lie under DIR (default: the current\n"
	"                       directory); relative ones are read from DIR\n"
	"  --allow-network      let a run ask for --network loopback or host (default: none only)\n"
	"  --allow-gpus         let a run ask for GPUs (default: none)\n"
	"  --max-budget S       the longest budget a run may ask for, and the budget of runs\n"
	"                       that ask for none (default: no cap)\n"
	"  --max-memory SIZE    the largest memory limit a run may ask for, and the limit of runs\n"
	"                       that ask for none, e.g. 16g (default: no cap)\n"
	"  --allow-degraded WHAT  let runs go on where a limit cannot be enforced by a cgroup:\n"
	"                       memory, pids, cpus, disk or all (repeatable; see labbox run\n"
	"                       --help); the client cannot ask for it\n"
	"  -h, --help           this help\n"
	"\n"
	"Exit status: 0 when stdin ends, 2 for a usage error.\n";

enum { O_ROOT = 3000, O_NET, O_GPUS, O_MAX_BUDGET, O_MAX_MEMORY, O_DEGRADED };

int cli_mcp(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"root", required_argument, NULL, O_ROOT},
		{"allow-network", no_argument, NULL, O_NET},
		{"allow-gpus", no_argument, NULL, O_GPUS},
		{"max-budget", required_argument, NULL, O_MAX_BUDGET},
		{"max-memory", required_argument, NULL, O_MAX_MEMORY},
		{"allow-degraded", required_argument, NULL, O_DEGRADED},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	lb_mcp_limits lim = {0};
	const char *root = ".";
	opterr = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			fputs(mcp_help, stdout);
			return 0;
		case O_ROOT:
			root = optarg;
			break;
		case O_NET:
			lim.allow_network = true;
			break;
		case O_GPUS:
			lim.allow_gpus = true;
			break;
		case O_MAX_BUDGET:
			if (lb_parse_seconds(optarg, &lim.max_budget) < 0) {
				cli_error("mcp", "--max-budget '%s' is not a positive number of seconds",
					  optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case O_MAX_MEMORY:
			if (lb_parse_size(optarg, &lim.max_memory) < 0 || lim.max_memory < CLI_MEMORY_MIN) {
				cli_error("mcp", "--max-memory '%s' is not a size of at least 32m", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case O_DEGRADED: {
			static const char *const what[] = {"memory", "pids", "cpus", "disk", "all"};
			size_t k = 0;
			while (k < 5 && strcmp(optarg, what[k]) != 0)
				k++;
			if (k == 5) {
				cli_error("mcp", "--allow-degraded '%s' is not one of memory, pids, cpus, "
						 "disk, all",
					  optarg);
				return CLI_EXIT_USAGE;
			}
			bool seen = false;
			for (size_t i = 0; i < lim.ndegraded; i++)
				seen = seen || lim.degraded[i] == what[k];
			if (!seen)
				lim.degraded[lim.ndegraded++] = what[k];
			break;
		}
		default:
			cli_bad_option("mcp", argv, optopt);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		cli_error("mcp", "unexpected argument '%s'", argv[optind]);
		return CLI_EXIT_USAGE;
	}
	char resolved[PATH_MAX];
	if (!realpath(root, resolved)) {
		cli_error("mcp", "--root '%s': %m", root);
		return CLI_EXIT_USAGE;
	}
	/* Every call's paths are resolved under the root: one that is not a directory this user
	 * can list would fail each call as if the agent had named a wrong path. */
	struct stat rst;
	if (stat(resolved, &rst) < 0 || !S_ISDIR(rst.st_mode)) {
		cli_error("mcp", "--root '%s' is not a directory", root);
		return CLI_EXIT_USAGE;
	}
	if (access(resolved, R_OK | X_OK) < 0) {
		cli_error("mcp", "--root '%s': %m (the directory must be readable and searchable)",
			  root);
		return CLI_EXIT_USAGE;
	}
	lim.root = resolved;
	lim.self = "/proc/self/exe";
	int r = lb_mcp_serve(0, 1, 2, &lim);
	if (r < 0) {
		cli_error("mcp", "%s", strerror(-r));
		return 125;
	}
	return 0;
}
