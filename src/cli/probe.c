/* labbox probe: what this host can do for this user. */
#include "cli.h"
#include "labbox/backend.h"
#include "labbox/diagnose.h"
#include "labbox/env.h"
#include "labbox/record.h"
#include "labbox/sandbox.h"
#include "labbox/run.h"
#include "labbox/util.h"

#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char probe_help[] =
	"usage: labbox probe [--json] [--imports A,B,...] [--mode local|docker [--engine docker|podman]]\n"
	"       labbox probe [--json] --mode ssh --host NAME [--remote-labbox PATH]\n"
	"       labbox probe [--json] --mode slurm\n"
	"       labbox probe [--json] --mode colab --drive DIR\n"
	"\n"
	"Report what a backend offers here. --mode local (the default): what isolation this host\n"
	"offers the current user, each item tried for real: namespaces, user-namespace settings,\n"
	"seccomp, cgroup version and the controllers labbox can limit with, whether a full\n"
	"sandbox starts; then the Python interpreters on PATH, every Python environment found\n"
	"(python3 on PATH, /usr/bin/python3, pyenv versions, conda and mamba environments, with\n"
	"name, path, version and kind) and the NVIDIA devices present.\n"
	"--mode docker: the engine (docker, else podman, or --engine; DOCKER_HOST and docker\n"
	"contexts are honoured), its version, rootless or not, the cgroup version, whether\n"
	"--memory, --memory-swap, --pids-limit, --cpus and --gpus are honoured, its security\n"
	"options, and whether the default base image of built images is there.\n"
	"\n"
	"Options:\n"
	"  --mode MODE   the backend to probe: local (default), docker, ssh, slurm or colab\n"
	"  --engine NAME mode docker: docker or podman (default: the first that answers)\n"
	"  --host NAME [--remote-labbox PATH]\n"
	"              mode ssh: what that host offers: reachable, its labbox, that labbox's own\n"
	"              probe (the isolation a run there gets), python3 (exit 125 when it is\n"
	"              unreachable or its labbox's sandbox does not work)\n"
	"              mode slurm: the cluster SLURM_CONF names: partitions, their limits and\n"
	"              idle nodes (exit 125 when it cannot be reached)\n"
	"  --drive DIR   mode colab: what that Drive folder offers: writable, the worker labbox\n"
	"              wrote there and its version, the newest worker heartbeat, the jobs\n"
	"              pending, running and done (exit 125 when the folder is missing)\n"
	"  --imports A,B mode local: check in every environment whether each module imports\n"
	"              (inside the sandbox, in parallel, cached per environment)\n"
	"  --json        one JSON document (schema labbox.probe/1) on stdout\n"
	"  -h, --help    this help\n"
	"\n"
	"Exit status: 0 when the backend works here (local: a full sandbox starts; docker: the\n"
	"engine answers), 125 when it does not, 2 for usage errors.\n";

/* The backends probe knows: one function each, chosen by one switch (cli_probe). */
typedef enum probe_mode { PROBE_LOCAL, PROBE_DOCKER, PROBE_SSH, PROBE_SLURM, PROBE_COLAB } probe_mode;

typedef struct probe_opts {
	bool json;
	const char *engine; /* --engine: mode docker */
	const char *host, *remote_labbox; /* mode ssh */
	const char *drive; /* mode colab */
	char **imports;    /* --imports, split at commas */
	size_t nimports;
} probe_opts;

static const struct {
	const char *name;
	probe_mode mode;
} probe_modes[] = {
	{"local", PROBE_LOCAL},
	{"docker", PROBE_DOCKER},
	{"ssh", PROBE_SSH},
	{"slurm", PROBE_SLURM},
	{"colab", PROBE_COLAB},
};

static int probe_mode_parse(const char *name, probe_mode *out)
{
	for (size_t i = 0; i < sizeof probe_modes / sizeof *probe_modes; i++)
		if (strcmp(name, probe_modes[i].name) == 0) {
			*out = probe_modes[i].mode;
			return 0;
		}
	return -EINVAL;
}

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

