# labbox build. `make` -> build/labbox; `make check` -> every test; `make demo` -> the quickstart.
# Variables a caller may set: CC, PREFIX, SAN=1 (AddressSanitizer + UBSan build in build-san/).

CC      ?= cc
PREFIX  ?= /usr/local
PKGS    := json-c yaml-0.1 libseccomp sqlite3
SAN     ?= 0

ifeq ($(SAN),1)
BUILD   := build-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
BUILD   := build
SANFLAGS :=
endif

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
VERSION    := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

CFLAGS  ?= -O2 -g
CFLAGS  += -std=c17 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wformat=2 \
           -Iinclude -I$(TS_CORE)/include $(PKG_CFLAGS) -DLABBOX_VERSION='"$(VERSION)"' $(SANFLAGS) -MMD -MP
# The libraries are linked statically (libc stays shared): resolving seven shared objects
# costs a third of a millisecond at every start, which `labbox exec` pays for each command.
LDLIBS  += -Wl,-Bstatic $(PKG_LIBS) -Wl,-Bdynamic -lm -lpthread -ldl
LDFLAGS += $(SANFLAGS)

LIB_SRC  := $(sort $(filter-out src/cli/%,$(wildcard src/*/*.c)))
CLI_SRC  := $(sort $(wildcard src/cli/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
# The tree-sitter-python grammar (src/check parses Python with it): fetched, integrity-checked
# and unpacked by scripts/deps into third_party/, never committed. Generated code, so it is
# built without our warning flags and without sanitizers.
TS_DIR   := third_party/tree-sitter-python/src
# The tree-sitter core 0.25 (its amalgamation lib.c), fetched the same way from the npm
# package `tree-sitter`: it replaced Debian's libtree-sitter 0.20.7 (docs/decisions.md).
TS_CORE  := third_party/tree-sitter/lib
TS_SRC   := $(TS_DIR)/parser.c $(TS_DIR)/scanner.c $(TS_CORE)/src/lib.c
TS_OBJ   := $(TS_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all deps check unit e2e escape fuzz fuzz-smoke bench demo install clean
all: $(BUILD)/labbox

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/$(TS_DIR)/%.o: $(TS_DIR)/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -g -w -I$(TS_DIR) -c $< -o $@

$(BUILD)/obj/$(TS_CORE)/src/lib.o: $(TS_CORE)/src/lib.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_DEFAULT_SOURCE -O2 -g -w -I$(TS_CORE)/src -I$(TS_CORE)/include -c $< -o $@

$(TS_SRC):
	@echo "make: $@ is missing: run scripts/deps to fetch tree-sitter and its Python grammar" >&2
	@exit 1

# The Colab worker (src/backend/colab_worker.py) is embedded in the binary as bytes, so the
# worker labbox writes into a Drive folder is always this build's own.
%/gen/colab_worker.inc: src/backend/colab_worker.py
	@mkdir -p $(dir $@)
	od -An -v -tx1 $< | sed -e 's/\([0-9a-f][0-9a-f]\)/0x\1,/g' > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/src/backend/colab.o: $(BUILD)/gen/colab_worker.inc
$(BUILD)/obj/src/backend/colab.o: CFLAGS += -I$(BUILD)/gen
build-fuzz/obj/src/backend/colab.o: build-fuzz/gen/colab_worker.inc
build-fuzz/obj/src/backend/colab.o: FUZZ_CFLAGS += -Ibuild-fuzz/gen

# The runtime gate's Python source (src/gate/sitecustomize.py) as a C array, so the binary
# carries it and writes it into each run (src/gate/gate.c).
GATE_PY := src/gate/sitecustomize.py
define gate_source_c
	@mkdir -p $(dir $@)
	{ echo '/* generated from $(GATE_PY) by the Makefile */'; echo '#include <stddef.h>'; \
	  echo 'extern const char lb_gate_source[]; extern const size_t lb_gate_source_len;'; \
	  echo 'const char lb_gate_source[] = {'; \
	  od -An -v -tx1 $< | sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '0x00};'; echo 'const size_t lb_gate_source_len = sizeof lb_gate_source - 1;'; } > $@
endef
$(BUILD)/gen/gate_source.c: $(GATE_PY)
	$(gate_source_c)
GEN_OBJ := $(BUILD)/obj/gen/gate_source.o
$(GEN_OBJ): $(BUILD)/gen/gate_source.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/liblabbox.a: $(TS_OBJ) $(LIB_OBJ) $(GEN_OBJ)
	@mkdir -p $(dir $@)
	@rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/labbox: $(CLI_OBJ) $(BUILD)/liblabbox.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/liblabbox.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MF $@.d -o $@ $< $(BUILD)/liblabbox.a $(LDFLAGS) $(LDLIBS) -lcmocka

deps:
	@scripts/deps

unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done

# The suites run on every core (pytest-xdist): each test makes its own experiment, run
# directory and services, so none waits on another's. PYTEST_JOBS=0 runs them in one process.
PYTEST_JOBS ?= auto
PYTEST := /usr/bin/python3 -m pytest -q -p no:cacheprovider -n $(PYTEST_JOBS) --dist loadgroup
e2e: $(BUILD)/labbox
	LABBOX_BIN=$(abspath $(BUILD)/labbox) $(PYTEST) tests/e2e

# The hostile-experiment corpus: containment checked from the host's side. The tests that
# read the host's free disk or shared memory as a whole (host_wide) run after the others, alone.
escape: $(BUILD)/labbox
	LABBOX_BIN=$(abspath $(BUILD)/labbox) $(PYTEST) -m "not host_wide" tests/escape
	LABBOX_BIN=$(abspath $(BUILD)/labbox) $(PYTEST) -n 0 -m host_wide tests/escape

# `check` installs what is missing, builds, and runs everything: unit tests, end-to-end tests and
# the hostile-experiment corpus on the normal build, all three again on the sanitizer build, a
# short smoke run of each fuzz target; then, when run as root, the end-to-end tests and the corpus
# once more as an ordinary user (tests/escape/run-as-user creates one), on both builds.
check: deps
	$(MAKE) all unit e2e escape
	$(MAKE) SAN=1 all unit e2e escape
	$(MAKE) fuzz-smoke
	@if [ "$$(id -u)" = 0 ]; then \
	  PYTEST_JOBS=$(PYTEST_JOBS) tests/escape/run-as-user && \
	  LABBOX_BIN=$(abspath build-san/labbox) PYTEST_JOBS=$(PYTEST_JOBS) tests/escape/run-as-user; \
	else echo "make check: not root, so the ordinary-user pass is this one"; fi

FUZZ_SRC := $(sort $(wildcard fuzz/fuzz_*.c))
FUZZ_BIN := $(FUZZ_SRC:fuzz/%.c=build-fuzz/%)
# Each source is compiled once for all fuzz targets, instrumented but without libFuzzer's main.
FUZZ_CFLAGS := -std=c17 -D_GNU_SOURCE -g -O1 -Iinclude -I$(TS_CORE)/include $(PKG_CFLAGS) -DLABBOX_VERSION='"$(VERSION)"'
FUZZ_OBJ := $(LIB_SRC:%.c=build-fuzz/obj/%.o)
# Kept between builds: make would otherwise delete them as intermediates and rebuild them all.
.SECONDARY: $(FUZZ_OBJ) build-fuzz/obj/gen/gate_source.o
# -MMD -MP: an object is built again when a header it includes changed (a struct grown by a
# field, read at the old offsets by a stale object, corrupts what the fuzzer reports).
build-fuzz/obj/src/%.o: src/%.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -MMD -MP -fsanitize=fuzzer-no-link,address,undefined -c $< -o $@
build-fuzz/gen/gate_source.c: $(GATE_PY)
	$(gate_source_c)
build-fuzz/obj/gen/gate_source.o: build-fuzz/gen/gate_source.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -c $< -o $@
build-fuzz/%: fuzz/%.c $(FUZZ_OBJ) build-fuzz/obj/tree-sitter-python.o build-fuzz/obj/gen/gate_source.o
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $< $(FUZZ_OBJ) \
	  build-fuzz/obj/tree-sitter-python.o build-fuzz/obj/gen/gate_source.o $(PKG_LIBS)
build-fuzz/obj/tree-sitter-python.o: $(TS_SRC)
	@mkdir -p $(dir $@)
	clang -std=c11 -O1 -g -w -I$(TS_DIR) -c $(TS_DIR)/parser.c -o $@.parser.o
	clang -std=c11 -O1 -g -w -I$(TS_DIR) -c $(TS_DIR)/scanner.c -o $@.scanner.o
	clang -std=c11 -D_DEFAULT_SOURCE -O1 -g -w -I$(TS_CORE)/src -I$(TS_CORE)/include \
	  -c $(TS_CORE)/src/lib.c -o $@.core.o
	ld -r -o $@ $@.parser.o $@.scanner.o $@.core.o
# A crash fails the target (its report is shown); a clean run prints its last two lines.
# The smoke run's seed is fixed, so what `make check` finds depends on the code alone and a
# clean clone finds what a local clean run found; `make fuzz` explores with fresh seeds for
# FUZZ_SECONDS a target, keeping what it learns in build-fuzz/corpus-*.
FUZZ_SEED ?= 1
FUZZ_SECONDS ?= 120
fuzz: $(FUZZ_BIN)
	@set -e; for f in $(FUZZ_BIN); do echo "== $$f"; n=$$(basename $$f); mkdir -p build-fuzz/corpus-$$n; \
	  if ! $$f -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -artifact_prefix=build-fuzz/$$n- \
	       build-fuzz/corpus-$$n fuzz/seeds/$$n > build-fuzz/$$n.log 2>&1; then \
	    tail -n 60 build-fuzz/$$n.log; echo "fuzz: $$n found a crash (build-fuzz/$$n-*)"; exit 1; fi; \
	  tail -n 2 build-fuzz/$$n.log; done
fuzz-smoke: $(FUZZ_BIN)
	@set -e; for f in $(FUZZ_BIN); do echo "== $$f"; n=$$(basename $$f); mkdir -p build-fuzz/corpus-$$n; \
	  if ! $$f -seed=$(FUZZ_SEED) -runs=20000 -max_len=4096 -artifact_prefix=build-fuzz/$$n- build-fuzz/corpus-$$n \
	       fuzz/seeds/$$n > build-fuzz/$$n.log 2>&1; then \
	    tail -n 60 build-fuzz/$$n.log; echo "fuzz-smoke: $$n found a crash (build-fuzz/$$n-*)"; exit 1; fi; \
	  tail -n 2 build-fuzz/$$n.log; done

bench: $(BUILD)/labbox
	LABBOX_BIN=$(abspath $(BUILD)/labbox) /usr/bin/python3 bench/startup

# bench/collect: metric-parsing throughput on a generated 1 GiB log, the pip freeze cache, and
# `labbox run` against bare python3 (bench/collect --help). Its driver links the library.
BENCH_COLLECT := $(BUILD)/bench/collect_throughput
$(BENCH_COLLECT): bench/collect_throughput.c $(BUILD)/liblabbox.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MF $@.d -o $@ $< $(BUILD)/liblabbox.a $(LDFLAGS) $(LDLIBS)
# bench/check: labbox check against Bandit; its parse-floor driver links the library's parser.
BENCH_PARSE := $(BUILD)/bench/check_parse
$(BENCH_PARSE): bench/check_parse.c $(BUILD)/liblabbox.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MF $@.d -o $@ $< $(BUILD)/liblabbox.a $(LDFLAGS) $(LDLIBS)
.PHONY: bench-check
bench-check: $(BUILD)/labbox $(BENCH_PARSE)
	LABBOX_BIN=$(abspath $(BUILD)/labbox) /usr/bin/python3 bench/check
# bench/gate: the runtime gate's cost on numpy and torch loops, with and without it.
.PHONY: bench-gate
bench-gate: $(BUILD)/labbox
	LABBOX_BIN=$(abspath $(BUILD)/labbox) /usr/bin/python3 bench/gate
bench: bench-gate
.PHONY: bench-collect
bench-collect: $(BUILD)/labbox $(BENCH_COLLECT)
	LABBOX_BIN=$(abspath $(BUILD)/labbox) LABBOX_BENCH_COLLECT=$(abspath $(BENCH_COLLECT)) \
	  /usr/bin/python3 bench/collect
bench: bench-collect

# bench/disk: what a --disk-limit that is exp/'s own file system costs a run (root).
.PHONY: bench-disk
bench-disk: $(BUILD)/labbox
	LABBOX_BIN=$(abspath $(BUILD)/labbox) /usr/bin/python3 bench/disk
bench: bench-disk

# bench/backends: `labbox run --mode docker` against `docker run` with the same flags, on
# DOCKER_HOST or a private dockerd (tests/services/dockerd); bench/backends --help.
.PHONY: bench-backends
bench-backends: $(BUILD)/labbox
	LABBOX_BIN=$(abspath $(BUILD)/labbox) /usr/bin/python3 bench/backends
bench: bench-backends

# The runs directory is a fresh one of this user's in /tmp: as root (sudo make demo) labbox
# refuses a runs directory below a checkout another user owns (docs/decisions.md, "The runs
# directory and every directory above it are root's or the user's").
demo: deps
	$(MAKE) all
	@runs=$$(mktemp -d "$${TMPDIR:-/tmp}/labbox-demo.XXXXXX") && \
	echo "labbox run --runs-dir $$runs --python /usr/bin/python3 examples/quickstart" && \
	$(BUILD)/labbox run --runs-dir "$$runs" --python /usr/bin/python3 examples/quickstart

# Man pages and bash/zsh completions, generated from the binary's own --help text (one
# source: they cannot drift from it), and a pkg-config file for C programs that link the
# library the CLI is built on.
.PHONY: man
man: $(BUILD)/man/.stamp
$(BUILD)/man/.stamp: $(BUILD)/labbox scripts/manpages
	rm -rf $(BUILD)/man
	/usr/bin/python3 scripts/manpages $(BUILD)/labbox $(BUILD)/man
	touch $@

# labbox.pc is written at install time: it names the PREFIX of this install.
install: $(BUILD)/labbox $(BUILD)/liblabbox.a $(BUILD)/man/.stamp
	install -D -m 0755 $(BUILD)/labbox $(DESTDIR)$(PREFIX)/bin/labbox
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/include/labbox
	install -m 0644 $(BUILD)/man/man1/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -D -m 0644 $(BUILD)/man/completions/labbox.bash \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions/labbox
	install -D -m 0644 $(BUILD)/man/completions/_labbox $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_labbox
	install -D -m 0644 $(BUILD)/liblabbox.a $(DESTDIR)$(PREFIX)/lib/liblabbox.a
	install -m 0644 include/labbox/*.h $(DESTDIR)$(PREFIX)/include/labbox/
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$${prefix}/lib' 'includedir=$${prefix}/include' '' \
	  'Name: labbox' 'Description: run research experiments in a sandbox; the library of the labbox CLI' \
	  'Version: $(VERSION)' 'Requires.private: $(PKGS)' 'Cflags: -I$${includedir}' \
	  'Libs: -L$${libdir} -llabbox' 'Libs.private: -lm -lpthread -ldl' \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/labbox.pc

clean:
	rm -rf build build-san build-fuzz

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(UNIT_BIN:=.d) $(FUZZ_OBJ:.o=.d)

# bench/sweep: `labbox sweep --jobs 2` on a 2 x 8 grid against the same cells under xargs -P 2;
# bench-sweep-slurm: the Slurm job array against as many single sbatch calls (SLURM_CONF's
# cluster, else, as root, one of tests/services/slurm).
.PHONY: bench-sweep bench-sweep-slurm
bench-sweep: $(BUILD)/labbox
	LABBOX_BIN=$(abspath $(BUILD)/labbox) /usr/bin/python3 bench/sweep
bench-sweep-slurm: $(BUILD)/labbox
	LABBOX_BIN=$(abspath $(BUILD)/labbox) /usr/bin/python3 bench/sweep --slurm
bench: bench-sweep
