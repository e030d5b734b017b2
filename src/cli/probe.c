/* labbox probe: what this host can do for this user. */
#include "cli.h"
#include "labbox/backend.h"
#include "labbox/diagnose.h"
#include "labbox/record.h"
#include "labbox/sandbox.h"
#include "labbox/util.h"

#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

static const char probe_help[] =
	"usage: labbox probe [--json] [--mode ssh --host NAME [--remote-labbox PATH] | --mode slurm |\n"
	"                     --mode colab --drive DIR]\n"
	"\n"
	"Report what isolation this host offers the current user, each item tried for real:\n"
	"namespaces, user-namespace settings, seccomp, cgroup version and the controllers labbox\n"
	"can limit with, whether a full sandbox starts; then the Python interpreters on PATH and\n"
	"the NVIDIA devices present.\n"
	"\n"
	"Options:\n"
	"  --json      one JSON document (schema labbox.probe/1) on stdout\n"
	"  --mode ssh --host NAME [--remote-labbox PATH]\n"
	"              what that host offers instead: reachable, its labbox, that labbox's own\n"
	"              probe (the isolation a run there gets), python3 (exit 125 when it is\n"
	"              unreachable or its labbox's sandbox does not work)\n"
	"  --mode slurm  the Slurm cluster SLURM_CONF names instead: partitions, their limits\n"
	"              and idle nodes (exit 125 when it cannot be reached)\n"
	"  --mode colab --drive DIR\n"
	"              what that Drive folder offers instead: writable, the worker labbox\n"
	"              wrote there and its version, the newest worker heartbeat, the jobs\n"
	"              pending, running and done (exit 125 when the folder is missing)\n"
	"  -h, --help  this help\n"
	"\n"
	"Exit status: 0 when a full sandbox works here, 125 when it does not, 2 for usage errors.\n";

static json_object *python_json(const char *name)
{
	lb_python_info py;
	char err[512];
	json_object *o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(name));
	if (lb_python_probe(name, &py, err, sizeof err) < 0) {
		json_object_object_add(o, "found", json_object_new_boolean(false));
		json_object_object_add(o, "error", json_object_new_string(err));
		return o;
	}
	json_object_object_add(o, "found", json_object_new_boolean(true));
	json_object_object_add(o, "executable", json_object_new_string(py.executable));
	json_object_object_add(o, "version", json_object_new_string(py.version));
	json_object_object_add(o, "prefix", json_object_new_string(py.prefix));
	return o;
}

static json_object *gpus_json(void)
{
	json_object *a = json_object_new_array();
	glob_t g;
	if (glob("/dev/nvidia[0-9]*", 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++)
			json_object_array_add(a, json_object_new_string(g.gl_pathv[i]));
		globfree(&g);
	}
	return a;
}

/* probe --mode ssh: the host's answer, printed; 0 when a run there would be sandboxed. */
static int probe_ssh(const char *host, const char *remote_labbox, bool json)
{
	lb_ssh_config sc = {.host = host, .remote_labbox = remote_labbox};
	json_object *doc = NULL;
	int r = lb_backend_ssh_probe(&sc, &doc);
	if (r == -EINVAL) {
		cli_error("probe", "--host '%s' is not a host name ssh and rsync can be given", host);
		return CLI_EXIT_USAGE;
	}
	if (r < 0) {
		cli_error("probe", "%s", strerror(-r));
		return 125;
	}
	json_object *v, *rl = NULL, *py = NULL;
	bool reachable = json_object_object_get_ex(doc, "reachable", &v) && json_object_get_boolean(v);
	bool works = json_object_object_get_ex(doc, "remote_labbox", &rl) &&
		     json_object_object_get_ex(rl, "sandbox_works", &v) && json_object_get_boolean(v);
	if (json) {
		cli_json_print(doc);
	} else if (!reachable) {
		json_object_object_get_ex(doc, "error", &v);
		printf("labbox probe --mode ssh --host %s\n  reachable          no: %s\n", host,
		       json_object_get_string(v));
	} else {
		json_object_object_get_ex(doc, "python", &py);
		json_object *p = NULL, *ver = NULL, *err = NULL, *pp = NULL, *pv = NULL;
		json_object_object_get_ex(rl, "path", &p);
		json_object_object_get_ex(rl, "version", &ver);
		json_object_object_get_ex(rl, "error", &err);
		json_object_object_get_ex(py, "path", &pp);
		json_object_object_get_ex(py, "version", &pv);
		printf("labbox probe --mode ssh --host %s\n  reachable          yes\n", host);
		printf("  remote labbox      %s%s%s%s\n", p ? json_object_get_string(p) : "none",
		       ver ? " (version " : "", ver ? json_object_get_string(ver) : "", ver ? ")" : "");
		if (err)
			printf("                     does not run: %s\n", json_object_get_string(err));
		printf("  remote sandbox     %s\n", works ? "works" : "none (runs there need "
								"--install-remote or --allow-degraded isolation)");
		printf("  remote python3     %s %s\n", pp ? json_object_get_string(pp) : "none",
		       pv ? json_object_get_string(pv) : "");
	}
	json_object_put(doc);
	return reachable && works ? 0 : 125;
}

