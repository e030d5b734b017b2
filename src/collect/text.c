#include "text.h"
#include "labbox/util.h"

#include <string.h>

#define REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */
#define ELLIPSIS "\xe2\x80\xa6"    /* U+2026 */

size_t lb_text_utf8(char *dst, size_t dstsize, const char *src, size_t len)
{
	const unsigned char *s = (const unsigned char *)src;
	/* Room kept for the ellipsis and the NUL, so a cut is always visible. */
	size_t limit = dstsize - sizeof(ELLIPSIS);
	size_t o = 0;

	for (size_t i = 0; i < len;) {
		size_t n = lb_utf8_seq_len(s + i, len - i);
		const char *piece = (const char *)s + i;
		size_t plen = n;

		if (n == 0 || (n == 1 && (s[i] < 0x20 && s[i] != '\t')) || s[i] == 0x7f) {
			piece = REPLACEMENT;
			plen = sizeof(REPLACEMENT) - 1;
			n = 1;
		}
		if (o + plen > limit) {
			memcpy(dst + o, ELLIPSIS, sizeof(ELLIPSIS) - 1);
			o += sizeof(ELLIPSIS) - 1;
			break;
		}
		memcpy(dst + o, piece, plen);
		o += plen;
		i += n;
	}
	dst[o] = '\0';
	return o;
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

bool lb_text_is_exception_name(const char *s, size_t len)
{
	static const char *const suffixes[] = { "Error", "Exception", "Interrupt", "Exit",
						"Warning", "Iteration", "Failure", "Group" };
	/* The socket module's lower-case classes are the usual exception to the convention. */
	static const char *const lower[] = { "gaierror", "herror", "timeout", "error" };
	const char *last = s;
	size_t n;

	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (c == '.') {
			if (i == 0 || s[i - 1] == '.' || i + 1 == len)
				return false;
			last = s + i + 1;
		} else if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9' && i > 0))) {
			return false;
		}
	}
	n = (size_t)(s + len - last);
	for (size_t i = 0; i < sizeof(lower) / sizeof(lower[0]); i++)
		if (last != s && n == strlen(lower[i]) && memcmp(last, lower[i], n) == 0)
			return true;
	/* Private classes such as numpy's _ArrayMemoryError start with an underscore. */
	while (n > 0 && *last == '_') {
		last++;
		n--;
	}
	if (n == 0 || !(*last >= 'A' && *last <= 'Z'))
		return false;
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
		if (ends_with(last, n, suffixes[i]))
			return true;
	return false;
}
