/* record: the records' own seal. A run's manifest.json says how to run it again (its mounts,
 * network, backend, policy), and `labbox rerun` does what it says; a manifest that came with
 * an experiment (a committed .labbox/ whose index lists it) is the user's file like any
 * other, so ownership cannot tell it from one labbox wrote. An HMAC-SHA256 with a key only
 * this user's labbox reads (in labbox's private state directory, hidden from every run) can: result.json
 * carries the manifest's, and what it grants is repeated without asking only when it
 * matches. */
#include "labbox/record.h"
#include "labbox/util.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY_LEN 32

static int read_key(int dfd, uint8_t key[KEY_LEN])
{
	LB_AUTOCLOSE int fd = openat(dfd, LB_RECORD_KEY_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	/* Another's key, or one others could read, seals nothing. */
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) ||
	    st.st_size != KEY_LEN)
		return -EPERM;
	ssize_t n = read(fd, key, KEY_LEN);
	return n == KEY_LEN ? 0 : n < 0 ? -errno : -EIO;
}

/* The key, made on first use: 32 random bytes, 0600, in a private directory. */
static int record_key(uint8_t key[KEY_LEN])
{
	LB_AUTOFREE char *state = lb_record_state_dir();
	if (!state)
		return -ENOENT;
	LB_AUTOCLOSE int dfd = lb_open_private_dir(state);
	if (dfd < 0)
		return dfd;
	int r = read_key(dfd, key);
	if (r != -ENOENT)
		return r;
	uint8_t fresh[KEY_LEN];
	if (getrandom(fresh, sizeof fresh, 0) != (ssize_t)sizeof fresh)
		return -EIO;
	char tmp[64];
	snprintf(tmp, sizeof tmp, ".%s.%ld", LB_RECORD_KEY_FILE, (long)getpid());
	LB_AUTOCLOSE int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				     0600);
	if (fd < 0)
		return -errno;
	r = lb_write_all(fd, fresh, sizeof fresh);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	/* Two first runs at once: the first link wins and both use its key. */
	if (r == 0 && linkat(dfd, tmp, dfd, LB_RECORD_KEY_FILE, 0) < 0 && errno != EEXIST)
		r = -errno;
	unlinkat(dfd, tmp, 0);
	return r < 0 ? r : read_key(dfd, key);
}

int lb_record_mac(const char *domain, const void *data, size_t len, char hex[65])
{
	uint8_t key[KEY_LEN], pad[64], inner[32], mac[32];
	int r = record_key(key);
	if (r < 0)
		return r;
	lb_sha256 c;
	memset(pad, 0x36, sizeof pad);
	for (size_t i = 0; i < KEY_LEN; i++)
		pad[i] ^= key[i];
	lb_sha256_init(&c);
	lb_sha256_update(&c, pad, sizeof pad);
	/* What the bytes are, first: one record's seal is never another kind's. */
	lb_sha256_update(&c, domain, strlen(domain));
	lb_sha256_update(&c, "\n", 1);
	lb_sha256_update(&c, data, len);
	lb_sha256_final(&c, inner);
	memset(pad, 0x5c, sizeof pad);
	for (size_t i = 0; i < KEY_LEN; i++)
		pad[i] ^= key[i];
	lb_sha256_init(&c);
	lb_sha256_update(&c, pad, sizeof pad);
	lb_sha256_update(&c, inner, sizeof inner);
	lb_sha256_final(&c, mac);
	lb_sha256_hex(mac, hex);
	memset(key, 0, sizeof key);
	memset(pad, 0, sizeof pad);
	return 0;
}

int lb_record_mac_file(const char *dir, const char *name, char hex[65])
{
	LB_AUTOCLOSE int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	LB_AUTOFREE char *data = NULL;
	size_t len = 0;
	int r = lb_read_file_at(dfd, name, (size_t)64 << 20, &data, &len);
	return r < 0 ? r : lb_record_mac(name, data, len, hex);
}

bool lb_record_mac_matches(const char *dir, const char *name, const char *want)
{
	char hex[65];
	if (!want || strlen(want) != 64 || lb_record_mac_file(dir, name, hex) < 0)
		return false;
	/* Not a secret compared: the key is; but no early exit all the same. */
	unsigned diff = 0;
	for (size_t i = 0; i < 64; i++)
		diff |= (unsigned)(hex[i] ^ want[i]);
	return diff == 0;
}