/* The environments found, and with --imports what each can import. */
static json_object *environments_json(const probe_opts *po, lb_env_list *l)
{
	LB_AUTOFREE char *cache = lb_user_cache_dir();
	lb_env_discover_opts o = {.cache_dir = cache};
	if (lb_env_discover(&o, l) == -ENOMEM)
		return NULL;
	if (po->nimports && lb_env_check_imports(l, po->imports, po->nimports, cache, 120, 0) < 0)
		return NULL;
	json_object *a = json_object_new_array();
	for (size_t i = 0; a && i < l->n; i++) {
		lb_env *e = &l->v[i];
		json_object *o2 = lb_env_json(e);
		if (po->nimports && e->usable) {
			json_object *im = json_object_new_object(), *why = json_object_new_object();
			for (size_t k = 0; k < po->nimports; k++) {
				const char *w = NULL;
				for (size_t m = 0; m < e->nmissing; m++)
					if (strcmp(e->missing[m], po->imports[k]) == 0)
						w = e->why[m];
				json_object_object_add(im, po->imports[k], json_object_new_boolean(!w));
				if (w)
					json_object_object_add(why, po->imports[k], json_object_new_string(w));
			}
			json_object_object_add(o2, "imports", im);
			json_object_object_add(o2, "import_errors", why);
			json_object_object_add(o2, "imports_cached",
					       json_object_new_boolean(e->imports_cached));
			if (e->check_error[0])
				json_object_object_add(o2, "check_error",
						       json_object_new_string(e->check_error));
		}
		json_object_array_add(a, o2);
	}
	return a;
}

static void print_environments(const probe_opts *po, const lb_env_list *l)
{
	printf("  environments       %zu found\n", l->n);
	if (po->nimports) {
		printf("    %-20s %-7s %-9s", "NAME", "KIND", "VERSION");
		for (size_t k = 0; k < po->nimports; k++)
			printf(" %-12s", po->imports[k]);
		printf(" PATH\n");
	}
	for (size_t i = 0; i < l->n; i++) {
		const lb_env *e = &l->v[i];
		printf("    %-20s %-7s %-9s", e->name, lb_env_kind_name(e->kind),
		       e->usable ? e->info.version : "-");
		for (size_t k = 0; k < po->nimports; k++) {
			bool miss = !e->usable;
			for (size_t m = 0; m < e->nmissing; m++)
				miss = miss || strcmp(e->missing[m], po->imports[k]) == 0;
			printf(" %-12s", miss ? "no" : "yes");
		}
		printf(" %s%s%s\n", e->path, e->usable ? "" : ": not usable: ",
		       e->usable ? "" : e->error);
	}
}

static const char *yn(bool b)
{
	return b ? "yes" : "no";
}

static int probe_local(const probe_opts *po)
{
	bool json = po->json;
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
	/* what holds the runtime gate's "no process" where it cannot see (docs/sandbox.md) */
	json_object *eg = json_object_new_object();
	json_object_object_add(eg, "usable", json_object_new_boolean(p.exec_guard));
	json_object_object_add(eg, "note", p.exec_guard ? NULL
		: json_object_new_string("the sandbox's init cannot trace the experiment (ptrace): "
					 "a run with the runtime gate on fails its setup unless "
					 "--allow-degraded gate"));
	json_object_object_add(doc, "exec_guard", eg);
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
	lb_env_list envs = {0};
	json_object *ej = environments_json(po, &envs);
	if (!ej) {
		lb_env_list_free(&envs);
		json_object_put(doc);
		cli_error("probe", "out of memory");
		return 125;
	}
	json_object_object_add(doc, "environments", ej);
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
		printf("  exec guard         %s\n", p.exec_guard ? "yes (ptrace)"
			: "no: the runtime gate needs --allow-degraded gate");
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
		print_environments(po, &envs);
		json_object *g;
		json_object_object_get_ex(doc, "gpus", &g);
		printf("  NVIDIA GPUs        %zu\n", json_object_array_length(g));
	}
	json_object_put(doc);
	lb_env_list_free(&envs);
	return p.sandbox_works ? 0 : 125;
}

