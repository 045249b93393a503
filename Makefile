# Makefile — builds mls from grammar/ (re2c, Lemon) and src/. Generated C goes to build/gen.
#   make            build ./mls          make test      every test (installs missing deps as root)
#   make run        build and run the main example       make sanitize  tests under ASan+UBSan
#   make bench      benchmarks against R, NumPy and C    make install PREFIX=...
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
LDLIBS := -llapacke -lopenblas -lreadline -lz -lmvec -lm -lpthread
endif

SRCS := $(wildcard src/*.c src/interp/*.c src/backend/*.c src/staging/*.c)
LIBSRCS := $(filter-out src/main.c,$(SRCS))
OBJS := $(LIBSRCS:%.c=$(BUILD)/%.o) $(BUILD)/gen/lexer.o $(BUILD)/gen/parser.o
UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))

.PHONY: all deps deps-install test unit golden examples staged-test repl-test install-test sanitize sanitize-run bench run install clean conformance valgrind
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

# Writes that must not damage files, and signals in script mode (shell-level checks).
robust-test: mls
	tests/robustness/test_files.sh ./mls

# Everything: unit and golden suites, examples, then both suites again under ASan+UBSan.
test: deps-install
	$(MAKE) mls
	$(MAKE) unit
	$(MAKE) golden
	$(MAKE) examples
	$(MAKE) staged-test
	$(MAKE) repl-test
	$(MAKE) install-test
	$(MAKE) robust-test
	$(MAKE) sanitize-run
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
