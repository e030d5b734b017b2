/* The values of a results file as flat dotted paths, and the equality of two metric values:
 * what the run index stores, what the run summary shows and what `labbox rerun` compares. */
#include "labbox/collect.h"
#include "labbox/util.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest dotted path kept; a deeper one is counted as dropped rather than cut, since a cut
 * path would name another value. */
#define PATH_MAX_LEN 1024

typedef struct flat_ctx {
	size_t array_max;
	bool digest_long;
	size_t max_values;
	size_t added;
	size_t dropped;
	json_object *out;
	/* digest_long: the values past max_values, path and value, as one digest, so that a
	 * comparison of two documents leaves nothing out (lb_results_flatten). */
	lb_sha256 rest;
	size_t rest_n;
} flat_ctx;

/* A value as compared: a number (the strings labbox writes for non-finite numbers are the
 * numbers they stand for), else its JSON type. */
static bool as_number(json_object *v, double *out)
{
	switch (json_object_get_type(v)) {
	case json_type_int:
	case json_type_double:
		*out = json_object_get_double(v);
		return true;
	case json_type_string: {
		const char *s = json_object_get_string(v);
		if (strcmp(s, "NaN") == 0)
			*out = NAN;
		else if (strcmp(s, "Infinity") == 0)
			*out = INFINITY;
		else if (strcmp(s, "-Infinity") == 0)
			*out = -INFINITY;
		else
			return false;
		return true;
	}
	default:
		return false;
	}
}

/* An integer as its exact decimal text: json-c keeps 64 bits (signed, or unsigned past
 * INT64_MAX), where a double keeps 53, and checksums, seeds and counts use all of them. */
static void int_text(json_object *v, char out[32])
{
	int64_t i = json_object_get_int64(v);
	if (i == INT64_MAX)
		snprintf(out, 32, "%" PRIu64, json_object_get_uint64(v));
	else
		snprintf(out, 32, "%" PRId64, i);
}

/* An integer a double does not hold exactly. */
static bool wide_int(json_object *v)
{
	if (!json_object_is_type(v, json_type_int))
		return false;
	int64_t i = json_object_get_int64(v);
	return i == INT64_MAX || i > (INT64_C(1) << 53) || i < -(INT64_C(1) << 53);
}

bool lb_metric_values_equal(struct json_object *a, struct json_object *b)
{
	double x, y;
	if (json_object_is_type(a, json_type_int) && json_object_is_type(b, json_type_int)) {
		char ta[32], tb[32];
		int_text(a, ta);
		int_text(b, tb);
		return strcmp(ta, tb) == 0;
	}
	bool na = as_number(a, &x), nb = as_number(b, &y);
	if (na || nb) {
		if (!(na && nb))
			return false;
		/* The same NaN reported twice is the same result: a rerun that gives NaN again
		 * repeats the original, whatever IEEE says of NaN == NaN. */
		if (isnan(x) || isnan(y))
			return isnan(x) && isnan(y);
		return x == y;
	}
	json_type ta = json_object_get_type(a), tb = json_object_get_type(b);
	if (ta != tb)
		return false;
	switch (ta) {
	case json_type_null:
		return true;
	case json_type_boolean:
		return json_object_get_boolean(a) == json_object_get_boolean(b);
	case json_type_string:
		return json_object_get_string_len(a) == json_object_get_string_len(b) &&
		       memcmp(json_object_get_string(a), json_object_get_string(b),
			      (size_t)json_object_get_string_len(a)) == 0;
	default:
		/* Objects and arrays are compared through their flattened leaves, never here. */
		return json_object_equal(a, b) != 0;
	}
}

typedef struct member {
	const char *key;
	json_object *val;
} member;

static int member_cmp(const void *a, const void *b)
{
	return strcmp(((const member *)a)->key, ((const member *)b)->key);
}

/* A digest that equal values share: numbers hashed as the doubles they are (1 and 1.0 alike,
 * as lb_metric_values_equal compares them), strings with their length, so no two different
 * documents hash alike by concatenation. */