static json_object *parse_bytes(const char *text, size_t len)
{
	if (len > INT32_MAX)
		return NULL;
	json_tokener *tok = json_tokener_new();
	if (!tok)
		return NULL;
	json_object *doc = json_tokener_parse_ex(tok, text, (int)len);
	if (json_tokener_get_error(tok) != json_tokener_success) {
		json_object_put(doc);
		doc = NULL;
	}
	json_tokener_free(tok);
	return doc;
}

static const char *str_of(json_object *o, const char *key)
{
	json_object *v;
	return json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, key, &v) &&
			       json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v)
		       : NULL;
}

static bool hex_equal(const char *a, const char *b)
{
	if (!a || !b || strlen(a) != 64 || strlen(b) != 64)
		return false;
	/* Not a secret compared: the key is; but no early exit all the same. */
	unsigned diff = 0;
	for (size_t i = 0; i < 64; i++)
		diff |= (unsigned)(a[i] ^ b[i]);
	return diff == 0;
}

/* doc without its member drop, as json-c prints a parsed copy of it: a document sealed before
 * it is written and the same document read back from the file print alike (a number keeps
 * the text it was parsed from, a string is escaped the one way). */
static int canonical_mac(const char *domain, json_object *doc, const char *drop, char hex[65])
{
	const char *text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN);
	json_object *copy = text ? parse_bytes(text, strlen(text)) : NULL;
	if (!json_object_is_type(copy, json_type_object)) {
		json_object_put(copy);
		return -EINVAL;
	}
	json_object_object_del(copy, drop);
	const char *plain = json_object_to_json_string_ext(copy, JSON_C_TO_STRING_PLAIN);
	int r = plain ? lb_record_mac(domain, plain, strlen(plain), hex) : -ENOMEM;
	json_object_put(copy);
	return r;
}

int lb_record_result_seal(json_object *result)
{
	char hex[65];
	json_object_object_del(result, "result_mac");
	int r = canonical_mac("result.json", result, "result_mac", hex);
	if (r == 0)
		json_object_object_add(result, "result_mac", json_object_new_string(hex));
	return r;
}

lb_record_seal lb_record_run_seal(const char *run_dir, const char *id)
{
	return lb_record_run_seal_read(run_dir, id, NULL);
}