/* labbox probe --mode slurm: self-contained, so other modes can be added beside it. */
static int probe_slurm(bool json)
{
	json_object *cl = NULL;
	char err[1024] = "";
	if (lb_slurm_probe(&cl, err, sizeof err) < 0) {
		cli_error("probe", "%s", err);
		return 125;
	}
	json_object *doc = json_object_new_object();
	json_object_object_add(doc, "schema", json_object_new_string("labbox.probe/1"));
	json_object_object_add(doc, "mode", json_object_new_string("slurm"));
	json_object_object_add(doc, "slurm", cl);
	if (json) {
		cli_json_print(doc);
	} else {
		json_object *v, *parts;
		printf("labbox probe --mode slurm: cluster %s, Slurm %s (SLURM_CONF=%s)\n",
		       json_object_object_get_ex(cl, "cluster", &v) && v ? json_object_get_string(v) : "?",
		       json_object_object_get_ex(cl, "version", &v) && v ? json_object_get_string(v) : "?",
		       json_object_object_get_ex(cl, "slurm_conf", &v) ? json_object_get_string(v) : "?");
		json_object_object_get_ex(cl, "partitions", &parts);
		json_object_object_foreach(parts, name, p)
		{
			json_object *a, *t, *n, *i, *c, *m;
			json_object_object_get_ex(p, "available", &a);
			json_object_object_get_ex(p, "time_limit", &t);
			json_object_object_get_ex(p, "nodes", &n);
			json_object_object_get_ex(p, "nodes_idle", &i);
			json_object_object_get_ex(p, "cpus_per_node", &c);
			json_object_object_get_ex(p, "memory_mb_per_node", &m);
			cli_printf("  %-16s %s%s, limit %s, %d nodes (%d idle), %s CPUs and %s MB each\n",
				   name, json_object_get_string(a),
				   json_object_get_boolean(json_object_object_get(p, "default")) ? ", default" : "",
				   json_object_get_string(t), json_object_get_int(n), json_object_get_int(i),
				   json_object_get_string(c), json_object_get_string(m));
		}
	}
	json_object_put(doc);
	return 0;
}

/* labbox probe --mode colab --drive DIR: the folder, not this host. */
static int probe_colab(const char *drive, bool json)
{
	json_object *c = NULL;
	int r = lb_colab_probe(drive, &c);
	if (!c) {
		cli_error("probe", "out of memory");
		return 125;
	}
	json_object *doc = json_object_new_object();
	json_object_object_add(doc, "schema", json_object_new_string("labbox.probe/1"));
	json_object_object_add(doc, "mode", json_object_new_string("colab"));
	json_object_object_add(doc, "colab", c);
	if (json) {
		cli_json_print(doc);
	} else {
		json_object *v, *w, *jobs;
		printf("labbox probe --mode colab: %s\n", json_object_get_string(json_object_object_get(c, "drive")));
		printf("  folder             %s%s\n", r < 0 ? "MISSING" : "present",
		       r == 0 && json_object_get_boolean(json_object_object_get(c, "writable")) ? ", writable" : "");
		v = json_object_object_get(c, "worker_present");
		printf("  worker script      %s\n", !json_object_get_boolean(v) ? "not written yet (the first run writes it)"
		       : json_object_get_boolean(json_object_object_get(c, "worker_current")) ? "present, this labbox's version"
											  : "present, another version (the next run rewrites it)");
		v = json_object_object_get(c, "worker_version");
		if (v)
			printf("  worker version     %s (this labbox writes %s)\n", json_object_get_string(v),
			       json_object_get_string(json_object_object_get(c, "worker_version_of_this_labbox")));
		w = json_object_object_get(c, "last_worker_heartbeat");
		if (w)
			printf("  last heartbeat     worker %s (%s), %s, %.0fs ago\n",
			       json_object_get_string(json_object_object_get(w, "worker")),
			       json_object_get_string(json_object_object_get(w, "state")),
			       json_object_get_string(json_object_object_get(w, "time")),
			       json_object_get_double(json_object_object_get(w, "seen_s_ago")));
		else
			printf("  last heartbeat     none: no worker has served this folder\n");
		jobs = json_object_object_get(c, "jobs");
		printf("  jobs               pending %d, running %d, done %d\n",
		       json_object_get_int(json_object_object_get(jobs, "pending")),
		       json_object_get_int(json_object_object_get(jobs, "running")),
		       json_object_get_int(json_object_object_get(jobs, "done")));
	}
	if (r < 0)
		cli_error("probe", "the Drive folder '%s' does not exist", drive);
	json_object_put(doc);
	return r < 0 ? 125 : 0;
}