static void hash_canon(lb_sha256 *h, json_object *v, int depth)
{
	char buf[64];
	double x;
	if (depth > 64) {
		lb_sha256_update(h, "D", 1);
		return;
	}
	if (wide_int(v)) {
		char t[32];
		int_text(v, t);
		int n = snprintf(buf, sizeof buf, "i:%s;", t);
		lb_sha256_update(h, buf, (size_t)n);
		return;
	}
	if (as_number(v, &x)) {
		int n = isnan(x) ? snprintf(buf, sizeof buf, "n:nan;")
			: snprintf(buf, sizeof buf, "n:%.17g;", x);
		lb_sha256_update(h, buf, (size_t)n);
		return;
	}
	switch (json_object_get_type(v)) {
	case json_type_null:
		lb_sha256_update(h, "z;", 2);
		break;
	case json_type_boolean:
		lb_sha256_update(h, json_object_get_boolean(v) ? "t;" : "f;", 2);
		break;
	case json_type_string: {
		size_t len = (size_t)json_object_get_string_len(v);
		int n = snprintf(buf, sizeof buf, "s%zu:", len);
		lb_sha256_update(h, buf, (size_t)n);
		lb_sha256_update(h, json_object_get_string(v), len);
		break;
	}
	case json_type_array: {
		size_t len = json_object_array_length(v);
		int n = snprintf(buf, sizeof buf, "a%zu[", len);
		lb_sha256_update(h, buf, (size_t)n);
		for (size_t i = 0; i < len; i++)
			hash_canon(h, json_object_array_get_idx(v, i), depth + 1);
		lb_sha256_update(h, "]", 1);
		break;
	}
	case json_type_object: {
		/* json-c keeps members in insertion order, which is the file's order: a file
		 * that writes the same members in another order is the same document. Sorted
		 * with qsort: an object of many members in reverse order (40,000 keys) cost an
		 * insertion sort seconds of labbox's time after the run. */
		size_t n = (size_t)json_object_object_length(v), k = 0;
		member *keys = n ? calloc(n, sizeof *keys) : NULL;
		if (n && !keys) {
			lb_sha256_update(h, "?", 1);
			break;
		}
		json_object_object_foreach(v, key, val)
		{
			keys[k].key = key;
			keys[k++].val = val;
		}
		if (k > 1)
			qsort(keys, k, sizeof *keys, member_cmp);
		int m = snprintf(buf, sizeof buf, "o%zu{", k);
		lb_sha256_update(h, buf, (size_t)m);
		for (size_t i = 0; i < k; i++) {
			size_t kl = strlen(keys[i].key);
			m = snprintf(buf, sizeof buf, "%zu:", kl);
			lb_sha256_update(h, buf, (size_t)m);
			lb_sha256_update(h, keys[i].key, kl);
			hash_canon(h, keys[i].val, depth + 1);
		}
		lb_sha256_update(h, "}", 1);
		free(keys);
		break;
	}
	default:
		break;
	}
}

int lb_metric_value_digest(struct json_object *v, char out[72])
{
	lb_sha256 h;
	uint8_t d[32];
	char hex[65];
	lb_sha256_init(&h);
	hash_canon(&h, v, 0);
	lb_sha256_final(&h, d);
	lb_sha256_hex(d, hex);
	snprintf(out, 72, "sha256:%.64s", hex);
	return 0;
}

static int add_value(flat_ctx *c, const char *path, json_object *v)
{
	if (c->added >= c->max_values) {
		if (c->digest_long) {
			char n[32];
			int k = snprintf(n, sizeof n, "p%zu:", strlen(path));
			lb_sha256_update(&c->rest, n, (size_t)k);
			lb_sha256_update(&c->rest, path, strlen(path));
			hash_canon(&c->rest, v, 0);
			c->rest_n++;
			return 0;
		}
		c->dropped++;
		return 0;
	}
	/* A second value under one path ({"a.b": 1, "a": {"b": 2}}) is kept under PATH~2 (~3...)
	 * in document order, so both are indexed and compared and neither hides the other. */
	char alt[PATH_MAX_LEN + 16];
	const char *key = path;
	for (unsigned k = 2; json_object_object_get_ex(c->out, key, NULL); k++) {
		if (k > 1000 || snprintf(alt, sizeof alt, "%s~%u", path, k) >= (int)sizeof alt) {
			c->dropped++;
			return 0;
		}
		key = alt;
	}
	json_object *copy = NULL;
	if (v && json_object_deep_copy(v, &copy, NULL) < 0)
		return -ENOMEM;
	if (json_object_object_add(c->out, key, copy) < 0) {
		json_object_put(copy);
		return -ENOMEM;
	}
	c->added++;
	return 0;
}

/* A member whose dotted path would pass PATH_MAX_LEN, for a comparison: its key cut, with
 * a digest of the whole path after it, so that it is compared under a name of its own, not
 * left out. Returns the length written after path[len], or -1 when even that does not fit. */
