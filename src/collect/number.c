/* Numbers as research code prints them: lb_parse_number (with Clinger's fast path), exact
 * integers (lb_parse_integer, lb_json_integer), a value token of a metric line (a number,
 * annotated or not, or a label) and the durations of TIME_ESTIMATE and TIME_GUARD. Split from
 * metrics.c; the line grammar that uses them is in line.c. */
#include "labbox/collect.h"
#include "labbox/util.h"
#include "metrics_internal.h"
#include "text.h"

#include <json-c/json.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Longest numeric text handed to strtod; longer is not a number anyone prints. */
#define LB_NUMBER_TEXT_MAX 512

void lb_metric_trim(const char **s, size_t *len)
{
	while (*len > 0 && (lb_text_blank(**s) || **s == '\r' || **s == '\n')) {
		(*s)++;
		(*len)--;
	}
	while (*len > 0 && (lb_text_blank((*s)[*len - 1]) || (*s)[*len - 1] == '\r' ||
			    (*s)[*len - 1] == '\n'))
		(*len)--;
}

/* End of the longest prefix of s[i..len) in Python's float() spelling of a decimal (digits
 * with an optional point and exponent; ".5" and "5." as float() accepts them), or i when there
 * is none. An 'e' not followed by an exponent is left out. */
static size_t scan_decimal(const char *s, size_t len, size_t i)
{
	size_t start = i, int_end, frac_end;

	int_end = lb_metric_skip_digits(s, len, i);
	frac_end = int_end;
	if (int_end < len && s[int_end] == '.')
		frac_end = lb_metric_skip_digits(s, len, int_end + 1);
	if (int_end == start && frac_end <= start + 1)
		return start; /* no digit at all */
	i = frac_end;
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		size_t e = i + 1, exp_start;

		if (e < len && (s[e] == '+' || s[e] == '-'))
			e++;
		exp_start = e;
		e = lb_metric_skip_digits(s, len, e);
		if (e > exp_start)
			i = e;
	}
	return i;
}

static bool decimal_syntax(const char *s, size_t len)
{
	return len > 0 && scan_decimal(s, len, 0) == len;
}

/* Clinger's fast path: when the digits form an integer of at most 2^53 and the power of ten
 * is at most 22 in magnitude, both are exact doubles and one IEEE multiplication or division
 * rounds correctly, so the result is the one strtod gives, without its cost (a locale object
 * and arbitrary precision) on the numbers research code prints. s is known to be decimal
 * syntax. false: leave it to strtod. */
static bool fast_decimal(const char *s, size_t len, bool negative, double *out)
{
	static const double pow10[] = { 1e0,  1e1,  1e2,  1e3,	1e4,  1e5,  1e6,  1e7,
					1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
					1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };
	uint64_t mant = 0;
	long exp10 = 0;
	size_t i = 0;
	double v;

	for (; i < len && lb_metric_is_digit(s[i]); i++) {
		if (mant > (UINT64_C(1) << 53) / 10)
			return false;
		mant = mant * 10 + (uint64_t)(s[i] - '0');
	}
	if (i < len && s[i] == '.') {
		for (i++; i < len && lb_metric_is_digit(s[i]); i++) {
			if (mant > (UINT64_C(1) << 53) / 10)
				return false;
			mant = mant * 10 + (uint64_t)(s[i] - '0');
			exp10--;
		}
	}
	if (i < len) { /* exponent: decimal_syntax checked its shape */
		bool eneg = false;
		long e = 0;

		i++;
		if (s[i] == '+' || s[i] == '-')
			eneg = s[i++] == '-';
		for (; i < len; i++) {
			if (e > 1000)
				return false;
			e = e * 10 + (s[i] - '0');
		}
		exp10 += eneg ? -e : e;
	}
	if (mant > (UINT64_C(1) << 53) || exp10 < -22 || exp10 > 22)
		return false;
	v = (double)mant;
	v = exp10 < 0 ? v / pow10[-exp10] : v * pow10[exp10];
	*out = negative ? -v : v;
	return true;
}

bool lb_metric_word_is(const char *s, size_t len, const char *word)
{
	return len == strlen(word) && strncasecmp(s, word, len) == 0;
}

