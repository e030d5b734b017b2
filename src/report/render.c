/* The report written out: self-contained HTML (inline CSS and SVG), Markdown, CSV. */
#include "labbox/report.h"
#include "labbox/util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- escaping -------------------------------------------------------------------------------- */

/* An invisible character that reorders or hides text (a right-to-left override in a
 * condition's name shows it reversed): shown as \uXXXX, as labbox's other views do. 1 when
 * it was, 0 when not, -ENOMEM. */
static int show_format_char(lb_buf *b, const unsigned char *u, size_t n)
{
	unsigned cp;

	if (n < 2)
		return 0;
	cp = lb_utf8_code_point(u, n);
	if (!lb_unicode_format_char(cp))
		return 0;
	return lb_buf_printf(b, "\\u%04x", cp) < 0 ? -ENOMEM : 1;
}

int lb_report_html_escape(lb_buf *b, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < len;) {
		const char *rep = NULL;
		switch (u[i]) {
		case '&': rep = "&amp;"; break;
		/* GFM links an address (a@b.c) found in text after escapes are resolved, so
		 * \@ would not stop it; a code span between its parts does. */
		case '@': rep = "`@`"; break;
		case '<': rep = "&lt;"; break;
		case '>': rep = "&gt;"; break;
		case '"': rep = "&quot;"; break;
		case '\'': rep = "&#39;"; break;
		default: break;
		}
		if (rep) {
			if (lb_buf_puts(b, rep) < 0)
				return -ENOMEM;
			i++;
			continue;
		}
		size_t n = u[i] < 0x80 ? 1 : lb_utf8_seq_len(u + i, len - i);
		bool control = u[i] < 0x20 ? (u[i] != '\n' && u[i] != '\t') : u[i] == 0x7f;
		/* C1 controls (U+0080..U+009F) are two bytes, C2 80..9F. */
		if (n == 2 && u[i] == 0xc2 && u[i + 1] < 0xa0)
			control = true;
		if (n == 0 || control) {
			for (size_t k = 0; k < (n ? n : 1); k++)
				if (lb_buf_printf(b, "\\x%02x", u[i + k]) < 0)
					return -ENOMEM;
			i += n ? n : 1;
			continue;
		}
		int f = show_format_char(b, u + i, n);
		if (f < 0 || (f == 0 && lb_buf_append(b, s + i, n) < 0))
			return -ENOMEM;
		i += n;
	}
	return 0;
}

static int esc(lb_buf *b, const char *s)
{
	return s ? lb_report_html_escape(b, s, strlen(s)) : 0;
}

int lb_report_csv_field(lb_buf *b, const char *s, bool text)
{
	size_t len = strlen(s);
	bool quote = len && (s[0] == ' ' || s[len - 1] == ' ');
	for (size_t i = 0; i < len && !quote; i++)
		quote = s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r';
	/* A cell a spreadsheet would evaluate runs code on whoever opens the file; some trim
	 * leading blanks (a space, a no-break space) before they look. */
	size_t lead = 0;
	while (lead < len && (s[lead] == ' ' ||
			      ((unsigned char)s[lead] == 0xc2 && lead + 1 < len &&
			       (unsigned char)s[lead + 1] == 0xa0)))
		lead += s[lead] == ' ' ? 1 : 2;
	bool formula = text && lead < len && strchr("=+-@\t\r", s[lead]);
	if (quote && lb_buf_puts(b, "\"") < 0)
		return -ENOMEM;
	if (formula && lb_buf_puts(b, "'") < 0)
		return -ENOMEM;
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < len;) {
		size_t n = u[i] < 0x80 ? 1 : lb_utf8_seq_len(u + i, len - i);
		int f = n > 1 ? show_format_char(b, u + i, n) : 0;
		int rc = f != 0	     ? f
			 : s[i] == '"' ? lb_buf_puts(b, "\"\"")
			 : n == 0    ? lb_buf_printf(b, "\\x%02x", u[i])
				     : lb_buf_append(b, s + i, n);
		if (rc < 0)
			return -ENOMEM;
		i += n ? n : 1;
	}
	return quote ? lb_buf_puts(b, "\"") : 0;
}

int lb_report_md_cell(lb_buf *b, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len = strlen(s);
	for (size_t i = 0; i < len;) {
		const char *rep = NULL;
		switch (u[i]) {
		/* As entities, not \<: Markdown renderers older than CommonMark (Markdown.pl,
		 * Python-Markdown) take a backslash before them as text and the tag as HTML. */
		case '<': rep = "&lt;"; break;
		case '>': rep = "&gt;"; break;
		case '&': rep = "&amp;"; break;
		/* GFM links an address (a@b.c) found in text after escapes are resolved, so
		 * \@ would not stop it; a code span between its parts does. */
		case '@': rep = "`@`"; break;
		case '\n': case '\r': case '\t': rep = " "; break;
		default: break;
		}
		if (rep) {
			if (lb_buf_puts(b, rep) < 0)
				return -ENOMEM;
			i++;
			continue;
		}
		/* Every other ASCII punctuation character is backslash-escaped, as CommonMark
		 * allows for each of them: an escaped one is always literal, so the experiment's
		 * names can open no link or image ([ ] ( ) !), emphasis (* _ ~), code (`), and
		 * no GFM autolink, which needs an unescaped ':' after http/https/ftp or '.' after
		 * www. */
		if (u[i] && strchr("!\"#$%'()*+,-./:;=?[\\]^_`{|}~", u[i])) {
			char esc[2] = {'\\', s[i]};
			if (lb_buf_append(b, esc, 2) < 0)
				return -ENOMEM;
			i++;
			continue;
		}
		size_t n = u[i] < 0x80 ? 1 : lb_utf8_seq_len(u + i, len - i);
		if (n == 0 || u[i] < 0x20 || u[i] == 0x7f) {
			if (lb_buf_printf(b, "\\x%02x", u[i]) < 0)
				return -ENOMEM;
			i++;
			continue;
		}
		int f = show_format_char(b, u + i, n);
		if (f < 0 || (f == 0 && lb_buf_append(b, s + i, n) < 0))
			return -ENOMEM;
		i += n;
	}
	return 0;
}

