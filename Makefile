# Makefile — builds mls from grammar/ (re2c, Lemon) and src/. Generated C goes to build/gen.
#   make            build ./mls          make test      every test (installs missing deps as root)
#   make run        build and run the main example       make sanitize  tests under ASan+UBSan
#   make bench      benchmarks against R, NumPy and C    make install PREFIX=...
#   make fuzz       libFuzzer harnesses, FUZZ_SECONDS each   make fuzz-smoke  30 s each (in make test)
PREFIX ?= /usr/local
BUILD ?= build
CC ?= cc
OPT ?= -O2
LEMPAR ?= /usr/share/lemon/lempar.c
WARN = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
ifeq ($(CI),true)
WERROR = -Werror
endif
CPPFLAGS = -Isrc -I$(BUILD)/gen -D_GNU_SOURCE -DMLS_STDLIB_DIR='"$(PREFIX)/share/mls/stdlib"' $(EXTRA_CPPFLAGS)
CFLAGS = -std=c11 $(OPT) -g $(WARN) $(WERROR) $(EXTRA_CFLAGS)
GENFLAGS = -std=c11 $(OPT) -g -Wall -Wno-unused-parameter -Wno-unused-variable -Wno-unused-but-set-variable $(EXTRA_CFLAGS)
LDFLAGS += $(EXTRA_LDFLAGS)
LDLIBS = -llapacke -lopenblas -lreadline -lz -lm -lpthread
# glibc's vector math library (libc6-dev) gives exp and log four lanes at a time (backend/vmath.c)
ifeq ($(shell uname -m),x86_64)
CPPFLAGS += -DMLS_LIBMVEC
LDLIBS = -llapacke -lopenblas -lreadline -lz -lmvec -lm -lpthread
endif
# plots (cairo), the Jupyter kernel (ZeroMQ, jansson): flags from pkg-config, asked when a recipe
# runs (after tools/deps.sh has installed them), not when make reads this file
PKGS = cairo libzmq jansson
CPPFLAGS += $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS += $(shell pkg-config --libs $(PKGS) 2>/dev/null)

