/* What the docker backend reads of an engine's info (docker_info.h): docker's and podman's
 * documents, which differ, as one object, and what --gpus can count on. */
#include "docker_info.h"
#include "labbox/util.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool lb_docker_jbool(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) && v && json_object_get_boolean(v);
}

json_object *lb_docker_jobj(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_object)
		       ? v
		       : NULL;
}

const char *lb_docker_jstr(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v)
		       : NULL;
}

static bool array_has(json_object *a, const char *prefix)
{
	for (size_t i = 0; a && json_object_is_type(a, json_type_array) && i < json_object_array_length(a); i++) {
		const char *s = json_object_get_string(json_object_array_get_idx(a, i));
		if (s && strncmp(s, prefix, strlen(prefix)) == 0)
			return true;
	}
	return false;
}

/* `ENGINE info` as one normalised object, the same keys for docker and podman (whose info
 * documents differ): version, client_version, os, kernel, rootless, userns_remap, cgroup
 * {version "v1"|"v2", driver}, limits {memory, memory_swap, pids_limit, cpus}, seccomp,
 * apparmor, selinux, security_options, init, runtimes, default_runtime. */
json_object *lb_docker_normalise_info(const char *engine, json_object *raw)
{
	json_object *o = json_object_new_object(), *lim = json_object_new_object();
	json_object *cg = json_object_new_object(), *rt = json_object_new_array();
	json_object *secopts = json_object_new_array();
	if (strcmp(engine, "podman") == 0) {
		json_object *host = lb_docker_jobj(raw, "host"), *sec = lb_docker_jobj(host, "security");
		json_object *ver = lb_docker_jobj(raw, "version"), *ctl = NULL, *ds = lb_docker_jobj(host, "distribution");
		const char *cgv = lb_docker_jstr(host, "cgroupVersion");
		json_object_object_add(o, "version", lb_docker_jstr(ver, "Version") ? json_object_new_string(lb_docker_jstr(ver, "Version")) : NULL);
		json_object_object_add(o, "os", lb_docker_jstr(ds, "distribution") ? json_object_new_string(lb_docker_jstr(ds, "distribution")) : NULL);
		json_object_object_add(o, "kernel", lb_docker_jstr(host, "kernel") ? json_object_new_string(lb_docker_jstr(host, "kernel")) : NULL);
		json_object_object_add(o, "rootless", json_object_new_boolean(lb_docker_jbool(sec, "rootless")));
		json_object_object_add(o, "userns_remap", json_object_new_boolean(lb_docker_jbool(sec, "rootless")));
		json_object_object_add(cg, "version", json_object_new_string(cgv && strcmp(cgv, "v2") == 0 ? "v2" : "v1"));
		json_object_object_add(cg, "driver", lb_docker_jstr(host, "cgroupManager") ? json_object_new_string(lb_docker_jstr(host, "cgroupManager")) : NULL);
		/* The controllers podman can use: rootless on cgroup v1 it has none. */
		json_object_object_get_ex(host, "cgroupControllers", &ctl);
		bool v1_rootless = !(cgv && strcmp(cgv, "v2") == 0) && lb_docker_jbool(sec, "rootless");
		bool any = ctl && json_object_is_type(ctl, json_type_array) && json_object_array_length(ctl) > 0;
		json_object_object_add(lim, "memory", json_object_new_boolean(any ? array_has(ctl, "memory") : !v1_rootless));
		json_object_object_add(lim, "memory_swap", json_object_new_boolean(any ? array_has(ctl, "memory") : !v1_rootless));
		json_object_object_add(lim, "pids_limit", json_object_new_boolean(any ? array_has(ctl, "pids") : !v1_rootless));
		json_object_object_add(lim, "cpus", json_object_new_boolean(any ? array_has(ctl, "cpu") : !v1_rootless));
		json_object_object_add(o, "seccomp", json_object_new_boolean(lb_docker_jbool(sec, "seccompEnabled")));
		json_object_object_add(o, "apparmor", json_object_new_boolean(lb_docker_jbool(sec, "apparmorEnabled")));
		json_object_object_add(o, "selinux", json_object_new_boolean(lb_docker_jbool(sec, "selinuxEnabled")));
		if (lb_docker_jbool(sec, "seccompEnabled"))
			json_object_array_add(secopts, json_object_new_string("name=seccomp"));
		if (lb_docker_jbool(sec, "rootless"))
			json_object_array_add(secopts, json_object_new_string("name=rootless"));
		json_object_object_add(o, "init", json_object_new_boolean(true)); /* catatonit */
		json_object *oci = lb_docker_jobj(host, "ociRuntime");
		if (lb_docker_jstr(oci, "name"))
			json_object_array_add(rt, json_object_new_string(lb_docker_jstr(oci, "name")));
		json_object_object_add(o, "default_runtime", lb_docker_jstr(oci, "name") ? json_object_new_string(lb_docker_jstr(oci, "name")) : NULL);
	} else {
		json_object *so = NULL, *ci = lb_docker_jobj(raw, "ClientInfo"), *runtimes = lb_docker_jobj(raw, "Runtimes");
		json_object_object_get_ex(raw, "SecurityOptions", &so);
		const char *cgv = lb_docker_jstr(raw, "CgroupVersion");
		json_object_object_add(o, "version", lb_docker_jstr(raw, "ServerVersion") ? json_object_new_string(lb_docker_jstr(raw, "ServerVersion")) : NULL);
		json_object_object_add(o, "client_version", lb_docker_jstr(ci, "Version") ? json_object_new_string(lb_docker_jstr(ci, "Version")) : NULL);
		json_object_object_add(o, "os", lb_docker_jstr(raw, "OperatingSystem") ? json_object_new_string(lb_docker_jstr(raw, "OperatingSystem")) : NULL);
		json_object_object_add(o, "kernel", lb_docker_jstr(raw, "KernelVersion") ? json_object_new_string(lb_docker_jstr(raw, "KernelVersion")) : NULL);
		json_object_object_add(o, "rootless", json_object_new_boolean(array_has(so, "name=rootless")));
		json_object_object_add(o, "userns_remap", json_object_new_boolean(array_has(so, "name=userns") || array_has(so, "name=rootless")));
		json_object_object_add(cg, "version", json_object_new_string(cgv && strcmp(cgv, "2") == 0 ? "v2" : "v1"));
		json_object_object_add(cg, "driver", lb_docker_jstr(raw, "CgroupDriver") ? json_object_new_string(lb_docker_jstr(raw, "CgroupDriver")) : NULL);
		json_object_object_add(lim, "memory", json_object_new_boolean(lb_docker_jbool(raw, "MemoryLimit")));
		json_object_object_add(lim, "memory_swap", json_object_new_boolean(lb_docker_jbool(raw, "SwapLimit")));
		json_object_object_add(lim, "pids_limit", json_object_new_boolean(lb_docker_jbool(raw, "PidsLimit")));
		json_object_object_add(lim, "cpus", json_object_new_boolean(lb_docker_jbool(raw, "CpuCfsQuota")));
		json_object_object_add(o, "seccomp", json_object_new_boolean(array_has(so, "name=seccomp")));
		json_object_object_add(o, "apparmor", json_object_new_boolean(array_has(so, "name=apparmor")));
		json_object_object_add(o, "selinux", json_object_new_boolean(array_has(so, "name=selinux")));
		for (size_t i = 0; so && json_object_is_type(so, json_type_array) && i < json_object_array_length(so); i++)
			json_object_array_add(secopts, json_object_get(json_object_array_get_idx(so, i)));
		const char *init = lb_docker_jstr(raw, "InitBinary");
		json_object_object_add(o, "init", json_object_new_boolean(init && *init));
		json_object_object_foreach(runtimes, key, val)
		{
			(void)val;
			json_object_array_add(rt, json_object_new_string(key));
		}
		json_object_object_add(o, "default_runtime", lb_docker_jstr(raw, "DefaultRuntime") ? json_object_new_string(lb_docker_jstr(raw, "DefaultRuntime")) : NULL);
	}
	json_object_object_add(o, "cgroup", cg);
	json_object_object_add(o, "limits", lim);
	json_object_object_add(o, "security_options", secopts);
	json_object_object_add(o, "runtimes", rt);
	return o;
}