/* ---- axes ------------------------------------------------------------------------------------ */

int lb_report_ticks(double lo, double hi, size_t max_ticks, double *start, double *step,
		    size_t *n)
{
	if (!isfinite(lo) || !isfinite(hi) || max_ticks < 3)
		return -EINVAL;
	if (hi < lo) {
		double t = lo;
		lo = hi;
		hi = t;
	}
	if (hi - lo <= fabs(hi) * 1e-12 || hi == lo) {
		/* One value (or all equal): a range around it, so the point sits inside. */
		double pad = lo != 0 ? fabs(lo) * 0.1 : 1.0;
		lo -= pad;
		hi += pad;
	}
	for (size_t want = max_ticks; want >= 3; want--) {
		double raw = (hi - lo) / (double)(want - 1);
		double mag = pow(10, floor(log10(raw)));
		double f = raw / mag;
		double nice = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
		double st = nice * mag;
		double t0 = floor(lo / st) * st, t1 = ceil(hi / st) * st;
		double count = round((t1 - t0) / st) + 1;
		/* The fewest ticks tried: widen the step until the range fits (a range across
		 * zero needs three). */
		static const double up[] = {1, 2, 2.5, 5, 10};
		for (int k = 0; want == 3 && count > (double)max_ticks && k < 64; k++) {
			size_t j = 0;
			while (j < 4 && up[j] <= nice + 1e-9)
				j++;
			nice = up[j];
			if (nice == 10) {
				nice = 1;
				mag *= 10;
			}
			st = nice * mag;
			t0 = floor(lo / st) * st;
			t1 = ceil(hi / st) * st;
			count = round((t1 - t0) / st) + 1;
		}
		if (!isfinite(count) || !isfinite(st) || st <= 0)
			return -EINVAL;
		if (count <= (double)max_ticks || want == 3) {
			*start = t0;
			*step = st;
			*n = (size_t)count;
			return 0;
		}
	}
	return -EINVAL;
}

void lb_report_tick_label(double v, double step, char *out, size_t outlen)
{
	if (fabs(v) < step * 1e-9)
		v = 0; /* -0 and rounding noise at zero */
	double a = fmax(fabs(v), step);
	if (a >= 1e6 || step < 1e-4) {
		/* Digits down to the step's place (and one for a step of 2.5): ticks of a narrow
		 * range far from zero must not all read alike. */
		int sig = (int)floor(log10(a)) - (int)floor(log10(step)) + 2;
		snprintf(out, outlen, "%.*g", sig < 3 ? 3 : sig > 17 ? 17 : sig, v);
		return;
	}
	int dec = 0;
	while (dec < 6 && fabs(step * pow(10, dec) - round(step * pow(10, dec))) > 1e-6 * step * pow(10, dec))
		dec++;
	snprintf(out, outlen, "%.*f", dec, v);
}

/* ---- SVG ------------------------------------------------------------------------------------- */

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
				      "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};
#define PALETTE_N (sizeof palette / sizeof *palette)

#define SVG_W 600.0
#define ROW_H 26.0
#define LABEL_CHARS 30

/* A condition's label in a plot: at most LABEL_CHARS characters, the middle elided when
 * longer (conditions differ at either end: a prefix of the experiment's name, the last
 * parameter), with the full name in a <title>. */
static size_t utf8_advance(const char *s, size_t len, size_t i)
{
	size_t n = lb_utf8_seq_len((const unsigned char *)s + i, len - i);
	return i + (n ? n : 1);
}

static int short_label(lb_buf *b, const char *s)
{
	size_t len = strlen(s), chars = 0;
	for (size_t i = 0; i < len; i = utf8_advance(s, len, i))
		chars++;
	if (chars <= LABEL_CHARS)
		return lb_report_html_escape(b, s, len);
	size_t head = LABEL_CHARS / 2 - 1, tail = LABEL_CHARS - head - 1;
	size_t a = 0, z = 0, k = 0;
	for (size_t i = 0; i < len; i = utf8_advance(s, len, i), k++) {
		if (k == head)
			a = i;
		if (k == chars - tail)
			z = i;
	}
	if (lb_report_html_escape(b, s, a) < 0 || lb_buf_puts(b, "\xe2\x80\xa6") < 0)
		return -ENOMEM;
	return lb_report_html_escape(b, s + z, len - z);
}

/* Significant digits that end v at the decimal place 10^place. */
static int sig_at(double v, int place)
{
	if (v == 0 || !isfinite(v))
		return 1;
	int s = (int)floor(log10(fabs(v))) - place + 1;
	return s < 1 ? 1 : s > 17 ? 17 : s;
}

/* Trailing zeros kept (they say how far the value is known), a bare trailing point not. */
static void fmt_sig(double v, int sig, char *out, size_t n)
{
	snprintf(out, n, "%#.*g", sig, v);
	char *e = strchr(out, 'e');
	size_t len = e ? (size_t)(e - out) : strlen(out);
	if (len && out[len - 1] == '.')
		memmove(out + len - 1, out + len, strlen(out + len) + 1);
}

