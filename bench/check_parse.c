/* bench/check's parse floor: tree-sitter-python on every file bench/check gives labbox, and
 * nothing else, in one thread. labbox check cannot be faster than the parse it starts from, so
 * this line says how far the cold goal is from the parser and how far from the analysis.
 * Built by `make bench-check` as build/bench/check_parse; bench/check runs it when it is there.
 *
 *   check_parse LISTFILE     (one path a line) -> prints "FILES BYTES PARSE_SECONDS" */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <tree_sitter/api.h>

#include "labbox/util.h"

const TSLanguage *tree_sitter_python(void);

int main(int argc, char **argv)
{
	char line[4096];
	size_t files = 0, bytes = 0;
	double secs = 0;
	FILE *list;
	TSParser *p;

	if (argc != 2) {
		fprintf(stderr, "usage: check_parse LISTFILE\n");
		return 2;
	}
	if (!(list = fopen(argv[1], "r"))) {
		fprintf(stderr, "check_parse: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	p = ts_parser_new();
	if (!p || !ts_parser_set_language(p, tree_sitter_python())) {
		fprintf(stderr, "check_parse: cannot set up the parser\n");
		return 2;
	}
	while (fgets(line, sizeof(line), list)) {
		struct timespec a, b;
		size_t len = 0;
		char *src = NULL;
		TSTree *t;

		line[strcspn(line, "\n")] = '\0';
		if (!*line)
			continue;
		/* Reading is not timed: labbox's read is in its own line, not the parser's. */
		int r = lb_read_file_at(AT_FDCWD, line, (size_t)1 << 26, &src, &len);
		if (r < 0) {
			fprintf(stderr, "check_parse: cannot read %s: %s\n", line, strerror(-r));
			return 2;
		}
		clock_gettime(CLOCK_MONOTONIC, &a);
		t = ts_parser_parse_string(p, NULL, src, (uint32_t)len);
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (!t) {
			fprintf(stderr, "check_parse: no tree for %s\n", line);
			return 2;
		}
		ts_tree_delete(t);
		secs += (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
		files++;
		bytes += len;
		free(src);
	}
	fclose(list);
	ts_parser_delete(p);
	printf("%zu %zu %.6f\n", files, bytes, secs);
	return 0;
}