lb_record_seal lb_record_run_seal_read(const char *run_dir, const char *id,
				       json_object **sealed_result)
{
	if (sealed_result)
		*sealed_result = NULL;
	LB_AUTOCLOSE int dfd = open(run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return LB_SEAL_NONE;
	LB_AUTOFREE char *rtext = NULL, *mtext = NULL;
	size_t rlen = 0, mlen = 0;
	/* One read of each file, sealed and parsed: a file replaced between a check and a
	 * second read could not pass as the one checked. */
	if (lb_read_file_at(dfd, "result.json", (size_t)256 << 20, &rtext, &rlen) < 0 ||
	    lb_read_file_at(dfd, "manifest.json", (size_t)64 << 20, &mtext, &mlen) < 0)
		return LB_SEAL_NONE;
	json_object *result = parse_bytes(rtext, rlen);
	char hex[65];
	lb_record_seal seal = LB_SEAL_NONE;
	if (lb_record_mac("manifest.json", mtext, mlen, hex) == 0 &&
	    hex_equal(hex, str_of(result, "manifest_mac"))) {
		json_object *manifest = parse_bytes(mtext, mlen), *v;
		const char *mid = str_of(manifest, "id"), *rid = str_of(result, "id");
		if (mid && rid && strcmp(mid, rid) == 0 && (!id || strcmp(mid, id) == 0)) {
			/* The sealed manifest says whether result.json was sealed too: deleting
			 * result_mac does not make a record an older labbox's. */
			bool whole = json_object_object_get_ex(manifest, "result_sealed", &v) &&
				     json_object_get_boolean(v);
			seal = !whole ? LB_SEAL_OLD_SCOPE
			       : canonical_mac("result.json", result, "result_mac", hex) == 0 &&
					       hex_equal(hex, str_of(result, "result_mac"))
				       ? LB_SEAL_WHOLE
				       : LB_SEAL_RESULT_CHANGED;
		}
		json_object_put(manifest);
	}
	if (sealed_result && seal == LB_SEAL_WHOLE)
		*sealed_result = result;
	else
		json_object_put(result);
	return seal;
}

lb_record_unsealed lb_record_run_unsealed(const char *run_dir, char *detail, size_t len)
{
	detail[0] = '\0';
	LB_AUTOCLOSE int dfd = open(run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		snprintf(detail, len, "its run directory cannot be opened: %s", strerror(errno));
		return LB_UNSEALED_UNREADABLE;
	}
	LB_AUTOFREE char *text = NULL;
	size_t n = 0;
	int r = lb_read_file_at(dfd, "result.json", (size_t)256 << 20, &text, &n);
	if (r < 0) {
		snprintf(detail, len, "its result.json %s%s",
			 r == -ENOENT	? "is missing"
			 : r == -EFBIG	? "is larger than the 256 MiB labbox reads"
			 : r == -ELOOP	? "is a symbolic link"
			 : r == -EINVAL ? "is not a regular file"
					: "cannot be read: ",
			 r == -ENOENT || r == -EFBIG || r == -ELOOP || r == -EINVAL ? ""
										      : strerror(-r));
		return LB_UNSEALED_UNREADABLE;
	}
	json_tokener *tok = n <= INT32_MAX ? json_tokener_new() : NULL;
	if (!tok) {
		snprintf(detail, len, "its result.json cannot be read: %s", strerror(ENOMEM));
		return LB_UNSEALED_UNREADABLE;
	}
	json_object *doc = json_tokener_parse_ex(tok, text, (int)n);
	enum json_tokener_error e = json_tokener_get_error(tok);
	size_t end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	lb_record_unsealed kind = LB_UNSEALED_FOREIGN;
	if (e != json_tokener_success) {
		/* "continue": the text stopped inside the document, as a cut-short write does */
		if (e == json_tokener_continue)
			snprintf(detail, len, "its result.json is not JSON: it ends inside the document "
				 "after %zu bytes (truncated)", n);
		else
			snprintf(detail, len, "its result.json is not JSON: %s at byte %zu of %zu",
				 json_tokener_error_desc(e), end, n);
		kind = LB_UNSEALED_UNREADABLE;
	} else if (!json_object_is_type(doc, json_type_object)) {
		snprintf(detail, len, "its result.json is not a JSON object");
		kind = LB_UNSEALED_UNREADABLE;
	} else if (str_of(doc, "status") && strcmp(str_of(doc, "status"), "running") == 0) {
		/* labbox seals a record when the run ends: until then it says "running" */
		snprintf(detail, len, "its result.json still says \"running\"");
		kind = LB_UNSEALED_UNFINISHED;
	}
	json_object_put(doc);
	return kind;
}

bool lb_record_run_sealed(const char *run_dir, const char *id)
{
	return lb_record_run_seal(run_dir, id) >= LB_SEAL_OLD_SCOPE;
}

/* The seal older labboxes wrote: invocation and plan only. */
static int sweep_seal_old(json_object *doc, char hex[65])
{
	json_object *inv = json_object_object_get(doc, "invocation");
	json_object *plan = json_object_object_get(doc, "plan");
	if (!inv || !plan)
		return -EINVAL;
	lb_buf b = {0};
	int r = lb_buf_printf(&b, "%s\n%s", json_object_to_json_string_ext(inv, JSON_C_TO_STRING_PLAIN),
			      json_object_to_json_string_ext(plan, JSON_C_TO_STRING_PLAIN));
	if (r == 0)
		r = lb_record_mac("sweep.json", b.data, b.len, hex);
	lb_buf_free(&b);
	return r;
}

int lb_record_sweep_seal(json_object *doc, char hex[65])
{
	if (!json_object_object_get(doc, "invocation") || !json_object_object_get(doc, "plan"))
		return -EINVAL;
	/* Its own domain: an older seal (of invocation and plan) is never taken for this one. */
	return canonical_mac("sweep.json document", doc, "seal", hex);
}

lb_record_seal lb_record_sweep_seal_of(json_object *doc)
{
	char hex[65];
	const char *want = str_of(doc, "seal");
	if (!want)
		return LB_SEAL_NONE;
	if (lb_record_sweep_seal(doc, hex) == 0 && hex_equal(hex, want))
		return LB_SEAL_WHOLE;
	return sweep_seal_old(doc, hex) == 0 && hex_equal(hex, want) ? LB_SEAL_OLD_SCOPE
								       : LB_SEAL_NONE;
}

bool lb_record_sweep_sealed(json_object *doc)
{
	return lb_record_sweep_seal_of(doc) == LB_SEAL_WHOLE;
}