/* The shortest digits that read back as v. */
static void fmt_exact(double v, char *out, size_t n)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(out, n, "%.*g", prec, v);
		if (strtod(out, NULL) == v)
			return;
	}
}

/* Two values that differ must not print alike. */
static bool prints_apart(double a, const char *sa, double b, const char *sb)
{
	return a == b || strcmp(sa, sb) != 0;
}

void lb_report_fmt_stat(const lb_report_stat *st, lb_report_nums *out)
{
	double half = st->has_spread ? (st->ci_high - st->ci_low) / 2 : 0;
	if (!st->has_spread || !(half > 0) || !isfinite(half)) {
		fmt_exact(st->mean, out->mean, sizeof out->mean);
		fmt_exact(st->has_spread ? st->ci_low : st->mean, out->lo, sizeof out->lo);
		fmt_exact(st->has_spread ? st->ci_high : st->mean, out->hi, sizeof out->hi);
		fmt_exact(st->has_spread ? st->std : 0, out->sd, sizeof out->sd);
		fmt_exact(half, out->half, sizeof out->half);
		return;
	}
	/* Two significant digits of the half-width set the place every number ends at; more
	 * where bounds that differ would still print alike. */
	int place = (int)floor(log10(half)) - 1;
	for (int extra = 0; extra <= 17; extra++, place--) {
		fmt_sig(st->mean, sig_at(st->mean, place), out->mean, sizeof out->mean);
		fmt_sig(st->ci_low, sig_at(st->ci_low, place), out->lo, sizeof out->lo);
		fmt_sig(st->ci_high, sig_at(st->ci_high, place), out->hi, sizeof out->hi);
		if (prints_apart(st->ci_low, out->lo, st->mean, out->mean) &&
		    prints_apart(st->mean, out->mean, st->ci_high, out->hi) &&
		    prints_apart(st->ci_low, out->lo, st->ci_high, out->hi))
			break;
	}
	fmt_sig(half, sig_at(half, place) < 2 ? 2 : sig_at(half, place), out->half, sizeof out->half);
	fmt_sig(st->std, sig_at(st->std, place) < 2 ? 2 : sig_at(st->std, place), out->sd,
		sizeof out->sd);
}

int lb_report_svg_metric(const lb_report *r, size_t m, lb_buf *b)
{
	if (m >= r->nmetrics)
		return -EINVAL;
	double lo = INFINITY, hi = -INFINITY;
	for (size_t c = 0; c < r->nconditions; c++) {
		const lb_report_stat *st = &r->stats[c * r->nmetrics + m];
		if (!st->present || st->n == 0)
			continue;
		lo = fmin(lo, st->has_spread ? fmin(st->ci_low, st->mean) : st->mean);
		hi = fmax(hi, st->has_spread ? fmax(st->ci_high, st->mean) : st->mean);
	}
	/* Room for the longest label (monospace, about 6.7 px a character) and no more. */
	size_t longest = 4;
	for (size_t c = 0; c < r->nconditions; c++) {
		size_t chars = 0, len = strlen(r->conditions[c]);
		for (size_t i = 0; i < len; i++)
			chars += ((unsigned char)r->conditions[c][i] & 0xc0) != 0x80;
		longest = chars > longest ? chars : longest;
	}
	longest = longest > LABEL_CHARS ? LABEL_CHARS + 1 : longest;
	const double left = 20 + 6.7 * (double)longest, right = 24, top = 16, bottom = 44;
	double h = top + bottom + ROW_H * (double)(r->nconditions ? r->nconditions : 1);
	double pw = SVG_W - left - right;
	lb_buf_printf(b, "<svg class=\"metric-plot\" "
			 "viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\" "
			 "data-metric=\"", SVG_W, h, SVG_W, h);
	esc(b, r->metrics[m]);
	lb_buf_puts(b, "\"><title>");
	esc(b, r->metrics[m]);
	lb_buf_puts(b, ": mean and 95% interval per condition</title>\n");
	double t0 = 0, step = 1;
	size_t nt = 0;
	bool any = isfinite(lo) && lb_report_ticks(lo, hi, 6, &t0, &step, &nt) == 0;
	double t1 = t0 + step * (double)(nt ? nt - 1 : 1);
#define XPOS(v) (left + ((v) - t0) / (t1 - t0) * pw)
	/* Ticks and grid. */
	for (size_t i = 0; any && i < nt; i++) {
		double v = t0 + step * (double)i, x = XPOS(v);
		char lab[32];
		lb_report_tick_label(v, step, lab, sizeof lab);
		lb_buf_printf(b, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
				 "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
			      x, top, x, h - bottom, x, h - bottom + 16, lab);
	}
	if (any && t0 < 0 && t1 > 0)
		lb_buf_printf(b, "<line class=\"zero\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
			      XPOS(0.0), top, XPOS(0.0), h - bottom);
	lb_buf_printf(b, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
		      left, h - bottom, left + pw, h - bottom);
	lb_buf_printf(b, "<text class=\"axis-label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
		      left + pw / 2, h - 6);
	esc(b, r->metrics[m]);
	lb_buf_puts(b, " (mean, 95% interval)</text>\n");
	for (size_t c = 0; c < r->nconditions; c++) {
		const lb_report_stat *st = &r->stats[c * r->nmetrics + m];
		double y = top + ROW_H * ((double)c + 0.5);
		lb_buf_printf(b, "<text class=\"cond\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">"
				 "<title>", left - 8, y + 4);
		esc(b, r->conditions[c]);
		lb_buf_puts(b, "</title>");
		short_label(b, r->conditions[c]);
		lb_buf_puts(b, "</text>\n");
		const char *flag = !r->completed[c] && !st->present ? "no completed run"
				   : !st->present ? "not reported"
				   : st->n == 0	? "not plotted: NaN/Inf only"
						: NULL;
		if (flag || !any) {
			lb_buf_printf(b, "<text class=\"flag\" x=\"%.1f\" y=\"%.1f\">%s</text>\n",
				      left + 6, y + 4, flag ? flag : "no value");
			continue;
		}
		lb_report_nums p;
		lb_report_fmt_stat(st, &p);
		lb_buf_printf(b, "<g class=\"point\" data-condition-index=\"%zu\"><title>", c);
		esc(b, r->conditions[c]);
		lb_buf_printf(b, ": %s", p.mean);
		if (st->has_spread) {
			lb_buf_printf(b, " [%s, %s], n=%zu", p.lo, p.hi, st->n);
			double x1 = XPOS(st->ci_low), x2 = XPOS(st->ci_high);
			lb_buf_printf(b, "</title><line class=\"err\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
					 "y2=\"%.1f\"/><line class=\"err\" x1=\"%.1f\" y1=\"%.1f\" "
					 "x2=\"%.1f\" y2=\"%.1f\"/><line class=\"err\" x1=\"%.1f\" "
					 "y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>",
				      x1, y, x2, y, x1, y - 6, x1, y + 6, x2, y - 6, x2, y + 6);
		} else {
			lb_buf_printf(b, ", n=%zu</title>", st->n);
		}
		lb_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\"/></g>",
			      XPOS(st->mean), y, palette[c % PALETTE_N]);
		if (st->nonfinite)
			lb_buf_printf(b, "<text class=\"flag\" x=\"%.1f\" y=\"%.1f\">+%zu NaN/Inf</text>",
				      fmin(XPOS(st->mean) + 8, left + pw - 70), y - 7, st->nonfinite);
		lb_buf_puts(b, "\n");
	}
