/* run.log with a size cap that keeps both ends: the head as written, the tail in a ring. */
#include "labbox/record.h"
#include "labbox/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct lb_runlog {
	int fd;
	uint64_t cap;
	uint64_t head_cap; /* bytes written straight through */
	uint64_t seen;
	uint64_t written;
	char *ring; /* newest bytes once past the head */
	size_t ring_cap;
	size_t ring_pos;
	uint64_t ring_fill;
	/* always the newest bytes, for diagnosis: a timeout's reads the stacks the main
	 * program printed as it ended (a hundred frames, or a hundred threads) and what it
	 * said before them */
	char recent[LB_RUNLOG_RECENT];
	size_t recent_pos;
	size_t recent_fill;
	int err; /* the first failed write, fsync or close: run.log is not whole */
	char *held[2]; /* each stream's unfinished line, not yet written */
	size_t held_len[2];
	double held_since[2]; /* monotonic: when its first byte was held */
	int open; /* the stream whose unfinished line ends run.log now; -1: at a line start */
};

int lb_runlog_open(const char *path, uint64_t cap, lb_runlog **out)
{
	lb_runlog *l = calloc(1, sizeof *l);
	if (!l)
		return -ENOMEM;
	l->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (l->fd < 0) {
		int e = -errno;
		free(l);
		return e;
	}
	l->cap = cap;
	l->open = -1;
	l->head_cap = cap / 2;
	l->ring_cap = (size_t)(cap - l->head_cap);
	*out = l;
	return 0;
}

static void put(lb_runlog *l, const char *data, size_t len)
{
	int r = lb_write_all(l->fd, data, len);
	if (r == 0)
		l->written += len;
	else if (!l->err)
		l->err = r;
}

static void remember(lb_runlog *l, const char *data, size_t len)
{
	if (len >= sizeof l->recent) {
		data += len - sizeof l->recent;
		len = sizeof l->recent;
	}
	for (size_t i = 0; i < len; i++) {
		l->recent[l->recent_pos] = data[i];
		l->recent_pos = (l->recent_pos + 1) % sizeof l->recent;
	}
	l->recent_fill = l->recent_fill + len > sizeof l->recent ? sizeof l->recent
								 : l->recent_fill + len;
}

void lb_runlog_write(lb_runlog *l, const char *data, size_t len)
{
	l->seen += len;
	remember(l, data, len);
	if (l->written < l->head_cap) {
		size_t take = l->head_cap - l->written < len ? (size_t)(l->head_cap - l->written) : len;
		put(l, data, take);
		data += take;
		len -= take;
	}
	if (!len || !l->ring_cap)
		return;
	if (!l->ring) {
		l->ring = malloc(l->ring_cap);
		if (!l->ring)
			return;
	}
	if (len > l->ring_cap) {
		data += len - l->ring_cap;
		len = l->ring_cap;
	}
	size_t first = l->ring_cap - l->ring_pos < len ? l->ring_cap - l->ring_pos : len;
	memcpy(l->ring + l->ring_pos, data, first);
	memcpy(l->ring, data + first, len - first);
	l->ring_pos = (l->ring_pos + len) % l->ring_cap;
	l->ring_fill += len;
}

/* Ends the other stream's unfinished line before a line of this one: its rest comes later. */
static void take_line(lb_runlog *l, int stream)
{
	if (l->open >= 0 && l->open != stream)
		lb_runlog_write(l, LB_RUNLOG_BREAK, sizeof LB_RUNLOG_BREAK - 1);
	l->open = stream;
}

static void hold(lb_runlog *l, int s, const char *data, size_t len)
{
	if (l->held_len[s] + len > LB_RUNLOG_HOLD || !l->held[s]) {
		if (!l->held[s])
			l->held[s] = malloc(LB_RUNLOG_HOLD);
		if (!l->held[s] || l->held_len[s] + len > LB_RUNLOG_HOLD) {
			/* Too long to hold (a progress bar's carriage returns): out as it is. */
			take_line(l, s);
			if (l->held_len[s])
				lb_runlog_write(l, l->held[s], l->held_len[s]);
			l->held_len[s] = 0;
			lb_runlog_write(l, data, len);
			return;
		}
	}
	if (!l->held_len[s])
		l->held_since[s] = lb_time_monotonic();
	memcpy(l->held[s] + l->held_len[s], data, len);
	l->held_len[s] += len;
}

