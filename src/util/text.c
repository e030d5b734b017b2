/* util: text shown to people and written to JSON: UTF-8 sequences, invisible format
 * characters, replacement of invalid bytes, and printf that shows experiment text safely. */
#include "labbox/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (RFC 3629: no overlongs, no surrogates, nothing
 * above U+10FFFF), or 0 when it is not one. */
size_t lb_utf8_seq_len(const unsigned char *s, size_t len)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (len < n)
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/* The code point of a valid UTF-8 sequence of k bytes. */
unsigned lb_utf8_code_point(const unsigned char *u, size_t k)
{
	switch (k) {
	case 2:
		return (unsigned)(u[0] & 0x1f) << 6 | (u[1] & 0x3f);
	case 3:
		return (unsigned)(u[0] & 0x0f) << 12 | (unsigned)(u[1] & 0x3f) << 6 | (u[2] & 0x3f);
	case 4:
		return (unsigned)(u[0] & 0x07) << 18 | (unsigned)(u[1] & 0x3f) << 12 |
		       (unsigned)(u[2] & 0x3f) << 6 | (u[3] & 0x3f);
	default:
		return u[0];
	}
}

/* The invisible characters that change how a line is shown or make two names look alike:
 * the bidirectional embeddings, overrides, isolates and marks, the zero-width ones, the
 * soft hyphen, the line and paragraph separators, the interlinear annotations, variation
 * selectors, tags and the byte order mark. A name holding U+202E shows the rest of the line
 * reversed: "acc" that reads as another metric, a value as another. */
bool lb_unicode_format_char(unsigned cp)
{
	return cp == 0x00ad || cp == 0x061c || cp == 0x180e || (cp >= 0x200b && cp <= 0x200f) ||
	       (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x206f) ||
	       (cp >= 0xfe00 && cp <= 0xfe0f) || cp == 0xfeff || (cp >= 0xfff9 && cp <= 0xfffb) ||
	       (cp >= 0x1d173 && cp <= 0x1d17a) || (cp >= 0xe0000 && cp <= 0xe007f) ||
	       (cp >= 0xe0100 && cp <= 0xe01ef);
}

int lb_text_show_format_chars(const char *text, size_t len, lb_buf *out)
{
	const unsigned char *u = (const unsigned char *)text;
	int r = 0;
	for (size_t i = 0; r == 0 && i < len;) {
		size_t k = u[i] < 0x80 ? 1 : lb_utf8_seq_len(u + i, len - i);
		if (k >= 2 && lb_unicode_format_char(lb_utf8_code_point(u + i, k))) {
			r = lb_buf_printf(out, "\\u%04x", lb_utf8_code_point(u + i, k));
			i += k;
			continue;
		}
		if (k == 0)
			k = 1;
		r = lb_buf_append(out, text + i, k);
		i += k;
	}
	return r;
}

/* text into out with each byte that is not part of valid UTF-8 replaced by what repl writes
 * for it, and with json_c1 each C1 control (U+0080..U+009F) written as the JSON escape
 * \u00XX; 0 (out untouched) when there is none, 1 when out holds the text, or -ENOMEM. */
static int utf8_replace(const char *text, size_t len, lb_buf *out,
			int (*repl)(lb_buf *out, unsigned char byte), bool json_c1)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t i = 0, done = 0;
	bool changed = false;
	while (i < len) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		size_t k = lb_utf8_seq_len(s + i, len - i);
		bool c1 = json_c1 && k == 2 && s[i] == 0xc2 && s[i + 1] < 0xa0;
		if (k && !c1) {
			i += k;
			continue;
		}
		int r = lb_buf_append(out, text + done, i - done);
		if (r == 0)
			r = c1 ? lb_buf_printf(out, "\\u00%02x", s[i + 1]) : repl(out, s[i]);
		if (r < 0)
			return r;
		changed = true;
		i += c1 ? 2 : 1;
		done = i;
	}
	if (!changed)
		return 0;
	/* out->len is the text's length: lb_buf keeps a NUL after it already, and one counted in
	 * the length would be written by whoever sends out->len bytes. */
	int r = lb_buf_append(out, text + done, len - done);
	return r < 0 ? r : 1;
}

static int surrogate_escape(lb_buf *out, unsigned char byte)
{
	char esc[8];
	snprintf(esc, sizeof esc, "\\udc%02x", byte);
	return lb_buf_append(out, esc, 6);
}