#undef XPOS
	return lb_buf_puts(b, "</svg>\n");
}

/* The most runs behind any point of condition c's line. */
static double lb_report_series_most(const lb_report_series *s, size_t c)
{
	double most = 0;
	for (size_t p = 0; p < s->npoints[c]; p++)
		most = fmax(most, s->count[c][p]);
	return most;
}

int lb_report_svg_series(const lb_report *r, size_t si, lb_buf *b)
{
	if (si >= r->nseries)
		return -EINVAL;
	const lb_report_series *s = &r->series[si];
	double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
	for (size_t c = 0; c < r->nconditions; c++)
		for (size_t p = 0; p < s->npoints[c]; p++) {
			xlo = fmin(xlo, s->x[c][p]);
			xhi = fmax(xhi, s->x[c][p]);
			ylo = fmin(ylo, s->y[c][p]);
			yhi = fmax(yhi, s->y[c][p]);
		}
	const double left = 64, right = 20, top = 14, bottom = 44, h = 300;
	double pw = SVG_W - left - right, ph = h - top - bottom;
	double x0, xs, y0, ys;
	size_t nx, ny;
	if (lb_report_ticks(xlo, xhi, 7, &x0, &xs, &nx) < 0 ||
	    lb_report_ticks(ylo, yhi, 6, &y0, &ys, &ny) < 0)
		return -EINVAL;
	double x1 = x0 + xs * (double)(nx - 1), y1 = y0 + ys * (double)(ny - 1);
#define PX(v) (left + ((v) - x0) / (x1 - x0) * pw)
#define PY(v) (top + ph - ((v) - y0) / (y1 - y0) * ph)
	lb_buf_printf(b, "<svg class=\"series-plot\" "
			 "viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\" "
			 "data-metric=\"", SVG_W, h, SVG_W, h);
	esc(b, s->metric);
	lb_buf_puts(b, "\"><title>");
	esc(b, s->metric);
	lb_buf_puts(b, " over ");
	esc(b, s->x_label);
	lb_buf_puts(b, "</title>\n");
	for (size_t i = 0; i < ny; i++) {
		double v = y0 + ys * (double)i;
		char lab[32];
		lb_report_tick_label(v, ys, lab, sizeof lab);
		lb_buf_printf(b, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
				 "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
			      left, PY(v), left + pw, PY(v), left - 6, PY(v) + 4, lab);
	}
	for (size_t i = 0; i < nx; i++) {
		double v = x0 + xs * (double)i;
		char lab[32];
		lb_report_tick_label(v, xs, lab, sizeof lab);
		lb_buf_printf(b, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
				 "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
			      PX(v), top + ph, PX(v), top + ph + 5, PX(v), top + ph + 18, lab);
	}
	lb_buf_printf(b, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
			 "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
		      left, top, left, top + ph, left, top + ph, left + pw, top + ph);
	lb_buf_printf(b, "<text class=\"axis-label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
		      left + pw / 2, h - 8);
	esc(b, s->x_label);
	lb_buf_puts(b, "</text>\n");
	for (size_t c = 0; c < r->nconditions; c++) {
		if (!s->npoints[c])
			continue;
		/* Each point is the mean of the runs that reached it: where fewer than the most
		 * runs behind this condition's line remain (one stopped early), the line is dashed
		 * and says how many it averages, rather than reading as the condition's mean. */
		double most = lb_report_series_most(s, c);
		for (size_t p = 0; p < s->npoints[c];) {
			double k = s->count[c][p];
			size_t e = p;
			while (e + 1 < s->npoints[c] && s->count[c][e + 1] == k)
				e++;
			size_t from = p ? p - 1 : p; /* joined to the segment before */
			bool fewer = k < most;
			lb_buf_printf(b, "<polyline class=\"line%s\" stroke=\"%s\"%s data-runs=\"%.0f\" "
					 "points=\"",
				      fewer ? " fewer" : "", palette[c % PALETTE_N],
				      fewer ? " stroke-dasharray=\"5 4\" stroke-opacity=\"0.6\"" : "", k);
			for (size_t q = from; q <= e; q++)
				lb_buf_printf(b, "%s%.1f,%.1f", q > from ? " " : "", PX(s->x[c][q]),
					      PY(s->y[c][q]));
			lb_buf_puts(b, "\"><title>");
			esc(b, r->conditions[c]);
			lb_buf_printf(b, ": n=%.0f of %.0f runs", k, most);
			if (fewer)
				lb_buf_puts(b, " (the others stopped earlier or did not report it)");
			lb_buf_puts(b, "</title></polyline>\n");
			p = e + 1;
		}
		if (s->npoints[c] == 1)
			lb_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
				      PX(s->x[c][0]), PY(s->y[c][0]), palette[c % PALETTE_N]);
	}