bool lb_parse_number(const char *s, size_t len, double *out)
{
	char buf[LB_NUMBER_TEXT_MAX];
	bool negative = false;
	const char *body;
	size_t body_len;
	locale_t c_locale;
	double v;

	if (!s)
		return false;
	lb_metric_trim(&s, &len);
	body = s;
	body_len = len;
	if (body_len > 0 && (body[0] == '+' || body[0] == '-')) {
		negative = body[0] == '-';
		body++;
		body_len--;
	}
	if (body_len > 0 && lb_metric_is_alpha(body[0])) {
		/* Only a word can be one of these; digits skip the comparisons. */
		if (lb_metric_word_is(body, body_len, "nan")) {
			*out = negative ? -NAN : NAN;
			return true;
		}
		if (lb_metric_word_is(body, body_len, "inf") ||
		    lb_metric_word_is(body, body_len, "infinity")) {
			*out = negative ? -INFINITY : INFINITY;
			return true;
		}
		return false;
	}
	if (!decimal_syntax(body, body_len))
		return false;
	if (fast_decimal(body, body_len, negative, out))
		return true;
	/* A number longer than the buffer is still one (600 digits are Infinity, as Python's
	 * float() says): a copy of its own, not a line dropped without a word. */
	LB_AUTOFREE char *big = len >= sizeof(buf) ? malloc(len + 1) : NULL;
	char *text = len >= sizeof(buf) ? big : buf;
	if (!text)
		return false;
	memcpy(text, s, len);
	text[len] = '\0';
	/* A program embedding labbox may have set LC_NUMERIC; research code prints a '.'. The "C"
	 * locale object is static in glibc, so this allocates nothing. */
	c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	if (!c_locale)
		return false;
	v = strtod_l(text, NULL, c_locale);
	freelocale(c_locale);
	/* Overflow gives +-HUGE_VAL, which is what Python's float() says for "1e999" too. */
	*out = v;
	return true;
}

/* The digits of an integer literal without its sign and leading zeros ("0" stays), and
 * whether it is negative; false when s is no integer literal. */
static bool integer_digits(const char *s, size_t len, const char **digits, size_t *n, bool *negative)
{
	lb_metric_trim(&s, &len);
	*negative = len > 0 && s[0] == '-';
	if (len > 0 && (s[0] == '+' || s[0] == '-')) {
		s++;
		len--;
	}
	if (len == 0 || lb_metric_skip_digits(s, len, 0) != len)
		return false;
	while (len > 1 && s[0] == '0') {
		s++;
		len--;
	}
	*digits = s;
	*n = len;
	return true;
}

lb_int_form lb_parse_integer(const char *s, size_t len, int64_t *out)
{
	const char *d;
	size_t n;
	bool negative;
	uint64_t mag = 0;

	if (!s || !integer_digits(s, len, &d, &n, &negative))
		return LB_INT_NONE;
	if (n > 20)
		return LB_INT_WIDE;
	for (size_t i = 0; i < n; i++) {
		uint64_t digit = (uint64_t)(d[i] - '0');

		if (mag > (UINT64_MAX - digit) / 10)
			return LB_INT_WIDE;
		mag = mag * 10 + digit;
	}
	if (negative) {
		if (mag > (uint64_t)INT64_MAX + 1)
			return LB_INT_WIDE;
		/* -2^63 has no positive int64; the unsigned negation wraps to exactly it. */
		*out = mag == 0 ? 0 : (int64_t)(~mag + 1);
		return LB_INT_SIGNED;
	}
	*out = (int64_t)mag;
	return mag > (uint64_t)INT64_MAX ? LB_INT_UNSIGNED : LB_INT_SIGNED;
}

struct json_object *lb_json_integer(const char *s, size_t len)
{
	const char *d;
	size_t n;
	bool negative;
	int64_t v;
	char buf[4096 + 2];

	switch (lb_parse_integer(s, len, &v)) {
	case LB_INT_SIGNED:
		return json_object_new_int64(v);
	case LB_INT_UNSIGNED:
		return json_object_new_uint64((uint64_t)v);
	case LB_INT_WIDE:
		break;
	default:
		return NULL;
	}
	integer_digits(s, len, &d, &n, &negative);
	if (n + 1 >= sizeof(buf))
		return NULL;
	buf[0] = '-';
	memcpy(buf + 1, d, n);
	return negative ? json_object_new_string_len(buf, (int)n + 1)
			: json_object_new_string_len(buf + 1, (int)n);
}

