/* A sweep whose labbox is gone while its sweep.json says "running" (SIGKILL, the OOM killer, a
 * reboot): the cells' own labboxes ended and recorded their runs, but no one wrote the sweep's
 * document again. Every reader settles it first, so that none shows a dead sweep as running. */
#include "labbox/record.h"
#include "labbox/sweep.h"
#include "labbox/util.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *str_of(json_object *o, const char *key)
{
	json_object *v = NULL;
	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v) : NULL;
}

/* The newest index row of cell i of the sweep (rows are newest first), or NULL. */
static json_object *row_of_cell(json_object *rows, const char *id, int64_t i)
{
	size_t n = rows ? json_object_array_length(rows) : 0;
	for (size_t k = 0; k < n; k++) {
		json_object *row = json_object_array_get_idx(rows, k), *sw = NULL, *cell = NULL;
		if (json_object_object_get_ex(row, "sweep", &sw) && sw &&
		    strcmp(str_of(sw, "id") ? str_of(sw, "id") : "", id) == 0 &&
		    json_object_object_get_ex(sw, "cell", &cell) && cell &&
		    json_object_get_int64(cell) == i && str_of(row, "status") &&
		    strcmp(str_of(row, "status"), "running") != 0)
			return row;
	}
	return NULL;
}

/* Each condition's counts and statistics again from the cells (a cell that completed after
 * the dead sweep's last document is in them now), as lb_sweep_document computes them. */
static void restat(json_object *doc, json_object *cells)
{
	json_object *conds = json_object_object_get(doc, "conditions");
	size_t nc = json_object_is_type(conds, json_type_array) ? json_object_array_length(conds) : 0;
	size_t n = json_object_array_length(cells);
	json_object **recs = calloc(n ? n : 1, sizeof *recs), **bad = calloc(n ? n : 1, sizeof *bad);
	for (size_t c = 0; recs && bad && c < nc; c++) {
		json_object *o = json_object_array_get_idx(conds, c);
		const char *name = str_of(o, "name");
		json_object *seeds = json_object_new_array(), *seeds_nf = json_object_new_array();
		size_t k = 0, nbad = 0;
		for (size_t i = 0; name && i < n; i++) {
			json_object *cell = json_object_array_get_idx(cells, i);
			const char *st = str_of(cell, "status");
			json_object *seed = json_object_object_get(cell, "seed");
			if (!st || strcmp(str_of(cell, "condition") ? str_of(cell, "condition") : "", name))
				continue;
			if (!strcmp(st, "completed")) {
				recs[k++] = cell;
				if (seed)
					json_object_array_add(seeds, json_object_get(seed));
			} else if (!strcmp(st, "invalid_metrics")) {
				bad[nbad++] = cell;
				if (seed)
					json_object_array_add(seeds_nf, json_object_get(seed));
			}
		}
		json_object_object_add(o, "completed", json_object_new_int64((int64_t)k));
		json_object_object_add(o, "seeds_completed", seeds);
		json_object_object_add(o, "invalid_metrics", json_object_new_int64((int64_t)nbad));
		json_object_object_add(o, "seeds_invalid_metrics", seeds_nf);
		json_object_object_add(o, "metrics", lb_sweep_condition_stats(recs, k, bad, nbad));
	}
	free(recs);
	free(bad);
}