SRCS := $(wildcard src/*.c src/interp/*.c src/backend/*.c src/staging/*.c src/plot/*.c src/kernel/*.c)
LIBSRCS := $(filter-out src/main.c,$(SRCS))
OBJS := $(LIBSRCS:%.c=$(BUILD)/%.o) $(BUILD)/gen/lexer.o $(BUILD)/gen/parser.o
UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))

.PHONY: all deps deps-install test unit golden examples staged-test repl-test install-test dml-test robust-test sanitize sanitize-run bench run install clean conformance valgrind \
  fuzz fuzz-build fuzz-smoke fuzz-corpus coverage
all: deps mls

deps:
	@tools/deps.sh
deps-install:
	@tools/deps.sh --install

mls: $(BUILD)/mls
	cp $(BUILD)/mls mls

$(BUILD)/mls: $(BUILD)/src/main.o $(BUILD)/libmls.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/libmls.a: $(OBJS)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/gen/lexer.c: grammar/lexer.re
	@mkdir -p $(dir $@)
	re2c -W --no-generation-date --no-version -o $@ $<

$(BUILD)/gen/parser.c $(BUILD)/gen/parser.h: grammar/parser.y
	@mkdir -p $(BUILD)/gen
	lemon -q -T$(LEMPAR) -d$(BUILD)/gen $<

$(BUILD)/gen/%.o: $(BUILD)/gen/%.c $(BUILD)/gen/parser.h
	$(CC) $(CPPFLAGS) $(GENFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/src/%.o: src/%.c $(BUILD)/gen/parser.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

# the fused kernels' loops vectorize at -O3 (gcc's -O2 leaves them scalar)
$(BUILD)/src/backend/cpu_fused.o: OPT = -O3

$(BUILD)/tests/%: tests/unit/%.c tests/unit/capture.h $(BUILD)/libmls.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libmls.a -lcmocka $(LDLIBS)

-include $(shell find $(BUILD)/src $(BUILD)/gen -name '*.d' 2>/dev/null)

# ---- tests ----
unit: $(UNIT_TESTS)
	@fail=0; for t in $(UNIT_TESTS); do $$t || fail=1; done; exit $$fail

golden: mls
	./mls --run-tests tests/lang/*.test
	@./mls --builtins-md | diff -q - docs/builtins.md >/dev/null || \
	  { echo "docs/builtins.md is stale: run ./mls --builtins-md > docs/builtins.md"; exit 1; }

examples: mls
	@tools/run_examples.sh ./mls

# The same suites on the staged path (LANGUAGE.md §12): every top-level block staged, then
# every user function called as jit(f), against the expected output; then each case eagerly
# and staged at 17 digits, numbers equal to 1e-12 relative; and the examples with --staged.
staged-test: mls
	MLS_TEST_FLAGS=--staged ./mls --run-tests tests/lang/*.test
	MLS_TEST_FLAGS=--jit-all ./mls --run-tests tests/lang/*.test
	MLS_TEST_COMPARE=--staged ./mls --run-tests tests/lang/*.test
	MLS_TEST_COMPARE=--jit-all ./mls --run-tests tests/lang/*.test
	@MLS_FLAGS=--staged tools/run_examples.sh ./mls
	tests/staging/test_dot.sh ./mls

repl-test: mls
	/usr/bin/python3 tests/repl/test_repl.py ./mls

install-test: mls
	tests/install/test_install.sh

# DML scripts (tests/dml/*.dml) run with -nvargs on tests/fixtures/dml, compared with R's results
dml-test: mls
	tests/dml/run.sh ./mls
	tests/dml/nn/run.sh ./mls

# Writes that must not damage files, and signals in script mode (shell-level checks).
robust-test: mls
	tests/robustness/test_files.sh ./mls
	tests/robustness/test_interrupt.sh ./mls

# Everything: unit and golden suites, examples, then both suites again under ASan+UBSan.
test: deps-install
	$(MAKE) mls
	$(MAKE) unit
	$(MAKE) golden
	$(MAKE) examples
	$(MAKE) staged-test
	$(MAKE) repl-test
	$(MAKE) install-test
	$(MAKE) dml-test
	$(MAKE) robust-test
	$(MAKE) sanitize-run
	$(MAKE) fuzz-smoke
	@echo "make test: all suites passed"

conformance: mls
	../shared/conformance/run.py --mls ./mls

# ASan + UBSan build in build/asan, running the unit and golden suites with it.
sanitize: deps-install
	$(MAKE) sanitize-run

sanitize-run:
	$(MAKE) BUILD=build/asan OPT=-O1 EXTRA_CFLAGS='-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all' \
	  EXTRA_LDFLAGS='-fsanitize=address,undefined' build/asan/mls $(patsubst $(BUILD)/%,build/asan/%,$(UNIT_TESTS))
	@fail=0; for t in $(patsubst $(BUILD)/%,build/asan/%,$(UNIT_TESTS)); do ASAN_OPTIONS=detect_leaks=1 $$t || fail=1; done; \
	  ASAN_OPTIONS=detect_leaks=1 MLS_PATH=$(CURDIR)/stdlib build/asan/mls --run-tests tests/lang/*.test || fail=1; \
	  ASAN_OPTIONS=detect_leaks=1 MLS_PATH=$(CURDIR)/stdlib MLS_TEST_FLAGS=--jit-all build/asan/mls --run-tests \
	    tests/lang/staging.test tests/lang/grad.test tests/lang/functions.test tests/lang/control.test || fail=1; exit $$fail

# ---- fuzzing (tests/fuzz, docs/robustness.md): libFuzzer harnesses built by clang with ASan
# and UBSan into build/fuzz. `make fuzz` runs each for FUZZ_SECONDS, FUZZ_JOBS at a time, and
# keeps what it finds in build/fuzz/corpus/<harness>; `make fuzz-smoke` runs each for
# FUZZ_SMOKE_SECONDS from the seeds of tests/fuzz/corpus and fails on any crash, sanitizer
# report, leak or hang. A failing input is saved as build/fuzz/crash-<harness>-*.
FUZZ_SECONDS ?= 600
FUZZ_SMOKE_SECONDS ?= 30
FUZZ_JOBS ?= 2
FUZZ_READERS := csv text mm npy idx ckpt mtd gz
FUZZERS := parse eval diff $(addprefix read_,$(FUZZ_READERS))
FUZZ_BINS = $(addprefix $(FUZZ_BUILD)/fuzz_,$(FUZZERS))
# FUZZ_SAN=-fsanitize=undefined FUZZ_BUILD=build/fuzz-ub: a build without ASan, 3-5 times faster
FUZZ_SAN ?= -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_BUILD ?= build/fuzz
FUZZ_LINK = $(CC) $(CPPFLAGS) $(CFLAGS) -DMLS_FUZZ_STDLIB='"$(CURDIR)/stdlib"' -fsanitize=fuzzer $(FUZZ_SAN)

fuzz-build: deps-install
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=clang OPT=-O1 EXTRA_CFLAGS='-fsanitize=fuzzer-no-link $(FUZZ_SAN)' $(FUZZ_BINS)

$(FUZZ_BUILD)/fuzz_read_%: tests/fuzz/fuzz_read.c tests/fuzz/fuzz.h $(FUZZ_BUILD)/libmls.a
	$(FUZZ_LINK) -DFUZZ_FORMAT=$* -o $@ $< $(FUZZ_BUILD)/libmls.a $(LDLIBS)

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_BUILD)/libmls.a
	$(FUZZ_LINK) -o $@ $< $(FUZZ_BUILD)/libmls.a $(LDLIBS)

# one harness: fuzz-run-NAME (FUZZ_TIME seconds, and the directory new inputs go to)
fuzz-run-%:
	@mkdir -p $(NEWDIR)/$*
	@case $* in parse|eval|diff) o="-dict=tests/fuzz/mls.dict tests/fuzz/corpus/programs";; *) o=tests/fuzz/corpus/$*;; esac; \
	  if OPENBLAS_NUM_THREADS=1 $(FUZZ_BUILD)/fuzz_$* -max_total_time=$(FUZZ_TIME) $(FUZZ_SEED) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	       -artifact_prefix=$(FUZZ_BUILD)/crash-$*- $(NEWDIR)/$* $$o </dev/null >$(FUZZ_BUILD)/$*.log 2>&1; \
	  then echo "fuzz $*: $$(grep -o 'stat::number_of_executed_units: *[0-9]*' $(FUZZ_BUILD)/$*.log | grep -o '[0-9]*$$') runs, no failure"; \
	  else echo "fuzz $*: FAILED ($(FUZZ_BUILD)/$*.log, input $(FUZZ_BUILD)/crash-$*-*)"; tail -40 $(FUZZ_BUILD)/$*.log; exit 1; fi

fuzz: fuzz-build
	$(MAKE) -k -j$(FUZZ_JOBS) FUZZ_TIME=$(FUZZ_SECONDS) NEWDIR=$(FUZZ_BUILD)/corpus $(addprefix fuzz-run-,$(FUZZERS))

# (new inputs go to $(FUZZ_BUILD)/seen, emptied first: the smoke run starts from the seeds alone;
# a fixed -seed makes it the same run every time, so a known open finding cannot make CI flaky)
fuzz-smoke: fuzz-build
	rm -rf $(FUZZ_BUILD)/seen
	$(MAKE) -k -j2 FUZZ_TIME=$(FUZZ_SMOKE_SECONDS) FUZZ_SEED=-seed=1 NEWDIR=$(FUZZ_BUILD)/seen $(addprefix fuzz-run-,$(FUZZERS))

# Regenerates tests/fuzz/corpus from tests/lang, examples, stdlib and tests/fixtures.
fuzz-corpus: mls
	python3 tests/fuzz/make_corpus.py ./mls

valgrind: mls
	tools/valgrind.sh ./mls

bench: mls
	bench/run.sh ./mls

run: deps-install
	$(MAKE) mls
	./mls examples/tour.mls

install: mls
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/mls/stdlib $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 mls $(DESTDIR)$(PREFIX)/bin/mls
	cp -r stdlib/. $(DESTDIR)$(PREFIX)/share/mls/stdlib/
	install -m 644 man/mls.1 $(DESTDIR)$(PREFIX)/share/man/man1/mls.1

clean:
	rm -rf build mls

# ---- coverage (gcov/lcov, docs/robustness.md): an instrumented build in build/cov runs the unit,
# golden (eager, staged, jit-all), REPL, example, DML and robustness suites, then prints the line and branch
# figures of src/ (the generated lexer and parser left out); the HTML report goes to build/cov/html.
# A failing suite is reported but does not stop the figures.
COV_BUILD ?= build/cov
COV_RC = --rc lcov_branch_coverage=1
coverage: deps-install
	@find $(COV_BUILD) -name '*.gcda' -delete 2>/dev/null || true
	$(MAKE) BUILD=$(COV_BUILD) OPT=-O0 EXTRA_CFLAGS=--coverage EXTRA_LDFLAGS=--coverage \
	  $(COV_BUILD)/mls $(patsubst $(BUILD)/%,$(COV_BUILD)/%,$(UNIT_TESTS))
	-@for t in $(patsubst $(BUILD)/%,$(COV_BUILD)/%,$(UNIT_TESTS)); do $$t >/dev/null 2>&1 || echo "coverage: $$t failed"; done
	-MLS_PATH=$(CURDIR)/stdlib $(COV_BUILD)/mls --run-tests tests/lang/*.test
	-MLS_PATH=$(CURDIR)/stdlib MLS_TEST_FLAGS=--staged $(COV_BUILD)/mls --run-tests tests/lang/*.test
	-MLS_PATH=$(CURDIR)/stdlib MLS_TEST_FLAGS=--jit-all $(COV_BUILD)/mls --run-tests tests/lang/*.test
	-MLS_PATH=$(CURDIR)/stdlib /usr/bin/python3 tests/repl/test_repl.py $(COV_BUILD)/mls
	-MLS_PATH=$(CURDIR)/stdlib tools/run_examples.sh $(COV_BUILD)/mls
	-MLS_PATH=$(CURDIR)/stdlib tests/dml/run.sh $(COV_BUILD)/mls
	-MLS_PATH=$(CURDIR)/stdlib tests/robustness/test_files.sh $(COV_BUILD)/mls
	lcov -q $(COV_RC) --capture --directory $(COV_BUILD) -o $(COV_BUILD)/all.info
	lcov -q $(COV_RC) --extract $(COV_BUILD)/all.info '$(CURDIR)/src/*' -o $(COV_BUILD)/src.info
	genhtml -q $(COV_RC) --legend -o $(COV_BUILD)/html $(COV_BUILD)/src.info
	@lcov $(COV_RC) --summary $(COV_BUILD)/src.info 2>&1 | grep -E 'lines|functions|branches'