static int replacement_char(lb_buf *out, unsigned char byte)
{
	(void)byte;
	return lb_buf_append(out, "\xef\xbf\xbd", 3); /* U+FFFD */
}

int lb_json_escape_invalid_utf8(const char *text, size_t len, lb_buf *out)
{
	return utf8_replace(text, len, out, surrogate_escape, true);
}

int lb_utf8_replace_invalid(const char *text, size_t len, lb_buf *out)
{
	return utf8_replace(text, len, out, replacement_char, false);
}

long lb_utf8_show(lb_buf *out, const char *text, size_t len, size_t max)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)text;
	size_t i = 0, used = 0;
	while (i < len) {
		size_t k = lb_utf8_seq_len(s + i, len - i);
		size_t w = k ? k : 4;
		if (used + w > max)
			break;
		char esc[4] = {'\\', 'x', hex[s[i] >> 4], hex[s[i] & 15]};
		if (lb_buf_append(out, k ? text + i : esc, w) < 0)
			return -ENOMEM;
		used += w;
		i += k ? k : 1;
	}
	return (long)i;
}

/* One character of text for a line-oriented view: how many bytes it takes at s (1 for a byte
 * that starts no valid sequence) and what it is shown as in esc (empty: itself). */
static size_t show_one(const unsigned char *s, size_t len, char esc[16])
{
	static const char hex[] = "0123456789abcdef";
	size_t k = s[0] < 0x80 ? 1 : lb_utf8_seq_len(s, len);
	esc[0] = '\0';
	if (k == 1 && s[0] < 0x80) {
		unsigned char c = s[0];
		if (c == '\n' || c == '\r')
			snprintf(esc, 16, "\\%c", c == '\n' ? 'n' : 'r');
		else if ((c < 0x20 && c != '\t') || c == 0x7f)
			snprintf(esc, 16, "\\x%c%c", hex[c >> 4], hex[c & 15]);
		return 1;
	}
	if (k == 0) {
		snprintf(esc, 16, "\\x%c%c", hex[s[0] >> 4], hex[s[0] & 15]);
		return 1;
	}
	/* C1 controls (U+0080..U+009F, NEL among them) as their two bytes, as the echo shows them */
	if (k == 2 && s[0] == 0xc2 && s[1] < 0xa0)
		snprintf(esc, 16, "\\xc2\\x%c%c", hex[s[1] >> 4], hex[s[1] & 15]);
	else if (lb_unicode_format_char(lb_utf8_code_point(s, k)))
		snprintf(esc, 16, "\\u%04x", lb_utf8_code_point(s, k));
	return k;
}

long lb_text_show(lb_buf *out, const char *text, size_t len, size_t max)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t i = 0, used = 0;
	while (i < len) {
		char esc[16];
		size_t k = show_one(s + i, len - i, esc);
		size_t w = esc[0] ? strlen(esc) : k;
		if (used + w > max)
			break;
		if (lb_buf_append(out, esc[0] ? esc : text + i, w) < 0)
			return -ENOMEM;
		used += w;
		i += k;
	}
	return (long)i;
}