bool lb_json_is_wide_integer(struct json_object *v)
{
	int64_t unused;

	return json_object_is_type(v, json_type_string) &&
	       lb_parse_integer(json_object_get_string(v), (size_t)json_object_get_string_len(v),
				&unused) == LB_INT_WIDE;
}

/* Bytes that end a value token: a blank, the end, or a separator between pairs. */
bool lb_metric_value_end(const char *s, size_t len, size_t i)
{
	return i >= len || lb_text_blank(s[i]) || s[i] == ',' || s[i] == ';' || s[i] == '|';
}

/* Digits grouped in thousands as Python's f"{n:_}" writes them ("1_000_000", "1_000.5"):
 * 1 to 3 digits, then groups of exactly 3 after an underscore, then an optional fraction.
 * Returns the index after it and sets *v, or i when there is none. Commas (f"{n:,}") are not
 * read so: "sizes: 128,256,512" is a list joined with commas, and reading it as 128256512
 * would be a number the experiment never meant. */
static size_t scan_grouped(const char *s, size_t len, size_t i, double *v)
{
	char buf[64];
	size_t k = i, o = 0, lead, groups = 0;
	char sep;

	if (k < len && (s[k] == '+' || s[k] == '-'))
		buf[o++] = s[k++];
	lead = lb_metric_skip_digits(s, len, k) - k;
	if (lead < 1 || lead > 3 || k + lead >= len || s[k + lead] != '_')
		return i;
	sep = '_';
	memcpy(buf + o, s + k, lead);
	o += lead;
	k += lead;
	while (k + 3 < len && s[k] == sep && lb_metric_skip_digits(s, len, k + 1) == k + 4 &&
	       o + 3 < sizeof(buf) - 24) {
		memcpy(buf + o, s + k + 1, 3);
		o += 3;
		k += 4;
		groups++;
	}
	/* "1_0000" and "1_000_00" are not grouped. */
	if (groups == 0 || (k < len && lb_metric_is_digit(s[k])) ||
	    (k + 1 < len && s[k] == sep && lb_metric_is_digit(s[k + 1])))
		return i;
	if (k < len && s[k] == '.') {
		size_t f = lb_metric_skip_digits(s, len, k + 1);

		if (f == k + 1 || f - k > 20)
			return i;
		memcpy(buf + o, s + k, f - k);
		o += f - k;
		k = f;
	}
	return lb_parse_number(buf, o, v) ? k : i;
}

/* A number token at s[i..len): sign, then a decimal, nan, inf or infinity (or, in a
 * template, a hole). Returns the index after it and sets *v, or i when there is none. The
 * token may be followed by anything; the caller decides what may follow. */
size_t lb_metric_scan_number(const char *s, size_t len, size_t i, bool holes, double *v)
{
	size_t start = i, body, end;

	if (i < len && (s[i] == '+' || s[i] == '-'))
		i++;
	body = i;
	if (holes && i < len && s[i] == LB_METRIC_HOLE) {
		*v = 1;
		return i + 1;
	}
	if (i < len && lb_metric_is_alpha(s[i])) {
		end = i;
		while (end < len && lb_metric_is_alpha(s[end]))
			end++;
		if (!lb_metric_word_is(s + i, end - i, "nan") &&
		    !lb_metric_word_is(s + i, end - i, "inf") &&
		    !lb_metric_word_is(s + i, end - i, "infinity"))
			return start;
	} else {
		end = scan_grouped(s, len, start, v);
		if (end > start)
			return end;
		end = scan_decimal(s, len, i);
		if (end == body)
			return start;
	}
	if (!lb_parse_number(s + start, end - start, v))
		return start;
	return end;
}

static bool all_digits(const char *s, size_t len, bool holes)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!lb_metric_is_digit(s[i]) && !(holes && s[i] == LB_METRIC_HOLE && len == 1))
			return false;
	return true;
}

