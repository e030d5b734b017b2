/* What an experiment prints, made safe for the user's terminal (lb_term_filter in util.h).
 *
 * A terminal obeys the bytes it is sent: OSC 52 writes the clipboard, OSC 0 the title, DCS
 * and the status reports of some terminals answer into the terminal's own input, and a
 * hyperlink or a cursor jump can dress the experiment's text up as labbox's. The payload
 * never holds the terminal, but its output is echoed there, so the echo passes only what a
 * progress bar needs: text, \n \r \t \b, and the CSI sequences of colour (m), line erasure
 * (K) and cursor moves within the lines around it (A B C D G). Every other control byte is
 * shown, not obeyed, as \xNN: the sequence it started is then plain text; the bidirectional
 * controls and U+2028/U+2029 as \uXXXX.
 * What passes must not reach labbox's own lines either. A move up goes no higher than the
 * echo's own first line, so the check's verdict and labbox's notes above it stay as written;
 * a move down goes no lower than the lowest line the echo wrote, since a move down past it
 * would earn a move up no line paid for. When the echo ends, any colour or attribute it left
 * on (conceal, black on black) is reset and the cursor is put back below the lowest line the
 * output reached, so the summary that follows is written below it, readable. */
#include "labbox/util.h"

#include <errno.h>
#include <string.h>

/* A CSI sequence longer than this is not one a progress bar writes. */
#define TERM_CSI_MAX 32

static bool csi_allowed(unsigned char final)
{
	return final && strchr("mKABCDG", final) != NULL;
}