/* --gpus needs the engine's NVIDIA hook: docker finds nvidia-container-runtime-hook (the
 * NVIDIA Container Toolkit) on the daemon's PATH, or a registered nvidia runtime; podman
 * uses CDI specifications. What the client can see of that is reported, and how. */
json_object *lb_docker_gpus_facts(const char *engine, const char *host, json_object *info)
{
	json_object *g = json_object_new_object();
	bool remote = host && strncmp(host, "unix://", 7) != 0;
	LB_AUTOFREE char *hook = NULL;
	bool local_hook = lb_find_executable("nvidia-container-runtime-hook", &hook) == 0 ||
			  lb_find_executable("nvidia-ctk", &hook) == 0;
	bool cdi = access("/etc/cdi/nvidia.yaml", F_OK) == 0 || access("/var/run/cdi/nvidia.yaml", F_OK) == 0;
	json_object *rt = NULL;
	json_object_object_get_ex(info, "runtimes", &rt);
	bool nvidia_rt = array_has(rt, "nvidia");
	bool ok;
	const char *how;
	if (strcmp(engine, "podman") == 0) {
		ok = cdi;
		how = cdi ? "a CDI specification for NVIDIA devices (/etc/cdi or /var/run/cdi)"
			  : "no CDI specification for NVIDIA devices (nvidia-ctk cdi generate makes one)";
	} else if (nvidia_rt) {
		ok = true;
		how = "the engine has an nvidia runtime";
	} else if (remote) {
		ok = false;
		how = "the engine is on another host and has no nvidia runtime; whether its "
		      "nvidia-container-runtime-hook is installed cannot be seen from here";
	} else {
		ok = local_hook;
		how = local_hook ? "nvidia-container-runtime-hook (NVIDIA Container Toolkit) is installed"
				 : "no NVIDIA Container Toolkit (nvidia-container-runtime-hook) and no "
				   "nvidia runtime: --gpus would fail";
	}
	json_object_object_add(g, "honoured", json_object_new_boolean(ok));
	json_object_object_add(g, "how", json_object_new_string(how));
	return g;
}