void lb_runlog_write_stream(lb_runlog *l, int stream, const char *data, size_t len)
{
	int s = stream ? 1 : 0;
	const char *nl = len ? memrchr(data, '\n', len) : NULL;
	if (!nl) {
		if (l->open == s)
			lb_runlog_write(l, data, len); /* its line is already under way in run.log */
		else
			hold(l, s, data, len);
		return;
	}
	size_t whole = (size_t)(nl - data) + 1;
	int o = 1 - s;
	if (l->held_len[o] && lb_time_monotonic() - l->held_since[o] >= LB_RUNLOG_HOLD_S) {
		/* Not a line being written in two parts but one the program left unfinished (a
		 * prompt, a progress line): it stands before what came after it, alone. */
		take_line(l, o);
		lb_runlog_write(l, l->held[o], l->held_len[o]);
		lb_runlog_write(l, "\n", 1);
		l->held_len[o] = 0;
		l->open = -1;
	}
	take_line(l, s);
	if (l->held_len[s])
		lb_runlog_write(l, l->held[s], l->held_len[s]);
	l->held_len[s] = 0;
	lb_runlog_write(l, data, whole);
	l->open = -1;
	/* The other stream's line held meanwhile has a line start to go to now only when it
	 * completes: it stays held. */
	if (whole < len)
		hold(l, s, data + whole, len - whole);
}

void lb_runlog_end_streams(lb_runlog *l)
{
	for (int s = 0; s < 2; s++) {
		if (!l->held_len[s])
			continue;
		if (l->open >= 0 && l->open != s)
			lb_runlog_write(l, "\n", 1);
		lb_runlog_write(l, l->held[s], l->held_len[s]);
		l->held_len[s] = 0;
		l->open = s;
	}
}

static int runlog_close(lb_runlog *l, uint64_t *seen, uint64_t *written, bool *truncated, bool sync)
{
	lb_runlog_end_streams(l);
	bool cut = l->seen > l->cap;
	if (l->ring && l->ring_fill) {
		size_t fill = l->ring_fill > l->ring_cap ? l->ring_cap : (size_t)l->ring_fill;
		if (cut) {
			char note[160];
			int n = snprintf(note, sizeof note,
					 "\n[labbox: output cut: %llu bytes omitted here; run.log keeps "
					 "the first and the last %llu bytes]\n",
					 (unsigned long long)(l->seen - l->head_cap - fill),
					 (unsigned long long)l->ring_cap);
			put(l, note, (size_t)n);
		}
		size_t start = fill < l->ring_cap ? 0 : l->ring_pos;
		size_t first = l->ring_cap - start < fill ? l->ring_cap - start : fill;
		put(l, l->ring + start, first);
		put(l, l->ring, fill - first);
	}
	if (seen)
		*seen = l->seen;
	if (written)
		*written = l->written;
	if (truncated)
		*truncated = cut;
	if (sync && fsync(l->fd) < 0 && !l->err && errno != EINVAL)
		l->err = -errno;
	if (close(l->fd) < 0 && !l->err)
		l->err = -errno;
	int err = l->err;
	free(l->held[0]);
	free(l->held[1]);
	free(l->ring);
	free(l);
	return err;
}

int lb_runlog_close(lb_runlog *l, uint64_t *seen, uint64_t *written, bool *truncated)
{
	return runlog_close(l, seen, written, truncated, true);
}

int lb_runlog_close_nosync(lb_runlog *l, uint64_t *seen, uint64_t *written, bool *truncated)
{
	return runlog_close(l, seen, written, truncated, false);
}

char *lb_runlog_tail(const lb_runlog *l, size_t max)
{
	size_t n = l->recent_fill < max ? l->recent_fill : max;
	char *out = malloc(n + 1);
	if (!out)
		return NULL;
	size_t start = (l->recent_pos + sizeof l->recent - n) % sizeof l->recent;
	for (size_t i = 0; i < n; i++)
		out[i] = l->recent[(start + i) % sizeof l->recent];
	out[n] = '\0';
	return out;
}

char *lb_runlog_tail_n(const lb_runlog *l, size_t max, size_t *len)
{
	char *out = lb_runlog_tail(l, max);

	*len = out ? (l->recent_fill < max ? l->recent_fill : max) : 0;
	return out;
}