#undef PX
#undef PY
	return lb_buf_puts(b, "</svg>\n");
}

/* ---- HTML ------------------------------------------------------------------------------------ */

static const char css[] =
	":root{--fg:#1d2430;--mut:#5b6677;--line:#d8dde6;--bg:#fff;--head:#f3f5f9;--bad:#b3261e}\n"
	"*{box-sizing:border-box}\n"
	"body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',"
	"sans-serif;color:var(--fg);background:var(--bg)}\n"
	"main{max-width:1280px;margin:0 auto;padding:20px 28px 40px}\n"
	"h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 10px;padding-bottom:4px;"
	"border-bottom:1px solid var(--line)}\n"
	".sub{color:var(--mut);margin:0 0 8px}.sub code{font-size:12px}\n"
	".wrap{overflow-x:auto}\n"
	"table{border-collapse:collapse;font-variant-numeric:tabular-nums}\n"
	"th,td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}\n"
	"thead th{background:var(--head);font-weight:600;white-space:nowrap}\n"
	"td.num{text-align:right;white-space:nowrap}td .ci{color:var(--mut);font-size:12px;"
	"display:block}\n"
	"td.cond{font-family:ui-monospace,'DejaVu Sans Mono',monospace;font-size:12.5px;"
	"word-break:break-all;max-width:320px}\n"
	"td.id{font-family:ui-monospace,'DejaVu Sans Mono',monospace;font-size:12.5px;"
	"white-space:nowrap}table.failures td.cond{min-width:10em}\n"
	".flag,.nf{color:var(--bad)}.none{color:var(--mut)}\n"
	".plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:14px}\n"
	"figure{margin:0;border:1px solid var(--line);border-radius:6px;padding:10px 12px;"
	"break-inside:avoid}\n"
	"figcaption{font-weight:600;margin-bottom:4px;word-break:break-all}\n"
	"svg{max-width:100%;height:auto;display:block}\n"
	"svg text{font:12px system-ui,'DejaVu Sans',sans-serif;fill:var(--fg)}\n"
	"svg .tick{fill:var(--mut);font-size:11px}svg .cond{font-family:ui-monospace,"
	"'DejaVu Sans Mono',monospace;font-size:11px}\n"
	"svg .grid{stroke:#eceff4}svg .axis{stroke:#8a94a6}svg .zero{stroke:#8a94a6;"
	"stroke-dasharray:3 3}\n"
	"svg .err{stroke:#333;stroke-width:1.5}svg .flag{fill:var(--bad);font-size:11px}\n"
	"svg .line{fill:none;stroke-width:2}\n"
	".legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;margin-top:4px}\n"
	".legend i{display:inline-block;width:12px;height:3px;vertical-align:middle;"
	"margin-right:5px}\n"
	"pre{margin:4px 0 0;white-space:pre-wrap;word-break:break-all;font-size:12px;"
	"background:#f7f7f9;padding:6px;border-radius:4px}\n"
	"dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0}\n"
	"dl.facts dt{font-weight:600}dl.facts dd{margin:0;word-break:break-word}\n"
	".count{color:var(--mut);font-size:12px}\n"
	".warn{border-left:4px solid #e0a100;background:#fff8e1;padding:6px 10px;margin:8px 0}\n"
	"@media print{body{font-size:10.5pt}main{max-width:none;padding:0}"
	".plots{display:block}figure{margin:0 0 10px;page-break-inside:avoid}"
	"h2{page-break-after:avoid}table{page-break-inside:auto}tr{page-break-inside:avoid}"
	".wrap{overflow:visible}details{display:block}details>pre{display:block}"
	"a{color:inherit;text-decoration:none}}\n"
	"@page{margin:14mm}\n";

static void stat_cell_html(lb_buf *b, const lb_report_stat *st, const char *metric)
{
	lb_buf_puts(b, "<td class=\"num\" data-metric=\"");
	esc(b, metric);
	if (!st->present) {
		lb_buf_puts(b, "\"><span class=\"none\">&mdash;</span></td>");
		return;
	}
	if (st->n == 0) {
		lb_buf_printf(b, "\" data-n=\"0\"><span class=\"nf\">NaN/Inf (%zu)</span></td>",
			      st->nonfinite);
		return;
	}
	lb_report_nums p;
	lb_report_fmt_stat(st, &p);
	lb_buf_printf(b, "\" data-n=\"%zu\" data-mean=\"%.17g\"", st->n, st->mean);
	if (st->has_spread)
		lb_buf_printf(b, " data-ci-low=\"%.17g\" data-ci-high=\"%.17g\"", st->ci_low, st->ci_high);
	lb_buf_printf(b, "><span class=\"mean\">%s</span>", p.mean);
	if (st->has_spread) {
		lb_buf_printf(b, "<span class=\"ci\">[%s, %s] sd %s n=%zu</span>", p.lo, p.hi, p.sd,
			      st->n);
	} else {
		lb_buf_printf(b, "<span class=\"ci\">n=%zu</span>", st->n);
	}
	if (st->nonfinite)
		lb_buf_printf(b, "<span class=\"ci nf\">+%zu NaN/Inf</span>", st->nonfinite);
	lb_buf_puts(b, "</td>");
}