int lb_sweep_reconcile(json_object *doc, json_object *rows)
{
	const char *id = str_of(doc, "id");
	json_object *cells = json_object_object_get(doc, "cells");
	json_object *failures = json_object_object_get(doc, "failures");
	json_object *counts = json_object_object_get(doc, "counts");
	if (!id || !json_object_is_type(cells, json_type_array))
		return -EINVAL;
	if (!json_object_is_type(failures, json_type_array)) {
		failures = json_object_new_array();
		json_object_object_add(doc, "failures", failures);
	}
	json_object *from_index = json_object_new_array();
	size_t n = json_object_array_length(cells);
	int64_t nst[4] = {0}; /* completed, failed, interrupted, not_run */
	for (size_t i = 0; i < n; i++) {
		json_object *cell = json_object_array_get_idx(cells, i);
		const char *st = str_of(cell, "status");
		json_object *row = NULL;
		/* Only what the dead sweep did not get to write: a cell it recorded is its own. */
		if ((!st || !strcmp(st, "not_run") || !strcmp(st, "running")) &&
		    (row = row_of_cell(rows, id, (int64_t)i))) {
			st = str_of(row, "status");
			json_object_object_add(cell, "status", json_object_new_string(st));
			static const char *const keys[] = {"run_id", "run_dir", "exit_code", "wall_s"};
			static const char *const from[] = {"id", "run_dir", "exit_code", "wall_s"};
			for (size_t k = 0; k < 4; k++) {
				json_object *v = json_object_object_get(row, from[k]);
				json_object_object_add(cell, keys[k], v ? json_object_get(v) : NULL);
			}
			/* Its numbers only as this user's labbox sealed them, as a live sweep takes
			 * a cell's (lb_sweep_cell_record). */
			json_object *res = NULL;
			if (str_of(row, "run_dir") &&
			    lb_record_run_seal_read(str_of(row, "run_dir"), str_of(row, "id"), &res) ==
				    LB_SEAL_WHOLE && res) {
				json_object *rec = lb_sweep_cell_record(res);
				json_object_object_foreach(rec, rk, rv)
				{
					if (strcmp(rk, "status") != 0)
						json_object_object_add(cell, rk, rv ? json_object_get(rv) : NULL);
				}
				json_object_put(rec);
			}
			json_object_put(res);
			json_object_array_add(from_index, json_object_new_int64((int64_t)i));
			if (strcmp(st, "completed") != 0) {
				json_object *f = json_object_new_object();
				json_object *v;
				json_object_object_add(f, "cell", json_object_new_int64((int64_t)i));
				json_object_object_add(f, "condition",
						       (v = json_object_object_get(cell, "condition"))
							       ? json_object_get(v) : NULL);
				json_object_object_add(f, "seed", (v = json_object_object_get(cell, "seed"))
									  ? json_object_get(v) : NULL);
				json_object_object_add(f, "status", json_object_new_string(st));
				json_object_object_add(f, "run_id", json_object_new_string(
								       str_of(row, "id") ? str_of(row, "id") : ""));
				/* The run's own failure, as a live sweep lists it. */
				json_object *fail = json_object_object_get(cell, "failure");
				json_object_object_add(f, "class", json_object_new_string(
					str_of(fail, "class") ? str_of(fail, "class") : st));
				json_object_object_add(f, "summary", str_of(fail, "summary")
					? json_object_new_string(str_of(fail, "summary")) : NULL);
				json_object_array_add(failures, f);
			}
		} else if (!st || !strcmp(st, "running")) {
			st = "not_run";
			json_object_object_add(cell, "status", json_object_new_string(st));
		}
		nst[!strcmp(st, "completed") ? 0 : !strcmp(st, "interrupted") ? 2
		    : !strcmp(st, "not_run") ? 3 : 1]++;
	}
	if (json_object_is_type(counts, json_type_object)) {
		static const char *const names[] = {"completed", "failed", "interrupted", "not_run"};
		for (size_t k = 0; k < 4; k++)
			json_object_object_add(counts, names[k], json_object_new_int64(nst[k]));
	}
	if (json_object_array_length(from_index))
		restat(doc, cells);
	json_object_object_add(doc, "status", json_object_new_string("interrupted"));
	json_object_object_add(doc, "settled", json_object_new_string(
		"the sweep's labbox ended while cells ran (its lock was free) without finishing this "
		"record; cells_from_index were read from the run index. labbox sweep --resume ID "
		"runs the rest"));
	json_object_object_add(doc, "cells_from_index", from_index);
	return 0;
}

/* The index's rows of the sweep's runs, newest first; NULL when there is no index. The
 * runs directory the sweep recorded is the one its cells' runs are indexed beside. */
static json_object *index_rows(json_object *doc, const char *runs_dir)
{
	json_object *inv = json_object_object_get(doc, "invocation");
	if (str_of(inv, "runs_dir"))
		runs_dir = str_of(inv, "runs_dir");
	LB_AUTOFREE char *ixpath = NULL;
	lb_index *ix = NULL;
	json_object *rows = NULL;
	char err[512];
	if (lb_index_path_for(runs_dir, &ixpath) < 0 || access(ixpath, F_OK) != 0 ||
	    lb_index_open(ixpath, &ix, err, sizeof err) < 0)
		return NULL;
	lb_index_filter f = {.sweep = str_of(doc, "id")};
	if (lb_index_list(ix, &f, &rows, err, sizeof err) < 0)
		rows = NULL;
	lb_index_close(ix);
	return rows;
}

int lb_sweep_settle(const char *runs_dir, const char *sweep_dir)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof path, "%s/lock", sweep_dir) >= (int)sizeof path)
		return -ENAMETOOLONG;
	LB_AUTOCLOSE int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	/* Held: its labbox lives (a sweep holds it from start to end; cells close it). Taken
	 * here, no sweep can start on it until the document is settled. */
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? 0 : -errno;
	snprintf(path, sizeof path, "%s/sweep.json", sweep_dir);
	json_object *doc = json_object_from_file(path);
	int r = 0;
	/* Only this user's labbox's own document is rewritten (and sealed again): one that came
	 * from elsewhere is what its reader refuses or warns of, as it stands. */
	if (!doc || strcmp(str_of(doc, "status") ? str_of(doc, "status") : "", "running") != 0 ||
	    lb_record_sweep_seal_of(doc) != LB_SEAL_WHOLE)
		goto out;
	json_object *rows = index_rows(doc, runs_dir);
	r = lb_sweep_reconcile(doc, rows);
	json_object_put(rows);
	char seal[65];
	if (r == 0 && (r = lb_record_sweep_seal(doc, seal)) == 0) {
		json_object_object_add(doc, "seal", json_object_new_string(seal));
		r = lb_record_write_json(path, doc);
		chmod(path, 0600);
	}
	r = r < 0 ? r : 1;
out:
	json_object_put(doc);
	flock(fd, LOCK_UN);
	return r;
}