static int long_key(char *path, size_t len, const char *key)
{
	lb_sha256 h;
	uint8_t d[32];
	char hex[65];
	lb_sha256_init(&h);
	lb_sha256_update(&h, path, len);
	lb_sha256_update(&h, ".", 1);
	lb_sha256_update(&h, key, strlen(key));
	lb_sha256_final(&h, d);
	lb_sha256_hex(d, hex);
	if (len + 100 > PATH_MAX_LEN)
		return -1;
	return snprintf(path + len, PATH_MAX_LEN - len, "%s%.40s~sha256:%.16s", len ? "." : "",
			key, hex);
}

static int flatten(flat_ctx *c, json_object *v, char *path, size_t len, int depth)
{
	json_type t = json_object_get_type(v);
	if (t != json_type_object && t != json_type_array)
		return len ? add_value(c, path, v) : 0; /* a bare scalar document has no path */
	if (depth > 64 || (t == json_type_array && json_object_array_length(v) > c->array_max)) {
		/* A long series (per-step losses, a results.csv of many rows) is one value: its
		 * digest says whether it repeated, without a thousand entries. */
		if (!c->digest_long) {
			c->dropped++;
			return 0;
		}
		/* So is what lies deeper than 64 levels, where a path would run too long. */
		char d[72], text[96];
		lb_metric_value_digest(v, d);
		if (t == json_type_array)
			snprintf(text, sizeof text, "%s/%zu", d, json_object_array_length(v));
		else
			snprintf(text, sizeof text, "%s", d);
		json_object *s = json_object_new_string(text);
		int r = s ? add_value(c, len ? path : "[]", s) : -ENOMEM;
		json_object_put(s);
		return r;
	}
	if (t == json_type_array && len && json_object_array_length(v) == 1) {
		json_object *only = json_object_array_get_idx(v, 0);
		json_type ot = json_object_get_type(only);

		/* {"acc": [0.9]}: R's jsonlite writes every scalar so (R has no other scalar,
		 * and write_json does not unbox by default). One number in an array is that
		 * number, under the member's own name, not "acc.0". */
		if (ot == json_type_double || ot == json_type_int)
			return add_value(c, path, only);
	}
	if (t == json_type_array) {
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			int n = snprintf(path + len, PATH_MAX_LEN - len, "%s%zu", len ? "." : "", i);
			if (n < 0 || (size_t)n >= PATH_MAX_LEN - len) {
				c->dropped++;
				continue;
			}
			int r = flatten(c, json_object_array_get_idx(v, i), path, len + (size_t)n,
					depth + 1);
			path[len] = '\0';
			if (r < 0)
				return r;
		}
		return 0;
	}
	json_object_object_foreach(v, key, val)
	{
		int n = snprintf(path + len, PATH_MAX_LEN - len, "%s%s", len ? "." : "", key);
		if (n >= 0 && (size_t)n >= PATH_MAX_LEN - len && *key && c->digest_long)
			n = long_key(path, len, key);
		if (n < 0 || (size_t)n >= PATH_MAX_LEN - len || !*key) {
			path[len] = '\0';
			c->dropped++;
			continue;
		}
		int r = flatten(c, val, path, len + (size_t)n, depth + 1);
		path[len] = '\0';
		if (r < 0)
			return r;
	}
	return 0;
}

int lb_results_flatten(struct json_object *doc, size_t array_max, bool digest_long,
		       size_t max_values, struct json_object *out, size_t *dropped)
{
	if (!json_object_is_type(out, json_type_object))
		return -EINVAL;
	flat_ctx c = {.array_max = array_max, .digest_long = digest_long,
		      .max_values = max_values, .out = out};
	char path[PATH_MAX_LEN + 1] = "";
	lb_sha256_init(&c.rest);
	int r = flatten(&c, doc, path, 0, 0);
	if (r >= 0 && c.rest_n) {
		/* Compared as one value: "the rest", its digest and how many it holds. */
		uint8_t d[32];
		char hex[65], text[112];
		lb_sha256_final(&c.rest, d);
		lb_sha256_hex(d, hex);
		snprintf(text, sizeof text, "sha256:%s/%zu", hex, c.rest_n);
		json_object *s = json_object_new_string(text);
		if (!s || json_object_object_add(out, "labbox.rest", s) < 0) {
			json_object_put(s);
			r = -ENOMEM;
		}
	}
	if (dropped)
		*dropped = c.dropped;
	return r < 0 ? r : (int)(c.added > INT32_MAX ? INT32_MAX : c.added);
}