static int show_byte(lb_buf *out, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";
	char s[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
	return lb_buf_append(out, s, sizeof s);
}

/* The first parameter of a CSI sequence (s[0] ESC, s[1] '[', s[k - 1] the final byte), dflt
 * when there is none; at most 9999, as no terminal has more lines. */
static unsigned csi_first_param(const unsigned char *s, size_t k, unsigned dflt)
{
	unsigned v = 0;
	bool any = false;
	for (size_t i = 2; i + 1 < k && s[i] >= '0' && s[i] <= '9'; i++) {
		any = true;
		v = v * 10 + (unsigned)(s[i] - '0');
		if (v > 9999)
			v = 9999;
	}
	return any ? v : dflt;
}

/* Whether an SGR sequence only resets (ESC[m, ESC[0m, ESC[00m). */
static bool sgr_is_reset(const unsigned char *s, size_t k)
{
	for (size_t i = 2; i + 1 < k; i++)
		if (s[i] != '0')
			return false;
	return true;
}

/* An allowed CSI sequence of k bytes passed on, with the echo's bookkeeping. A vertical move
 * is written again with the count the filter counted (a terminal reads 0 as 1, ignores what
 * follows a ';', and stops at its edge): a move up is cut to the lines the echo itself wrote
 * above the cursor, and dropped when there are none. */
static int csi_pass(lb_term_filter_state *st, const unsigned char *s, size_t k, lb_buf *out)
{
	unsigned char final = s[k - 1];
	if (final == 'm') {
		st->sgr = !sgr_is_reset(s, k);
	} else if (final == 'A' || final == 'B') {
		unsigned n = csi_first_param(s, k, 1);
		if (n == 0)
			n = 1;
		if (final == 'A') {
			if (n > st->row)
				n = st->row;
			if (n == 0)
				return 0;
			st->row -= n;
		} else {
			/* Down only over lines the echo wrote: a terminal stops a move down at its last
			 * row, so a count past them earned credit for a move up that no line paid
			 * for (ESC[9999B, then ESC[9999A to the top of the screen). */
			if (n > st->rows - st->row)
				n = st->rows - st->row;
			if (n == 0)
				return 0;
			st->row += n;
		}
		return lb_buf_printf(out, "\x1b[%u%c", n, final);
	}
	return lb_buf_append(out, s, k);
}

/* The bidirectional controls, which show the rest of a line reversed or moved (a line that
 * reads as another, Trojan Source), and the line and paragraph separators, which some
 * viewers break a line at: shown as \uXXXX. Not every invisible character of
 * lb_unicode_format_char: zero-width joiners and variation selectors are parts of the emoji
 * a progress bar draws, and move nothing. */
static bool reorders(unsigned cp)
{
	return cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x2028 && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

/* The length of the UTF-8 sequence a lead byte starts, 0 for a byte that starts none. */
static size_t utf8_want(unsigned char c)
{
	return c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
}

/* How many bytes at s (n of them, s[0] == ESC) form a whole allowed CSI sequence: that
 * count; 0 when it is not one; (size_t)-1 when it may still become one with more bytes. */
static size_t csi_len(const unsigned char *s, size_t n)
{
	if (n < 2)
		return (size_t)-1;
	if (s[1] != '[')
		return 0;
	size_t i = 2;
	while (i < n && i < TERM_CSI_MAX && s[i] >= 0x30 && s[i] <= 0x3f)
		i++;
	while (i < n && i < TERM_CSI_MAX && s[i] >= 0x20 && s[i] <= 0x2f)
		i++;
	if (i >= TERM_CSI_MAX)
		return 0;
	if (i == n)
		return (size_t)-1;
	if (!(s[i] >= 0x40 && s[i] <= 0x7e && csi_allowed(s[i])))
		return 0;
	/* Numbers and separators only (colons in colours): a private marker or an intermediate
	 * byte makes it another sequence, which some terminal may obey otherwise. */
	for (size_t j = 2; j < i; j++)
		if (!((s[j] >= '0' && s[j] <= '9') || s[j] == ';' || (s[j] == ':' && s[i] == 'm')))
			return 0;
	return i + 1;
}

/* One step at s: how many bytes were consumed (appended to out as they are or shown), 0
 * when s is the incomplete start of something and more bytes are needed, -1 on ENOMEM. */
static ssize_t step(lb_term_filter_state *st, const unsigned char *s, size_t n, bool final,
		    lb_buf *out)
{
	unsigned char c = s[0];
	if (c == 0x1b) {
		size_t k = csi_len(s, n);
		if (k == (size_t)-1 && !final)
			return 0;
		if (k && k != (size_t)-1)
			return csi_pass(st, s, k, out) < 0 ? -1 : (ssize_t)k;
		return show_byte(out, c) < 0 ? -1 : 1;
	}
	if (c < 0x80) {
		bool ok = c >= 0x20 ? c != 0x7f : c == '\n' || c == '\r' || c == '\t' || c == '\b';
		if (c == '\n' && ++st->row > st->rows)
			st->rows = st->row;
		if (ok)
			return lb_buf_append(out, s, 1) < 0 ? -1 : 1;
		return show_byte(out, c) < 0 ? -1 : 1;
	}
	size_t want = utf8_want(c);
	size_t k = lb_utf8_seq_len(s, n);
	if (!k && want && n < want && !final) {
		bool prefix = true;
		for (size_t i = 1; i < n; i++)
			prefix &= (s[i] & 0xc0) == 0x80;
		if (prefix)
			return 0;
	}
	/* C1 controls (U+0080..U+009F) are CSI, OSC and DCS in one character to some terminals. */
	if (k && !(k == 2 && c == 0xc2 && s[1] < 0xa0)) {
		unsigned cp = lb_utf8_code_point(s, k);
		if (reorders(cp))
			return lb_buf_printf(out, "\\u%04x", cp) < 0 ? -1 : (ssize_t)k;
		return lb_buf_append(out, s, k) < 0 ? -1 : (ssize_t)k;
	}
	return show_byte(out, c) < 0 ? -1 : 1;
}

int lb_term_filter(lb_term_filter_state *st, const char *data, size_t len, bool final,
		   lb_buf *out)
{
	/* The held-back start of the last call's incomplete sequence goes first. */
	while (len || (final && st->held)) {
		unsigned char tmp[sizeof st->hold];
		size_t n = st->held, take = 0;
		memcpy(tmp, st->hold, n);
		if (n) {
			take = len < sizeof tmp - n ? len : sizeof tmp - n;
			if (take)
				memcpy(tmp + n, data, take);
			n += take;
			ssize_t k = step(st, tmp, n, final && take == len, out);
			if (k < 0)
				return -ENOMEM;
			if (k == 0) {
				/* still incomplete: everything given is held (len fit in tmp) */
				memcpy(st->hold, tmp, n);
				st->held = n;
				return 0;
			}
			/* k bytes of tmp used: the rest of the hold is re-read from data */
			size_t from_data = (size_t)k > st->held ? (size_t)k - st->held : 0;
			if ((size_t)k < st->held) {
				memmove(st->hold, st->hold + k, st->held - (size_t)k);
				st->held -= (size_t)k;
			} else {
				st->held = 0;
			}
			data += from_data;
			len -= from_data;
			continue;
		}
		ssize_t k = step(st, (const unsigned char *)data, len, final, out);
		if (k < 0)
			return -ENOMEM;
		if (k == 0) {
			/* len < sizeof hold: an incomplete sequence is shorter than TERM_CSI_MAX */
			memcpy(st->hold, data, len);
			st->held = len;
			return 0;
		}
		data += k;
		len -= (size_t)k;
	}
	if (final) {
		if (st->sgr && lb_buf_append(out, "\x1b[0m", 4) < 0)
			return -ENOMEM;
		if (st->row < st->rows && lb_buf_printf(out, "\x1b[%uB", st->rows - st->row) < 0)
			return -ENOMEM;
		st->sgr = false;
		st->row = st->rows;
	}
	return 0;
}
