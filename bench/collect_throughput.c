/* Driver for bench/collect: metric-parsing throughput of the collect module, and the cost of
 * the pip freeze listing with and without its cache. Built by `make bench` into
 * build/bench/collect_throughput.
 *
 *   collect_throughput [--size BYTES] [--chunk BYTES] [--file PATH] [--json]
 *       feeds BYTES (default 1 GiB) of generated training-log output to the streaming
 *       collector in chunks as the sandbox's pipe delivers them (64 KiB), or the file PATH
 *       read in such chunks; reports MB/s (10^6 bytes) and the resident memory before,
 *       after 1/16 of the input and at the end, which must not grow with the input.
 *   collect_throughput freeze PYTHON CACHE_DIR [ROUNDS] [--json]
 *       times lb_python_freeze against lb_python_freeze_cached (one miss, then hits). */
#include "labbox/collect.h"
#include "labbox/diagnose.h"
#include "labbox/env.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define BLOCK_BYTES ((size_t)8 << 20)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Current resident set in KiB (not the peak: the peak includes the generated block). */
static long rss_kib(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = -1;
	fclose(f);
	return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static long max_rss_kib(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

/* xorshift: reproducible values without libc's global rand() state. */
static unsigned long next_rand(unsigned long *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A block of what training scripts print: mostly progress and log noise, about a quarter
 * metric lines of every form, names from a bounded set as real runs have. */
static char *make_block(size_t *len)
{
	static const char *const names[] = { "loss", "acc", "train/loss", "val/acc", "lr",
					     "grad_norm", "f1", "auc" };
	char *b = malloc(BLOCK_BYTES + 4096);
	unsigned long seed = 88172645463325252UL;
	size_t o = 0;
	long step = 0;

	if (!b)
		return NULL;
	while (o < BLOCK_BYTES) {
		unsigned long r = next_rand(&seed);
		const char *nm = names[r % 8];
		double v = (double)(next_rand(&seed) % 1000000) / 1e6;
		int n;

		switch (r % 16) {
		case 0:
			n = sprintf(b + o, "condition: lr=%g\n", (double)(r % 5) / 10);
			break;
		case 1:
		case 2:
			n = sprintf(b + o, "%s: %.6f\n", nm, v);
			break;
		case 3:
			n = sprintf(b + o, "condition=c%lu seed=%lu %s: %.4g\n", r % 4, (r >> 8) % 3,
				    nm, v);
			break;
		case 4:
			n = sprintf(b + o, "SUMMARY condition=c%lu metric=%s mean=%.5f std=%.5f n=5\n",
				    r % 4, nm, v, v / 10);
			break;
		case 5:
			n = sprintf(b + o, "%s: %.3e\n", nm, v * 1e-3);
			break;
		case 6:
		case 7:
		case 8:
			n = sprintf(b + o,
				    " %2lu%%|##########          | %ld/10000 [00:%02lu<01:%02lu, "
				    "%.2fit/s]\n",
				    r % 100, step, r % 60, (r >> 6) % 60, 30 + v * 10);
			break;
		case 9:
		case 10:
			n = sprintf(b + o,
				    "Epoch %lu/100 | step %ld | loss %.4f | lr %.2e | %.1f samples/s\n",
				    r % 100, step, v, v * 1e-3, 1000 * v);
			break;
		case 11:
			n = sprintf(b + o,
				    "/usr/lib/python3/dist-packages/torch/nn/modules/module.py:1501: "
				    "UserWarning: The given NumPy array is not writable\n");
			break;
		case 12:
			n = sprintf(b + o, "INFO 2026-11-29 22:19:%02lu trainer.py:212] global_step=%ld "
					   "epoch=%lu\n",
				    r % 60, step, r % 100);
			break;
		default:
			n = sprintf(b + o, "batch %ld done in %.3f s\n", step, v);
			break;
		}
		o += (size_t)n;
		step++;
	}
	*len = o;
	return b;
}

static int throughput(size_t size, size_t chunk, const char *file, bool json)
{
	lb_metrics *m = NULL;
	size_t block_len = 0, fed = 0, metrics;
	long rss_before, rss_early = -1, rss_end;
	double t0, t1;
	char *block = NULL;

	if (!file) {
		block = make_block(&block_len);
		if (!block)
			return 1;
	}
	if (lb_metrics_new(&m) < 0)
		return 1;
	rss_before = rss_kib();
	t0 = now();
	if (file) {
		char *buf = malloc(chunk);
		int fd = open(file, O_RDONLY | O_CLOEXEC);
		ssize_t r;

		if (!buf || fd < 0) {
			fprintf(stderr, "collect_throughput: %s: %s\n", file, strerror(errno));
			return 1;
		}
		while ((r = read(fd, buf, chunk)) > 0) {
			lb_metrics_feed_at(m, buf, (size_t)r, now() - t0);
			fed += (size_t)r;
		}
		close(fd);
		free(buf);
	} else {
		size_t off = 0;

		while (fed < size) {
			size_t n = chunk;

			if (n > block_len - off)
				n = block_len - off;
			if (n > size - fed)
				n = size - fed;
			/* The time argument costs a clock read per chunk, as run.c would pay. */
			lb_metrics_feed_at(m, block + off, n, now() - t0);
			fed += n;
			off += n;
			if (off == block_len)
				off = 0;
			if (rss_early < 0 && fed >= size / 16)
				rss_early = rss_kib();
		}
	}
	lb_metrics_finish(m);
	t1 = now();
	rss_end = rss_kib();
	metrics = lb_metrics_count(m);
	if (json)
		printf("{\"bytes\": %zu, \"seconds\": %.4f, \"mb_per_s\": %.1f, \"chunk\": %zu, "
		       "\"metrics\": %zu, \"rss_kib_before\": %ld, \"rss_kib_after_1_16\": %ld, "
		       "\"rss_kib_end\": %ld, \"max_rss_kib\": %ld, \"source\": \"%s\"}\n",
		       fed, t1 - t0, (double)fed / (t1 - t0) / 1e6, chunk, metrics, rss_before,
		       rss_early, rss_end, max_rss_kib(), file ? "file" : "generated");
	else
		printf("parsed %zu bytes in %.3f s: %.1f MB/s (chunks of %zu, %zu distinct "
		       "metrics)\nresident KiB: %ld before, %ld after 1/16, %ld at the end; max RSS "
		       "%ld KiB (includes the %zu MiB generated block)\n",
		       fed, t1 - t0, (double)fed / (t1 - t0) / 1e6, chunk, metrics, rss_before,
		       rss_early, rss_end, max_rss_kib(), block_len >> 20);
	lb_metrics_free(m);
	free(block);
	return 0;
}

static int freeze_bench(const char *python, const char *cache, int rounds, bool json)
{
	double plain = 1e9, miss, hit = 1e9, t;
	char *out = NULL;
	bool h = false;

	for (int i = 0; i < rounds; i++) {
		t = now();
		if (lb_python_freeze(python, &out) < 0) {
			fprintf(stderr, "collect_throughput: cannot list %s\n", python);
			return 1;
		}
		t = now() - t;
		plain = t < plain ? t : plain;
		free(out);
	}
	/* The first cached call after clearing the entry is the miss. */
	{
		char cmd[4096];

		snprintf(cmd, sizeof(cmd), "rm -f '%s'/freeze-*.json", cache);
		if (system(cmd) != 0)
			return 1;
	}
	t = now();
	if (lb_python_freeze_cached(python, cache, &out, &h) < 0 || h)
		return 1;
	miss = now() - t;
	free(out);
	for (int i = 0; i < rounds; i++) {
		t = now();
		if (lb_python_freeze_cached(python, cache, &out, &h) < 0 || !h) {
			fprintf(stderr, "collect_throughput: the cache did not answer (is %s owned by "
					"this user and closed to others?)\n",
				cache);
			return 1;
		}
		t = now() - t;
		hit = t < hit ? t : hit;
		free(out);
	}
	if (json)
		printf("{\"python\": \"%s\", \"freeze_s\": %.5f, \"cached_miss_s\": %.5f, "
		       "\"cached_hit_s\": %.6f}\n",
		       python, plain, miss, hit);
	else
		printf("pip freeze of %s: %.1f ms uncached, %.1f ms on a cache miss, %.3f ms on a "
		       "hit (best of %d)\n",
		       python, plain * 1e3, miss * 1e3, hit * 1e3, rounds);
	return 0;
}

int main(int argc, char **argv)
{
	size_t size = (size_t)1 << 30, chunk = 64 * 1024;
	const char *file = NULL;
	bool json = false;

	if (argc >= 4 && strcmp(argv[1], "freeze") == 0) {
		int rounds = argc >= 5 && argv[4][0] != '-' ? atoi(argv[4]) : 5;

		for (int i = 1; i < argc; i++)
			json |= strcmp(argv[i], "--json") == 0;
		return freeze_bench(argv[2], argv[3], rounds > 0 ? rounds : 5, json);
	}
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
			size = strtoull(argv[++i], NULL, 10);
		} else if (strcmp(argv[i], "--chunk") == 0 && i + 1 < argc) {
			chunk = strtoull(argv[++i], NULL, 10);
		} else if (strcmp(argv[i], "--file") == 0 && i + 1 < argc) {
			file = argv[++i];
		} else {
			fprintf(stderr, "usage: %s [--size BYTES] [--chunk BYTES] [--file PATH] "
					"[--json]\n       %s freeze PYTHON CACHE_DIR [ROUNDS] [--json]\n",
				argv[0], argv[0]);
			return 2;
		}
	}
	if (chunk == 0 || size == 0)
		return 2;
	return throughput(size, chunk, file, json);
}
