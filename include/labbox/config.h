/* config: an experiment's labbox.yaml, read with libyaml into one resolved struct.
 *
 *   entry: train.py          # entry point inside EXPDIR (default main.py)
 *   args: [--epochs, "3"]    # arguments after the entry point
 *   python: /usr/bin/python3 # interpreter (flag --python wins)
 *   env: .venv               # the project's environment: a name (conda, pyenv) or a path
 *                            # relative to EXPDIR; runs as --env auto would pick it
 *   budget: 300              # wall-clock seconds (flag --budget wins)
 *   metrics: [accuracy, loss]  # metrics the run must report
 *   metrics: none            # the experiment reports no metric (else a run that exits 0
 *                            # having reported none is invalid_metrics)
 *   results: [out/metrics.json]  # results files to read besides results.json, final_info.json
 *   mode: slurm              # where it runs (flag --mode wins)
 *   slurm:                   # mode slurm: the job's settings (flags win)
 *     partition: gpu
 *     account: lab42
 *     qos: normal
 *     memory: 8g             # as --memory: the job's and the node sandbox's limit
 *     cpus: 4                # as --cpus
 *     gpus: 1                # how many GPUs the job asks for (--gres=gpu:N)
 *
 * Unknown keys are errors, so a typo never silently drops a setting. */
#ifndef LABBOX_CONFIG_H
#define LABBOX_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lb_exp_config {
	char *entry;
	char **args;
	size_t nargs;
	char **metrics;
	size_t nmetrics;
	bool metrics_none; /* `metrics: none`: a run may report no metric at all */
	char *python;
	char *env;         /* `env: NAME|PATH`: the project's own environment */
	char *language;    /* `language: r`; NULL: the entry point's extension decides */
	char *interpreter; /* `interpreter: PATH` of an R, Octave or Julia experiment */
	char *mode;    /* the backend (`mode: local`); NULL: not set */
	char *image;   /* the container image of mode: docker (`image: NAME`); NULL: not set */
	char *host;    /* the host of mode: ssh (`host: NAME`); NULL: not set */
	char *base_image; /* mode: docker without image: the base labbox builds from */
	double budget; /* 0: not set */
	/* slurm: (mode slurm); NULL / 0: not set */
	char *slurm_partition, *slurm_account, *slurm_qos;
	uint64_t slurm_memory;
	double slurm_cpus;
	unsigned slurm_gpus;
	char **results; /* results files besides results.json and final_info.json */
	size_t nresults;
} lb_exp_config;

/* Pure: parse labbox.yaml text. On error returns -EINVAL and writes one line into err
 * (with the line number where libyaml gives one). */
int lb_config_parse(const char *text, size_t len, lb_exp_config *out, char *err, size_t errlen);
/* Read EXPDIR/labbox.yaml (or .yml); a missing file is an empty configuration. */
int lb_config_load(const char *expdir, lb_exp_config *out, char *err, size_t errlen);
void lb_config_free(lb_exp_config *c);

/* How deep lists and mappings may nest in labbox.yaml (and environment.yml). A researcher's
 * file is three or four levels deep (sweep: parameters: lr: [..]); libyaml's scanner checks
 * every open flow level at each token, so its time grows with the square of the depth
 * (20,000 levels took 5 s, the 1 MiB cap allows 500,000). 64 is far above any real file and
 * far below any cost. */
#define LB_YAML_MAX_DEPTH 64

/* Pure: walk text's YAML events (not the document composer) and refuse, before anything is
 * built, nesting deeper than LB_YAML_MAX_DEPTH: -E2BIG with "FILE line N: nested too deeply
 * ..." in err. Text that is not YAML returns 0: the caller's own load says what is wrong. */
int lb_yaml_depth_check(const char *text, size_t len, const char *file, char *err,
			size_t errlen);

#endif