static bool label_char(char c, bool holes)
{
	return lb_metric_is_alpha(c) || lb_metric_is_digit(c) || c == '_' || c == '.' || c == '+' ||
	       c == '-' || (holes && c == LB_METRIC_HOLE);
}

/* "3/4" at s[start..i) and after: the numerator is what was scanned, integers only. */
static size_t scan_ratio(const char *s, size_t len, size_t start, size_t i, bool holes,
			 lb_metric_value *v)
{
	size_t num = start, den = i + 1, end;
	double a, b;

	if (num < i && (s[num] == '+' || s[num] == '-'))
		num++;
	if (i >= len || s[i] != '/' || !all_digits(s + num, i - num, holes))
		return 0;
	end = den;
	while (end < len && (lb_metric_is_digit(s[end]) || (holes && s[end] == LB_METRIC_HOLE)))
		end++;
	if (!all_digits(s + den, end - den, holes))
		return 0;
	if (!lb_parse_number(s + start, i - start, &a))
		a = 1; /* a hole */
	if (!lb_parse_number(s + den, end - den, &b))
		b = 1;
	/* 3/0 is printed by code that divides by a count of nothing: it is kept, as Inf or
	 * NaN, so validation flags it rather than the line silently not counting. */
	v->number = a / b;
	v->ratio = true;
	return end;
}

/* "± 0.1", "+- 0.1", "+/- 0.1" after a number; returns the index after it or 0. A '%' after
 * a blank ("81.2 ± 1.3 %") is the unit of both numbers: *percent. */
static size_t scan_uncertainty(const char *s, size_t len, size_t i, bool holes, double *u,
			       bool *percent)
{
	size_t k = i, e;

	while (k < len && lb_text_blank(s[k]))
		k++;
	if (k + 1 < len && (unsigned char)s[k] == 0xc2 && (unsigned char)s[k + 1] == 0xb1)
		k += 2;
	else if (k + 2 < len && memcmp(s + k, "+/-", 3) == 0)
		k += 3;
	else if (k + 1 < len && memcmp(s + k, "+-", 2) == 0)
		k += 2;
	else
		return 0;
	while (k < len && lb_text_blank(s[k]))
		k++;
	e = lb_metric_scan_number(s, len, k, holes, u);
	if (e == k)
		return 0;
	if (e < len && s[e] == '%') {
		e++;
	} else {
		for (k = e; k < len && lb_text_blank(s[k]); k++)
			;
		if (k > e && k < len && s[k] == '%' && lb_metric_value_end(s, len, k + 1)) {
			*percent = true;
			e = k + 1;
		}
	}
	return lb_metric_value_end(s, len, e) ? e : 0;
}

/* A confidence interval after a number: "[0.78, 0.84]", "95% CI [0.70, 0.80]", "CI: [0.7,
 * 0.8]", as bootstrap intervals are printed. Kept as the remark, brackets and all (the
 * parenthesised "(95% CI: 0.85-0.91)" is a remark already). Only numbers, a ',' or ';'
 * between them, inside the brackets: "[cifar10]" after a number is not this. */
static size_t scan_interval(const char *s, size_t len, size_t i, lb_metric_value *v)
{
	size_t k = i, start, e;
	bool sep = false, digit = false;

	while (k < len && lb_text_blank(s[k]))
		k++;
	start = k;
	e = lb_metric_skip_digits(s, len, k);
	if (e > k && e < len && s[e] == '%') {
		for (k = e + 1; k < len && lb_text_blank(s[k]); k++)
			;
		if (len - k < 2 || memcmp(s + k, "CI", 2) != 0)
			return 0;
	}
	if (len - k >= 2 && memcmp(s + k, "CI", 2) == 0) {
		k += 2;
		if (k < len && s[k] == ':')
			k++;
		while (k < len && lb_text_blank(s[k]))
			k++;
	}
	if (k >= len || s[k] != '[')
		return 0;
	for (e = k + 1; e < len && s[e] != ']'; e++) {
		if (s[e] == ',' || s[e] == ';')
			sep = true;
		else if (lb_metric_is_digit(s[e]))
			digit = true;
		else if (!strchr(".-+eE% ", s[e]))
			return 0;
	}
	if (e >= len || !sep || !digit || e + 1 - start > LB_METRIC_REMARK_MAX ||
	    !lb_metric_value_end(s, len, e + 1))
		return 0;
	v->remark = s + start;
	v->remark_len = e + 1 - start;
	return e + 1;
}