static void html_table(const lb_report *r, lb_buf *b)
{
	lb_buf_puts(b, "<section id=\"results\"><h2>Results per condition</h2>\n"
		       "<p class=\"sub\">Mean over the completed runs of each condition, its 95% "
		       "interval (Student's t), sample standard deviation and count.</p>\n"
		       "<div class=\"wrap\"><table class=\"results\"><thead><tr><th>condition</th>"
		       "<th>runs</th>");
	for (size_t m = 0; m < r->nmetrics; m++) {
		lb_buf_puts(b, "<th>");
		esc(b, r->metrics[m]);
		lb_buf_puts(b, "</th>");
	}
	lb_buf_puts(b, "</tr></thead><tbody>\n");
	for (size_t c = 0; c < r->nconditions; c++) {
		lb_buf_puts(b, "<tr class=\"condition\" data-condition=\"");
		esc(b, r->conditions[c]);
		lb_buf_puts(b, "\"><td class=\"cond\">");
		esc(b, r->conditions[c]);
		lb_buf_printf(b, "</td><td class=\"num\">%zu/%zu", r->completed[c], r->cells[c]);
		if (r->retried && r->retried[c])
			lb_buf_printf(b, "<span class=\"ci\">%zu after a retry</span>", r->retried[c]);
		lb_buf_puts(b, "</td>");
		for (size_t m = 0; m < r->nmetrics; m++)
			stat_cell_html(b, &r->stats[c * r->nmetrics + m], r->metrics[m]);
		lb_buf_puts(b, "</tr>\n");
	}
	lb_buf_puts(b, "</tbody></table></div>\n");
	if (r->metrics_dropped)
		lb_buf_printf(b, "<p class=\"warn\">%zu more metrics are not shown (at most %d).</p>\n",
			      r->metrics_dropped, LB_REPORT_MAX_METRICS);
	for (size_t i = 0; i < r->nidentical; i++) {
		lb_buf_puts(b, "<p class=\"warn identical\">");
		esc(b, r->identical[i]);
		lb_buf_puts(b, "</p>\n");
	}
	lb_buf_puts(b, "</section>\n");
}

static void html_plots(const lb_report *r, lb_buf *b)
{
	lb_buf_puts(b, "<section id=\"plots\"><h2>Metrics across conditions</h2>\n<div class=\"plots\">\n");
	for (size_t m = 0; m < r->nmetrics; m++) {
		lb_buf_puts(b, "<figure><figcaption>");
		esc(b, r->metrics[m]);
		lb_buf_puts(b, "</figcaption>\n");
		lb_report_svg_metric(r, m, b);
		lb_buf_puts(b, "</figure>\n");
	}
	lb_buf_puts(b, "</div></section>\n");
	if (!r->nseries)
		return;
	lb_buf_puts(b, "<section id=\"series\"><h2>Metrics over time</h2>\n<p class=\"sub\">Values "
		       "the runs printed step by step (progress lines, or a metric printed more than "
		       "once), averaged over each condition's runs that reached each point; where fewer of them "
		       "did, the line is dashed.</p>\n<div class=\"plots\">\n");
	for (size_t s = 0; s < r->nseries; s++) {
		lb_buf_puts(b, "<figure><figcaption>");
		esc(b, r->series[s].metric);
		lb_buf_puts(b, " <span class=\"count\">over ");
		esc(b, r->series[s].x_label);
		lb_buf_puts(b, "</span></figcaption>\n");
		lb_report_svg_series(r, s, b);
		bool fewer = false;
		for (size_t c = 0; c < r->nconditions; c++)
			for (size_t p = 0; p < r->series[s].npoints[c]; p++)
				fewer |= r->series[s].count[c][p] < lb_report_series_most(&r->series[s], c);
		if (fewer)
			lb_buf_puts(b, "<p class=\"sub\">Dashed: fewer runs behind the line than "
				       "elsewhere in it (some stopped earlier); each part's title says "
				       "how many.</p>\n");
		lb_buf_puts(b, "<div class=\"legend\">");
		for (size_t c = 0; c < r->nconditions; c++) {
			if (!r->series[s].npoints[c])
				continue;
			lb_buf_printf(b, "<span><i style=\"background:%s\"></i>", palette[c % PALETTE_N]);
			esc(b, r->conditions[c]);
			lb_buf_puts(b, "</span>");
		}
		lb_buf_puts(b, "</div></figure>\n");
	}
	lb_buf_puts(b, "</div></section>\n");
}

