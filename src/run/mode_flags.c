/* Which backend each of a run request's settings belongs to.
 *
 * A setting names where or how a run goes (a host, a partition, an image, a Drive folder);
 * given for a run in another mode it would be ignored and the run would go ahead somewhere
 * the user did not mean (a ten-hour job on a cluster's login node). One table, consulted by
 * every command that takes such flags, so a new backend flag cannot miss its check. */
#include "labbox/backend.h"
#include "labbox/config.h"
#include "labbox/run.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum setting_kind { SETTING_STR, SETTING_BOOL, SETTING_SECONDS };

static const struct mode_flag {
	const char *flag, *mode;
	size_t off;
	enum setting_kind kind;
} mode_flags[] = {
	{"--image", "docker", offsetof(lb_run_request, image), SETTING_STR},
	{"--base-image", "docker", offsetof(lb_run_request, base_image), SETTING_STR},
	{"--engine", "docker", offsetof(lb_run_request, engine), SETTING_STR},
	{"--host", "ssh", offsetof(lb_run_request, host), SETTING_STR},
	{"--remote-labbox", "ssh", offsetof(lb_run_request, remote_labbox), SETTING_STR},
	{"--install-remote", "ssh", offsetof(lb_run_request, install_remote), SETTING_BOOL},
	{"--partition", "slurm", offsetof(lb_run_request, partition), SETTING_STR},
	{"--account", "slurm", offsetof(lb_run_request, account), SETTING_STR},
	{"--qos", "slurm", offsetof(lb_run_request, qos), SETTING_STR},
	{"--drive", "colab", offsetof(lb_run_request, drive), SETTING_STR},
	{"--colab-poll", "colab", offsetof(lb_run_request, colab_poll), SETTING_SECONDS},
	{"--colab-timeout", "colab", offsetof(lb_run_request, colab_timeout), SETTING_SECONDS},
	{"--colab-stale", "colab", offsetof(lb_run_request, colab_stale), SETTING_SECONDS},
};

static bool setting_given(const lb_run_request *req, const struct mode_flag *f)
{
	const char *p = (const char *)req + f->off;
	switch (f->kind) {
	case SETTING_STR:
		return *(const char *const *)(const void *)p != NULL;
	case SETTING_BOOL:
		return *(const bool *)(const void *)p;
	case SETTING_SECONDS:
		return *(const double *)(const void *)p != 0;
	}
	return false;
}

int lb_run_mode_flags_check(const lb_run_request *req, const char *mode, const char *what,
			    char *err, size_t errlen)
{
	/* A mode this labbox lacks has an error of its own, which says more. */
	if (!mode || !lb_backend_known(mode))
		return 0;
	for (size_t i = 0; i < sizeof mode_flags / sizeof *mode_flags; i++) {
		const struct mode_flag *f = &mode_flags[i];
		if (strcmp(f->mode, mode) != 0 && setting_given(req, f)) {
			snprintf(err, errlen, "%s applies to --mode %s only (this %s's mode is %s)",
				 f->flag, f->mode, what, mode);
			return -EINVAL;
		}
	}
	return 0;
}

int lb_run_resolve_mode(const lb_run_request *req, char *mode, size_t len)
{
	if (req->mode) {
		snprintf(mode, len, "%s", req->mode);
		return 0;
	}
	char dir[PATH_MAX], err[256];
	lb_exp_config cfg;
	memset(&cfg, 0, sizeof cfg);
	if (!req->expdir || !realpath(req->expdir, dir))
		return -ENOENT;
	if (lb_config_load(dir, &cfg, err, sizeof err) < 0)
		return -EINVAL;
	snprintf(mode, len, "%s", cfg.mode ? cfg.mode : "local");
	lb_config_free(&cfg);
	return 0;
}
