/* results files (results.json, final_info.json): reading, parsing with json-c, and turning
 * Python's non-finite numbers into strings for the strict JSON labbox writes. */
#include "labbox/collect.h"
#include "labbox/util.h"
#include "text.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* Python's json module nests without limit, but no results file needs this much. The document
 * ends up inside result.json a few levels down, and json-c's default readers (depth 32, as in
 * json_object_from_file) must still read that back. It also bounds every later recursion. */
#define LB_RESULTS_DEPTH 24

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static bool only_space(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
			return false;
	return true;
}

static void tokener_freep(struct json_tokener **tok)
{
	if (*tok)
		json_tokener_free(*tok);
}

static void json_putp(struct json_object **obj)
{
	json_object_put(*obj);
}

/* json-c saturates an integer no 64-bit type holds (2**64-1, -2**63): the record would state
 * a number the experiment never wrote. Such literals (outside strings) are quoted, so they
 * are kept as the string of their digits that lb_json_integer makes of one printed on stdout:
 * exact for every reader, where a double would make two checksums equal. NULL: none found (or
 * no memory, when the saturated reading stays). */
static bool int_overflows(const char *d, size_t n, bool neg)
{
	static const char umax[] = "18446744073709551615", imin[] = "9223372036854775808";
	const char *lim = neg ? imin : umax;
	size_t lim_n = strlen(lim);
	while (n > 1 && *d == '0')
		d++, n--;
	return n > lim_n || (n == lim_n && memcmp(d, lim, n) > 0);
}

static char *widen_big_ints(const char *s, size_t len, size_t *out_len)
{
	char *out = NULL;
	size_t o = 0, from = 0;
	bool in_str = false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
			continue;
		}
		if (c == '"') {
			in_str = true;
			continue;
		}
		bool neg = c == '-';
		if (!(neg || (c >= '0' && c <= '9')) ||
		    (i > 0 && (isalnum((unsigned char)s[i - 1]) || s[i - 1] == '.' || s[i - 1] == '+')))
			continue;
		size_t j = i + neg;
		while (j < len && s[j] >= '0' && s[j] <= '9')
			j++;
		bool fraction = j < len && (s[j] == '.' || s[j] == 'e' || s[j] == 'E');
		if (j > i + neg && !fraction && int_overflows(s + i + neg, j - i - neg, neg)) {
			if (!out && !(out = malloc(len + len / 2 + 3)))
				return NULL; /* a literal widened is 20 digits or more */
			memcpy(out + o, s + from, i - from);
			o += i - from;
			out[o++] = '"';
			memcpy(out + o, s + i, j - i);
			o += j - i;
			out[o++] = '"';
			from = j;
		}
		i = j > i ? j - 1 : i;
	}
	if (!out)
		return NULL;
	memcpy(out + o, s + from, len - from);
	*out_len = o + len - from;
	return out;
}

/* Member names, checked on the text json-c accepted. json-c keeps a name as a C string, so
 * "a\u0000b" becomes "a" and then replaces the value of an "a" before it, and a name given
 * twice keeps its last value: other readers (pandas, jq, a person) may take the other one,
 * and the file would say one number to them and another to labbox. A name with a control
 * character (a prompt template's "Q: {q}\nA:") is read: the views show it escaped. */
typedef struct names_key {
	size_t off, len;   /* the name as json-c keeps it (cut at a NUL), in names_scan.keys */
	size_t at;         /* where it starts in the document */
	size_t raw, rawlen; /* as the file spells it, between its quotes */
} names_key;

typedef struct names_scan {
	const char *doc;
	lb_buf keys;
	names_key *v;
	size_t n, cap;
} names_scan;

static int names_cmp(const void *a, const void *b, void *arg)
{
	const names_scan *ns = arg;
	const names_key *x = a, *y = b;
	size_t m = x->len < y->len ? x->len : y->len;
	int c = memcmp(ns->keys.data + x->off, ns->keys.data + y->off, m);
	if (c)
		return c;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

/* The name as the file spells it, shown for a message (at most 80 bytes of it). */
static void names_show(const names_scan *ns, const names_key *k, char *out, size_t outlen)
{
	lb_buf b = {0};
	long took = lb_text_show(&b, ns->doc + k->raw, k->rawlen, 80);
	snprintf(out, outlen, "%s%s", b.data ? b.data : "", took >= 0 && (size_t)took < k->rawlen ? "..." : "");
	lb_buf_free(&b);
}

static unsigned hex4(const char *s)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		char c = s[i];
		v = v * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
	}
	return v;
}

/* The string at doc[*i] (its quote) decoded into ns->keys, as a key of the scan when is_key;
 * *i ends after its closing quote. Sets *nul when the decoded name holds U+0000. */