static void html_failures(const lb_report *r, lb_buf *b)
{
	lb_buf_printf(b, "<section id=\"failures\"><h2>Failures <span class=\"count\">(%zu)</span></h2>\n",
		      r->nfailures);
	if (!r->nfailures) {
		lb_buf_puts(b, "<p class=\"none\">Every run completed.</p></section>\n");
		return;
	}
	lb_buf_puts(b, "<div class=\"wrap\"><table class=\"failures\"><thead><tr><th>run</th>"
		       "<th>condition</th><th>seed</th><th>status</th><th>class</th>"
		       "<th>summary and evidence</th></tr></thead><tbody>\n");
	for (size_t i = 0; i < r->nfailures; i++) {
		const lb_report_failure *f = &r->failures[i];
		lb_buf_puts(b, "<tr class=\"failure\"><td class=\"id\">");
		esc(b, f->run_id ? f->run_id : "-");
		lb_buf_puts(b, "</td><td class=\"cond\">");
		esc(b, f->condition);
		if (f->has_seed)
			lb_buf_printf(b, "</td><td class=\"num\">%ld", f->seed);
		else
			lb_buf_puts(b, "</td><td class=\"num\">-");
		lb_buf_puts(b, "</td><td>");
		esc(b, f->status);
		if (f->then) {
			lb_buf_puts(b, "<br><span class=\"flag\">retried: the cell is now ");
			esc(b, f->then);
			lb_buf_puts(b, "</span>");
		}
		lb_buf_puts(b, "</td><td class=\"class\">");
		esc(b, f->class_ ? f->class_ : "-");
		lb_buf_puts(b, "</td><td>");
		esc(b, f->summary ? f->summary : "");
		if (f->nevidence) {
			lb_buf_puts(b, "<pre class=\"evidence\">");
			for (size_t e = 0; e < f->nevidence; e++) {
				esc(b, f->evidence[e]);
				lb_buf_puts(b, "\n");
			}
			lb_buf_puts(b, "</pre>");
		}
		lb_buf_puts(b, "</td></tr>\n");
	}
	lb_buf_puts(b, "</tbody></table></div></section>\n");
}

static void html_facts(const lb_report *r, lb_buf *b)
{
	lb_buf_printf(b, "<section id=\"reproducibility\"><h2>Reproducibility</h2>\n"
			 "<p class=\"sub\">From the records of %zu run%s.</p>\n<dl class=\"facts\">\n",
		      r->runs_read, r->runs_read == 1 ? "" : "s");
	for (size_t i = 0; i < r->nsplits; i++) {
		lb_buf_puts(b, "<p class=\"warn split\">");
		esc(b, r->splits[i]);
		lb_buf_puts(b, "</p>\n");
	}
	for (size_t i = 0; i < r->nfacts; i++) {
		const lb_report_fact *f = &r->facts[i];
		lb_buf_puts(b, "<dt>");
		esc(b, f->name);
		lb_buf_puts(b, "</dt><dd>");
		for (size_t v = 0; v < f->nvalues; v++) {
			lb_buf_puts(b, v ? "<br>" : "");
			esc(b, f->values[v]);
			if (f->nvalues > 1)
				lb_buf_printf(b, " <span class=\"flag\">(%zu run%s)</span>", f->runs[v],
					      f->runs[v] == 1 ? "" : "s");
		}
		lb_buf_puts(b, "</dd>\n");
	}
	lb_buf_puts(b, "</dl>\n");
	if (r->packages) {
		lb_buf_puts(b, "<details><summary>environment.txt of the first run</summary><pre>");
		esc(b, r->packages);
		lb_buf_puts(b, "</pre></details>\n");
	}
	lb_buf_puts(b, "</section>\n");
}

static int render_html(const lb_report *r, lb_buf *b)
{
	lb_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		       /* Nothing may load: a report opened from a mail or an archive stays offline. */
		       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		       "style-src 'unsafe-inline'; img-src data:\">\n<title>labbox report: ");
	esc(b, r->title);
	lb_buf_printf(b, "</title>\n<style>\n%s</style></head>\n<body><main>\n<h1>labbox report: ", css);
	esc(b, r->title);
	lb_buf_puts(b, "</h1>\n<p class=\"sub\">");
	if (r->source) {
		lb_buf_puts(b, "experiment <code>");
		esc(b, r->source);
		lb_buf_puts(b, "</code> &middot; ");
	}
	if (r->status) {
		lb_buf_puts(b, "status ");
		esc(b, r->status);
		lb_buf_puts(b, " &middot; ");
	}
	lb_buf_printf(b, "%zu condition%s, %zu metric%s, %zu failure%s</p>\n", r->nconditions,
		      r->nconditions == 1 ? "" : "s", r->nmetrics, r->nmetrics == 1 ? "" : "s",
		      r->nfailures, r->nfailures == 1 ? "" : "s");
	html_table(r, b);
	html_plots(r, b);
	html_failures(r, b);
	html_facts(r, b);
	return lb_buf_puts(b, "</main></body></html>\n");
}

/* ---- Markdown and CSV ------------------------------------------------------------------------ */

static void md_failures(const lb_report *r, lb_buf *b)
{
	if (!r->nfailures)
		return;
	lb_buf_printf(b, "\nFailures (%zu):\n\n", r->nfailures);
	for (size_t i = 0; i < r->nfailures; i++) {
		const lb_report_failure *f = &r->failures[i];
		lb_buf_puts(b, "- ");
		lb_report_md_cell(b, f->condition ? f->condition : "");
		if (f->has_seed)
			lb_buf_printf(b, ", seed %ld", f->seed);
		lb_buf_puts(b, ": ");
		lb_report_md_cell(b, f->status ? f->status : "unknown");
		if (f->then) {
			lb_buf_puts(b, ", retried: the cell is now ");
			lb_report_md_cell(b, f->then);
		}
		if (f->class_) {
			lb_buf_puts(b, " (");
			lb_report_md_cell(b, f->class_);
			lb_buf_puts(b, ")");
		}
		if (f->summary) {
			lb_buf_puts(b, ": ");
			lb_report_md_cell(b, f->summary);
		}
		lb_buf_puts(b, "\n");
	}
}

