/* libFuzzer target: stdout metric collection. The input is output an experiment printed. */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "labbox/collect.h"

/* Every chunk arrives at the same time, so the arrival time of a TIME_GUARD line cannot
 * depend on where the output was cut. */
/* stream: 0 all of it on stdout, 1 all on stderr, 2 chunks taking turns (stdout first). */
static char *collect_json(const uint8_t *data, size_t size, size_t chunk, int stream,
			  lb_metrics **keep)
{
	lb_metrics *m = NULL;
	struct json_object *doc;
	char *text;

	if (lb_metrics_new(&m) < 0)
		abort();
	{
		/* The language's forms (R's NA, Octave's display) from a byte of the input. */
		static const char *const languages[] = { NULL, "r", "octave" };

		lb_metrics_set_language(m, languages[size > 4 ? data[4] % 3 : 0]);
	}
	for (size_t i = 0; i < size; i += chunk) {
		size_t n = size - i < chunk ? size - i : chunk;

		if (stream == 1 || (stream == 2 && (i / chunk) % 2))
			lb_metrics_feed_stderr_at(m, (const char *)data + i, n, 3.5);
		else
			lb_metrics_feed_at(m, (const char *)data + i, n, 3.5);
	}
	lb_metrics_finish(m);
	doc = lb_metrics_to_json(m);
	if (!doc)
		abort();
	fuzz_assert_strict_json(doc);
	text = strdup(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN));
	json_object_put(doc);
	if (keep)
		*keep = m;
	else
		lb_metrics_free(m);
	return text;
}

static bool inside(const char *p, size_t len, const char *data, size_t size)
{
	return p >= data && p + len <= data + size;
}

/* Pointers of a parsed line point into it, or into its copy without escape sequences. */
static bool in_line(const char *p, size_t len, const char *data, size_t size,
		    const lb_metric_line *ml)
{
	return inside(p, len, data, size) || inside(p, len, ml->plain, sizeof(ml->plain));
}