static int names_string(names_scan *ns, size_t len, size_t *i, bool is_key, bool *nul)
{
	const char *d = ns->doc;
	char q = d[*i];
	size_t start = ++*i, off = ns->keys.len, cut = SIZE_MAX;
	*nul = false;
	while (*i < len && d[*i] != q) {
		unsigned char c = (unsigned char)d[*i];
		unsigned cp = c;
		char enc[4];
		size_t n = 1;
		if (c == '\\' && *i + 1 < len) {
			char e = d[*i + 1];
			*i += 2;
			if (e == 'u' && *i + 4 <= len) {
				cp = hex4(d + *i);
				*i += 4;
				if (cp >= 0xd800 && cp <= 0xdbff && *i + 6 <= len && d[*i] == '\\' &&
				    d[*i + 1] == 'u') {
					unsigned lo = hex4(d + *i + 2);
					if (lo >= 0xdc00 && lo <= 0xdfff) {
						cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
						*i += 6;
					}
				}
			} else {
				cp = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b'
				   : e == 'f' ? '\f' : (unsigned char)e;
			}
			if (cp < 0x80) {
				enc[0] = (char)cp;
			} else if (cp < 0x800) {
				enc[0] = (char)(0xc0 | cp >> 6), enc[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
			} else if (cp < 0x10000) {
				enc[0] = (char)(0xe0 | cp >> 12), enc[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
				enc[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
			} else {
				enc[0] = (char)(0xf0 | cp >> 18), enc[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
				enc[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), enc[3] = (char)(0x80 | (cp & 0x3f));
				n = 4;
			}
		} else {
			enc[0] = (char)c;
			++*i;
		}
		if (cp == 0 && !*nul) {
			*nul = true;
			cut = ns->keys.len - off;
		}
		if (is_key && lb_buf_append(&ns->keys, enc, n) < 0)
			return -ENOMEM;
	}
	size_t end = *i;
	if (*i < len)
		++*i;
	if (!is_key)
		return 0;
	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? ns->cap * 2 : 64;
		names_key *v = realloc(ns->v, cap * sizeof *v);
		if (!v)
			return -ENOMEM;
		ns->v = v;
		ns->cap = cap;
	}
	size_t full = ns->keys.len - off;
	ns->v[ns->n++] = (names_key){.off = off, .len = cut < full ? cut : full, .at = start - 1,
				     .raw = start, .rawlen = end - start};
	return 0;
}

/* The names of the object whose keys start at ns->v[from]: -EINVAL (err says which) when
 * one is given twice as json-c reads them. */
static int names_unique(names_scan *ns, size_t from, char *err, size_t errlen)
{
	names_key *v = ns->v + from;
	size_t n = ns->n - from;
	if (n < 2)
		return 0;
	qsort_r(v, n, sizeof *v, names_cmp, ns);
	for (size_t k = 1; k < n; k++)
		if (v[k].len == v[k - 1].len &&
		    memcmp(ns->keys.data + v[k].off, ns->keys.data + v[k - 1].off, v[k].len) == 0) {
			char a[128], b[128];
			names_show(ns, &v[k - 1], a, sizeof a);
			names_show(ns, &v[k], b, sizeof b);
			if (strcmp(a, b) == 0)
				set_err(err, errlen, "the member name \"%s\" is given twice in one object "
					"(bytes %zu and %zu): JSON readers differ on which value counts, so "
					"labbox keeps neither and does not read the file", a, v[k - 1].at,
					v[k].at);
			else
				set_err(err, errlen, "the member names \"%s\" (byte %zu) and \"%s\" (byte "
					"%zu) are one name to labbox's JSON reader: JSON readers differ "
					"on which value counts, so labbox keeps neither and does not read "
					"the file", a, v[k - 1].at, b, v[k].at);
			return -EINVAL;
		}
	return 0;
}

static int names_check(const char *data, size_t len, char *err, size_t errlen)
{
	names_scan ns = {.doc = data};
	size_t frame[LB_RESULTS_DEPTH + 8]; /* each open object's first key; SIZE_MAX for an array */
	size_t depth = 0;
	bool want_key = false;
	int r = 0;
	for (size_t i = 0; r == 0 && i < len;) {
		char c = data[i];
		if (c == '"' || c == '\'') {
			bool key = want_key && depth && frame[depth - 1] != SIZE_MAX, nul;
			size_t at = i;
			r = names_string(&ns, len, &i, key, &nul);
			if (r < 0 || !key)
				continue;
			want_key = false;
			char shown[128];
			names_show(&ns, &ns.v[ns.n - 1], shown, sizeof shown);
			if (nul) {
				set_err(err, errlen, "the member name \"%s\" (byte %zu) holds \\u0000: "
					"labbox's JSON reader would cut it there and others keep it whole, "
					"so the file is not read", shown, at);
				r = -EINVAL;
			}
		} else if (c == '/' && i + 1 < len && (data[i + 1] == '*' || data[i + 1] == '/')) {
			/* json-c takes comments outside strict mode */
			const char *e = data[i + 1] == '*' ? memmem(data + i + 2, len - i - 2, "*/", 2)
							   : memchr(data + i, '\n', len - i);
			i = e ? (size_t)(e - data) + (data[i + 1] == '*' ? 2 : 1) : len;
		} else {
			if (c == '{' || c == '[') {
				if (depth == sizeof frame / sizeof *frame) {
					set_err(err, errlen, "nested too deep");
					r = -EINVAL;
					break;
				}
				frame[depth++] = c == '{' ? ns.n : SIZE_MAX;
				want_key = c == '{';
			} else if ((c == '}' || c == ']') && depth) {
				size_t from = frame[--depth];
				if (from != SIZE_MAX) {
					/* its names were pushed last: the first of them is the lowest */
					size_t keys_from = ns.n > from ? ns.v[from].off : ns.keys.len;
					r = names_unique(&ns, from, err, errlen);
					ns.keys.len = keys_from;
					ns.n = from;
				}
				want_key = false;
			} else if (c == ',') {
				want_key = depth && frame[depth - 1] != SIZE_MAX;
			}
			i++;
		}
	}
	lb_buf_free(&ns.keys);
	free(ns.v);
	return r;
}

int lb_results_parse(const char *data, size_t len, struct json_object **out, char *err,
		     size_t errlen)
{
	__attribute__((cleanup(tokener_freep))) struct json_tokener *tok = NULL;
	__attribute__((cleanup(json_putp))) struct json_object *doc = NULL;
	enum json_tokener_error jerr;
	size_t end, skip = 0;
	json_type type;

	*out = NULL;
	if (len >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0)
		skip = 3; /* a BOM, as Windows editors write */
	if (len - skip >= (size_t)INT_MAX) {
		set_err(err, errlen, "too large to parse");
		return -EFBIG;
	}
	if (only_space(data + skip, len - skip)) {
		set_err(err, errlen, "empty document");
		return -EINVAL;
	}
	size_t wide_len = 0;
	LB_AUTOFREE char *wide = widen_big_ints(data, len, &wide_len);
	if (wide) {
		data = wide;
		len = wide_len;
		if (len - skip >= (size_t)INT_MAX)
			return -EFBIG;
	}
	tok = json_tokener_new_ex(LB_RESULTS_DEPTH);
	if (!tok)
		return -ENOMEM;
	/* Strings that are not UTF-8 would make the documents labbox writes unreadable. */
	json_tokener_set_flags(tok, JSON_TOKENER_VALIDATE_UTF8);
	doc = json_tokener_parse_ex(tok, data + skip, (int)(len - skip));
	jerr = json_tokener_get_error(tok);
	end = skip + json_tokener_get_parse_end(tok);
	if (jerr == json_tokener_continue && end == len) {
		/* A top-level number or literal only ends at a delimiter: give it one. */
		doc = json_tokener_parse_ex(tok, "", 1);
		jerr = json_tokener_get_error(tok);
		end = len;
	}
	if (jerr == json_tokener_continue) {
		/* json-c stops at a NUL byte and waits for more. */
		set_err(err, errlen, "invalid JSON at byte %zu: %s", end,
			end < len ? "NUL byte" : "unexpected end of data");
		return -EINVAL;
	}
	if (jerr != json_tokener_success || !doc) {
		if (jerr == json_tokener_success)
			set_err(err, errlen, "the document is null, expected an object or array");
		else
			set_err(err, errlen, "invalid JSON at byte %zu: %s", end,
				json_tokener_error_desc(jerr));
		return -EINVAL;
	}
	if (end < len && !only_space(data + end, len - end)) {
		set_err(err, errlen, "invalid JSON at byte %zu: data after the document", end);
		return -EINVAL;
	}
	type = json_object_get_type(doc);
	if (type == json_type_object || type == json_type_array) {
		int nr = names_check(data + skip, end - skip, err, errlen);
		if (nr < 0)
			return nr;
	}
	if (type != json_type_object && type != json_type_array) {
		set_err(err, errlen, "the document is a %s, expected an object or array",
			json_type_to_name(type));
		return -EINVAL;
	}
	*out = lb_steal_ptr(&doc);
	return 0;
}

/* results.csv ------------------------------------------------------------------------------ */

#define LB_CSV_COLUMNS_MAX 1024
#define LB_CSV_ROWS_MAX 100000
#define LB_CSV_CELL_MAX 4096

/* One cell at data[*i..len): unquoted up to ',' or the end of the line, or "quoted" with ""
 * for a quote (RFC 4180). The text goes into cell (NUL-terminated, at most LB_CSV_CELL_MAX
 * bytes); *i ends after the cell's ',' or at its line's end. -EINVAL on a bad quote. */
static int csv_cell(const char *data, size_t len, size_t *i, char *cell, size_t *cell_len,
		    bool *quoted, bool *last)
{
	size_t k = *i, o = 0;

	*quoted = k < len && data[k] == '"';
	if (*quoted) {
		for (k++;; k++) {
			if (k >= len)
				return -EINVAL;
			if (data[k] == '"') {
				if (k + 1 < len && data[k + 1] == '"') {
					k++;
				} else {
					k++;
					break;
				}
			}
			if (o >= LB_CSV_CELL_MAX)
				return -EFBIG;
			cell[o++] = data[k];
		}
		if (k < len && data[k] == '\r')
			k++;
		if (k < len && data[k] != ',' && data[k] != '\n')
			return -EINVAL;
	} else {
		for (; k < len && data[k] != ',' && data[k] != '\n'; k++) {
			if (o >= LB_CSV_CELL_MAX)
				return -EFBIG;
			cell[o++] = data[k];
		}
		while (o > 0 && (cell[o - 1] == '\r' || cell[o - 1] == ' ' || cell[o - 1] == '\t'))
			o--;
	}
	cell[o] = '\0';
	*cell_len = o;
	*last = k >= len || data[k] == '\n';
	*i = k < len ? k + 1 : k;
	return 0;
}

static bool valid_utf8(const char *s, size_t len)
{
	char buf[LB_CSV_CELL_MAX * 3 + 8];

	/* lb_text_utf8 repairs; the text was valid when repair changed nothing. */
	return lb_text_utf8(buf, sizeof(buf), s, len) == len && memcmp(buf, s, len) == 0;
}

static bool blank_line(const char *data, size_t len, size_t i)
{
	for (; i < len && data[i] != '\n'; i++)
		if (data[i] != ' ' && data[i] != '\t' && data[i] != '\r')
			return false;
	return true;
}

/* A CSV in long format, two columns `metric,value` (a name column: metric, name or key; a
 * value column: value, score or result; any case), each row naming one result: read as the
 * object {name: value}, as a markdown `| Metric | Value |` table is read, so `accuracy,0.91`
 * is the metric `accuracy`. Only when every row's name is text (not a number, not empty) and
 * no name is given twice (a name per seed or per step is a table of rows). Returns 1 with
 * *obj set, 0 when the rows are not that, or -ENOMEM. */
static int long_format(struct json_object *header, struct json_object *rows,
		       struct json_object **obj)
{
	static const char *const names[] = { "metric", "name", "key" };
	static const char *const values[] = { "value", "score", "result" };
	__attribute__((cleanup(json_putp))) struct json_object *o = NULL;
	const char *nk, *vk;
	bool ok_name = false, ok_value = false;
	size_t n = json_object_array_length(rows);

	*obj = NULL;
	if (json_object_array_length(header) != 2 || n == 0)
		return 0;
	nk = json_object_get_string(json_object_array_get_idx(header, 0));
	vk = json_object_get_string(json_object_array_get_idx(header, 1));
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		ok_name |= strcasecmp(nk, names[k]) == 0;
	for (size_t k = 0; k < sizeof(values) / sizeof(values[0]); k++)
		ok_value |= strcasecmp(vk, values[k]) == 0;
	if (!ok_name || !ok_value)
		return 0;
	if (!(o = json_object_new_object()))
		return -ENOMEM;
	for (size_t j = 0; j < n; j++) {
		struct json_object *row = json_object_array_get_idx(rows, j), *name, *value = NULL;

		/* A name holding NUL would be cut there as an object's member name and
		 * could stand for another: such a table stays rows. */
		if (!json_object_object_get_ex(row, nk, &name) ||
		    !json_object_is_type(name, json_type_string) ||
		    json_object_get_string_len(name) == 0 ||
		    strlen(json_object_get_string(name)) !=
			    (size_t)json_object_get_string_len(name) ||
		    json_object_object_get_ex(o, json_object_get_string(name), NULL))
			return 0;
		json_object_object_get_ex(row, vk, &value);
		if (json_object_object_add(o, json_object_get_string(name),
					   json_object_get(value)) < 0) {
			json_object_put(value);
			return -ENOMEM;
		}
	}
	*obj = lb_steal_ptr(&o);
	return 1;
}

int lb_results_parse_csv(const char *data, size_t len, struct json_object **out, char *err,
			 size_t errlen)
{
	__attribute__((cleanup(json_putp))) struct json_object *rows = NULL;
	__attribute__((cleanup(json_putp))) struct json_object *header = NULL;
	LB_AUTOFREE char *cell = malloc(LB_CSV_CELL_MAX + 1);
	size_t i = 0, ncols = 0, line = 1;
	bool quoted, last = false;
	int r;

	*out = NULL;
	if (!cell)
		return -ENOMEM;
	if (len >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0)
		i = 3;
	if (memchr(data, '\0', len)) {
		set_err(err, errlen, "a NUL byte: not a CSV file");
		return -EINVAL;
	}
	header = json_object_new_array();
	rows = json_object_new_array();
	if (!header || !rows)
		return -ENOMEM;
	while (i < len && blank_line(data, len, i)) {
		const char *nl = memchr(data + i, '\n', len - i);

		i = nl ? (size_t)(nl - data) + 1 : len;
		line++;
	}
	if (i >= len) {
		set_err(err, errlen, "empty document");
		return -EINVAL;
	}
	do {
		size_t cl;

		r = csv_cell(data, len, &i, cell, &cl, &quoted, &last);
		if (r < 0 || cl == 0 || !valid_utf8(cell, cl)) {
			set_err(err, errlen, "line %zu: the header needs a name for every column", line);
			return -EINVAL;
		}
		for (size_t c = 0; c < ncols; c++)
			if (strcmp(json_object_get_string(json_object_array_get_idx(header, c)), cell) == 0) {
				set_err(err, errlen, "line %zu: column %s is named twice", line, cell);
				return -EINVAL;
			}
		if (++ncols > LB_CSV_COLUMNS_MAX) {
			set_err(err, errlen, "more than %d columns", LB_CSV_COLUMNS_MAX);
			return -EINVAL;
		}
		if (json_object_array_add(header, json_object_new_string_len(cell, (int)cl)) < 0)
			return -ENOMEM;
	} while (!last);
	while (i < len) {
		struct json_object *row;
		size_t col = 0;

		line++;
		if (blank_line(data, len, i)) {
			const char *nl = memchr(data + i, '\n', len - i);

			i = nl ? (size_t)(nl - data) + 1 : len;
			continue;
		}
		if (json_object_array_length(rows) >= LB_CSV_ROWS_MAX) {
			set_err(err, errlen, "more than %d rows", LB_CSV_ROWS_MAX);
			return -EFBIG;
		}
		row = json_object_new_object();
		if (!row || json_object_array_add(rows, row) < 0) {
			json_object_put(row);
			return -ENOMEM;
		}
		do {
			struct json_object *v;
			double x;
			size_t cl;

			r = csv_cell(data, len, &i, cell, &cl, &quoted, &last);
			if (r < 0 || col >= ncols) {
				set_err(err, errlen, "line %zu: %s", line,
					r == -EFBIG ? "a cell longer than 4096 bytes"
					: r < 0	    ? "an unterminated or misplaced quote"
						    : "more cells than the header has columns");
				return -EINVAL;
			}
			/* Numbers as results.json holds them; an empty cell is no value. */
			if (cl == 0 && !quoted)
				v = NULL;
			else if (!quoted && (v = lb_json_integer(cell, cl)))
				;
			else if (!quoted && lb_parse_number(cell, cl, &x))
				v = json_object_new_double(x);
			else if (valid_utf8(cell, cl))
				v = json_object_new_string_len(cell, (int)cl);
			else {
				set_err(err, errlen, "line %zu: a cell that is not UTF-8", line);
				return -EINVAL;
			}
			if ((cl || quoted) && !v)
				return -ENOMEM;
			if (json_object_object_add(
				    row, json_object_get_string(json_object_array_get_idx(header, col)),
				    v) < 0) {
				json_object_put(v);
				return -ENOMEM;
			}
			col++;
		} while (!last);
		if (col != ncols) {
			set_err(err, errlen, "line %zu: %zu cells, the header has %zu columns", line,
				col, ncols);
			return -EINVAL;
		}
	}
	if ((r = long_format(header, rows, out)) != 0)
		return r < 0 ? r : 0;
	*out = lb_steal_ptr(&rows);
	return 0;
}

static bool is_csv(const char *name)
{
	size_t n = strlen(name);

	return n >= 4 && strcasecmp(name + n - 4, ".csv") == 0;
}

static const char *file_kind(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR:
		return "a directory";
	case S_IFIFO:
		return "a FIFO";
	case S_IFSOCK:
		return "a socket";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	default:
		return "not a regular file";
	}
}

/* Opens the directory holding the last component of name, refusing symlinks on the way, so
 * "out/results.json" cannot lead outside dirfd. *parent is -1 when that directory is dirfd
 * itself; *last is set to the last component. */
static int open_parent(int dirfd, const char *name, int *parent, const char **last, char *err,
		       size_t errlen)
{
	LB_AUTOCLOSE int cur = -1;
	const char *p = name;

	if (name[0] == '/' || name[0] == '\0') {
		set_err(err, errlen, "%s: must be a relative path", name);
		return -EINVAL;
	}
	for (;;) {
		const char *slash = strchr(p, '/');
		char comp[NAME_MAX + 1];
		size_t n;
		int fd;

		if (!slash)
			break;
		n = (size_t)(slash - p);
		if (n == 0 || (n == 1 && p[0] == '.')) {
			p = slash + 1;
			continue;
		}
		if (n > NAME_MAX || (n == 2 && p[0] == '.' && p[1] == '.')) {
			set_err(err, errlen, "%s: refused path component", name);
			return -EINVAL;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		fd = openat(cur >= 0 ? cur : dirfd, comp,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			int e = errno;
			struct stat st;

			/* With O_DIRECTORY, Linux reports a symlink as ENOTDIR. */
			if (e == ENOTDIR &&
			    fstatat(cur >= 0 ? cur : dirfd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISLNK(st.st_mode))
				e = ELOOP;
			if (e == ELOOP)
				set_err(err, errlen, "%s: %s is a symbolic link, refused", name, comp);
			else
				set_err(err, errlen, "%s: %s", name, strerror(e));
			return e == ENOTDIR ? -EINVAL : -e;
		}
		if (cur >= 0)
			close(cur);
		cur = fd;
		p = slash + 1;
	}
	if (p[0] == '\0' || strcmp(p, ".") == 0 || strcmp(p, "..") == 0) {
		set_err(err, errlen, "%s: not a file name", name);
		return -EINVAL;
	}
	*last = p;
	*parent = lb_steal_fd(&cur);
	return 0;
}

static int read_capped(int fd, size_t size_hint, size_t max, char **out, size_t *len)
{
	LB_AUTOFREE char *buf = NULL;
	size_t cap = (size_hint < max ? size_hint : max) + 1, n = 0;

	buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t r;

		if (n == cap) {
			/* The file grew after fstat: follow it, but never past max + 1. */
			size_t ncap = cap * 2 < max + 1 ? cap * 2 : max + 1;
			char *nbuf;

			if (ncap <= cap)
				return -EFBIG;
			nbuf = realloc(buf, ncap + 1);
			if (!nbuf)
				return -ENOMEM;
			buf = nbuf;
			cap = ncap;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max)
			return -EFBIG;
	}
	buf[n] = '\0';
	*len = n;
	*out = lb_steal_ptr(&buf);
	return 0;
}

int lb_results_read(int dirfd, const char *name, size_t max, struct json_object **out, char *err,
		    size_t errlen)
{
	LB_AUTOCLOSE int parent = -1;
	LB_AUTOCLOSE int fd = -1;
	LB_AUTOFREE char *data = NULL;
	const char *last = name;
	char perr[256];
	struct stat st;
	size_t len = 0;
	int r;

	*out = NULL;
	if (!name) {
		set_err(err, errlen, "no file name");
		return -EINVAL;
	}
	r = open_parent(dirfd, name, &parent, &last, err, errlen);
	if (r < 0)
		return r;
	/* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever. */
	fd = openat(parent >= 0 ? parent : dirfd, last,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		if (r == -ELOOP)
			set_err(err, errlen, "%s: is a symbolic link, refused", name);
		else if (r == -ENXIO)
			set_err(err, errlen, "%s: not a regular file", name);
		else
			set_err(err, errlen, "%s: %s", name, strerror(-r));
		return r == -ENXIO ? -EINVAL : r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		set_err(err, errlen, "%s: %s", name, strerror(-r));
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		set_err(err, errlen, "%s: %s, refused", name, file_kind(st.st_mode));
		return -EINVAL;
	}
	if (st.st_size < 0 || (unsigned long long)st.st_size > max) {
		set_err(err, errlen, "%s: %lld bytes, larger than the limit of %zu", name,
			(long long)st.st_size, max);
		return -EFBIG;
	}
	r = read_capped(fd, (size_t)st.st_size, max, &data, &len);
	if (r == -EFBIG)
		set_err(err, errlen, "%s: grew past the limit of %zu bytes while read", name, max);
	else if (r < 0)
		set_err(err, errlen, "%s: %s", name, strerror(-r));
	if (r < 0)
		return r;
	uint64_t cost = lb_results_parse_cost(data, len);
	if (cost > LB_RESULTS_MAX_COST) {
		set_err(err, errlen,
			"%s: about %llu values and containers, more than the %llu labbox parses "
			"(its memory is outside the run's limits)",
			name, (unsigned long long)cost, (unsigned long long)LB_RESULTS_MAX_COST);
		return -EFBIG;
	}
	r = is_csv(name) ? lb_results_parse_csv(data, len, out, perr, sizeof(perr))
			 : lb_results_parse(data, len, out, perr, sizeof(perr));
	if (r < 0)
		set_err(err, errlen, "%s: %s", name, perr);
	return r;
}

uint64_t lb_results_parse_cost(const char *data, size_t len)
{
	/* What json-c allocates, in units of one number: a container is a few objects (an object
	 * also a hash table), a value one; a CSV cell is a value too. Strings are skipped. */
	uint64_t cost = 1;
	bool in_str = false;
	for (size_t i = 0; i < len; i++) {
		char ch = data[i];
		if (in_str) {
			if (ch == '\\')
				i++;
			else if (ch == '"')
				in_str = false;
			continue;
		}
		switch (ch) {
		case '"':
			in_str = true;
			break;
		case '{':
			cost += 8;
			break;
		case '[':
			cost += 2;
			break;
		case ',':
		case ':':
		case '\n':
			cost += 1;
			break;
		}
	}
	return cost;
}

struct json_object *lb_json_number(double v)
{
	char buf[40];
	locale_t c_locale, old;
	size_t n;

	if (isnan(v))
		return json_object_new_string("NaN");
	if (isinf(v))
		return json_object_new_string(v > 0 ? "Infinity" : "-Infinity");
	/* json-c's own format prints 0.1 as 0.10000000000000001; the shortest text that reads
	 * back as the same double is what Python prints and what people expect to see. */
	c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	if (!c_locale)
		return json_object_new_double(v);
	old = uselocale(c_locale);
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	uselocale(old);
	freelocale(c_locale);
	/* Keep it a float for readers that type by spelling (Python reads "5" as an int). */
	n = strlen(buf);
	if (!strpbrk(buf, ".eE") && n + 2 < sizeof(buf))
		memcpy(buf + n, ".0", 3);
	return json_object_new_double_s(v, buf);
}

static struct json_object *sanitize_object(struct json_object *doc)
{
	struct json_object *copy = json_object_new_object();

	if (!copy)
		return NULL;
	json_object_object_foreach(doc, key, val) {
		struct json_object *c = lb_json_sanitize(val);

		if ((val && !c) || json_object_object_add(copy, key, c) < 0) {
			json_object_put(c);
			json_object_put(copy);
			return NULL;
		}
	}
	return copy;
}

static struct json_object *sanitize_array(struct json_object *doc)
{
	size_t n = json_object_array_length(doc);
	struct json_object *copy = json_object_new_array_ext((int)(n < INT_MAX ? n : INT_MAX));

	if (!copy)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		struct json_object *val = json_object_array_get_idx(doc, i);
		struct json_object *c = lb_json_sanitize(val);

		if ((val && !c) || json_object_array_add(copy, c) < 0) {
			json_object_put(c);
			json_object_put(copy);
			return NULL;
		}
	}
	return copy;
}

struct json_object *lb_json_sanitize(struct json_object *doc)
{
	struct json_object *copy = NULL;

	switch (json_object_get_type(doc)) {
	case json_type_null:
		return NULL;
	case json_type_object:
		return sanitize_object(doc);
	case json_type_array:
		return sanitize_array(doc);
	case json_type_double:
		/* Rebuilt rather than copied: json-c keeps the parsed spelling, and it accepts
		 * spellings ("1.", "1e400") that strict readers refuse. */
		return lb_json_number(json_object_get_double(doc));
	default:
		if (json_object_deep_copy(doc, &copy, NULL) < 0)
			return NULL;
		return copy;
	}
}

/* What result.json keeps of the results files --------------------------------------------- */

typedef struct record_ctx {
	const char *file; /* the results file being copied */
	struct json_object *warnings;
	size_t summarised; /* arrays summarised; the first few are named in warnings */
	size_t values_left; /* array elements that may still be copied whole */
} record_ctx;

#define RECORD_NAMED_MAX 20

static struct json_object *record_copy(record_ctx *c, struct json_object *doc, const char *path);
static void note_summarised(record_ctx *c, const char *path, const char *what, size_t n);

/* The whole value's digest beside its summary: what `labbox rerun` compares, so that two
 * runs whose summaries agree and whose files do not are told apart. */
static void add_digest(struct json_object *summary, struct json_object *whole)
{
	char d[72];
	lb_metric_value_digest(whole, d);
	json_object_object_add(summary, "digest", json_object_new_string(d));
}

/* min, max, mean of the finite numbers of a long array, its length, and its first and last
 * elements: enough to see a curve's shape and its end, in bounded size. */
static struct json_object *summarise_array(record_ctx *c, struct json_object *a, const char *path)
{
	size_t n = json_object_array_length(a), nums = 0;
	double lo = 0, hi = 0, sum = 0;
	for (size_t i = 0; i < n; i++) {
		struct json_object *v = json_object_array_get_idx(a, i);
		if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
			continue;
		double d = json_object_get_double(v);
		if (!isfinite(d))
			continue;
		lo = nums && lo < d ? lo : d;
		hi = nums && hi > d ? hi : d;
		sum += d;
		nums++;
	}
	struct json_object *s = json_object_new_object();
	struct json_object *first = json_object_new_array(), *last = json_object_new_array();
	for (size_t i = 0; i < 10 && i < n; i++) {
		char p[64];
		snprintf(p, sizeof p, "[%zu]", i);
		json_object_array_add(first, record_copy(c, json_object_array_get_idx(a, i), p));
		snprintf(p, sizeof p, "[%zu]", n - 10 + i);
		json_object_array_add(last, record_copy(c, json_object_array_get_idx(a, n - 10 + i), p));
	}
	json_object_object_add(s, "labbox_summary", json_object_new_string("array"));
	json_object_object_add(s, "length", json_object_new_int64((int64_t)n));
	json_object_object_add(s, "numbers", json_object_new_int64((int64_t)nums));
	json_object_object_add(s, "min", nums ? lb_json_number(lo) : NULL);
	json_object_object_add(s, "max", nums ? lb_json_number(hi) : NULL);
	json_object_object_add(s, "mean", nums ? lb_json_number(sum / (double)nums) : NULL);
	json_object_object_add(s, "first", first);
	json_object_object_add(s, "last", last);
	add_digest(s, a);
	note_summarised(c, path, "an array of values", n);
	return s;
}

static void note_summarised(record_ctx *c, const char *path, const char *what, size_t n)
{
	if (c->warnings && c->summarised < RECORD_NAMED_MAX) {
		char msg[1024], where[800];
		snprintf(where, sizeof where, "%.300s at %.400s", c->file, path[0] ? path : "the top");
		snprintf(msg, sizeof msg,
			 "%s: %s of %zu, summarised in result.json; the file in exp/ has it all",
			 where, what, n);
		struct json_object *w = json_object_new_object();
		json_object_object_add(w, "kind", json_object_new_string("summarised"));
		json_object_object_add(w, "metric", NULL);
		json_object_object_add(w, "where", json_object_new_string(where));
		json_object_object_add(w, "message", json_object_new_string(msg));
		json_object_array_add(c->warnings, w);
	}
	c->summarised++;
}

/* An object with too many members: how many, and the first keys. */
static struct json_object *summarise_object(record_ctx *c, struct json_object *o, const char *path)
{
	size_t n = (size_t)json_object_object_length(o), k = 0;
	struct json_object *s = json_object_new_object(), *keys = json_object_new_array();
	json_object_object_foreach(o, key, val) {
		(void)val;
		if (k++ == 20)
			break;
		json_object_array_add(keys, json_object_new_string(key));
	}
	json_object_object_add(s, "labbox_summary", json_object_new_string("object"));
	json_object_object_add(s, "members", json_object_new_int64((int64_t)n));
	json_object_object_add(s, "first_keys", keys);
	add_digest(s, o);
	note_summarised(c, path, "an object with members", n);
	return s;
}

static struct json_object *record_copy(record_ctx *c, struct json_object *doc, const char *path)
{
	char sub[768];
	switch (json_object_get_type(doc)) {
	case json_type_object: {
		size_t n = (size_t)json_object_object_length(doc);
		if (n > LB_RESULTS_ARRAY_KEEP || (n > 100 && n > c->values_left))
			return summarise_object(c, doc, path);
		c->values_left -= n < c->values_left ? n : c->values_left;
		struct json_object *copy = json_object_new_object();
		json_object_object_foreach(doc, key, val) {
			snprintf(sub, sizeof sub, "%.400s%s%.300s", path, path[0] ? "." : "", key);
			json_object_object_add(copy, key, record_copy(c, val, sub));
		}
		return copy;
	}
	case json_type_array: {
		size_t n = json_object_array_length(doc);
		if (n > LB_RESULTS_ARRAY_KEEP || (n > 100 && n > c->values_left))
			return summarise_array(c, doc, path);
		c->values_left -= n < c->values_left ? n : c->values_left;
		struct json_object *copy = json_object_new_array_ext((int)n);
		for (size_t i = 0; i < n; i++) {
			snprintf(sub, sizeof sub, "%.400s[%zu]", path, i);
			json_object_array_add(copy, record_copy(c, json_object_array_get_idx(doc, i), sub));
		}
		return copy;
	}
	default:
		return lb_json_sanitize(doc);
	}
}

struct json_object *lb_results_for_record(struct json_object *files, struct json_object *warnings)
{
	record_ctx c = { .warnings = warnings, .values_left = LB_RESULTS_VALUES_KEEP };
	if (!json_object_is_type(files, json_type_object))
		return lb_json_sanitize(files);
	struct json_object *copy = json_object_new_object();
	json_object_object_foreach(files, name, doc) {
		c.file = name;
		json_object_object_add(copy, name, record_copy(&c, doc, ""));
	}
	if (warnings && c.summarised > RECORD_NAMED_MAX) {
		char msg[160];
		snprintf(msg, sizeof msg, "%zu more arrays summarised in result.json",
			 c.summarised - RECORD_NAMED_MAX);
		struct json_object *w = json_object_new_object();
		json_object_object_add(w, "kind", json_object_new_string("summarised"));
		json_object_object_add(w, "metric", NULL);
		json_object_object_add(w, "where", NULL);
		json_object_object_add(w, "message", json_object_new_string(msg));
		json_object_array_add(warnings, w);
	}
	return copy;
}

/* All results files of a run ------------------------------------------------------------- */

const char *lb_results_out_dir_hint(char *const *args, size_t n)
{
	static const char *const flags[] = { "--out_dir", "--out-dir", "--output_dir",
					     "--output-dir" };
	const char *hint = NULL;

	for (size_t i = 0; args && i < n; i++) {
		const char *a = args[i];

		if (!a)
			continue;
		if (strcmp(a, "--") == 0)
			break; /* argparse reads what follows as positional arguments */
		for (size_t f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
			size_t fl = strlen(flags[f]);

			if (strncmp(a, flags[f], fl) != 0)
				continue;
			if (a[fl] == '=') {
				hint = a + fl + 1;
			} else if (a[fl] == '\0' && i + 1 < n && args[i + 1]) {
				hint = args[i + 1];
				i++;
			}
			break;
		}
	}
	return hint && *hint ? hint : NULL;
}

/* Whether src[i..] starts the quoted flag: '--out_dir' or "--out_dir". */
static size_t quoted_flag_at(const char *src, size_t len, size_t i)
{
	static const char *const flags[] = { "--out_dir", "--out-dir", "--output_dir",
					     "--output-dir" };
	char q = src[i];

	if (q != '"' && q != '\'')
		return 0;
	for (size_t f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
		size_t fl = strlen(flags[f]);

		if (i + 2 + fl <= len && memcmp(src + i + 1, flags[f], fl) == 0 && src[i + 1 + fl] == q)
			return fl + 2;
	}
	return 0;
}

int lb_results_out_dir_default(const char *src, size_t len, char *out, size_t outlen)
{
	/* The rest of one add_argument call: a default further away is another call's. */
	enum { CALL_SPAN = 600 };

	if (!src || !out || outlen < 2)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		size_t fl = quoted_flag_at(src, len, i);
		if (!fl)
			continue;
		int depth = 0;
		size_t end = i + CALL_SPAN < len ? i + CALL_SPAN : len;
		for (size_t j = i + fl; j < end && depth >= 0; j++) {
			if (src[j] == '(' || src[j] == '[' || src[j] == '{')
				depth++;
			else if (src[j] == ')' || src[j] == ']' || src[j] == '}')
				depth--;
			if (depth != 0 || j + 8 > end || memcmp(src + j, "default", 7) != 0 ||
			    (j > 0 && (isalnum((unsigned char)src[j - 1]) || src[j - 1] == '_')))
				continue;
			size_t k = j + 7;
			while (k < end && (src[k] == ' ' || src[k] == '\t'))
				k++;
			if (k >= end || src[k] != '=')
				continue; /* the word in a help text, `default_x`... */
			k++;
			while (k < end && (src[k] == ' ' || src[k] == '\t'))
				k++;
			char q = k < end ? src[k] : 0;
			if (q != '"' && q != '\'')
				break; /* a name or an expression: not known without running it */
			size_t s = ++k;
			while (k < end && src[k] != q && src[k] != '\\' && src[k] != '\n')
				k++;
			if (k >= end || src[k] != q || k == s || k - s >= outlen)
				break;
			memcpy(out, src + s, k - s);
			out[k - s] = '\0';
			return 0;
		}
		i += fl - 1;
	}
	return -ENOENT;
}

enum { FROM_DEFAULT, FROM_HINT, FROM_CONFIG };

/* "./out//r.json" -> "out/r.json": the name a file is reported under, and the key that finds
 * the same file named twice. ".." stays, for lb_results_read to refuse. */
static char *normalize_name(const char *a, const char *b)
{
	LB_AUTOFREE char *joined = NULL;
	char *out, *o;

	if (asprintf(&joined, "%s%s%s", a, b ? "/" : "", b ? b : "") < 0)
		return NULL;
	out = malloc(strlen(joined) + 1);
	if (!out)
		return NULL;
	o = out;
	for (const char *p = joined; *p;) {
		const char *slash = strchrnul(p, '/');
		size_t n = (size_t)(slash - p);

		if (n > 0 && !(n == 1 && p[0] == '.')) {
			if (o != out)
				*o++ = '/';
			memcpy(o, p, n);
			o += n;
		}
		p = *slash ? slash + 1 : slash;
	}
	*o = '\0';
	return out;
}

static int add_file_issue(struct json_object *issues, const char *kind, const char *where,
			  const char *message)
{
	struct json_object *iss = json_object_new_object();

	if (!iss)
		return -ENOMEM;
	if (json_object_object_add(iss, "kind", json_object_new_string(kind)) < 0 ||
	    json_object_object_add(iss, "metric", NULL) < 0 ||
	    json_object_object_add(iss, "where", json_object_new_string(where)) < 0 ||
	    json_object_object_add(iss, "message", json_object_new_string(message)) < 0 ||
	    json_object_array_add(issues, iss) < 0) {
		json_object_put(iss);
		return -ENOMEM;
	}
	return 0;
}

/* Reads one candidate; returns 1 when read, 0 when skipped or reported, -ENOMEM. */
static int collect_one(int dirfd, const char *name, int from, struct json_object *files,
		       struct json_object *issues, size_t *left)
{
	struct json_object *doc = NULL;
	char err[512] = "", msg[768];
	const char *last;
	int parent = -1, r;

	if (name[0] == '\0' || json_object_object_get_ex(files, name, NULL))
		return 0;
	/* A directory on the way that cannot be entered is not a file that was refused: for a
	 * guessed directory it means nothing, for a configured name the file is missing. */
	r = open_parent(dirfd, name, &parent, &last, err, sizeof(err));
	if (parent >= 0)
		close(parent);
	if (r == -ENOMEM)
		return r;
	if (r < 0 && from != FROM_CONFIG)
		return 0;
	if (r < 0 && r != -ELOOP) {
		/* Absent directory, "..", a file where a directory should be: not there. */
		snprintf(msg, sizeof(msg), "%s (a results file named in the configuration)", err);
		return add_file_issue(issues, "missing_file", name, msg);
	}
	struct stat fst = { 0 };
	if (r == 0 && fstatat(dirfd, name, &fst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(fst.st_mode) &&
	    (uint64_t)fst.st_size <= LB_RESULTS_MAX_BYTES && (uint64_t)fst.st_size > *left) {
		snprintf(msg, sizeof(msg),
			 "%s: %lld bytes, past what is left of the %zu bytes labbox reads of all "
			 "the results files of a run together; not collected",
			 name, (long long)fst.st_size, (size_t)LB_RESULTS_TOTAL_BYTES);
		return add_file_issue(issues, "unreadable", name, msg);
	}
	if (r == 0)
		r = lb_results_read(dirfd, name, LB_RESULTS_MAX_BYTES, &doc, err, sizeof(err));
	if (r == 0 && fst.st_size > 0)
		*left -= (size_t)fst.st_size < *left ? (size_t)fst.st_size : *left;
	if (r == 0) {
		if (json_object_object_add(files, name, doc) < 0) {
			json_object_put(doc);
			return -ENOMEM;
		}
		return 1;
	}
	if (r == -ENOMEM)
		return r;
	if (r == -ENOENT && from != FROM_CONFIG)
		return 0;
	if (r == -ENOENT) {
		snprintf(msg, sizeof(msg), "%s: not found (a results file named in the configuration)",
			 name);
		return add_file_issue(issues, "missing_file", name, msg);
	}
	return add_file_issue(issues, "unreadable", name, err[0] ? err : strerror(-r));
}

int lb_results_collect(int expdirfd, const char *const *names, size_t n, const char *out_dir_hint,
		       struct json_object *files_out, struct json_object *issues_out)
{
	static const char *const defaults[] = { "results.json", "final_info.json", "results.csv" };
	/* AI-Scientist templates write final_info.json into --out_dir. */
	static const char *const in_hint[] = { "final_info.json", "results.json", "results.csv" };
	int count = 0;
	size_t left = LB_RESULTS_TOTAL_BYTES;

	if (!json_object_is_type(files_out, json_type_object) ||
	    !json_object_is_type(issues_out, json_type_array))
		return -EINVAL;
	for (size_t i = 0; i < 3 + 3 + n; i++) {
		LB_AUTOFREE char *name = NULL;
		int from, r;

		if (i < 3) {
			from = FROM_DEFAULT;
			name = normalize_name(defaults[i], NULL);
		} else if (i < 6) {
			if (!out_dir_hint || out_dir_hint[0] == '/' || out_dir_hint[0] == '\0')
				continue; /* outside the staged directory: nothing labbox can read */
			from = FROM_HINT;
			name = normalize_name(out_dir_hint, in_hint[i - 3]);
		} else {
			size_t k = i - 6;

			from = FROM_CONFIG;
			if (!names || !names[k])
				continue;
			if (k >= LB_RESULTS_MAX_NAMES) {
				char msg[160];

				snprintf(msg, sizeof(msg),
					 "%zu results files are configured; labbox reads the first %d",
					 n, LB_RESULTS_MAX_NAMES);
				if (add_file_issue(issues_out, "unreadable", names[k], msg) < 0)
					return -ENOMEM;
				break;
			}
			if (names[k][0] == '/') {
				char msg[PATH_MAX + 96];

				snprintf(msg, sizeof(msg),
					 "%s: must be a path inside the experiment directory",
					 names[k]);
				if (add_file_issue(issues_out, "missing_file", names[k], msg) < 0)
					return -ENOMEM;
				continue;
			}
			name = normalize_name(names[k], NULL);
		}
		if (!name)
			return -ENOMEM;
		r = collect_one(expdirfd, name, from, files_out, issues_out, &left);
		if (r < 0)
			return r;
		count += r;
	}
	return count;
}

/* R's and Octave's NA in results files ------------------------------------------------------ */

static bool is_na(struct json_object *v)
{
	return json_object_is_type(v, json_type_string) && json_object_get_string_len(v) == 2 &&
	       memcmp(json_object_get_string(v), "NA", 2) == 0;
}

/* A number, or its spelling as a string ("NaN", "Inf": jsonlite writes R's NaN and Inf so). */
static bool numberish(struct json_object *v)
{
	double x;

	switch (json_object_get_type(v)) {
	case json_type_int:
	case json_type_double:
		return true;
	case json_type_string:
		return lb_parse_number(json_object_get_string(v),
				       (size_t)json_object_get_string_len(v), &x);
	default:
		return false;
	}
}

/* The NaN an NA stands for, keeping "NA" as its text so that the issue can say how it was
 * written; result.json rebuilds it as "NaN" (lb_json_sanitize). */
static struct json_object *na_number(void)
{
	return json_object_new_double_s(NAN, "NA");
}

/* What a run of values shows: 1 when it holds a number and only numbers, NAs and nulls
 * besides, so its NAs are missing numbers; 0 otherwise. */
typedef struct na_tally {
	size_t numbers, nas, others;
} na_tally;

static void na_count(na_tally *t, struct json_object *v)
{
	if (!v)
		return;
	if (is_na(v))
		t->nas++;
	else if (numberish(v))
		t->numbers++;
	else
		t->others++;
}

static int na_array_elements(struct json_object *arr, bool need_number)
{
	size_t n = json_object_array_length(arr);
	na_tally t = { 0 };
	int done = 0;

	for (size_t i = 0; i < n; i++)
		na_count(&t, json_object_array_get_idx(arr, i));
	if (!t.nas || t.others || (need_number && !t.numbers))
		return 0;
	for (size_t i = 0; i < n; i++) {
		struct json_object *nv;

		if (!is_na(json_object_array_get_idx(arr, i)))
			continue;
		if (!(nv = na_number()))
			return -ENOMEM;
		if (json_object_array_put_idx(arr, i, nv) < 0) {
			json_object_put(nv);
			return -ENOMEM;
		}
		done++;
	}
	return done;
}

/* Rows: an array whose elements are objects, as results.csv reads (and jsonlite writes a
 * data frame). Each column is judged once, on all its cells: a table of 100,000 rows must not
 * be read again for each NA in it. */
static bool na_column_numeric(struct json_object *rows, const char *key)
{
	size_t n = json_object_array_length(rows);
	na_tally t = { 0 };

	for (size_t j = 0; j < n && !t.others; j++) {
		struct json_object *row = json_object_array_get_idx(rows, j), *c;

		if (json_object_is_type(row, json_type_object) &&
		    json_object_object_get_ex(row, key, &c))
			na_count(&t, c);
	}
	return !t.others && t.numbers;
}

static int na_columns(struct json_object *rows)
{
	__attribute__((cleanup(json_putp))) struct json_object *judged = NULL;
	size_t n = json_object_array_length(rows);
	int done = 0;

	for (size_t i = 0; i < n; i++) {
		struct json_object *row = json_object_array_get_idx(rows, i), *seen;

		if (!json_object_is_type(row, json_type_object))
			continue;
		json_object_object_foreach(row, key, cell) {
			if (!is_na(cell))
				continue;
			if (!judged && !(judged = json_object_new_object()))
				return -ENOMEM;
			if (!json_object_object_get_ex(judged, key, &seen)) {
				seen = json_object_new_boolean(na_column_numeric(rows, key));
				if (!seen || json_object_object_add(judged, key, seen) < 0) {
					json_object_put(seen);
					return -ENOMEM;
				}
			}
			if (!json_object_get_boolean(seen))
				continue;
			struct json_object *nv = na_number();
			/* Replacing the value of the member being visited keeps its entry. */
			if (!nv || json_object_object_add(row, key, nv) < 0) {
				json_object_put(nv);
				return -ENOMEM;
			}
			done++;
		}
	}
	return done;
}

static bool na_declared(const char *key, const char *const *declared, size_t n)
{
	for (size_t i = 0; key && i < n; i++)
		if (declared[i] && strcmp(declared[i], key) == 0)
			return true;
	return false;
}

static int na_walk(struct json_object *node, const char *const *declared, size_t n, int depth)
{
	int done = 0, r;

	if (depth > 64)
		return 0;
	if (json_object_is_type(node, json_type_object)) {
		json_object_object_foreach(node, key, child) {
			if (is_na(child) && na_declared(key, declared, n)) {
				struct json_object *nv = na_number();

				if (!nv || json_object_object_add(node, key, nv) < 0) {
					json_object_put(nv);
					return -ENOMEM;
				}
				done++;
				continue;
			}
			if (json_object_is_type(child, json_type_array) &&
			    na_declared(key, declared, n)) {
				if ((r = na_array_elements(child, false)) < 0)
					return r;
				done += r;
			}
			if ((r = na_walk(child, declared, n, depth + 1)) < 0)
				return r;
			done += r;
		}
	} else if (json_object_is_type(node, json_type_array)) {
		if ((r = na_array_elements(node, true)) < 0)
			return r;
		done += r;
		if ((r = na_columns(node)) < 0)
			return r;
		done += r;
		for (size_t i = 0; i < json_object_array_length(node); i++) {
			if ((r = na_walk(json_object_array_get_idx(node, i), declared, n,
					 depth + 1)) < 0)
				return r;
			done += r;
		}
	}
	return done;
}

int lb_results_read_na(struct json_object *files, const char *const *declared, size_t n)
{
	int done = 0, r;

	if (!json_object_is_type(files, json_type_object))
		return 0;
	json_object_object_foreach(files, name, doc) {
		(void)name;
		if ((r = na_walk(doc, declared, declared ? n : 0, 0)) < 0)
			return r;
		done += r;
	}
	return done;
}
