/* Internal to collect and diagnose: text from untrusted output made safe to put into the JSON
 * documents labbox writes, and recognition of Python exception lines. Not a public header:
 * these belong in util if a third module needs them. */
#ifndef LABBOX_COLLECT_TEXT_H
#define LABBOX_COLLECT_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* Copy len bytes of src into dst (dstsize >= 4) as valid UTF-8 and NUL-terminate it: invalid
 * sequences, NUL and other control characters except tab become U+FFFD; text that does not
 * fit is cut on a character boundary and ends with U+2026. Returns the length written. */
size_t lb_text_utf8(char *dst, size_t dstsize, const char *src, size_t len);

/* Whether s (a dotted name such as "torch.cuda.OutOfMemoryError") names a Python exception
 * class by the conventions CPython and common libraries follow. */
bool lb_text_is_exception_name(const char *s, size_t len);

/* Whether c is a space or a tab. */
static inline bool lb_text_blank(char c)
{
	return c == ' ' || c == '\t';
}

#endif