/* " (best)" after a number: a parenthesised remark without parentheses inside. */
static size_t scan_remark(const char *s, size_t len, size_t i, lb_metric_value *v)
{
	size_t k = i, e;

	while (k < len && lb_text_blank(s[k]))
		k++;
	if (k >= len || s[k] != '(')
		return 0;
	for (e = k + 1; e < len && s[e] != ')' && s[e] != '('; e++)
		;
	if (e >= len || s[e] != ')' || e == k + 1 || e - k - 1 > LB_METRIC_REMARK_MAX ||
	    !lb_metric_value_end(s, len, e + 1))
		return 0;
	v->remark = s + k + 1;
	v->remark_len = e - k - 1;
	return e + 1;
}

/* A scalar as its repr prints it: torch's "tensor(0.5000)", with its keywords
 * ("tensor(0.5000, device='cuda:0', grad_fn=<MeanBackward0>)"), and numpy 2's
 * "np.float64(0.5)". print(f"loss: {loss}") of a 0-d tensor, or a dict's values, print that,
 * and the number is the experiment's. Returns the index after the ')' (setting *x and the
 * wrapper), 0 when it is not one. A tensor of several elements is not a number. */
static size_t scan_wrapped(const char *s, size_t len, size_t i, bool holes, double *x,
			   lb_metric_value *v)
{
	size_t k = i, e;
	bool tensor = len - i > 7 && memcmp(s + i, "tensor(", 7) == 0;

	if (tensor) {
		k = i + 6;
	} else if (len - i > 3 && memcmp(s + i, "np.", 3) == 0) {
		for (k = i + 3; k < len && (lb_metric_is_alpha(s[k]) || lb_metric_is_digit(s[k]) ||
					    s[k] == '_');
		     k++)
			;
		if (k == i + 3 || k >= len || s[k] != '(')
			return 0;
	} else {
		return 0;
	}
	e = lb_metric_scan_number(s, len, k + 1, holes, x);
	if (e == k + 1 || e >= len)
		return 0;
	if (tensor && s[e] == ',') {
		/* Keywords hold no parentheses: device='cuda:0', grad_fn=<...>, dtype=... */
		while (e < len && s[e] != ')' && s[e] != '(')
			e++;
	}
	if (e >= len || s[e] != ')' || !lb_metric_value_end(s, len, e + 1))
		return 0;
	v->wrapper = s + i;
	v->wrapper_len = k - i;
	return e + 1;
}

/* One value at s[i..len) (see lb_metric_value). Returns the index after it, 0 when there is
 * none. */
size_t lb_metric_scan_value(const char *s, size_t len, size_t i, bool holes, lb_metric_value *v)
{
	size_t start = i, e, k;
	double x;

	v->ratio = v->percent = v->has_uncertainty = false;
	v->uncertainty = 0;
	v->remark = NULL;
	v->remark_len = 0;
	v->wrapper = NULL;
	v->wrapper_len = 0;
	if ((e = scan_wrapped(s, len, i, holes, &x, v)) > 0) {
		v->number = x;
		v->kind = LB_METRIC_NUMBER;
		v->str = s + start;
		v->str_len = e - start;
		return e;
	}
	e = lb_metric_scan_number(s, len, i, holes, &x);
	if (e > start) {
		v->number = x;
		if (e < len && s[e] == '/') {
			k = scan_ratio(s, len, start, e, holes, v);
			e = k ? k : e;
		}
		/* "93.5 %": a blank before the sign, as some locales write it */
		for (k = e; k < len && lb_text_blank(s[k]); k++)
			;
		if (k > e && k < len && s[k] == '%' && lb_metric_value_end(s, len, k + 1))
			e = k;
		if (e < len && s[e] == '%') {
			v->percent = true;
			e++;
		}
		/* "0.93±0.01": an uncertainty without blanks before it */
		bool unit = false;
		bool tight = !lb_metric_value_end(s, len, e) &&
			     scan_uncertainty(s, len, e, holes, &v->uncertainty, &unit) > 0;
		if (tight || lb_metric_value_end(s, len, e)) {
			v->kind = LB_METRIC_NUMBER;
			if ((k = scan_uncertainty(s, len, e, holes, &v->uncertainty, &unit)) > 0) {
				v->has_uncertainty = true;
				v->percent |= unit;
				e = k;
			}
			if ((k = scan_remark(s, len, e, v)) > 0 ||
			    (k = scan_interval(s, len, e, v)) > 0)
				e = k;
			v->str = s + start;
			v->str_len = e - start;
			return e;
		}
		v->ratio = v->percent = false;
	}
	/* A label: one token starting with a letter, so that text (a path, a URL, a sentence)
	 * is never a metric, nor is a number with a unit this parser does not read ("12.5s"
	 * would be a string where the researcher expects seconds). */
	for (e = start; e < len && label_char(s[e], holes); e++)
		;
	/* In a template a label may start with a computed part only when it is nothing else:
	 * {model} may print a label, but {t}s prints a number with a unit, which the collector
	 * does not take ("0.5s"), so the check must not take it either. */
	if (e == start || e - start > LB_METRIC_LABEL_MAX || !lb_metric_value_end(s, len, e) ||
	    !(lb_metric_is_alpha(s[start]) || s[start] == '_' ||
	      (holes && s[start] == LB_METRIC_HOLE && e == start + 1)))
		return 0;
	v->kind = LB_METRIC_STRING;
	v->number = 0;
	v->str = s + start;
	v->str_len = e - start;
	return e;
}