static void print_bool_line(const char *label, json_object *o, const char *key)
{
	json_object *v = NULL;
	json_object_object_get_ex(o, key, &v);
	printf("  %-18s %s\n", label, v ? yn(json_object_get_boolean(v)) : "unknown");
}

static const char *jstr(json_object *o, const char *key, const char *dflt)
{
	json_object *v = NULL;
	return json_object_object_get_ex(o, key, &v) && v ? json_object_get_string(v) : dflt;
}

static int probe_docker(const probe_opts *po)
{
	json_object *be = NULL;
	char err[1024];
	int r = lb_docker_probe(po->engine, &be, err, sizeof err);
	if (r < 0) {
		/* The engine does not answer: 125 with what failed (and `docker info`); with
		 * --json, cli_json_finish turns it into a labbox.error/1 document. */
		cli_error("probe", "%s", err);
		return r == -EINVAL ? CLI_EXIT_USAGE : 125;
	}
	json_object *doc = json_object_new_object();
	json_object_object_add(doc, "schema", json_object_new_string("labbox.probe/1"));
	json_object_object_add(doc, "mode", json_object_new_string("docker"));
	json_object_object_add(doc, "works", json_object_new_boolean(true));
	json_object_object_add(doc, "backend", be);
	if (po->json) {
		cli_json_print(doc);
		json_object_put(doc);
		return 0;
	}
	json_object *lim = NULL, *cg = NULL, *gpus = NULL, *base = NULL, *so = NULL;
	json_object_object_get_ex(be, "limits", &lim);
	json_object_object_get_ex(be, "cgroup", &cg);
	json_object_object_get_ex(lim, "gpus", &gpus);
	json_object_object_get_ex(be, "default_base_image", &base);
	json_object_object_get_ex(be, "security_options", &so);
	cli_printf("labbox probe --mode docker\n");
	cli_printf("  engine             %s %s (client %s at %s)\n", jstr(be, "engine", "?"),
		   jstr(be, "version", "?"), jstr(be, "client_version", "?"), jstr(be, "client", "?"));
	cli_printf("  host               %s\n", jstr(be, "host", "the client's default (its current context)"));
	cli_printf("  os                 %s, kernel %s\n", jstr(be, "os", "?"), jstr(be, "kernel", "?"));
	print_bool_line("rootless", be, "rootless");
	print_bool_line("user remapping", be, "userns_remap");
	cli_printf("  cgroups            %s (driver %s)\n", jstr(cg, "version", "?"), jstr(cg, "driver", "?"));
	print_bool_line("--memory", lim, "memory");
	print_bool_line("--memory-swap", lim, "memory_swap");
	print_bool_line("--pids-limit", lim, "pids_limit");
	print_bool_line("--cpus", lim, "cpus");
	json_object *gh = NULL;
	json_object_object_get_ex(gpus, "honoured", &gh);
	cli_printf("  --gpus             %s: %s\n", gh && json_object_get_boolean(gh) ? "yes" : "no",
		   jstr(gpus, "how", "?"));
	print_bool_line("seccomp", be, "seccomp");
	print_bool_line("apparmor", be, "apparmor");
	print_bool_line("selinux", be, "selinux");
	print_bool_line("--init", be, "init");
	cli_printf("  security options  ");
	for (size_t i = 0; so && i < json_object_array_length(so); i++)
		cli_printf(" %s", json_object_get_string(json_object_array_get_idx(so, i)));
	cli_printf("%s\n", so && json_object_array_length(so) ? "" : " none");
	json_object *pr = NULL;
	json_object_object_get_ex(base, "present", &pr);
	cli_printf("  default base       %s (%s)\n", jstr(base, "name", "?"),
		   pr && json_object_get_boolean(pr) ? "present" : "not present: the first build pulls it");
	json_object_put(doc);
	return 0;
}

enum { OPT_PROBE_MODE = OPT_FIRST_PRIVATE, OPT_PROBE_ENGINE, OPT_PROBE_IMPORTS };

