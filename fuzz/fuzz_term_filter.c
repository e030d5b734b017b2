/* libFuzzer target: the terminal filter never crashes or reads out of bounds, whatever the
 * bytes and however they are cut into writes, and what it lets through holds no control byte
 * but \n \r \t \b and the ESC of an allowed CSI sequence, and no C1 control; the cursor never
 * goes above the first line and ends below the lowest line reached, and the last colour
 * sequence, if any, is a reset. */
#include "labbox/util.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The first byte picks the size of the writes the output arrives in. */
	size_t chunk = size ? (size_t)data[0] % 17 + 1 : 1;
	lb_term_filter_state st = {0};
	lb_buf b = {0};
	for (size_t i = 1; i < size; i += chunk) {
		size_t n = size - i < chunk ? size - i : chunk;
		if (lb_term_filter(&st, (const char *)data + i, n, false, &b) < 0)
			abort();
	}
	if (lb_term_filter(&st, NULL, 0, true, &b) < 0 || st.held)
		abort();
	const unsigned char *u = (const unsigned char *)b.data;
	long row = 0, lowest = 0;
	bool sgr_on = false;
	for (size_t i = 0; i < b.len; i++) {
		if (u[i] == 0x1b) {
			if (i + 1 >= b.len || u[i + 1] != '[')
				abort();
			size_t j = i + 2;
			long n = 0;
			bool digits = false, reset = true, first = true;
			while (j < b.len && u[j] >= 0x20 && u[j] <= 0x3f) {
				if (u[j] != '0')
					reset = false;
				if (!(u[j] >= '0' && u[j] <= '9') && u[j] != ';' && u[j] != ':')
					abort(); /* only numbers and separators pass */
				if (u[j] == ';' || u[j] == ':')
					first = false;
				if (first && u[j] >= '0' && u[j] <= '9' && n < 1000000)
					n = n * 10 + (u[j] - '0'), digits = true;
				j++;
			}
			if (j >= b.len || !memchr("mKABCDG", u[j], 7))
				abort();
			if (!digits || n == 0)
				n = 1;
			if (u[j] == 'A' && (row -= n) < 0)
				abort();
			if (u[j] == 'B' && (row += n) > lowest)
				abort(); /* never below the lowest line written */
			if (u[j] == 'm')
				sgr_on = !reset;
		} else if (u[i] == '\n') {
			if (++row > lowest)
				lowest = row;
		} else if ((u[i] < 0x20 && !memchr("\n\r\t\b", u[i], 4)) || u[i] == 0x7f ||
			   (u[i] == 0xc2 && i + 1 < b.len && u[i + 1] >= 0x80 && u[i + 1] < 0xa0)) {
			abort();
		}
	}
	if (row < lowest || sgr_on)
		abort();
	lb_buf_free(&b);
	return 0;
}