/* What lb_metric_line_parse promises about a line it accepts. */
static void check_line(const lb_metric_line *ml, const char *data, size_t size)
{
	if (!in_line(ml->str, ml->str_len, data, size, ml) || ml->str_len == 0)
		abort();
	if (ml->n_values == 0 || ml->n_values > LB_METRIC_VALUES_MAX)
		abort();
	for (size_t i = 0; i < ml->n_values; i++) {
		const lb_metric_value *v = &ml->values[i];

		if (!in_line(v->str, v->str_len, data, size, ml) || v->str_len == 0 ||
		    strlen(v->name) == 0 || (v->remark && !in_line(v->remark, v->remark_len, data, size, ml)) ||
		    (v->wrapper && !in_line(v->wrapper, v->wrapper_len, data, size, ml)))
			abort();
	}
	if (ml->n_tags > LB_METRIC_TAGS_MAX + (ml->form == LB_METRIC_FORM_PAIRED ? 2 : 0) ||
	    strlen(ml->name) == 0 ||
	    strlen(ml->name) > LB_METRIC_NAME_MAX)
		abort();
	switch (ml->form) {
	case LB_METRIC_FORM_PLAIN:
		if (ml->condition || ml->n_tags)
			abort();
		break;
	case LB_METRIC_FORM_TAGGED:
		if (!ml->condition)
			abort();
		/* fall through */
	case LB_METRIC_FORM_SUMMARY:
	case LB_METRIC_FORM_PAIRED:
		if (ml->condition && (!in_line(ml->condition, ml->condition_len, data, size, ml) ||
				      ml->condition_len == 0))
			abort();
		if (ml->form == LB_METRIC_FORM_SUMMARY && ml->n_tags == 0)
			abort();
		for (size_t i = 0; i < ml->n_tags; i++) {
			const lb_metric_tag *t = &ml->tags[i];

			/* PAIRED's method= and baseline= keys are labbox's own text. */
			bool own_key = ml->form == LB_METRIC_FORM_PAIRED &&
				       (strncmp(t->key, "method", t->key_len) == 0 ||
					strncmp(t->key, "baseline", t->key_len) == 0);

			if ((!own_key && !in_line(t->key, t->key_len, data, size, ml)) ||
			    !in_line(t->value, t->value_len, data, size, ml) || t->key_len == 0 ||
			    t->key_len > LB_METRIC_TAG_KEY_MAX || t->value_len == 0)
				abort();
			/* Sorted, keys unique, condition= and metric= taken out. */
			if (i > 0) {
				const lb_metric_tag *p = &ml->tags[i - 1];
				size_t n = p->key_len < t->key_len ? p->key_len : t->key_len;
				int c = memcmp(p->key, t->key, n);

				if (c > 0 || (c == 0 && p->key_len >= t->key_len))
					abort();
			}
			if ((t->key_len == 9 && memcmp(t->key, "condition", 9) == 0) ||
			    (ml->form == LB_METRIC_FORM_SUMMARY && t->key_len == 6 &&
			     memcmp(t->key, "metric", 6) == 0))
				abort();
		}
		break;
	default:
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const declared[] = { "accuracy", "loss", "a.b", "condition" };
	size_t chunks[3] = { size ? size : 1, 1, 1 + (size ? data[0] % 61 : 0) };
	lb_metrics *m = NULL;
	struct json_object *issues;
	char *want;
	lb_metric_line ml;
	double v;

	/* However the output was cut into reads, the result is the same. */
	want = collect_json(data, size, chunks[0], 0, &m);
	for (size_t i = 1; i < 3; i++) {
		char *got = collect_json(data, size, chunks[i], 0, NULL);

		if (strcmp(got, want) != 0)
			abort();
		free(got);
	}
	/* The same for stderr's lines, and the two streams' chunks taking turns never break. */
	{
		char *err_want = collect_json(data, size, chunks[0], 1, NULL);

		for (size_t i = 1; i < 3; i++) {
			char *got = collect_json(data, size, chunks[i], 1, NULL);

			if (strcmp(got, err_want) != 0)
				abort();
			free(got);
		}
		free(err_want);
		free(collect_json(data, size, chunks[2], 2, NULL));
	}
	issues = json_object_new_array();
	lb_metrics_validate(m, NULL, NULL, declared, 4, issues);
	fuzz_assert_strict_json(issues);
	json_object_put(issues);
	{
		/* The whole-run checks: timing from the input's first bytes, warnings included. */
		/* Without declared metrics too, where the results_unread warning is made. */
		lb_metrics_run_info info = {
			.declared = declared,
			.n_declared = size > 3 && (data[3] & 4) ? 0 : 4,
			.wall_s = size > 1 ? data[1] : -1,
			.budget_s = size > 2 ? data[2] : 0,
			.completed = size > 3 && (data[3] & 1),
		};
		struct json_object *warnings = json_object_new_array();

		/* A run that printed progress lines alone reports the last one's values; the
		 * document stays strict JSON and the checks run on them as on any value. */
		if (size > 3 && (data[3] & 2)) {
			struct json_object *doc;

			lb_metrics_use_progress(m, info.completed);
			doc = lb_metrics_to_json(m);
			if (!doc)
				abort();
			fuzz_assert_strict_json(doc);
			json_object_put(doc);
		}
		issues = json_object_new_array();
		if (lb_metrics_validate_run(m, &info, issues, warnings) !=
		    json_object_array_length(issues))
			abort();
		fuzz_assert_strict_json(issues);
		fuzz_assert_strict_json(warnings);
		json_object_put(issues);
		json_object_put(warnings);
	}
	/* Every chunk came with a time, so a guard that fired always has one. */
	if (lb_metrics_time_guard_fired(m) != (lb_metrics_time_guard_at(m) >= 0))
		abort();
	lb_metrics_free(m);
	free(want);

	/* The pure parsers on the raw input, which need no terminator. */
	if (lb_metric_line_parse((const char *)data, size, &ml))
		check_line(&ml, (const char *)data, size);
	/* A progress line's pairs keep the same promises (Keras's epoch lines are both). */
	if (lb_metric_progress_parse((const char *)data, size, &ml))
		check_line(&ml, (const char *)data, size);
	/* The same input as a print template (LB404 asks this). */
	if (lb_metric_template_parse((const char *)data, size, &ml))
		check_line(&ml, (const char *)data, size);
	if (lb_parse_number((const char *)data, size, &v) && isfinite(v) && size < 512) {
		/* The fast path must agree with strtod bit for bit. */
		char text[512];
		double w;

		memcpy(text, data, size);
		text[size] = '\0';
		w = strtod(text, NULL);
		if (memcmp(&v, &w, sizeof(v)) != 0)
			abort();
	}
	return 0;
}