/* --imports A,B: each a module name; -EINVAL with bad naming the first that is not. */
static int parse_imports(char *arg, probe_opts *po, const char **bad)
{
	*bad = NULL;
	for (char *save = NULL, *t = strtok_r(arg, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		while (*t == ' ')
			t++;
		if (!*t)
			continue;
		if (!lb_env_module_valid(t)) {
			*bad = t;
			return -EINVAL;
		}
		char **nv = realloc(po->imports, (po->nimports + 1) * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		po->imports = nv;
		po->imports[po->nimports++] = t;
	}
	if (!po->nimports)
		return -EINVAL;
	return 0;
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

int cli_probe(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"mode", required_argument, NULL, OPT_PROBE_MODE},
		{"engine", required_argument, NULL, OPT_PROBE_ENGINE},
		{"host", required_argument, NULL, 'H'},
		{"remote-labbox", required_argument, NULL, 'R'},
		{"drive", required_argument, NULL, 'd'},
		{"imports", required_argument, NULL, OPT_PROBE_IMPORTS},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	probe_opts po = {0};
	probe_mode mode = PROBE_LOCAL;
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
			po.json = true;
			break;
		case OPT_PROBE_MODE:
			if (probe_mode_parse(optarg, &mode) < 0) {
				cli_error("probe", "--mode '%s' is not one of local, docker, ssh, slurm, "
					  "colab", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case OPT_PROBE_ENGINE:
			if (strcmp(optarg, "docker") != 0 && strcmp(optarg, "podman") != 0) {
				cli_error("probe", "--engine '%s' is not one of docker, podman", optarg);
				return CLI_EXIT_USAGE;
			}
			po.engine = optarg;
			break;
		case 'H':
			po.host = optarg;
			break;
		case 'R':
			po.remote_labbox = optarg;
			break;
		case 'd':
			po.drive = optarg;
			break;
		case OPT_PROBE_IMPORTS: {
			const char *bad = NULL;
			int ir = parse_imports(optarg, &po, &bad);
			if (ir == -ENOMEM) {
				cli_error("probe", "out of memory");
				return 125;
			}
			if (ir < 0) {
				if (bad)
					cli_error("probe", "--imports: '%s' is not a module name", bad);
				else
					cli_error("probe", "--imports needs module names, e.g. "
						  "--imports torch,numpy");
				free(po.imports);
				return CLI_EXIT_USAGE;
			}
			break;
		}
		default:
			cli_bad_option("probe", argv, optopt);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		cli_error("probe", "unexpected argument '%s'", argv[optind]);
		return CLI_EXIT_USAGE;
	}
	{
		static const char *const names[] = {[PROBE_LOCAL] = "local", [PROBE_DOCKER] = "docker",
						    [PROBE_SSH] = "ssh", [PROBE_SLURM] = "slurm",
						    [PROBE_COLAB] = "colab"};
		lb_run_request flags = {.engine = po.engine, .host = po.host,
					.remote_labbox = po.remote_labbox, .drive = po.drive};
		char err[256];
		if (lb_run_mode_flags_check(&flags, names[mode], "probe", err, sizeof err) < 0) {
			cli_error("probe", "%s", err);
			free(po.imports);
			return CLI_EXIT_USAGE;
		}
	}
	if (po.nimports && mode != PROBE_LOCAL) {
		cli_error("probe", "--imports goes with --mode local");
		free(po.imports);
		return CLI_EXIT_USAGE;
	}
	switch (mode) {
	case PROBE_LOCAL: {
		int pr = probe_local(&po);
		free(po.imports);
		return pr;
	}
	case PROBE_DOCKER:
		return probe_docker(&po);
	case PROBE_SSH:
		if (!po.host) {
			cli_error("probe", "--mode ssh needs --host NAME");
			return CLI_EXIT_USAGE;
		}
		return probe_ssh(po.host, po.remote_labbox, po.json);
	case PROBE_SLURM:
		return probe_slurm(po.json);
	case PROBE_COLAB:
		if (!po.drive || !*po.drive) {
			cli_error("probe", "--mode colab needs --drive DIR");
			return CLI_EXIT_USAGE;
		}
		return probe_colab(po.drive, po.json);
	}
	return CLI_EXIT_USAGE;
}