/* One conversion of lb_show_vprintf: spec (NUL-terminated, '*' already replaced by numbers)
 * with the argument its conversion and length take from ap. A string is shown first
 * (lb_text_show), then given the spec's width and precision: a table's columns stay aligned. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static int show_conversion(lb_buf *b, const char *spec, char conv, const char *lenmod, va_list *ap)
{
	bool l = strcmp(lenmod, "l") == 0, ll = strcmp(lenmod, "ll") == 0;
	bool z = *lenmod == 'z', j = *lenmod == 'j', t = *lenmod == 't', L = *lenmod == 'L';
	switch (conv) {
	case 'd': case 'i':
		if (ll)
			return lb_buf_printf(b, spec, va_arg(*ap, long long));
		if (l)
			return lb_buf_printf(b, spec, va_arg(*ap, long));
		if (z)
			return lb_buf_printf(b, spec, va_arg(*ap, ssize_t));
		if (j)
			return lb_buf_printf(b, spec, va_arg(*ap, intmax_t));
		if (t)
			return lb_buf_printf(b, spec, va_arg(*ap, ptrdiff_t));
		return lb_buf_printf(b, spec, va_arg(*ap, int));
	case 'u': case 'o': case 'x': case 'X':
		if (ll)
			return lb_buf_printf(b, spec, va_arg(*ap, unsigned long long));
		if (l)
			return lb_buf_printf(b, spec, va_arg(*ap, unsigned long));
		if (z)
			return lb_buf_printf(b, spec, va_arg(*ap, size_t));
		if (j)
			return lb_buf_printf(b, spec, va_arg(*ap, uintmax_t));
		if (t)
			return lb_buf_printf(b, spec, va_arg(*ap, ptrdiff_t));
		return lb_buf_printf(b, spec, va_arg(*ap, unsigned));
	case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A':
		if (L)
			return lb_buf_printf(b, spec, va_arg(*ap, long double));
		return lb_buf_printf(b, spec, va_arg(*ap, double));
	case 'p':
		return lb_buf_printf(b, spec, va_arg(*ap, void *));
	case 'c':
	case 's': {
		char one;
		const char *str;
		if (conv == 'c') {
			one = (char)va_arg(*ap, int);
			str = &one;
		} else {
			str = va_arg(*ap, const char *);
			if (!str)
				str = "(null)";
		}
		size_t n = conv == 'c' ? 1 : strlen(str);
		lb_buf shown = {0};
		if (lb_text_show(&shown, str, n, SIZE_MAX) < 0) {
			lb_buf_free(&shown);
			return -ENOMEM;
		}
		/* the spec with 's' for the conversion: a %c shown is a string now */
		char s2[64];
		snprintf(s2, sizeof s2, "%.*ss", (int)(strlen(spec) - 1 - strlen(lenmod)), spec);
		int r = lb_buf_printf(b, s2, shown.data ? shown.data : "");
		lb_buf_free(&shown);
		return r;
	}
	default:
		return -EINVAL;
	}
}
#pragma GCC diagnostic pop

int lb_show_vprintf(lb_buf *b, const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int r = 0;
	for (const char *p = fmt; r >= 0 && *p;) {
		const char *pc = strchr(p, '%');
		size_t lit = pc ? (size_t)(pc - p) : strlen(p);
		if (lit && lb_buf_append(b, p, lit) < 0)
			r = -ENOMEM;
		p += lit;
		if (r < 0 || !*p)
			break;
		if (p[1] == '%') {
			r = lb_buf_append(b, "%", 1);
			p += 2;
			continue;
		}
		/* %[flags][width][.precision][length]conversion, '*' taken from the arguments */
		char spec[64];
		size_t o = 0;
		spec[o++] = *p++;
		while (*p && strchr("-+ #0", *p) && o < 8)
			spec[o++] = *p++;
		for (int part = 0; part < 2 && r >= 0; part++) {
			if (part == 1) {
				if (*p != '.')
					break;
				spec[o++] = *p++;
			}
			if (*p == '*') {
				o += (size_t)snprintf(spec + o, 16, "%d", va_arg(aq, int));
				p++;
			} else {
				while (*p >= '0' && *p <= '9' && o < 40)
					spec[o++] = *p++;
			}
		}
		char lenmod[3] = "";
		size_t lm = 0;
		while (*p && strchr("hlzjtL", *p) && lm < 2)
			lenmod[lm++] = *p, spec[o++] = *p++;
		lenmod[lm] = '\0';
		if (!*p) {
			r = -EINVAL;
			break;
		}
		char conv = *p++;
		spec[o++] = conv;
		spec[o] = '\0';
		r = show_conversion(b, spec, conv, lenmod, &aq);
	}
	va_end(aq);
	return r < 0 ? r : 0;
}

int lb_show_printf(lb_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = lb_show_vprintf(b, fmt, ap);
	va_end(ap);
	return r;
}

int lb_show_fprintf(FILE *f, const char *fmt, ...)
{
	lb_buf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int r = lb_show_vprintf(&b, fmt, ap);
	va_end(ap);
	if (r == 0 && b.len && fwrite(b.data, 1, b.len, f) != b.len)
		r = -EIO;
	lb_buf_free(&b);
	return r;
}

size_t lb_utf8_whole_len(const char *text, size_t len)
{
	const unsigned char *s = (const unsigned char *)text;
	/* A lead byte in the last three whose sequence runs past the end, with only continuation
	 * bytes after it: the start of a character the cut split. */
	for (size_t back = 1; back <= 3 && back <= len; back++) {
		unsigned char c = s[len - back];
		if (c >= 0x80 && c <= 0xbf)
			continue;
		size_t want = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
			    : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
		return want > back ? len - back : len;
	}
	return len;
}
