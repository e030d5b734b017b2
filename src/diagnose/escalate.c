/* Escalation advice: which of the user's standing permissions (--escalate) a failure calls
 * for. The run module acts on it; this file only reads verdicts. */
#include "labbox/diagnose.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

static const struct {
	unsigned bit;
	const char *name;
} kinds[] = {
	{LB_ESCALATE_NETWORK, "network"},
	{LB_ESCALATE_GPUS, "gpus"},
	{LB_ESCALATE_ENV, "env"},
	{LB_ESCALATE_MEMORY, "memory"},
};

const char *lb_escalate_name(unsigned bit)
{
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (kinds[i].bit == bit)
			return kinds[i].name;
	return NULL;
}

int lb_escalate_parse(const char *list, unsigned *mask, char *err, size_t errlen)
{
	*mask = 0; /* nothing granted unless the whole list reads */
	unsigned m = 0;
	if (!list || !*list) {
		snprintf(err, errlen, "--escalate needs a list: network, gpus, env, memory");
		return -EINVAL;
	}
	const char *p = list;
	while (*p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		unsigned bit = 0;
		for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
			if (strlen(kinds[i].name) == n && strncmp(kinds[i].name, p, n) == 0)
				bit = kinds[i].bit;
		if (!bit) {
			snprintf(err, errlen, "--escalate '%.*s' is not one of network, gpus, env, memory",
				 (int)(n > 64 ? 64 : n), p);
			return -EINVAL;
		}
		m |= bit;
		p += n;
		if (*p == ',')
			p++;
	}
	*mask = m;
	return 0;
}

static const char *str_of(const struct json_object *o, const char *key)
{
	json_object *v;
	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return "";
	return json_object_get_string(v);
}

/* The summary failure.c gives a socket refused by the seccomp filter: the class stays
 * sandbox_restriction there (docs/decisions.md), but the flag that lifts it is the
 * network's. tests/unit/test_escalate.c holds this text to failure.c's. */
#define SOCKET_REFUSED "the sandbox refused a network socket"

unsigned lb_diagnose_escalation(const struct json_object *failure)
{
	if (!failure || !json_object_is_type(failure, json_type_object))
		return 0;
	const char *cls = str_of(failure, "class");
	if (strcmp(cls, "network") == 0)
		return LB_ESCALATE_NETWORK;
	if (strcmp(cls, "sandbox_restriction") == 0 &&
	    strncmp(str_of(failure, "summary"), SOCKET_REFUSED, strlen(SOCKET_REFUSED)) == 0)
		return LB_ESCALATE_NETWORK;
	if (strcmp(cls, "gpu_unavailable") == 0)
		return LB_ESCALATE_GPUS;
	if (strcmp(cls, "oom") == 0)
		return LB_ESCALATE_MEMORY;
	if (strcmp(cls, "wrong_env") == 0 || strcmp(cls, "missing_package") == 0)
		return LB_ESCALATE_ENV;
	return 0;
}