static int render_md(const lb_report *r, lb_buf *b)
{
	lb_buf_puts(b, "| condition | runs |");
	for (size_t m = 0; m < r->nmetrics; m++) {
		lb_buf_puts(b, " ");
		lb_report_md_cell(b, r->metrics[m]);
		lb_buf_puts(b, " |");
	}
	lb_buf_puts(b, "\n|---|---:|");
	for (size_t m = 0; m < r->nmetrics; m++)
		lb_buf_puts(b, "---:|");
	lb_buf_puts(b, "\n");
	for (size_t c = 0; c < r->nconditions; c++) {
		lb_buf_puts(b, "| ");
		lb_report_md_cell(b, r->conditions[c]);
		lb_buf_printf(b, " | %zu/%zu", r->completed[c], r->cells[c]);
		if (r->retried && r->retried[c])
			lb_buf_printf(b, " (%zu after a retry)", r->retried[c]);
		lb_buf_puts(b, " |");
		for (size_t m = 0; m < r->nmetrics; m++) {
			const lb_report_stat *st = &r->stats[c * r->nmetrics + m];
			lb_report_nums p;
			lb_report_fmt_stat(st, &p);
			if (!st->present)
				lb_buf_puts(b, " - |");
			else if (st->n == 0)
				lb_buf_puts(b, " NaN/Inf |");
			else if (st->has_spread)
				lb_buf_printf(b, " %s ± %s |", p.mean, p.half);
			else
				lb_buf_printf(b, " %s |", p.mean);
			if (st->n && (st->n != r->completed[c] || st->nonfinite)) {
				b->len -= 2;
				if (st->nonfinite)
					lb_buf_printf(b, " (n=%zu, +%zu NaN/Inf) |", st->n, st->nonfinite);
				else
					lb_buf_printf(b, " (n=%zu) |", st->n);
			}
		}
		lb_buf_puts(b, "\n");
	}
	lb_buf_puts(b, "\nMean ± half-width of the 95% interval (Student's t) over the finite values "
		       "of each condition's completed and invalid_metrics runs (n where that count is "
		       "not the completed runs'); runs: completed of planned.\n");
	for (size_t i = 0; i < r->nidentical; i++) {
		lb_buf_puts(b, "\nIdentical results: ");
		lb_report_md_cell(b, r->identical[i]);
		lb_buf_puts(b, "\n");
	}
	md_failures(r, b);
	/* A note's names are the experiment's text, escaped as a cell's are. */
	for (size_t i = 0; i < r->nsplits; i++) {
		lb_buf_puts(b, i ? "\n" : "\nKept apart by recorded settings:\n\n");
		lb_buf_puts(b, "- ");
		lb_report_md_cell(b, r->splits[i]);
	}
	return lb_buf_puts(b, r->nsplits ? "\n" : "");
}

/* The shortest digits that read back as the same double: 0.9, not 0.90000000000000002. */
static void csv_num(lb_buf *b, bool have, double v)
{
	char t[40];

	if (!have) {
		lb_buf_puts(b, ",");
		return;
	}
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(t, sizeof t, "%.*g", prec, v);
		if (strtod(t, NULL) == v)
			break;
	}
	lb_buf_printf(b, ",%s", t);
}

/* The other conditions of c's group of identical results, "; "-joined, one field. */
static void csv_identical(const lb_report *r, size_t c, lb_buf *b)
{
	size_t g = r->identical_group ? r->identical_group[c] : 0;
	lb_buf t = {0};
	for (size_t o = 0; g && o < r->nconditions; o++)
		if (o != c && r->identical_group[o] == g)
			lb_buf_printf(&t, "%s%s", t.len ? "; " : "", r->conditions[o]);
	if (t.len)
		lb_report_csv_field(b, t.data, true);
	lb_buf_free(&t);
}

static int render_csv(const lb_report *r, lb_buf *b)
{
	lb_buf_puts(b, "condition,metric,n,mean,std,ci_low,ci_high,min,max,nonfinite,runs,"
		       "completed,completed_after_retry,identical_to\r\n");
	for (size_t c = 0; c < r->nconditions; c++)
		for (size_t m = 0; m < r->nmetrics; m++) {
			const lb_report_stat *st = &r->stats[c * r->nmetrics + m];
			if (!st->present)
				continue;
			lb_report_csv_field(b, r->conditions[c], true);
			lb_buf_puts(b, ",");
			lb_report_csv_field(b, r->metrics[m], true);
			lb_buf_printf(b, ",%zu", st->n);
			csv_num(b, st->n > 0, st->mean);
			csv_num(b, st->has_spread, st->std);
			csv_num(b, st->has_spread, st->ci_low);
			csv_num(b, st->has_spread, st->ci_high);
			if (st->n > 0 && st->min_int[0])
				lb_buf_printf(b, ",%s", st->min_int);
			else
				csv_num(b, st->n > 0, st->min);
			if (st->n > 0 && st->max_int[0])
				lb_buf_printf(b, ",%s", st->max_int);
			else
				csv_num(b, st->n > 0, st->max);
			lb_buf_printf(b, ",%zu,%zu,%zu,%zu,", st->nonfinite, r->cells[c], r->completed[c],
				      r->retried ? r->retried[c] : 0);
			csv_identical(r, c, b);
			lb_buf_puts(b, "\r\n");
		}
	return b->data ? 0 : -ENOMEM;
}

int lb_report_render(const lb_report *r, lb_report_format f, lb_buf *out)
{
	int rc;
	switch (f) {
	case LB_REPORT_HTML: rc = render_html(r, out); break;
	case LB_REPORT_MD: rc = render_md(r, out); break;
	case LB_REPORT_CSV: rc = render_csv(r, out); break;
	default: return -EINVAL;
	}
	/* The appends above are unchecked one by one; a buffer that failed once is short. */
	return rc < 0 || !out->data ? -ENOMEM : 0;
}
