/* Diagnosis warnings: what a run's output, metrics and files show that a researcher wants to
 * know even when the run completed (docs/decisions.md, "Diagnosis warnings"). */
#include "labbox/collect.h"
#include "labbox/diagnose.h"
#include "internal.h"
#include "labbox/util.h"
#include "../collect/text.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* The end of run.log read for warnings: a loss series of a long run fits many times over. */
#define W_LOG_MAX ((size_t)8 << 20)
#define W_LINE_MAX 1024
#define W_EVIDENCE_LEN 300
#define W_SERIES_MAX 64
#define W_NAME_MAX 64
/* Two orders of magnitude above its first value: a loss that only wobbles never gets there. */
#define W_DIVERGE_RATIO 100.0
#define W_RUNTIME_EVIDENCE 6
#define W_SOURCE_MAX ((size_t)1 << 20)
#define W_SOURCE_FILES 64

/* JSON helpers ----------------------------------------------------------------------------- */

int lb_diag_json_add(struct json_object *o, const char *key, struct json_object *v)
{
	if (!v)
		return -ENOMEM;
	if (json_object_object_add(o, key, v) < 0) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

struct json_object *lb_diag_json_text(const char *s, size_t cap)
{
	char buf[DIAG_JSON_TEXT_MAX];

	lb_text_utf8(buf, cap < sizeof buf ? cap : sizeof buf, s, strlen(s));
	return json_object_new_string(buf);
}

static int add(struct json_object *o, const char *key, struct json_object *v)
{
	return lb_diag_json_add(o, key, v);
}

static struct json_object *text(const char *s)
{
	return lb_diag_json_text(s, W_EVIDENCE_LEN * 2);
}

/* {"kind", "message", "evidence": [...]} appended to out; returns it for more fields. */
static struct json_object *warning(struct json_object *out, const char *kind, const char *message,
				   const char *const *evidence, size_t n)
{
	struct json_object *w = json_object_new_object(), *ev = json_object_new_array();

	if (!w || !ev || add(w, "kind", json_object_new_string(kind)) < 0 ||
	    add(w, "message", text(message)) < 0) {
		json_object_put(w);
		json_object_put(ev);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *s = text(evidence[i]);

		if (!s || json_object_array_add(ev, s) < 0) {
			json_object_put(s);
			json_object_put(w);
			json_object_put(ev);
			return NULL;
		}
	}
	if (add(w, "evidence", ev) < 0 || json_object_array_add(out, w) < 0) {
		json_object_put(w);
		return NULL;
	}
	return w;
}

static bool word_char(char c)
{
	return c == '_' || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

/* The log ------------------------------------------------------------------------------------ */

/* The last W_LOG_MAX bytes of run.log, from the start of a line. */
static int read_log(const char *path, char **out, size_t *len)
{
	LB_AUTOCLOSE int fd = -1;
	struct stat st;
	size_t n, got = 0;
	off_t off;
	char *buf;

	*out = NULL;
	*len = 0;
	if (!path)
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return fd < 0 ? -errno : -EINVAL;
	n = (size_t)st.st_size < W_LOG_MAX ? (size_t)st.st_size : W_LOG_MAX;
	off = st.st_size - (off_t)n;
	buf = malloc(n + 1);
	if (!buf)
		return -ENOMEM;
	while (got < n) {
		ssize_t r = pread(fd, buf + got, n - got, off + (off_t)got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	buf[got] = '\0';
	*out = buf;
	*len = got;
	return 0;
}

/* One line as a terminal shows it: after the last carriage return, without control bytes
 * (NULs included) and ANSI colour escapes, cut at W_LINE_MAX - 1 bytes. */
static void clean(const char *s, size_t len, char *out)
{
	size_t o = 0, start = 0;

	while (len > 0 && (s[len - 1] == '\r' || s[len - 1] == ' '))
		len--;
	for (size_t i = 0; i < len; i++)
		if (s[i] == '\r')
			start = i + 1;
	for (size_t i = start; i < len && o < W_LINE_MAX - 1; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == 0x1b && i + 1 < len && s[i + 1] == '[') {
			for (i += 2; i < len && !(s[i] >= 0x40 && s[i] <= 0x7e); i++)
				;
			continue;
		}
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			continue;
		out[o++] = (char)c;
	}
	out[o] = '\0';
}

typedef void (*line_fn)(void *ctx, const char *line, size_t lineno);

static void each_line(const char *log, size_t len, line_fn fn, void *ctx)
{
	char line[W_LINE_MAX];
	size_t lineno = 0;

	for (size_t i = 0; i < len;) {
		const char *nl = memchr(log + i, '\n', len - i);
		size_t l = nl ? (size_t)(nl - (log + i)) : len - i;

		clean(log + i, l, line);
		fn(ctx, line, ++lineno);
		i += l + 1;
	}
}

static void evidence_line(char *out, size_t n, size_t lineno, const char *line)
{
	snprintf(out, n, "run.log line %zu: %.*s", lineno, W_EVIDENCE_LEN, line);
}

/* Diverging loss ------------------------------------------------------------------------------ */

typedef struct loss_series {
	char name[W_NAME_MAX];
	char cond[W_NAME_MAX];
	char label[W_NAME_MAX]; /* what its values are about (loss_label), "" when nothing */
	bool gain;  /* a reward, return or score printed beside losses: higher is better */
	bool total; /* a loss whose name says it is the whole objective (loss, val_loss) */
	size_t count;
	double first;
	size_t first_line;
	char first_text[W_EVIDENCE_LEN];
	double last;	  /* the value on last_line */
	size_t last_line;
	bool rose;	  /* last_line's value is the ratio's rise (not yet judged) */
	bool diverged;
	double bad;
	size_t bad_line;
	char bad_text[W_EVIDENCE_LEN];
} loss_series;

typedef struct loss_ctx {
	loss_series series[W_SERIES_MAX];
	size_t n;
	char cond[W_NAME_MAX]; /* the current `condition: X` group */
	char label[W_NAME_MAX]; /* the last `dataset: X` line's X */
} loss_ctx;

static void lower_name(const char *w, size_t n, char *low)
{
	for (size_t i = 0; i < n; i++)
		low[i] = (char)((w[i] >= 'A' && w[i] <= 'Z') ? w[i] | 0x20 : w[i]);
	low[n] = '\0';
}

/* A word naming a loss: train_loss, val-loss, Loss, loss/total; not AMP's loss_scale, which
 * grows by orders of magnitude by design, nor "lossless". */
static bool loss_word(const char *w, size_t n)
{
	char low[W_NAME_MAX];

	if (n == 0 || n >= sizeof(low))
		return false;
	lower_name(w, n, low);
	return strstr(low, "loss") && !strstr(low, "scale") && !strstr(low, "lossless");
}

/* A word naming what training raises as it improves, printed beside its losses: an RL
 * agent's reward or return (episodic_return, mean_reward), a generative model's ELBO. */
static bool gain_word(const char *w, size_t n)
{
	static const char *const words[] = { "reward", "return", "elbo", NULL };
	char low[W_NAME_MAX];

	if (n == 0 || n >= sizeof(low))
		return false;
	lower_name(w, n, low);
	for (size_t i = 0; words[i]; i++)
		if (strstr(low, words[i]))
			return true;
	return false;
}

/* Whether a loss's name says it is the whole objective: nothing but "loss", a split or an
 * average around it (loss, train_loss, val-loss, Loss/total, avg_loss, trainLoss), or the
 * usual objectives' own names (ce_loss, nll_loss, lm_loss). A name with anything else in it
 * (kl_loss, value_loss, recon_loss, aux_loss) is a part of an objective. */
static bool total_name(const char *name)
{
	/* longest first: "eval" is removed before "val" can cut it */
	static const char *const words[] = {
		"crossentropy", "cross_entropy", "validation", "evaluation", "training",
		"smoothed", "average", "overall", "running", "losses", "global", "train", "valid",
		"total", "batch", "epoch", "final", "eval", "test", "mean", "step", "xent", "loss",
		"nll", "mlm", "val", "avg", "dev", "ce", "lm", NULL,
	};
	char low[W_NAME_MAX];
	size_t n = strlen(name);

	if (n >= sizeof(low))
		return false;
	lower_name(name, n, low);
	for (size_t i = 0; words[i]; i++) {
		size_t k = strlen(words[i]);
		for (char *p = strstr(low, words[i]); p; p = strstr(low, words[i]))
			memmove(p, p + k, strlen(p + k) + 1);
	}
	for (const char *p = low; *p; p++)
		if (word_char(*p))
			return false;
	return true;
}

static bool name_char(char c)
{
	return word_char(c) || c == '.' || c == '/' || c == '-';
}

/* The number after "name", "name:", "name=" or "name =", with "tensor(" around it allowed. */
static bool value_after(const char *p, double *v)
{
	const char *e;

	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == ':' || *p == '=')
		p++;
	while (*p == ' ' || *p == '\t')
		p++;
	if (strncmp(p, "tensor(", 7) == 0)
		p += 7;
	for (e = p; *e && (word_char(*e) || *e == '.' || *e == '+' || *e == '-'); e++)
		;
	return e > p && lb_parse_number(p, (size_t)(e - p), v);
}

static loss_series *series_of(loss_ctx *c, const char *name, size_t n, const char *cond,
			      const char *label, bool gain)
{
	for (size_t i = 0; i < c->n; i++)
		if (strlen(c->series[i].name) == n && strncasecmp(c->series[i].name, name, n) == 0 &&
		    strcmp(c->series[i].cond, cond) == 0 && strcmp(c->series[i].label, label) == 0)
			return &c->series[i];
	if (c->n == W_SERIES_MAX)
		return NULL;
	loss_series *s = &c->series[c->n++];
	memset(s, 0, sizeof(*s));
	memcpy(s->name, name, n);
	snprintf(s->cond, sizeof(s->cond), "%s", cond);
	snprintf(s->label, sizeof(s->label), "%s", label);
	s->gain = gain;
	s->total = !gain && total_name(s->name);
	return s;
}

static void diverge(loss_series *s, double v, const char *line, size_t lineno)
{
	s->diverged = true;
	s->bad = v;
	s->bad_line = lineno;
	snprintf(s->bad_text, sizeof(s->bad_text), "%.*s", W_EVIDENCE_LEN - 1, line);
}

static void loss_value(loss_series *s, double v, const char *line, size_t lineno)
{
	if (s->diverged)
		return;
	if (!s->count) {
		if (!isfinite(v))
			return; /* NaN from the start is an issue of its own, not a divergence */
		s->first = v;
		s->first_line = lineno;
		snprintf(s->first_text, sizeof(s->first_text), "%.*s", W_EVIDENCE_LEN - 1, line);
		s->count = 1;
		s->last = v;
		s->last_line = lineno;
		return;
	}
	s->count++;
	s->last = v;
	s->last_line = lineno;
	if (s->gain)
		return;
	if (!isfinite(v))
		diverge(s, v, line, lineno); /* a NaN or an infinity is never a part's trade-off */
	else if (s->first > 0 && s->count >= 3 && v >= W_DIVERGE_RATIO * s->first)
		s->rose = true; /* judged with the rest of its line: loss_rises */
}

/* Another series printed on this line since the same first line as s, that improved from
 * its first value by a tenth of it or more: a loss that fell, a reward or return that rose.
 * The run was making progress when s rose. */
static bool sibling_improved(const loss_ctx *c, const loss_series *s, size_t lineno)
{
	for (size_t i = 0; i < c->n; i++) {
		const loss_series *t = &c->series[i];
		if (t == s || t->last_line != lineno || t->first_line != s->first_line ||
		    strcmp(t->cond, s->cond) != 0 || !isfinite(t->last))
			continue;
		double margin = 0.1 * fabs(t->first);
		if (t->gain ? t->last > t->first + margin : t->last < t->first - margin)
			return true;
	}
	return false;
}

/* The ratio's rises on this line: a loss at 100x its first value has diverged, unless it is a
 * part of the objective (not a total's name) printed beside another series that improved on
 * the same line: a VAE's KL term rising from ~0 under annealing while the reconstruction
 * falls, PPO's value loss growing with the returns it regresses on. A part is judged again
 * on each line it is printed. */
static void loss_rises(loss_ctx *c, const char *line, size_t lineno)
{
	for (size_t i = 0; i < c->n; i++) {
		loss_series *s = &c->series[i];
		if (!s->rose || s->last_line != lineno)
			continue;
		s->rose = false;
		if (s->total || !sibling_improved(c, s, lineno))
			diverge(s, s->last, line, lineno);
	}
}

/* What the values of a line are about, as the collector reads it (lb_metric_line's label):
 * a leading bracketed word (`[svhn] loss: 0.25`), else the last `dataset: X` or `dataset=X`
 * (lb_metric_label_key), which a line starting so sets for the lines after it. A series is
 * one label's: final losses of three datasets are three values, not a loss that rose. */
static void loss_label(loss_ctx *c, const char *line, char *label, size_t cap)
{
	size_t k = 0;

	if (line[0] == '[' && ((line[1] | 0x20) >= 'a' && (line[1] | 0x20) <= 'z')) {
		for (k = 1; word_char(line[k]) || line[k] == '-'; k++)
			;
		if (line[k] == ']' && line[k + 1] == ' ') {
			snprintf(label, cap, "%.*s", (int)(k - 1), line + 1);
			return;
		}
	}
	for (k = 0; word_char(line[k]); k++)
		;
	if (k > 0 && lb_metric_label_key(line, k) && (line[k] == ':' || line[k] == '=')) {
		const char *v = line + k + 1;

		while (*v == ' ' || *v == '\t')
			v++;
		snprintf(c->label, sizeof(c->label), "%.*s", (int)strcspn(v, " \t,;|"), v);
	}
	snprintf(label, cap, "%s", c->label);
}

static void loss_line(void *ctx, const char *line, size_t lineno)
{
	loss_ctx *c = ctx;
	char cond[W_NAME_MAX], label[W_NAME_MAX];
	const char *tag;

	/* A traceback's source lines print code, not values. */
	if (strncmp(line, "    ", 4) == 0 || strncmp(line, "  File \"", 8) == 0)
		return;
	if (strncmp(line, "condition: ", 11) == 0) {
		snprintf(c->cond, sizeof(c->cond), "%s", line + 11);
		return;
	}
	loss_label(c, line, label, sizeof(label));
	snprintf(cond, sizeof(cond), "%s", c->cond);
	tag = strstr(line, "condition=");
	if (tag && (tag == line || tag[-1] == ' ')) {
		size_t n = strcspn(tag + 10, " \t");

		snprintf(cond, sizeof(cond), "%.*s", (int)n, tag + 10);
	}
	for (const char *p = line; *p;) {
		const char *w = p;
		double v;

		while (*p && name_char(*p))
			p++;
		size_t n = (size_t)(p - w);
		bool loss = p > w && loss_word(w, n), gain = !loss && p > w && gain_word(w, n);
		if ((loss || gain) && (w == line || !name_char(w[-1])) && value_after(p, &v)) {
			loss_series *s = series_of(c, w, n, cond, label, gain);

			if (s)
				loss_value(s, v, line, lineno);
		}
		if (p == w)
			p++;
	}
	loss_rises(c, line, lineno);
}

static int warn_losses(const loss_ctx *c, struct json_object *out)
{
	for (size_t i = 0; i < c->n; i++) {
		const loss_series *s = &c->series[i];
		char msg[512], ev[2][W_EVIDENCE_LEN + 64];
		const char *evp[2] = { ev[0], ev[1] };
		struct json_object *w;

		if (!s->diverged || s->gain)
			continue;
		evidence_line(ev[0], sizeof(ev[0]), s->first_line, s->first_text);
		evidence_line(ev[1], sizeof(ev[1]), s->bad_line, s->bad_text);
		if (isfinite(s->bad))
			snprintf(msg, sizeof(msg),
				 "%s%s%s%s%s diverged: it rose from %g (run.log line %zu) to %g (line "
				 "%zu), %.0fx its first value; lower the learning rate or clip gradients",
				 s->name, s->label[0] ? " of " : "", s->label,
				 s->cond[0] ? " of condition " : "", s->cond, s->first,
				 s->first_line, s->bad, s->bad_line, s->bad / s->first);
		else
			snprintf(msg, sizeof(msg),
				 "%s%s%s%s%s became %s at run.log line %zu after starting at %g (line "
				 "%zu): training diverged; lower the learning rate, clip gradients, check "
				 "for log(0) or division by zero",
				 s->name, s->label[0] ? " of " : "", s->label,
				 s->cond[0] ? " of condition " : "", s->cond,
				 isnan(s->bad) ? "NaN" : "infinite", s->bad_line, s->first, s->first_line);
		w = warning(out, "loss_divergence", msg, evp, 2);
		if (!w || add(w, "metric", json_object_new_string(s->name)) < 0)
			return -ENOMEM;
		if (s->cond[0] && add(w, "condition", json_object_new_string(s->cond)) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The loss_divergence rule over some text: the first loss that diverged, said in what. */
bool lb_diag_loss_diverged(const char *text, size_t len, char *what, size_t whatlen)
{
	LB_AUTOFREE loss_ctx *c = calloc(1, sizeof(*c));

	if (!c || !text)
		return false;
	each_line(text, len, loss_line, c);
	for (size_t i = 0; i < c->n; i++) {
		const loss_series *s = &c->series[i];
		if (!s->diverged || s->gain)
			continue;
		if (isfinite(s->bad))
			snprintf(what, whatlen, "%s rose from %g to %g, %.0fx its first value", s->name,
				 s->first, s->bad, s->bad / s->first);
		else
			snprintf(what, whatlen, "%s became %s after starting at %g", s->name,
				 isnan(s->bad) ? "NaN" : "infinite", s->first);
		return true;
	}
	return false;
}

/* RuntimeWarnings ------------------------------------------------------------------------------ */

static const char *const runtime_kinds[][2] = {
	{ "overflow encountered", "overflow" },
	{ "invalid value encountered", "invalid_value" },
	{ "divide by zero encountered", "divide_by_zero" },
	{ "underflow encountered", "underflow" },
};
#define N_RUNTIME (sizeof(runtime_kinds) / sizeof(runtime_kinds[0]))

typedef struct runtime_ctx {
	size_t count[N_RUNTIME];
	char ev[N_RUNTIME][W_RUNTIME_EVIDENCE][W_EVIDENCE_LEN + 64];
	size_t n_ev[N_RUNTIME];
} runtime_ctx;

static void runtime_line(void *ctx, const char *line, size_t lineno)
{
	runtime_ctx *c = ctx;
	const char *p = strstr(line, "RuntimeWarning: ");

	if (!p)
		return;
	for (size_t k = 0; k < N_RUNTIME; k++) {
		if (!strstr(p, runtime_kinds[k][0]))
			continue;
		c->count[k]++;
		if (c->n_ev[k] < W_RUNTIME_EVIDENCE)
			evidence_line(c->ev[k][c->n_ev[k]++], sizeof(c->ev[k][0]), lineno, line);
		return;
	}
}

static int warn_runtime(const runtime_ctx *c, struct json_object *out)
{
	for (size_t k = 0; k < N_RUNTIME; k++) {
		const char *evp[W_RUNTIME_EVIDENCE];
		char msg[512];
		struct json_object *w;

		if (!c->count[k])
			continue;
		for (size_t i = 0; i < c->n_ev[k]; i++)
			evp[i] = c->ev[k][i];
		/* Python prints a warning once per place by default: one line can stand for
		 * every step that overflowed. */
		snprintf(msg, sizeof(msg),
			 "numerical RuntimeWarning on stderr (%s, %zu line%s): values computed there "
			 "may be inf or NaN and the metrics derived from them wrong; "
			 "np.seterr(all='raise') stops at the first one",
			 runtime_kinds[k][0], c->count[k], c->count[k] == 1 ? "" : "s");
		w = warning(out, "runtime_warning", msg, evp, c->n_ev[k]);
		if (!w || add(w, "warning", json_object_new_string(runtime_kinds[k][1])) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* Uncaught exceptions that ended a thread or a child process ------------------------------- */

/* threading's excepthook prints "Exception in thread NAME:", multiprocessing's Process
 * "Process NAME:", each then the traceback; the main process goes on, and may well report
 * metrics and exit 0 with a part of its work gone. */
#define W_WORKER_EVIDENCE 3

typedef struct worker_ctx {
	size_t count;
	int state; /* 0: nothing; 1: a header, its traceback next; 2: in that traceback */
	int foreign; /* lines of the other stream passed over in this traceback */
	char header[W_EVIDENCE_LEN + 64];
	char ev[W_WORKER_EVIDENCE * 2][W_EVIDENCE_LEN + 64];
	size_t n_ev;
} worker_ctx;

/* "pkg.mod.SomeError: message" or "SomeError": dotted identifiers, the last capitalised,
 * then a colon or the line's end, as an exception's line begins. */
static bool names_a_class(const char *line)
{
	size_t n = strcspn(line, ": \t"), part = 0;
	if (n == 0 || !(line[n] == '\0' || line[n] == ':'))
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = line[i];
		if (ch == '.') {
			if (i == part)
				return false;
			part = i + 1;
		} else if (!(ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			     (ch >= '0' && ch <= '9' && i > part))) {
			return false;
		}
	}
	if (lb_text_is_exception_name(line, n)) /* socket.gaierror and its like */
		return true;
	while (part < n && line[part] == '_')
		part++;
	return part < n && line[part] >= 'A' && line[part] <= 'Z';
}

static bool worker_header(const char *line)
{
	size_t n = strlen(line);
	if (n < 2 || line[n - 1] != ':')
		return false;
	return strncmp(line, "Exception in thread ", 20) == 0 ||
	       (strncmp(line, "Process ", 8) == 0 && n > 9 && !strchr(line + 8, ' '));
}

static void worker_line(void *ctx, const char *line, size_t lineno)
{
	worker_ctx *c = ctx;

	if (c->state == 1) {
		if (strcmp(line, "Traceback (most recent call last):") == 0) {
			c->state = 2;
			return;
		}
		if (worker_header(line))
			goto header;
		/* A line of the other stream between the header and its traceback, as inside it. */
		if (c->foreign++ >= 3)
			c->state = 0;
		return;
	}
	if (c->state == 2) {
		/* Frames and source lines are indented; the exception's own line is not. A line
		 * that names no class ("accuracy: 0.9") is one of the other stream, which run.log
		 * can hold inside a traceback (two pipes): passed over, a few at most. */
		if (line[0] == ' ' || line[0] == '\t' || line[0] == '\0')
			return;
		if (!names_a_class(line)) {
			if (c->foreign++ >= 3)
				c->state = 0; /* no exception's line came: not a traceback */
			return;
		}
		if (c->count++ < W_WORKER_EVIDENCE) {
			snprintf(c->ev[c->n_ev++], sizeof c->ev[0], "%s", c->header);
			evidence_line(c->ev[c->n_ev++], sizeof c->ev[0], lineno, line);
		}
		c->state = 0;
		return;
	}
	if (!worker_header(line))
		return;
header:
	evidence_line(c->header, sizeof c->header, lineno, line);
	c->state = 1;
	c->foreign = 0;
}

/* failed: the run has a failure, which may be what such a death led to (a queue left empty,
 * a pipe closed), so the words for a completed run's missing work would mislead. */
static int warn_workers(const worker_ctx *c, bool failed, struct json_object *out)
{
	const char *evp[W_WORKER_EVIDENCE * 2];
	char msg[512];

	if (!c->count)
		return 0;
	for (size_t i = 0; i < c->n_ev; i++)
		evp[i] = c->ev[i];
	if (failed)
		snprintf(msg, sizeof(msg),
			 "%zu uncaught exception%s ended a thread or a child process before the run "
			 "failed: an error the main process raised afterwards while waiting on it "
			 "(a queue left empty, a closed pipe) is how it noticed, not why (see "
			 "failure)",
			 c->count, c->count == 1 ? "" : "s");
	else
		snprintf(msg, sizeof(msg),
			 "%zu uncaught exception%s ended a thread or a child process while the main "
			 "process went on: the work it did is missing from the results, which may "
			 "still look complete",
			 c->count, c->count == 1 ? "" : "s");
	struct json_object *w = warning(out, "worker_exception", msg, evp, c->n_ev);
	if (!w || add(w, "count", json_object_new_int64((int64_t)c->count)) < 0)
		return -ENOMEM;
	return 0;
}

/* Source files of the experiment ------------------------------------------------------------ */

/* The top-level *.py files of the experiment (the entry point's directory is sys.path[0]),
 * each read whole up to W_SOURCE_MAX; names[i] is the file name. */
typedef struct sources {
	char *text[W_SOURCE_FILES];
	char name[W_SOURCE_FILES][256];
	size_t n;
	int entry; /* index of the entry point, or -1 */
} sources;

static void sources_free(sources *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->text[i]);
}

static void sources_read(sources *s, const char *dir, const char *entry)
{
	LB_AUTOCLOSE int dfd = -1;
	DIR *d;
	struct dirent *e;

	memset(s, 0, sizeof(*s));
	s->entry = -1;
	if (!dir)
		return;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	d = fdopendir(dup(dfd));
	if (!d)
		return;
	while ((e = readdir(d)) && s->n < W_SOURCE_FILES) {
		size_t n = strlen(e->d_name), len = 0;
		char *data = NULL;

		if (n < 4 || n >= sizeof(s->name[0]) || strcmp(e->d_name + n - 3, ".py") != 0)
			continue;
		if (lb_read_file_at(dfd, e->d_name, W_SOURCE_MAX, &data, &len) < 0)
			continue;
		memcpy(s->name[s->n], e->d_name, n + 1);
		if (entry && strcmp(entry, e->d_name) == 0)
			s->entry = (int)s->n;
		s->text[s->n++] = data;
	}
	closedir(d);
}

/* Standard-library shadowing ----------------------------------------------------------------- */

/* sys.stdlib_module_names of CPython 3.10 to 3.13 (public names), less what cannot be
 * shadowed because it is built in or loaded before the script runs (sys, os, io, abc, codecs,
 * site, time...), and what no code imports (this, antigravity, idlelib, turtledemo, test,
 * Windows-only modules). */
static const char *const stdlib_names[] = {
	"aifc", "argparse", "ast", "asynchat", "asyncio", "asyncore", "audioop", "base64", "bdb",
	"binhex", "bisect", "bz2", "cProfile", "calendar", "cgi", "cgitb", "chunk", "cmath", "cmd",
	"code", "codeop", "collections", "colorsys", "compileall", "concurrent", "configparser",
	"contextlib", "contextvars", "copy", "copyreg", "crypt", "csv", "ctypes", "curses",
	"dataclasses", "datetime", "dbm", "decimal", "difflib", "dis", "distutils", "doctest",
	"email", "enum", "filecmp", "fileinput", "fnmatch", "fractions", "ftplib", "functools",
	"getopt", "getpass", "gettext", "glob", "graphlib", "gzip", "hashlib", "heapq", "hmac",
	"html", "http", "imaplib", "imghdr", "imp", "importlib", "inspect", "ipaddress", "json",
	"keyword", "linecache", "locale", "logging", "lzma", "mailbox", "mailcap", "math",
	"mimetypes", "mmap", "modulefinder", "multiprocessing", "netrc", "nis", "nntplib",
	"numbers", "opcode", "operator", "optparse", "ossaudiodev", "pathlib", "pdb", "pickle",
	"pickletools", "pipes", "pkgutil", "platform", "plistlib", "poplib", "pprint", "profile",
	"pstats", "pty", "py_compile", "pyclbr", "pydoc", "queue", "quopri", "random", "re",
	"readline", "reprlib", "resource", "rlcompleter", "runpy", "sched", "secrets", "select",
	"selectors", "shelve", "shlex", "shutil", "signal", "smtpd", "smtplib", "sndhdr", "socket",
	"socketserver", "sqlite3", "sre_compile", "sre_constants", "sre_parse", "ssl",
	"statistics", "string", "stringprep", "struct", "subprocess", "sunau", "symtable",
	"sysconfig", "tabnanny", "tarfile", "telnetlib", "tempfile", "termios", "textwrap",
	"threading", "timeit", "tkinter", "token", "tokenize", "tomllib", "trace", "traceback",
	"tracemalloc", "tty", "turtle", "types", "typing", "unicodedata", "unittest", "urllib",
	"uu", "uuid", "venv", "warnings", "wave", "weakref", "webbrowser", "wsgiref", "xdrlib",
	"xml", "xmlrpc", "zipapp", "zipfile", "zlib", "zoneinfo", NULL
};

static bool is_stdlib(const char *name, size_t n)
{
	for (size_t i = 0; stdlib_names[i]; i++)
		if (strlen(stdlib_names[i]) == n && memcmp(stdlib_names[i], name, n) == 0)
			return true;
	return false;
}

bool lb_diag_is_stdlib(const char *name, size_t n)
{
	static const char *const builtin[] = { "os", "sys", "io", "abc", "codecs", "site", "time",
					       "builtins", "itertools", "errno", "gc", NULL };
	for (size_t i = 0; builtin[i]; i++)
		if (strlen(builtin[i]) == n && memcmp(builtin[i], name, n) == 0)
			return true;
	return is_stdlib(name, n);
}

static int warn_shadow(const char *dir, struct json_object *out)
{
	LB_AUTOCLOSE int dfd = -1;
	DIR *d;
	struct dirent *e;
	int r = 0;

	if (!dir)
		return 0;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	d = fdopendir(dup(dfd));
	if (!d)
		return 0;
	while (r == 0 && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		char init[300], msg[640], ev[300];
		const char *evp[1] = { ev };
		struct stat st;
		bool module;
		struct json_object *w;

		if (e->d_name[0] == '.' || n >= 256)
			continue;
		module = n > 3 && strcmp(e->d_name + n - 3, ".py") == 0;
		if (module) {
			n -= 3;
		} else {
			/* A directory shadows only as a regular package: a namespace package
			 * yields to a module found later on sys.path. */
			snprintf(init, sizeof(init), "%s/__init__.py", e->d_name);
			if (fstatat(dfd, init, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
				continue;
		}
		if (!is_stdlib(e->d_name, n))
			continue;
		snprintf(ev, sizeof(ev), "exp/%s%s", e->d_name, module ? "" : "/__init__.py");
		snprintf(msg, sizeof(msg),
			 "%s%s in the experiment shadows the standard library's %.*s module: the "
			 "experiment's directory comes first on sys.path, so `import %.*s` anywhere "
			 "in the run (the code, numpy, torch) loads this file instead; rename it",
			 e->d_name, module ? "" : "/", (int)n, e->d_name, (int)n, e->d_name);
		w = warning(out, "stdlib_shadow", msg, evp, 1);
		if (!w || add(w, "file", json_object_new_string(ev + 4)) < 0) {
			r = -ENOMEM;
			break;
		}
		char mod[256];
		snprintf(mod, sizeof(mod), "%.*s", (int)n, e->d_name);
		if (add(w, "module", json_object_new_string(mod)) < 0)
			r = -ENOMEM;
	}
	closedir(d);
	return r;
}

/* Near-chance accuracy ------------------------------------------------------------------------ */

/* Datasets whose number of classes is common knowledge, by their name with case, '-', '_'
 * and ' ' dropped (and a Hub owner before '/'). */
static const struct {
	const char *name;
	int classes;
} known_datasets[] = {
	{ "cifar10", 10 },	  { "cifar100", 100 },	 { "mnist", 10 },    { "fashionmnist", 10 },
	{ "kmnist", 10 },	  { "svhn", 10 },	 { "stl10", 10 },    { "imagenet", 1000 },
	{ "imagenet1k", 1000 },	  { "ilsvrc2012", 1000 }, { "tinyimagenet", 200 },
};

static int dataset_classes(const char *s, size_t n)
{
	char norm[64];
	size_t o = 0;

	for (size_t i = 0; i < n; i++)
		if (s[i] == '/')
			o = 0; /* "uoft-cs/cifar10": the name after the owner */
		else if (s[i] != '-' && s[i] != '_' && s[i] != ' ' && o + 1 < sizeof(norm))
			norm[o++] = (char)((s[i] >= 'A' && s[i] <= 'Z') ? s[i] | 0x20 : s[i]);
	norm[o] = '\0';
	for (size_t i = 0; i < sizeof(known_datasets) / sizeof(known_datasets[0]); i++)
		if (strcmp(norm, known_datasets[i].name) == 0)
			return known_datasets[i].classes;
	return 0;
}

typedef struct classes {
	int k;
	char how[W_EVIDENCE_LEN]; /* where k came from */
	bool ambiguous;
} classes;

static void classes_set(classes *c, int k, const char *how)
{
	if (k < 2 || c->ambiguous)
		return;
	if (c->k && c->k != k) {
		c->ambiguous = true; /* two datasets, two answers: say nothing */
		return;
	}
	if (!c->k) {
		c->k = k;
		snprintf(c->how, sizeof(c->how), "%s", how);
	}
}

static bool classes_name(const char *name)
{
	static const char *const names[] = { "num_classes", "n_classes", "nclasses", "num_labels",
					     "n_labels", "number_of_classes", NULL };

	for (size_t i = 0; names[i]; i++)
		if (strcasecmp(name, names[i]) == 0)
			return true;
	return false;
}

static bool dataset_name(const char *name)
{
	return strcasecmp(name, "dataset") == 0 || strcasecmp(name, "data") == 0 ||
	       strcasecmp(name, "dataset_name") == 0;
}

/* num_classes or a dataset label among one group's metrics. */
static void classes_from_group(classes *c, struct json_object *group, const char *where)
{
	char how[W_EVIDENCE_LEN];

	if (!json_object_is_type(group, json_type_object))
		return;
	json_object_object_foreach(group, name, v) {
		if (classes_name(name) && (json_object_is_type(v, json_type_double) ||
					   json_object_is_type(v, json_type_int))) {
			double d = json_object_get_double(v);

			snprintf(how, sizeof(how), "%s: %g (%s)", name, d, where);
			if (d >= 2 && d <= 1e6 && d == floor(d))
				classes_set(c, (int)d, how);
		} else if (dataset_name(name) && json_object_is_type(v, json_type_string)) {
			const char *s = json_object_get_string(v);

			snprintf(how, sizeof(how), "%s: %s (%s)", name, s, where);
			classes_set(c, dataset_classes(s, strlen(s)), how);
		}
	}
}

/* --num_classes N, --num-classes=N, --dataset NAME, --dataset=NAME among the arguments. */
static void classes_from_args(classes *c, char *const *args, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *a = args[i], *eq, *val;
		char key[64], how[W_EVIDENCE_LEN];
		size_t kl;

		if (strncmp(a, "--", 2) != 0)
			continue;
		a += 2;
		eq = strchr(a, '=');
		kl = eq ? (size_t)(eq - a) : strlen(a);
		if (kl >= sizeof(key))
			continue;
		for (size_t j = 0; j < kl; j++)
			key[j] = a[j] == '-' ? '_' : a[j];
		key[kl] = '\0';
		val = eq ? eq + 1 : i + 1 < n ? args[i + 1] : NULL;
		if (!val)
			continue;
		snprintf(how, sizeof(how), "--%s %s (arguments)", key, val);
		if (classes_name(key)) {
			char *end;
			long k = strtol(val, &end, 10);

			if (*end == '\0' && k >= 2 && k <= 1000000)
				classes_set(c, (int)k, how);
		} else if (dataset_name(key)) {
			classes_set(c, dataset_classes(val, strlen(val)), how);
		}
	}
}

/* A dataset the code loads: torchvision's classes (CIFAR10(...)), keras' modules
 * (datasets.cifar10), or a quoted name ("cifar10", 'uoft-cs/cifar10'). A normalisation
 * constant such as IMAGENET_MEAN names no dataset the code trains on, and is not read. */
static void classes_from_source(classes *c, const sources *src)
{
	static const char *const ctors[] = { "CIFAR10(", "CIFAR100(", "MNIST(", "FashionMNIST(",
					     "KMNIST(", "SVHN(", "STL10(", "ImageNet(", NULL };

	for (size_t f = 0; f < src->n; f++) {
		const char *t = src->text[f];
		char how[W_EVIDENCE_LEN];

		for (size_t i = 0; ctors[i]; i++) {
			const char *p = t;
			size_t n = strlen(ctors[i]) - 1;

			while ((p = strstr(p, ctors[i]))) {
				if (p == t || !word_char(p[-1]) || p[-1] == '.') {
					snprintf(how, sizeof(how), "%s: %s (source)", src->name[f], ctors[i]);
					classes_set(c, dataset_classes(ctors[i], n), how);
				}
				p += n;
			}
		}
		for (const char *p = t; (p = strstr(p, "datasets.")); p += 9) {
			const char *w = p + 9, *e = w;

			while (word_char(*e))
				e++;
			if (dataset_classes(w, (size_t)(e - w)) && *e != '(') {
				snprintf(how, sizeof(how), "%s: datasets.%.*s (source)", src->name[f],
					 (int)(e - w), w);
				classes_set(c, dataset_classes(w, (size_t)(e - w)), how);
			}
		}
		for (const char *p = t; *p; p++) {
			const char *e;

			if (*p != '"' && *p != '\'')
				continue;
			e = strchr(p + 1, *p);
			if (!e)
				break;
			if (e - p - 1 > 0 && e - p - 1 < 40 && !memchr(p + 1, '\n', (size_t)(e - p - 1))) {
				int k = dataset_classes(p + 1, (size_t)(e - p - 1));

				if (k) {
					snprintf(how, sizeof(how), "%s: %.*s (source)", src->name[f],
						 (int)(e - p + 1), p);
					classes_set(c, k, how);
				}
			}
			p = e;
		}
	}
}

/* A word of a name that makes it something other than an accuracy, though it holds one: a
 * difference of two (acc_gap, train_test_acc_gap, acc_margin over a baseline), a spread or an
 * uncertainty of one (acc_std, acc_iqr, acc_stderr, acc_ci95), a calibration error or a
 * threshold on one. Such a number near 1/k says nothing about what the model learnt. Matched
 * as whole words, and with the digits around a word left out (ci95, 95ci, std1). */
static bool not_an_accuracy_word(const char *w, size_t k)
{
	static const char *const no[] = {
		/* other metrics beside an accuracy */
		"top5", "acc5", "top3", "rank",
		/* differences */
		"diff", "difference", "delta", "gap", "gain", "drop", "change", "improvement",
		"margin", "lift", "uplift", "increase", "decrease", "reduction", "degradation",
		"regret", "forgetting", "vs", "minus", "ratio", "rel", "relative",
		/* spreads */
		"std", "stdev", "stddev", "sd", "var", "variance", "iqr", "range", "spread", "mad",
		"dispersion", "deviation",
		/* uncertainty and intervals */
		"ci", "sem", "se", "stderr", "err", "error", "halfwidth", "width", "interval",
		"uncertainty", "pm",
		/* calibration and thresholds */
		"ece", "mce", "calibration", "threshold", "thresh",
		NULL };
	size_t a = 0, b = k;
	for (size_t i = 0; no[i]; i++)
		if (strlen(no[i]) == k && strncasecmp(w, no[i], k) == 0)
			return true;
	while (a < b && isdigit((unsigned char)w[a]))
		a++;
	while (b > a && isdigit((unsigned char)w[b - 1]))
		b--;
	if (b - a == k || a == b)
		return false;
	for (size_t i = 0; no[i]; i++)
		if (strlen(no[i]) == b - a && strncasecmp(w + a, no[i], b - a) == 0)
			return true;
	return false;
}

/* accuracy, test_acc, val_accuracy, top1, acc1: a name that is an accuracy itself; not top5,
 * and not one with a word that makes it a difference, a spread or an uncertainty of one
 * (not_an_accuracy_word). */
static bool accuracy_name(const char *name)
{
	static const char *const yes[] = { "acc", "accuracy", "top1", "acc1", "top1acc", NULL };
	const char *base = name;
	bool found = false;

	for (const char *p = name; *p; p++)
		if (*p == '/' || *p == '.')
			base = p + 1;
	for (const char *w = base; *w;) {
		size_t k = strcspn(w, "_- ");

		if (k && not_an_accuracy_word(w, k))
			return false;
		for (size_t i = 0; k && yes[i]; i++)
			if (strlen(yes[i]) == k && strncasecmp(w, yes[i], k) == 0)
				found = true;
		w += k;
		if (*w)
			w++;
	}
	return found;
}

static bool is_percent(struct json_object *metrics, const char *cond, const char *name)
{
	struct json_object *ann;

	if (!json_object_object_get_ex(metrics, "annotated", &ann) ||
	    !json_object_is_type(ann, json_type_array))
		return false;
	for (size_t i = 0; i < json_object_array_length(ann); i++) {
		struct json_object *a = json_object_array_get_idx(ann, i), *v;
		const char *c = NULL;

		if (json_object_object_get_ex(a, "condition", &v) && v)
			c = json_object_get_string(v);
		if (!json_object_object_get_ex(a, "metric", &v) ||
		    strcmp(json_object_get_string(v), name) != 0 ||
		    (c ? !cond || strcmp(c, cond) != 0 : cond != NULL))
			continue;
		return json_object_object_get_ex(a, "percent", &v) && json_object_get_boolean(v);
	}
	return false;
}

static int warn_group_accuracy(struct json_object *metrics, struct json_object *group,
			       const char *cond, const classes *cl, struct json_object *out)
{
	double chance = 1.0 / cl->k;
	/* A quarter of chance, within [0.005, 0.05]: 0.075..0.125 for 10 classes. */
	double margin = fmin(fmax(0.25 * chance, 0.005), 0.05);

	if (!json_object_is_type(group, json_type_object))
		return 0;
	json_object_object_foreach(group, name, v) {
		char msg[768], ev[2][W_EVIDENCE_LEN + 64];
		const char *evp[2] = { ev[0], ev[1] };
		double a, shown;
		bool pct;
		struct json_object *w;

		if (!accuracy_name(name) || !(json_object_is_type(v, json_type_double) ||
					      json_object_is_type(v, json_type_int)))
			continue;
		a = shown = json_object_get_double(v);
		pct = is_percent(metrics, cond, name) || (a > 1 && a <= 100);
		if (pct)
			a /= 100;
		if (!isfinite(a) || a < 0 || a > 1 || fabs(a - chance) > margin)
			continue;
		snprintf(ev[0], sizeof(ev[0]), "%s%s%s%s: %g", cond ? "condition " : "",
			 cond ? cond : "", cond ? " " : "", name, shown);
		snprintf(ev[1], sizeof(ev[1]), "%d classes from %s", cl->k, cl->how);
		snprintf(msg, sizeof(msg),
			 "%s%s%s is %g, within %g of chance (1/%d = %g): the model has learnt "
			 "next to nothing; check the labels, the loss and the learning rate",
			 name, cond ? " of condition " : "", cond ? cond : "", shown,
			 pct ? margin * 100 : margin, cl->k, pct ? chance * 100 : chance);
		w = warning(out, "near_chance_accuracy", msg, evp, 2);
		if (!w || add(w, "metric", json_object_new_string(name)) < 0 ||
		    add(w, "classes", json_object_new_int(cl->k)) < 0 ||
		    add(w, "chance", json_object_new_double(chance)) < 0)
			return -ENOMEM;
		if (cond && add(w, "condition", json_object_new_string(cond)) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int warn_accuracy(const lb_diagnosis_input *in, const sources *src,
			 struct json_object *out)
{
	struct json_object *values = NULL, *conds = NULL;
	classes cl = { 0 };
	int r;

	if (!in->metrics)
		return 0;
	json_object_object_get_ex(in->metrics, "values", &values);
	json_object_object_get_ex(in->metrics, "conditions", &conds);
	/* The most explicit source first: what the run printed, its arguments, its code. */
	classes_from_group(&cl, values, "stdout");
	if (json_object_is_type(conds, json_type_object)) {
		json_object_object_foreach(conds, cname, g) {
			(void)cname;
			classes_from_group(&cl, g, "stdout");
		}
	}
	if (!cl.k && !cl.ambiguous)
		classes_from_args(&cl, in->args, in->nargs);
	if (!cl.k && !cl.ambiguous)
		classes_from_source(&cl, src);
	if (!cl.k || cl.ambiguous)
		return 0;
	r = warn_group_accuracy(in->metrics, values, NULL, &cl, out);
	if (r == 0 && json_object_is_type(conds, json_type_object)) {
		json_object_object_foreach(conds, cname, g) {
			r = warn_group_accuracy(in->metrics, g, cname, &cl, out);
			if (r < 0)
				break;
		}
	}
	return r;
}

/* The time guard skipping most conditions -------------------------------------------------- */

/* Elements of the list, tuple or dict literal at p (after its opening bracket), counted at
 * its top level; -1 when it does not close. */
static long literal_count(const char *p)
{
	long n = 0;
	int depth = 0;
	bool item = false;

	for (; *p; p++) {
		char c = *p;

		if (c == '#') {
			while (*p && *p != '\n')
				p++;
			if (!*p)
				return -1;
			continue;
		}
		if (c == '"' || c == '\'') {
			const char *e = p + 1;

			while (*e && *e != c && *e != '\n')
				e += e[0] == '\\' && e[1] ? 2 : 1;
			if (*e != c)
				return -1;
			p = e;
			item = true;
			continue;
		}
		if (c == '[' || c == '(' || c == '{') {
			depth++;
			item = true;
		} else if (c == ']' || c == ')' || c == '}') {
			if (depth-- == 0)
				return n + (item ? 1 : 0);
		} else if (c == ',' && depth == 0) {
			if (item)
				n++;
			item = false;
		} else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
			item = true;
		}
	}
	return -1;
}

/* The conditions the entry point plans: `conditions = [...]` (or CONDITIONS, a tuple, a dict,
 * with a type annotation) at the start of a line of its source. */
static long planned_conditions(const sources *src, char *where, size_t wn)
{
	const char *t;

	if (src->entry < 0)
		return -1;
	t = src->text[src->entry];
	for (const char *line = t; line && *line;) {
		const char *p = line, *eol = strchr(line, '\n');

		if (strncasecmp(p, "conditions", 10) == 0 && !word_char(p[10])) {
			p += 10;
			if (*p == ':')
				while (*p && *p != '=' && *p != '\n')
					p++;
			while (*p == ' ')
				p++;
			if (*p == '=' && p[1] != '=') {
				p++;
				while (*p == ' ')
					p++;
				if (*p == '[' || *p == '(' || *p == '{') {
					long n = literal_count(p + 1);
					size_t lineno = 1, len = eol ? (size_t)(eol - line) : strlen(line);

					for (const char *q = t; q < line; q++)
						lineno += *q == '\n';
					snprintf(where, wn, "%s line %zu: %.*s", src->name[src->entry],
						 lineno, (int)(len > 200 ? 200 : len), line);
					return n;
				}
			}
		}
		line = eol ? eol + 1 : NULL;
	}
	return -1;
}

static int warn_time_guard(const lb_diagnosis_input *in, const sources *src,
			   struct json_object *out)
{
	struct json_object *guard = NULL, *order = NULL, *w;
	char where[300], ev[2][400], msg[640];
	const char *evp[2] = { ev[0], ev[1] };
	size_t reported;
	long planned;

	if (!in->metrics || !json_object_object_get_ex(in->metrics, "time_guard", &guard) ||
	    !guard)
		return 0;
	json_object_object_get_ex(in->metrics, "condition_order", &order);
	reported = json_object_is_type(order, json_type_array) ? json_object_array_length(order) : 0;
	planned = planned_conditions(src, where, sizeof(where));
	if (planned < 2 || (long)reported * 2 >= planned)
		return 0;
	snprintf(ev[0], sizeof(ev[0]), "TIME_GUARD: %.300s", json_object_get_string(guard));
	snprintf(ev[1], sizeof(ev[1]), "%s", where);
	snprintf(msg, sizeof(msg),
		 "the time guard fired with %zu of %ld planned conditions reported: most of the "
		 "experiment never ran, so comparisons across conditions are missing; raise the "
		 "budget (--budget SECONDS) or make each condition cheaper",
		 reported, planned);
	w = warning(out, "time_guard_skipped", msg, evp, 2);
	if (!w || add(w, "reported", json_object_new_int64((int64_t)reported)) < 0 ||
	    add(w, "planned", json_object_new_int64(planned)) < 0)
		return -ENOMEM;
	return 0;
}

/* A process of a completed run that the OOM killer ended: what it was to produce may be
 * missing from results the main process still reported. */
static int warn_oom_kill(const lb_diagnosis_input *in, struct json_object *out)
{
	if (!in->oom_kill_completed)
		return 0;
	return warning(out, "oom_kill",
		       "the out-of-memory killer ended a process of the run (a subprocess or "
		       "worker) while the main process went on and exited 0: what that process "
		       "was to compute may be missing from the results",
		       NULL, 0)
		       ? 0
		       : -ENOMEM;
}

/* Refusals of the runtime gate the code went on after ------------------------------------------ */

/* A refusal raises PermissionError where the operation was asked; code that catches it (a
 * try around a download, a worker loop that logs and goes on) completes without what was
 * refused, and nothing in its exit says so. A failure of class gate_refused names the
 * refusal already, and a timeout after one carries it in its evidence. */
static int warn_gate_refusals(const lb_diagnosis_input *in, struct json_object *out)
{
	struct json_object *g = in->runtime_gate, *v, *events;
	if (!g || (in->failure_class && (strcmp(in->failure_class, "gate_refused") == 0 ||
					 strcmp(in->failure_class, "timeout") == 0)))
		return 0;
	int64_t n = json_object_object_get_ex(g, "refused", &v) ? json_object_get_int64(v) : 0;
	if (n <= 0 || !json_object_object_get_ex(g, "events", &events) ||
	    !json_object_is_type(events, json_type_array))
		return 0;
	char ev[5][900];
	const char *evp[5];
	size_t k = 0;
	size_t exp_len = in->exp_dir ? strlen(in->exp_dir) : 0;
	for (size_t i = 0; i < json_object_array_length(events) && k < 5; i++) {
		struct json_object *e = json_object_array_get_idx(events, i), *f;
		if (!json_object_object_get_ex(e, "refused", &f) || !json_object_get_boolean(f))
			continue;
		const char *event = json_object_object_get_ex(e, "event", &f) ? json_object_get_string(f) : NULL;
		const char *rule = json_object_object_get_ex(e, "rule", &f) ? json_object_get_string(f) : NULL;
		const char *title = json_object_object_get_ex(e, "title", &f) ? json_object_get_string(f) : NULL;
		const char *file = json_object_object_get_ex(e, "file", &f) ? json_object_get_string(f) : NULL;
		int line = json_object_object_get_ex(e, "line", &f) ? json_object_get_int(f) : 0;
		const char *args = json_object_object_get_ex(e, "args", &f) && f
					   ? json_object_to_json_string_ext(f, JSON_C_TO_STRING_PLAIN)
					   : "[]";
		/* The staged copy's path says less than the name the researcher wrote */
		if (file && exp_len && strncmp(file, in->exp_dir, exp_len) == 0 && file[exp_len] == '/')
			file += exp_len + 1;
		char at[300] = "";
		if (file)
			snprintf(at, sizeof at, " at %.200s:%d", file, line);
		snprintf(ev[k], sizeof ev[k], "%.80s (%.40s %.120s) of %.300s%s", event ? event : "?",
			 rule ? rule : "?", title ? title : "", args, at);
		evp[k] = ev[k];
		k++;
	}
	char msg[1200];
	snprintf(msg, sizeof msg,
		 "the runtime gate refused operations and the code went on (%lld recorded, one for "
		 "each kind and line): what was refused did not happen, and the results were made "
		 "without it; the first: %s",
		 (long long)n, k ? ev[0] : "(not recorded)");
	return warning(out, "gate_refusals_caught", msg, evp, k) ? 0 : -ENOMEM;
}

/* Whether the experiment's code may start a process of its own (a fork, a subprocess, a pool):
 * a traceback such a process printed as it died reads as one the main program printed. */
static bool sources_start_processes(const sources *src)
{
	static const char *const words[] = { "fork(", "subprocess", "multiprocessing", "Popen",
					     "ProcessPool", "os.system", "posix_spawn", "os.exec",
					     NULL };

	for (size_t f = 0; f < src->n; f++)
		for (size_t i = 0; words[i]; i++)
			if (strstr(src->text[f], words[i]))
				return true;
	return false;
}

/* The whole ----------------------------------------------------------------------------------- */

int lb_diagnose_warnings(const lb_diagnosis_input *in, struct json_object *out)
{
	LB_AUTOFREE char *owned = NULL;
	LB_AUTOFREE loss_ctx *loss = NULL;
	LB_AUTOFREE runtime_ctx *rt = NULL;
	LB_AUTOFREE worker_ctx *wk = NULL;
	__attribute__((cleanup(sources_free))) sources src;
	const char *log;
	size_t len;
	int r;

	memset(&src, 0, sizeof(src));
	if (!in || !json_object_is_type(out, json_type_array))
		return -EINVAL;
	log = in->log;
	len = in->log_len;
	if (!log && in->log_path) {
		/* A run.log that cannot be read leaves the warnings of the log out. */
		if (read_log(in->log_path, &owned, &len) == 0)
			log = owned;
	}
	loss = calloc(1, sizeof(*loss));
	rt = calloc(1, sizeof(*rt));
	wk = calloc(1, sizeof(*wk));
	if (!loss || !rt || !wk)
		return -ENOMEM;
	if (log) {
		each_line(log, len, loss_line, loss);
		each_line(log, len, runtime_line, rt);
		each_line(log, len, worker_line, wk);
	}
	sources_read(&src, in->exp_dir, in->entry);
	if ((r = warn_losses(loss, out)) < 0 || (r = warn_runtime(rt, out)) < 0 ||
	    (r = warn_workers(wk, in->failure_class != NULL, out)) < 0 ||
	    (r = warn_accuracy(in, &src, out)) < 0 || (r = warn_time_guard(in, &src, out)) < 0 ||
	    (r = warn_shadow(in->exp_dir, out)) < 0 || (r = warn_oom_kill(in, out)) < 0 ||
	    (r = warn_gate_refusals(in, out)) < 0 ||
	    (log && (r = lb_diag_caught_at_end(in, log, len, sources_start_processes(&src),
					       out)) < 0))
		return r;
	return 0;
}