static const char *yn(bool b)
{
	return b ? "yes" : "no";
}

int cli_probe(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"mode", required_argument, NULL, 'm'},
		{"host", required_argument, NULL, 'H'},
		{"remote-labbox", required_argument, NULL, 'R'},
		{"drive", required_argument, NULL, 'd'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool json = false;
	const char *mode = NULL, *host = NULL, *remote_labbox = NULL, *drive = NULL;
	cli_json_begin("probe", argc, argv, "h", longopts, false);
	opterr = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			cli_json_set(NULL);
			fputs(probe_help, stdout);
			return 0;
		case 'j':
			json = true;
			break;
		case 'm':
			mode = optarg;
			break;
		case 'H':
			host = optarg;
			break;
		case 'R':
			remote_labbox = optarg;
			break;
		case 'd':
			drive = optarg;
			break;
		default:
			cli_bad_option("probe", argv, optopt);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		cli_error("probe", "unexpected argument '%s'", argv[optind]);
		return CLI_EXIT_USAGE;
	}
	if ((host || remote_labbox) && (!mode || strcmp(mode, "ssh") != 0)) {
		cli_error("probe", "--host and --remote-labbox go with --mode ssh");
		return CLI_EXIT_USAGE;
	}
	if (drive && (!mode || strcmp(mode, "colab") != 0)) {
		cli_error("probe", "--drive goes with --mode colab");
		return CLI_EXIT_USAGE;
	}
	if (mode && strcmp(mode, "slurm") == 0)
		return probe_slurm(json);
	if (mode && strcmp(mode, "colab") == 0) {
		if (!drive || !*drive) {
			cli_error("probe", "--mode colab needs --drive DIR");
			return CLI_EXIT_USAGE;
		}
		return probe_colab(drive, json);
	}
	if (mode && strcmp(mode, "local") != 0) {
		if (strcmp(mode, "ssh") != 0) {
			cli_error("probe", "--mode '%s' cannot be probed (probe knows local, ssh, slurm, "
				  "colab)", mode);
			return CLI_EXIT_USAGE;
		}
		if (!host) {
			cli_error("probe", "--mode ssh needs --host NAME");
			return CLI_EXIT_USAGE;
		}
		return probe_ssh(host, remote_labbox, json);
	}
	lb_probe p;
	if (lb_sandbox_probe(&p) < 0) {
		cli_error("probe", "out of memory");
		return 125;
	}
	json_object *doc = json_object_new_object();
	json_object_object_add(doc, "schema", json_object_new_string("labbox.probe/1"));
	json_object_object_add(doc, "uid", json_object_new_int((int)p.uid));
	json_object *ns = json_object_new_object();
	json_object_object_add(ns, "user", json_object_new_boolean(p.user_ns));
	json_object_object_add(ns, "pid", json_object_new_boolean(p.pid_ns));
	json_object_object_add(ns, "mount", json_object_new_boolean(p.mount_ns));
	json_object_object_add(ns, "network", json_object_new_boolean(p.net_ns));
	json_object_object_add(ns, "ipc", json_object_new_boolean(p.ipc_ns));
	json_object_object_add(ns, "uts", json_object_new_boolean(p.uts_ns));
	json_object_object_add(ns, "cgroup", json_object_new_boolean(p.cgroup_ns));
	json_object_object_add(doc, "namespaces", ns);
	json_object *uns = json_object_new_object();
	json_object_object_add(uns, "max_user_namespaces", json_object_new_int64(p.max_user_namespaces));
	json_object_object_add(uns, "unprivileged_userns_clone",
			       p.unprivileged_userns < 0 ? NULL : json_object_new_int(p.unprivileged_userns));
	json_object_object_add(uns, "apparmor_restrict_unprivileged_userns",
			       p.apparmor_restrict_userns < 0 ? NULL
							      : json_object_new_int(p.apparmor_restrict_userns));
	json_object_object_add(doc, "user_namespaces", uns);
	json_object *sec = json_object_new_object();
	json_object_object_add(sec, "usable", json_object_new_boolean(p.seccomp));
	json_object_object_add(sec, "api_level", json_object_new_int((int)p.seccomp_api));
	json_object_object_add(doc, "seccomp", sec);
	json_object *cg = json_object_new_object();
	json_object_object_add(cg, "version", p.cgroup_version ? json_object_new_int(p.cgroup_version) : NULL);
	json_object_object_add(cg, "memory", json_object_new_boolean(p.cgroup_memory));
	json_object_object_add(cg, "pids", json_object_new_boolean(p.cgroup_pids));
	json_object_object_add(cg, "cpu", json_object_new_boolean(p.cgroup_cpu));
	json_object_object_add(cg, "where", p.cgroup_where[0] ? json_object_new_string(p.cgroup_where) : NULL);
	json_object_object_add(doc, "cgroups", cg);
	json_object *sbj = json_object_new_object();
	json_object_object_add(sbj, "works", json_object_new_boolean(p.sandbox_works));
	json_object_object_add(sbj, "error", p.sandbox_works ? NULL : json_object_new_string(p.sandbox_error));
	json_object_object_add(doc, "sandbox", sbj);
	json_object *pys = json_object_new_array();
	json_object_array_add(pys, python_json("python3"));
	json_object_array_add(pys, python_json("/usr/bin/python3"));
	json_object_object_add(doc, "interpreters", pys);
	json_object_object_add(doc, "gpus", gpus_json());

	if (json) {
		cli_json_print(doc);
	} else {
		printf("labbox probe (uid %d)\n", (int)p.uid);
		printf("  sandbox            %s%s%s\n", p.sandbox_works ? "works" : "DOES NOT WORK",
		       p.sandbox_works ? "" : ": ", p.sandbox_works ? "" : p.sandbox_error);
		printf("  namespaces         user %s, pid %s, mount %s, network %s, ipc %s, uts %s, "
		       "cgroup %s\n",
		       yn(p.user_ns), yn(p.pid_ns), yn(p.mount_ns), yn(p.net_ns), yn(p.ipc_ns),
		       yn(p.uts_ns), yn(p.cgroup_ns));
		printf("  user namespaces    max %ld", p.max_user_namespaces);
		if (p.unprivileged_userns >= 0)
			printf(", unprivileged_userns_clone %d", p.unprivileged_userns);
		if (p.apparmor_restrict_userns >= 0)
			printf(", apparmor restriction %d", p.apparmor_restrict_userns);
		printf("\n  seccomp            %s (API level %u)\n", yn(p.seccomp), p.seccomp_api);
		if (p.cgroup_version)
			printf("  cgroups            v%d: memory %s, pids %s, cpu %s (under %s)\n",
			       p.cgroup_version, yn(p.cgroup_memory), yn(p.cgroup_pids),
			       yn(p.cgroup_cpu), p.cgroup_where);
		else
			printf("  cgroups            none usable by this user: --memory, --pids-limit "
			       "and --cpus need --allow-degraded\n");
		for (size_t i = 0; i < json_object_array_length(pys); i++) {
			json_object *o = json_object_array_get_idx(pys, i), *v, *n;
			json_object_object_get_ex(o, "name", &n);
			if (json_object_object_get_ex(o, "version", &v)) {
				json_object *e;
				json_object_object_get_ex(o, "executable", &e);
				printf("  %-18s Python %s at %s\n", json_object_get_string(n),
				       json_object_get_string(v), json_object_get_string(e));
			} else {
				printf("  %-18s not usable\n", json_object_get_string(n));
			}
		}
		json_object *g;
		json_object_object_get_ex(doc, "gpus", &g);
		printf("  NVIDIA GPUs        %zu\n", json_object_array_length(g));
	}
	json_object_put(doc);
	return p.sandbox_works ? 0 : 125;
}