/* "12s", "12.5", "2m", "1.5 h", "~30 sec": a leading '~' and a unit word are allowed. */
bool lb_metric_parse_duration(const char *s, size_t len, double *out)
{
	static const struct {
		const char *word;
		double scale;
	} units[] = {
		{ "", 1 },	    { "s", 1 },	       { "sec", 1 },	  { "secs", 1 },
		{ "second", 1 },    { "seconds", 1 },  { "ms", 1e-3 },	  { "m", 60 },
		{ "min", 60 },	    { "mins", 60 },    { "minute", 60 },  { "minutes", 60 },
		{ "h", 3600 },	    { "hr", 3600 },    { "hrs", 3600 },	  { "hour", 3600 },
		{ "hours", 3600 },
	};
	size_t num_len = 0;
	const char *unit;
	size_t unit_len;
	double v;

	lb_metric_trim(&s, &len);
	if (len > 0 && s[0] == '~') {
		s++;
		len--;
		lb_metric_trim(&s, &len);
	}
	while (num_len < len && (lb_metric_is_digit(s[num_len]) || s[num_len] == '.' ||
				 s[num_len] == 'e' || s[num_len] == 'E' || s[num_len] == '+' ||
				 s[num_len] == '-'))
		num_len++;
	if (!lb_parse_number(s, num_len, &v))
		return false;
	unit = s + num_len;
	unit_len = len - num_len;
	lb_metric_trim(&unit, &unit_len);
	if (!isfinite(v) || v < 0)
		return false;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (lb_metric_word_is(unit, unit_len, units[i].word)) {
			*out = v * units[i].scale;
			return true;
		}
	}
	return false;
}

/* Reads the duration a TIME_GUARD value starts with: "240.1s - saving partial results",
 * "12.3 s, stopping", "~30 sec", "95" alone. A number followed by a word that is not a unit
 * ("3 conditions done") is not a time. */
bool lb_metric_parse_duration_prefix(const char *s, size_t len, double *out)
{
	size_t i = 0, num_end, word, word_end;

	while (i < len && lb_text_blank(s[i]))
		i++;
	if (i < len && s[i] == '~')
		i++;
	while (i < len && lb_text_blank(s[i]))
		i++;
	num_end = scan_decimal(s, len, i);
	if (num_end == i)
		return false;
	word = num_end;
	while (word < len && lb_text_blank(s[word]))
		word++;
	word_end = word;
	while (word_end < len && lb_metric_is_alpha(s[word_end]))
		word_end++;
	if (word_end < len && lb_metric_is_digit(s[word_end]))
		return false; /* "12s5": not a duration followed by text */
	if (word_end == word)
		return lb_metric_parse_duration(s + i, num_end - i, out);
	return lb_metric_parse_duration(s + i, word_end - i, out);
}
