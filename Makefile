# Makefile — builds mls from grammar/ (re2c, Lemon) and src/. Generated C goes to build/gen.
#   make            build ./mls (in parallel; V=1 shows the commands)   make test  every test (installs missing deps as root)
#   make run        build and run the main example       make sanitize  tests under ASan+UBSan
#   make bench      benchmarks against R, NumPy and C    make install PREFIX=...
#   make fuzz       libFuzzer harnesses, FUZZ_SECONDS each   make fuzz-smoke  a fixed count each (in make test)
PREFIX ?= /usr/local
BUILD ?= build
# parallel by default, one job a core (an explicit -jN on the command line wins; sub-makes share
# the top one's jobs); one short line
# a step (CC src/ops/ew.c), the full command lines with V=1
ifeq ($(MAKELEVEL),0)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif
ifeq ($(V),1)
Q :=
say := @true
else
Q := @
say := @printf '  %-6s %s\n'
endif
CC ?= cc
OPT ?= -O2
LEMPAR ?= /usr/share/lemon/lempar.c
# -Werror=switch: a switch over the op codes with no default that misses one (a derivative
# rule, ...) does not build (docs/architecture.md, "Adding an op")
WARN = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter -Werror=switch
ifeq ($(CI),true)
WERROR = -Werror
endif
CPPFLAGS = -Isrc -I$(BUILD)/gen -D_GNU_SOURCE -DMLS_STDLIB_DIR='"$(PREFIX)/share/mls/stdlib"' $(EXTRA_CPPFLAGS)
CFLAGS = -std=c11 $(OPT) -g $(WARN) $(WERROR) $(EXTRA_CFLAGS)
GENFLAGS = -std=c11 $(OPT) -g -Wall -Wno-unused-parameter -Wno-unused-variable -Wno-unused-but-set-variable $(EXTRA_CFLAGS)
LDFLAGS += $(EXTRA_LDFLAGS)
LDLIBS = -lreadline -lz -lm -lpthread -ldl
# OpenBLAS, LAPACKE and SuiteSparse's CHOLMOD and UMFPACK (libopenblas-dev, liblapacke-dev,
# libsuitesparse-dev; CHOLMOD: sparse Cholesky for solve() and cholesky() of a sparse matrix,
# UMFPACK: sparse LU for solve() of any other square sparse matrix, docs/sparse.md) are loaded
# with dlopen on their first call (backend/dynlibs.c), by the sonames
# of the libraries the linker finds here: loading OpenBLAS costs about 2 ms, which a run that
# multiplies no matrix does not pay.
soname = $(or $(shell readelf -d $$($(CC) -print-file-name=lib$(1).so) 2>/dev/null | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p'),lib$(1).so)
$(BUILD)/src/backend/dynlibs.o: CPPFLAGS += -DMLS_SONAME_OPENBLAS='"$(call soname,openblas)"' \
  -DMLS_SONAME_LAPACKE='"$(call soname,lapacke)"' -DMLS_SONAME_CHOLMOD='"$(call soname,cholmod)"' \
  -DMLS_SONAME_UMFPACK='"$(call soname,umfpack)"'
# glibc's vector math library (libc6-dev) gives exp and log four lanes at a time (backend/vmath.c)
ifeq ($(shell uname -m),x86_64)
CPPFLAGS += -DMLS_LIBMVEC
LDLIBS = -lreadline -lz -lmvec -lm -lpthread -ldl
endif
# ---- plugins (src/plugin.h, docs/architecture.md "Plugins"): plots (cairo), the Jupyter kernel
# (ZeroMQ, jansson, OpenSSL) and MPI (OpenMPI) are shared libraries beside the binary, loaded with
# dlopen on first use, so that mls itself links none of them and starts in a few milliseconds.
# Each is built when its libraries are found (pkg-config, mpicc) when make reads this file;
# PLOT=0, KERNEL=0, MPI=0 leave one out. The binary exports to them (--dynamic-list) just the
# functions their objects call ($(BUILD)/plugin.syms, from nm).
PLOT ?= $(if $(shell pkg-config --exists cairo 2>/dev/null && echo y),1,0)
KERNEL ?= $(if $(shell pkg-config --exists libzmq jansson libcrypto 2>/dev/null && echo y),1,0)
PLOT_LIBS = $(shell pkg-config --libs cairo 2>/dev/null) -lm
KERNEL_LIBS = $(shell pkg-config --libs libzmq jansson libcrypto 2>/dev/null) -lpthread -lm
PKGS = cairo libzmq jansson libcrypto
CPPFLAGS += $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# jansson (one small library, no dependencies) stays linked: frames' transform specs read JSON
LDLIBS += $(shell pkg-config --libs jansson 2>/dev/null || echo -ljansson)
PLOT_PLUGIN_OBJS = $(BUILD)/src/plot/render.pic.o $(BUILD)/src/plot/scale.pic.o
KERNEL_PLUGIN_OBJS = $(BUILD)/src/kernel/kernel.pic.o $(BUILD)/src/kernel/wire.pic.o
MPI_PLUGIN_OBJS = $(BUILD)/src/mpi/mpi.pic.o $(BUILD)/src/mpi/header.pic.o $(BUILD)/src/mpi/entry.pic.o

# ---- CUDA (issue 10, docs/gpu.md): when nvcc is found (or CUDA=1), the GPU backend is built
# as the plugin $(BUILD)/libmls_cuda.so, which mls loads on first use (--device gpu); the
# binary itself links no CUDA library. CUDA=0 builds without it. CUDA_ARCH: compute
# capabilities to compile for (PTX of the last one is embedded for newer GPUs).
ifeq ($(origin NVCC),undefined)
NVCC := $(firstword $(shell command -v nvcc 2>/dev/null) $(wildcard /usr/local/cuda/bin/nvcc))
endif
ifeq ($(BUILD),build)
CUDA ?= $(if $(NVCC),1,0)
else
CUDA ?= 0
endif
CUDA_ARCH ?= 80 90
ifeq ($(CUDA),1)
ifeq ($(NVCC),)
$(error CUDA=1 but nvcc was not found (install the CUDA toolkit or set NVCC=/path/to/nvcc))
endif
# the toolkit's root as nvcc itself reports it (nvcc may be a link or a wrapper elsewhere on PATH)
CUDA_HOME := $(firstword $(shell $(NVCC) --dryrun -E -x cu /dev/null 2>&1 | sed -n 's/^\#\$$ TOP=//p') \
  $(patsubst %/bin/nvcc,%,$(realpath $(NVCC))))
NVRTC_H := $(firstword $(wildcard $(CUDA_HOME)/include/nvrtc.h $(CUDA_HOME)/targets/*/include/nvrtc.h \
  /usr/local/cuda/include/nvrtc.h /usr/include/nvrtc.h))
CPPFLAGS += -DMLS_CUDA
CUDA_PLUGIN := $(BUILD)/libmls_cuda.so
CUDA_OBJS := $(patsubst src/%.cu,$(BUILD)/src/%.o,$(wildcard src/backend/cuda/*.cu)) $(BUILD)/src/backend/cuda/backend.o
NVCCFLAGS = -O3 -std=c++17 -Isrc -Xcompiler -fPIC,-Wall $(foreach a,$(CUDA_ARCH),-gencode arch=compute_$(a),code=sm_$(a)) \
  -gencode arch=compute_$(lastword $(CUDA_ARCH)),code=compute_$(lastword $(CUDA_ARCH))
endif

SRCS := $(wildcard src/*.c src/ops/*.c src/interp/*.c src/backend/*.c src/staging/*.c src/plot/*.c src/kernel/*.c src/check/*.c src/frame/*.c)
# MPI (issue 14, docs/mpi.md): MPI=1 builds the plugin $(BUILD)/libmls_mpi.so, src/mpi/mpi.c
# compiled with mpicc's flags and -DMLS_MPI; the default is 1 when mpicc is on PATH. The binary
# holds the same file compiled without MLS_MPI (the one-process version, renamed by solo.h) and
# load.c, which loads the plugin under mpirun. MPI=0 builds no plugin.
MPI ?= $(if $(shell command -v mpicc 2>/dev/null),1,0)
SRCS += $(filter-out src/mpi/entry.c,$(wildcard src/mpi/*.c))
ifeq ($(MPI),1)
ifeq ($(shell command -v mpicc 2>/dev/null),)
$(error MPI=1 needs mpicc on PATH (apt-get install libopenmpi-dev openmpi-bin), or build with MPI=0)
endif
MPI_CPPFLAGS := -DMLS_MPI $(shell mpicc --showme:compile 2>/dev/null)
MPI_LIBS := $(shell mpicc --showme:link 2>/dev/null)
endif
# libxsmm (docs/architecture.md "Small products"): XSMM=1 builds the plugin $(BUILD)/libmls_xsmm.so,
# src/backend/xsmm/xsmm.c linked with the static libxsmm of libxsmm-dev (Debian ships no shared
# one), whose JIT-made kernels compute the small and skinny products; the CPU backend loads it on
# the first product that fits (backend/dynlibs.c dl_xsmm). The default is 1 when libxsmm.a is
# found; XSMM=0 builds no plugin, and every product is OpenBLAS's.
XSMM_LIB ?= $(firstword $(wildcard /usr/lib/libxsmm.a /usr/lib/$(shell $(CC) -dumpmachine 2>/dev/null)/libxsmm.a))
XSMM ?= $(if $(XSMM_LIB),1,0)
XSMM_LIBS = $(XSMM_LIB) $(dir $(XSMM_LIB))libxsmmnoblas.a -lpthread -lm -ldl
XSMM_PLUGIN_OBJS = $(BUILD)/src/backend/xsmm/xsmm.pic.o
PLUGIN_LIBS := $(if $(filter 1,$(PLOT)),$(BUILD)/libmls_plot.so) $(if $(filter 1,$(KERNEL)),$(BUILD)/libmls_kernel.so) \
  $(if $(filter 1,$(MPI)),$(BUILD)/libmls_mpi.so) $(if $(filter 1,$(XSMM)),$(BUILD)/libmls_xsmm.so)
PLUGIN_OBJS := $(if $(filter 1,$(PLOT)),$(PLOT_PLUGIN_OBJS)) $(if $(filter 1,$(KERNEL)),$(KERNEL_PLUGIN_OBJS)) \
  $(if $(filter 1,$(MPI)),$(MPI_PLUGIN_OBJS))
LIBSRCS := $(filter-out src/main.c src/plot/render.c src/kernel/kernel.c src/kernel/wire.c,$(SRCS))
OBJS := $(LIBSRCS:%.c=$(BUILD)/%.o) $(BUILD)/gen/lexer.o $(BUILD)/gen/parser.o
UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))

.PHONY: test-gpu bench-gpu
.PHONY: all deps deps-install test unit golden examples staged-test sparse-test repl-test install-test dml-test robust-test kernel-test sanitize sanitize-run bench run install clean conformance valgrind \
  fuzz fuzz-build fuzz-smoke fuzz-corpus editors-test FORCE coverage
all: deps mls

deps:
	@tools/deps.sh
deps-install:
	@tools/deps.sh --install

mls: $(BUILD)/mls $(CUDA_PLUGIN)
	$(Q)cp $(BUILD)/mls mls

ifeq ($(CUDA),1)
$(BUILD)/src/backend/cuda/%.o: src/backend/cuda/%.cu src/backend/cuda/cuda.h src/backend/cuda/cuda_impl.h src/backend/scalar.h src/ops/ops.def
	@mkdir -p $(dir $@)
	$(say) NVCC $<
	$(Q)$(NVCC) $(NVCCFLAGS) -c -o $@ $<

$(BUILD)/src/backend/cuda/backend.o: src/backend/cuda/backend.c src/backend/cuda/cuda.h src/backend/backend.h src/tensor.h \
  src/ops/ops.def $(BUILD)/gen/scalar_h.inc $(BUILD)/gen/ops_def.inc
	@mkdir -p $(dir $@)
	$(say) CC $<
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -c -o $@ $<

# scalar.h as a C string: NVRTC compiles it into every generated kernel (fusion groups)
$(BUILD)/gen/scalar_h.inc: src/backend/scalar.h
	@mkdir -p $(dir $@)
	sed 's/\\/\\\\/g; s/"/\\"/g; s/^/"/; s/$$/\\n"/' $< > $@
$(BUILD)/gen/ops_def.inc: src/ops/ops.def
	@mkdir -p $(dir $@)
	sed 's/\\/\\\\/g; s/"/\\"/g; s/^/"/; s/$$/\\n"/' $< > $@

# NVRTC compiles the fusion groups' headers (every elementwise formula) without a GPU
$(BUILD)/nvrtc_check: tests/gpu/nvrtc_check.c src/backend/cuda/nvrtc_headers.h src/ops/ops.def $(BUILD)/gen/scalar_h.inc $(BUILD)/gen/ops_def.inc
	$(say) CCLD $@
	$(Q)$(CC) $(CPPFLAGS) -I$(dir $(NVRTC_H)) $(CFLAGS) -o $@ $< -L$(CUDA_HOME)/lib64 -Wl,-rpath=$(CUDA_HOME)/lib64 -lnvrtc

$(CUDA_PLUGIN): $(CUDA_OBJS)
	$(say) LINK $@
	$(Q)$(NVCC) -shared -o $@ $^ -lcublas -lcusolver -lcusparse -lnvrtc -lcudart -Xlinker -rpath=$(CUDA_HOME)/lib64 -Xlinker -z -Xlinker defs
endif

# (a plugin left out is removed, so that a stale one is not loaded; the binary exports what the
# plugins' objects call, and -u pulls those functions out of libmls.a)
$(BUILD)/mls: $(BUILD)/src/main.o $(BUILD)/libmls.a $(BUILD)/plugin.syms | $(PLUGIN_LIBS)
	$(say) LINK $@
	$(Q)rm -f $(filter-out $(PLUGIN_LIBS),$(addprefix $(BUILD)/libmls_,plot.so kernel.so mpi.so xsmm.so))
	$(Q)$(CC) $(LDFLAGS) -Wl,--dynamic-list=$(BUILD)/plugin.syms @$(BUILD)/plugin.undef -o $@ $(BUILD)/src/main.o $(BUILD)/libmls.a $(LDLIBS)

$(BUILD)/plugin.syms: $(PLUGIN_OBJS) $(BUILD)/libmls.a
	$(say) NM $@
	$(Q)nm -g --defined-only $(PLUGIN_OBJS) </dev/null | awk 'NF == 3 { print $$3 }' | sort -u >$@.own
	$(Q){ echo mls_throw; nm -u $(PLUGIN_OBJS) </dev/null | awk 'NF == 2 { print $$2 }'; } | sort -u | comm -23 - $@.own >$@.u
	$(Q)nm -g --defined-only $(BUILD)/libmls.a | awk 'NF == 3 { print $$3 }' | sort -u >$@.d
	$(Q)comm -12 $@.u $@.d | sed 's/^/-Wl,-u,/' >$(BUILD)/plugin.undef
	$(Q){ echo '{'; comm -12 $@.u $@.d | sed 's/.*/  &;/'; echo '};'; } >$@.tmp && rm -f $@.u $@.d && rm -f $@.own && mv $@.tmp $@

# the plugins: position-independent objects whose one exported symbol is their entry
$(BUILD)/libmls_plot.so: $(PLOT_PLUGIN_OBJS)
	$(say) LINK $@
	$(Q)$(CC) -shared $(LDFLAGS) -o $@ $^ $(PLOT_LIBS)
$(BUILD)/libmls_kernel.so: $(KERNEL_PLUGIN_OBJS)
	$(say) LINK $@
	$(Q)$(CC) -shared $(LDFLAGS) -o $@ $^ $(KERNEL_LIBS)
$(BUILD)/libmls_mpi.so: $(MPI_PLUGIN_OBJS)
	$(say) LINK $@
	$(Q)$(CC) -shared $(LDFLAGS) -o $@ $^ $(MPI_LIBS)
# (libxsmm's own symbols stay inside: --exclude-libs; -z defs: nothing left for mls to provide)
$(BUILD)/libmls_xsmm.so: $(XSMM_PLUGIN_OBJS)
	$(say) LINK $@
	$(Q)$(CC) -shared $(LDFLAGS) -Wl,--exclude-libs,ALL -Wl,-z,defs -o $@ $^ $(XSMM_LIBS)

$(BUILD)/src/%.pic.o: src/%.c $(BUILD)/gen/parser.h
	@mkdir -p $(dir $@)
	$(say) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -MMD -MP -c -o $@ $<
$(BUILD)/src/mpi/%.pic.o: src/mpi/%.c $(BUILD)/gen/parser.h
	@mkdir -p $(dir $@)
	$(say) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(MPI_CPPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -MMD -MP -c -o $@ $<

$(BUILD)/libmls.a: $(OBJS)
	$(say) AR $@
	$(Q)rm -f $@ && ar rcs $@ $^

# interp.o compiles PREFIX in (MLS_STDLIB_DIR): rebuilt when PREFIX differs from the last build's
$(BUILD)/PREFIX: FORCE
	@mkdir -p $(BUILD) && echo '$(PREFIX)' | cmp -s - $@ || echo '$(PREFIX)' >$@
$(BUILD)/src/interp/interp.o: $(BUILD)/PREFIX
FORCE:

$(BUILD)/gen/lexer.c: grammar/lexer.re
	@mkdir -p $(dir $@)
	$(say) RE2C $<
	$(Q)re2c -W --no-generation-date --no-version -o $@ $<

# (one run makes both: a grouped target, so that parallel make runs lemon once; lemon leaves a
# parser.h it would not change as it was, so both are touched to be newer than parser.y)
$(BUILD)/gen/parser.c $(BUILD)/gen/parser.h &: grammar/parser.y
	@mkdir -p $(BUILD)/gen
	$(say) LEMON $<
	$(Q)lemon -q -T$(LEMPAR) -d$(BUILD)/gen $< && touch $(BUILD)/gen/parser.c $(BUILD)/gen/parser.h

$(BUILD)/gen/%.o: $(BUILD)/gen/%.c $(BUILD)/gen/parser.h
	$(say) CC $<
	$(Q)$(CC) $(CPPFLAGS) $(GENFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/src/%.o: src/%.c $(BUILD)/gen/parser.h
	@mkdir -p $(dir $@)
	$(say) CC $<
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

# the binary's copy of mpi.c: the one-process version, its functions renamed mpi_solo_* (solo.h;
# what only MPI calls is unused there)
$(BUILD)/src/mpi/mpi.o: src/mpi/mpi.c src/mpi/solo.h $(BUILD)/gen/parser.h
	@mkdir -p $(dir $@)
	$(say) CC $<
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-unused-function -include mpi/solo.h -MMD -MP -c -o $@ $<
# plugin.c looks in PREFIX/lib/mls for the plugins
$(BUILD)/src/plugin.o: $(BUILD)/PREFIX
$(BUILD)/src/plugin.o: CPPFLAGS += -DMLS_LIBDIR='"$(PREFIX)/lib/mls"'
.PHONY: FORCE
FORCE:

# the fused kernels' loops vectorize at -O3 (gcc's -O2 leaves them scalar)
$(BUILD)/src/backend/cpu_fused.o: OPT = -O3

$(BUILD)/tests/%: tests/unit/%.c tests/unit/capture.h $(BUILD)/libmls.a
	@mkdir -p $(dir $@)
	$(say) CCLD $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(TEST_OBJS) $(BUILD)/libmls.a -lcmocka $(LDLIBS) $(TEST_LIBS)
# the plot and kernel tests link their plugin's objects in (plot.c and load.c find them linked)
$(BUILD)/tests/test_plot: $(PLOT_PLUGIN_OBJS)
$(BUILD)/tests/test_plot: TEST_OBJS = $(PLOT_PLUGIN_OBJS)
$(BUILD)/tests/test_plot: TEST_LIBS = $(PLOT_LIBS)
$(BUILD)/tests/test_kernel: $(KERNEL_PLUGIN_OBJS)
$(BUILD)/tests/test_kernel: TEST_OBJS = $(KERNEL_PLUGIN_OBJS)
$(BUILD)/tests/test_kernel: TEST_LIBS = $(KERNEL_LIBS)

-include $(shell find $(BUILD)/src $(BUILD)/gen -name '*.d' 2>/dev/null)

# the program generator's differential runner (tests/gen, docs/robustness.md)
$(BUILD)/gen_diff: tests/gen/gen_diff.c tests/gen/progen.c tests/gen/progen.h tests/gen/gendiff.h tests/fuzz/fuzz.h $(BUILD)/libmls.a
	$(say) CCLD $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -DMLS_FUZZ_STDLIB='"$(CURDIR)/stdlib"' $(LDFLAGS) -o $@ tests/gen/gen_diff.c tests/gen/progen.c $(BUILD)/libmls.a $(LDLIBS)

# ---- tests ----
# (MLS_PLUGIN_DIR: the tests that call plot() find build/libmls_plot.so from build/tests)
unit: $(UNIT_TESTS) $(PLUGIN_LIBS)
	@fail=0; for t in $(UNIT_TESTS); do MLS_PLUGIN_DIR=$(CURDIR)/$(BUILD) $$t || fail=1; done; exit $$fail

golden: mls
	./mls --run-tests tests/lang/*.test
	@./mls --builtins-md | diff -q - docs/builtins.md >/dev/null || \
	  { echo "docs/builtins.md is stale: run ./mls --builtins-md > docs/builtins.md"; exit 1; }

examples: mls
	@tools/run_examples.sh ./mls

# The same suites on the staged path (LANGUAGE.md §12): every top-level block staged, then
# every user function called as jit(f), against the expected output; then each case eagerly
# and staged at 17 digits, numbers equal to 1e-12 relative (again with MLS_LOOP_UNROLL=0: every
# loop a loop node, which found a crash and a wrong result that unrolled loops hid; the staging
# cases also against their expected output in that setting); and the examples with --staged.
staged-test: mls
	MLS_TEST_FLAGS=--staged ./mls --run-tests tests/lang/*.test
	MLS_TEST_FLAGS=--jit-all ./mls --run-tests tests/lang/*.test
	MLS_TEST_COMPARE=--staged ./mls --run-tests tests/lang/*.test
	MLS_TEST_COMPARE=--jit-all ./mls --run-tests tests/lang/*.test
	MLS_LOOP_UNROLL=0 MLS_TEST_COMPARE=--staged ./mls --run-tests tests/lang/*.test
	MLS_LOOP_UNROLL=0 MLS_TEST_COMPARE=--jit-all ./mls --run-tests tests/lang/*.test
	for f in "" --staged --jit-all; do MLS_LOOP_UNROLL=0 MLS_TEST_FLAGS=$$f ./mls --run-tests tests/lang/staging.test tests/lang/staging_loops.test || exit 1; done
	@MLS_FLAGS=--staged tools/run_examples.sh ./mls
	tests/staging/test_dot.sh ./mls
	tests/staging/test_exact_rewrites.sh ./mls
	tests/staging/test_sparse_grad.sh ./mls
	tests/staging/test_callee_blocks.sh ./mls
	tests/staging/test_branch_blocks.sh ./mls
	tests/staging/test_dense_mask.sh ./mls
	tests/staging/test_masked_faults.sh ./mls

# Sparse storage (docs/sparse.md): every case eagerly and with --sparse always (every matrix an
# op can keep sparse is kept sparse) at 17 digits, numbers equal to 1e-12 relative; the sparse
# tests of their own; and the staged path over sparse storage.
sparse-test: mls
	./mls --run-tests tests/lang/sparse*.test
	MLS_TEST_COMPARE="--sparse never" ./mls --run-tests tests/lang/sparse*.test
	MLS_TEST_COMPARE="--sparse always" ./mls --run-tests tests/lang/*.test
	MLS_TEST_COMPARE="--sparse always --staged" ./mls --run-tests tests/lang/*.test

repl-test: mls
	/usr/bin/python3 tests/repl/test_repl.py ./mls
	/usr/bin/python3 tests/repl/test_prompt.py ./mls

install-test: mls
	tests/install/test_install.sh
	tests/install/test_deps.sh

# the editor files (editors/) against the lexer's keywords
editors-test:
	/usr/bin/python3 tests/editors/check.py

# The README's mls examples give the output it shows; the links of README.md and docs/README.md
# resolve; every chapter of docs/ is indexed and opens with a paragraph (tests/docs, issue 33)
.PHONY: docs-check
docs-check: mls
	tests/docs/readme_check.sh ./mls

# DML scripts (tests/dml/*.dml) run with -nvargs on tests/fixtures/dml, compared with R's results
dml-test: mls
	tests/dml/run.sh ./mls
	tests/dml/nn/run.sh ./mls

# mls --check (docs/check.md): no false report on any clean golden case, example, test script,
# DML script (checked before each run of the DML suites) or generated program; tests/lang/check.test
.PHONY: check-test
check-test: mls $(BUILD)/gen_diff
	tests/check/run.sh ./mls
	/usr/bin/python3 tests/check/check_gen.py ./mls $(BUILD)/gen_diff 1 500

# The GPU suites (tests/gpu/run.sh, docs/gpu.md): parity, tests/lang eager and staged on the
# GPU, the examples, compute-sanitizer. make test runs them where a CUDA device is present and
# says why it skips them elsewhere (a build with nvcc still compiles the CUDA code).
test-gpu: mls
	tests/gpu/run.sh ./mls

bench-gpu: mls
	bench/gpu.sh ./mls
# Plots through the mls command (issue 13): files, PNG pixels, SVG counts, errors, the REPL.
.PHONY: plot-test
plot-test: mls
	/usr/bin/python3 tests/plot/check_plots.py ./mls

# The Jupyter kernel driven by jupyter_client, and examples/autodiff.ipynb run by nbconvert.
kernel-test: mls
	/usr/bin/python3 tests/kernel/test_kernel.py ./mls

# Writes that must not damage files, signals in script mode, malformed compressed and binary
# files, and the peak memory under --max-memory (shell-level checks).
robust-test: mls
	tests/robustness/test_files.sh ./mls
	tests/robustness/test_interrupt.sh ./mls
	tests/robustness/test_limits.sh ./mls

# MPI (issue 14): tests/mpi/ under mpirun with 1 to 3 ranks, as one process and --staged;
# skipped, saying why, without mpirun or with a build without MPI (MPI=0).
.PHONY: mpi-test
mpi-test: mls
	tests/mpi/run.sh ./mls
	MLS_FLAGS=--staged tests/mpi/run.sh ./mls

# mls with its plugins hidden (MLS_PLUGIN_DIR naming an empty directory), as on a machine without
# cairo, ZeroMQ or OpenMPI: the located errors on use, every other golden suite (issue 31)
.PHONY: plugins-test
plugins-test: mls
	tests/plugins/run.sh ./mls

# The layering of src/ over #include lines (tools/check_layers.py, docs/architecture.md)
.PHONY: layers-check
layers-check: mls
	/usr/bin/python3 tools/check_layers.py $(BUILD)

# NVRTC compiles every elementwise formula for the GPU (where nvcc is; no GPU needed)
.PHONY: nvrtc-check
nvrtc-check: mls
ifeq ($(CUDA),1)
ifeq ($(NVRTC_H),)
	@echo "nvrtc-check: nvcc at $(NVCC) (toolkit $(CUDA_HOME)) has no nvrtc.h, nothing to compile"
else
	$(MAKE) $(BUILD)/nvrtc_check
	$(BUILD)/nvrtc_check
endif
else
	@echo "nvrtc-check: no nvcc, nothing to compile"
endif

# Generated programs (tests/gen, docs/robustness.md): GEN_COUNT programs of a fixed seed, each
# run eagerly, --staged, --jit-all and staged on the simulated GPU, which must agree.
GEN_COUNT ?= 20000
GEN_GRAD_COUNT ?= 5000
.PHONY: gen-test
gen-test: mls $(BUILD)/gen_diff
	$(BUILD)/gen_diff --seed 1 --count $(GEN_COUNT)
	MLS_LOOP_UNROLL=0 $(BUILD)/gen_diff --seed 5 --count $(GEN_COUNT)   # every staged loop a loop node
	$(BUILD)/gen_diff --grad --seed 1 --count $(GEN_GRAD_COUNT)   # gradients against finite differences
	$(BUILD)/gen_diff --dim 40 --seed 1 --count 1000   # 40 x 40 operands: larger kernels, sparse storage
	$(BUILD)/gen_diff --dim 2 --seed 1 --count 2000
	$(BUILD)/gen_diff --grad --dim 40 --seed 1 --count 500
	$(BUILD)/gen_diff --wide --seed 1 --count $(GEN_COUNT) --modes staged,jit,sparse  # the rest of the vocabulary, CPU
	$(BUILD)/gen_diff --wide --grad --seed 1 --count $(GEN_GRAD_COUNT) --modes staged,jit,sparse  # modes (robustness.md)
	$(BUILD)/gen_diff --rect --seed 1 --count $(GEN_COUNT)   # n x m operands: products, chains, t(X) %*% X
	$(BUILD)/gen_diff --rect --grad --seed 1 --count $(GEN_GRAD_COUNT)
	$(BUILD)/gen_diff --rect --wide --dim 9 --seed 1 --count 2000 --modes staged,jit,sparse
	$(BUILD)/gen_diff --edge --seed 1 --count $(GEN_COUNT)   # NaN, infinities, subnormals, empty matrices
	$(BUILD)/gen_diff --edge --grad --seed 1 --count $(GEN_GRAD_COUNT)
	$(BUILD)/gen_diff --args --seed 1 --count 10000   # defaults, calls by name
	$(BUILD)/gen_diff --scope --seed 17 --count 10000   # closures, functions as arguments, recursion
	MLS_LOOP_UNROLL=0 $(BUILD)/gen_diff --scope --seed 2 --count 10000
	$(BUILD)/gen_diff --scope --grad --seed 1 --count 3000
	$(BUILD)/gen_diff --lists --seed 1 --count 10000   # a list of parameters, grad and jit over it
	$(BUILD)/gen_diff --lists --grad --seed 1 --count 3000
	$(BUILD)/gen_diff --dml --seed 1 --count 10000   # a DML function of two results, +=, parfor
	$(BUILD)/gen_diff --frames --seed 1 --count 10000   # a frame read as numbers and changed
	$(BUILD)/gen_diff --frames --grad --seed 2 --count 3000

# No mutable file-scope state (issue 26, docs/robustness.md "Global state"): the writable data
# symbols of every object (the CUDA plugin's too, when built) against tools/globals_allow.txt.
.PHONY: globals-check
globals-check: mls
	tools/check_globals.sh $(BUILD) tools/globals_allow.txt

# Everything: unit and golden suites, examples, then both suites again under ASan+UBSan.
test: deps-install
	$(MAKE) mls
	$(MAKE) layers-check
	$(MAKE) globals-check
	$(MAKE) unit
	$(MAKE) golden
	$(MAKE) examples
	$(MAKE) staged-test
	$(MAKE) sparse-test
	$(MAKE) gen-test
	$(MAKE) nvrtc-check
	$(MAKE) repl-test
	$(MAKE) install-test
	$(MAKE) editors-test
	$(MAKE) docs-check
	$(MAKE) dml-test
	$(MAKE) check-test
	$(MAKE) robust-test
	tests/gpu/run.sh ./mls --if-available
	$(MAKE) plot-test
	$(MAKE) kernel-test
	$(MAKE) mpi-test
	$(MAKE) plugins-test
	$(MAKE) sanitize-run
	$(MAKE) fuzz-smoke
	@echo "make test: all suites passed"

conformance: mls
	../shared/conformance/run.py --mls ./mls

# ASan + UBSan build in build/asan, running the unit and golden suites with it; the staged
# suites also on the simulated GPU (captured graph launches, src/staging/replay.c), and the
# sparse x GPU products (tests/gpu/sparse.mls) there.
sanitize: deps-install
	$(MAKE) sanitize-run

sanitize-run:
	$(MAKE) BUILD=build/asan OPT=-O1 EXTRA_CFLAGS='-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all' \
	  EXTRA_LDFLAGS='-fsanitize=address,undefined' build/asan/mls build/asan/gen_diff $(patsubst $(BUILD)/%,build/asan/%,$(UNIT_TESTS))
	@fail=0; for t in $(patsubst $(BUILD)/%,build/asan/%,$(UNIT_TESTS)); do ASAN_OPTIONS=detect_leaks=1 MLS_PLUGIN_DIR=$(CURDIR)/build/asan $$t || fail=1; done; \
	  ASAN_OPTIONS=detect_leaks=1 build/asan/gen_diff --seed 2 --count 1500 || fail=1; \
	  ASAN_OPTIONS=detect_leaks=1 build/asan/gen_diff --grad --seed 2 --count 500 || fail=1; \
	  ASAN_OPTIONS=detect_leaks=1 build/asan/gen_diff --dim 40 --seed 2 --count 200 || fail=1; \
	  ASAN_OPTIONS=detect_leaks=1 build/asan/gen_diff --wide --grad --seed 2 --count 300 || fail=1; \
	  ASAN_OPTIONS=detect_leaks=1 build/asan/gen_diff --edge --rect --seed 2 --count 300 || fail=1; \
	  ASAN_OPTIONS=detect_leaks=1 build/asan/gen_diff --edge --rect --grad --seed 2 --count 200 || fail=1; \
	  ASAN_OPTIONS=detect_leaks=1 build/asan/gen_diff --scope --seed 2 --count 300 || fail=1; \
	  ASAN_OPTIONS=detect_leaks=1 build/asan/gen_diff --lists --dml --seed 2 --count 300 || fail=1; \
	  ASAN_OPTIONS=detect_leaks=1 MLS_GC_MIN=0 MLS_PATH=$(CURDIR)/stdlib build/asan/mls --run-tests \
	    $(filter-out tests/lang/gc.test,$(wildcard tests/lang/*.test)) || fail=1; \
	  ASAN_OPTIONS=detect_leaks=1 MLS_PATH=$(CURDIR)/stdlib build/asan/mls --run-tests tests/lang/gc.test || fail=1; \
	  ASAN_OPTIONS=detect_leaks=1 MLS_GC_MIN=0 MLS_PATH=$(CURDIR)/stdlib MLS_TEST_FLAGS=--jit-all build/asan/mls --run-tests \
	    tests/lang/staging.test tests/lang/grad.test tests/lang/functions.test tests/lang/control.test || fail=1; \
	  for m in "--device gpu --jit-all" "--device gpu --staged"; do \
	    ASAN_OPTIONS=detect_leaks=1 MLS_GC_MIN=0 MLS_SIM_GPU=1 MLS_REPLAY=2 MLS_PATH=$(CURDIR)/stdlib MLS_TEST_COMPARE="$$m" build/asan/mls --run-tests \
	      tests/lang/staging.test tests/lang/grad.test tests/lang/functions.test tests/lang/control.test tests/lang/matrices.test \
	      tests/lang/indexing.test tests/lang/broadcast.test || fail=1; done; \
	  ASAN_OPTIONS=detect_leaks=1 MLS_SIM_GPU=1 MLS_PATH=$(CURDIR)/stdlib build/asan/mls tests/gpu/sparse.mls || fail=1; exit $$fail
	ASAN_OPTIONS=detect_leaks=1 MLS_PATH=$(CURDIR)/stdlib /usr/bin/python3 tests/kernel/test_kernel.py build/asan/mls

# ---- fuzzing (tests/fuzz, docs/robustness.md): libFuzzer harnesses built by clang with ASan
# and UBSan into build/fuzz. `make fuzz` runs each for FUZZ_SECONDS, FUZZ_JOBS at a time, and
# keeps what it finds in build/fuzz/corpus/<harness>; `make fuzz-smoke` runs each a fixed
# number of inputs (FUZZ_SMOKE_RUNS, about 25 s on a CI core; FUZZ_SMOKE_SECONDS at most) from
# the seeds of tests/fuzz/corpus and fails on any crash, sanitizer report, leak or hang. A
# failing input is saved as build/fuzz/crash-<harness>-*.
FUZZ_SECONDS ?= 600
FUZZ_SMOKE_SECONDS ?= 90
FUZZ_SMOKE_RUNS = $(or $(FUZZ_SMOKE_RUNS_$*),150000)
FUZZ_SMOKE_RUNS_parse = 250000
FUZZ_SMOKE_RUNS_eval = 50000
FUZZ_SMOKE_RUNS_diff = 25000
FUZZ_SMOKE_RUNS_gpu = 30000
FUZZ_SMOKE_RUNS_prog = 5000
FUZZ_SMOKE_RUNS_read_csv = 70000
FUZZ_SMOKE_RUNS_read_mtd = 80000
FUZZ_SMOKE_RUNS_read_ckpt = 300000
# issue 29: frames (three scripts a run) and transform specs
FUZZ_SMOKE_RUNS_read_frame = 20000
FUZZ_SMOKE_RUNS_read_spec = 20000
FUZZ_SMOKE_RUNS_read_tfmeta = 20000
# issue 25: the kernel's message parser, the MPI collective header, the plot builtins
FUZZ_SMOKE_RUNS_kernel_msg = 1300000
FUZZ_SMOKE_RUNS_mpi_header = 4000000
FUZZ_SMOKE_RUNS_plot = 12000
FUZZ_JOBS ?= 2
FUZZ_READERS := csv text mm libsvm npy idx ckpt mtd gz frame spec tfmeta
FUZZERS := parse eval diff gpu prog $(addprefix read_,$(FUZZ_READERS)) kernel_msg mpi_header plot
FUZZ_BINS = $(addprefix $(FUZZ_BUILD)/fuzz_,$(FUZZERS))
# FUZZ_SAN=-fsanitize=undefined FUZZ_BUILD=build/fuzz-ub: a build without ASan, 3-5 times faster
FUZZ_SAN ?= -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_BUILD ?= build/fuzz
FUZZ_LINK = $(CC) $(CPPFLAGS) $(CFLAGS) -DMLS_FUZZ_STDLIB='"$(CURDIR)/stdlib"' -fsanitize=fuzzer $(FUZZ_SAN)

fuzz-build: deps-install
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=clang OPT=-O1 FUZZ_NOCOV=tests/fuzz/nocov.txt EXTRA_CFLAGS='-DMLS_FUZZ -fsanitize=fuzzer-no-link -fsanitize-coverage-ignorelist=$(CURDIR)/tests/fuzz/nocov.txt $(FUZZ_SAN)' $(FUZZ_BINS)

# the fuzz build's objects are compiled again when the list of code left untraced changes
ifdef FUZZ_NOCOV
$(OBJS): $(FUZZ_NOCOV)
endif

$(FUZZ_BUILD)/fuzz_read_%: tests/fuzz/fuzz_read.c tests/fuzz/fuzz.h $(FUZZ_BUILD)/libmls.a
	$(FUZZ_LINK) -DFUZZ_FORMAT=$* -o $@ $< $(FUZZ_BUILD)/libmls.a $(LDLIBS)

$(FUZZ_BUILD)/fuzz_gpu: tests/fuzz/fuzz_diff.c tests/fuzz/fuzz.h $(FUZZ_BUILD)/libmls.a
	$(FUZZ_LINK) -DFUZZ_DIFF_GPU -o $@ $< $(FUZZ_BUILD)/libmls.a $(LDLIBS)

$(FUZZ_BUILD)/fuzz_prog: tests/fuzz/fuzz_prog.c tests/gen/progen.c tests/gen/progen.h tests/gen/gendiff.h tests/fuzz/fuzz.h $(FUZZ_BUILD)/libmls.a
	$(FUZZ_LINK) -o $@ $< tests/gen/progen.c $(FUZZ_BUILD)/libmls.a $(LDLIBS)

# (the plot and kernel harnesses link their plugin's objects in, as the unit tests do)
$(FUZZ_BUILD)/fuzz_plot: $(FUZZ_BUILD)/src/plot/render.pic.o
$(FUZZ_BUILD)/fuzz_plot: FUZZ_OBJS = $(FUZZ_BUILD)/src/plot/render.pic.o
$(FUZZ_BUILD)/fuzz_plot: FUZZ_LIBS = $(PLOT_LIBS)
$(FUZZ_BUILD)/fuzz_kernel_msg: $(FUZZ_BUILD)/src/kernel/wire.pic.o
$(FUZZ_BUILD)/fuzz_kernel_msg: FUZZ_OBJS = $(FUZZ_BUILD)/src/kernel/wire.pic.o
$(FUZZ_BUILD)/fuzz_kernel_msg: FUZZ_LIBS = $(KERNEL_LIBS)
$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_BUILD)/libmls.a
	$(FUZZ_LINK) -o $@ $< $(FUZZ_OBJS) $(FUZZ_BUILD)/libmls.a $(LDLIBS) $(FUZZ_LIBS)

# one harness: fuzz-run-NAME (FUZZ_TIME seconds, and the directory new inputs go to)
fuzz-run-%:
	@mkdir -p $(NEWDIR)/$*
	@case $* in parse|eval|diff|gpu) o="-dict=tests/fuzz/mls.dict tests/fuzz/corpus/programs";; *) o=tests/fuzz/corpus/$*;; esac; \
	  norand=; if setarch $$(uname -m) -R true 2>/dev/null; then norand="setarch $$(uname -m) -R"; fi; \
	  if OPENBLAS_NUM_THREADS=1 $$norand $(FUZZ_BUILD)/fuzz_$* -max_total_time=$(FUZZ_TIME) $(FUZZ_SEED) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	       -artifact_prefix=$(FUZZ_BUILD)/crash-$*- $(NEWDIR)/$* $$o </dev/null >$(FUZZ_BUILD)/$*.log 2>&1; \
	  then echo "fuzz $*: $$(grep -o 'stat::number_of_executed_units: *[0-9]*' $(FUZZ_BUILD)/$*.log | grep -o '[0-9]*$$') runs, no failure"; \
	  else echo "fuzz $*: FAILED ($(FUZZ_BUILD)/$*.log, input $(FUZZ_BUILD)/crash-$*-*)"; tail -40 $(FUZZ_BUILD)/$*.log; exit 1; fi

fuzz: fuzz-build
	$(MAKE) -k -j$(FUZZ_JOBS) FUZZ_TIME=$(FUZZ_SECONDS) NEWDIR=$(FUZZ_BUILD)/corpus $(addprefix fuzz-run-,$(FUZZERS))

# (new inputs go to $(FUZZ_BUILD)/seen, emptied first: the smoke run starts from the seeds alone;
# a fixed -seed and count, fuzz.h's step budget and no address randomization (setarch -R, where
# allowed) make it nearly the same inputs on every machine, so what passed here passes in CI; a
# slower machine stops at FUZZ_SMOKE_SECONDS, having run a part of them)
fuzz-smoke: fuzz-build
	rm -rf $(FUZZ_BUILD)/seen
	$(MAKE) -k -j2 FUZZ_TIME=$(FUZZ_SMOKE_SECONDS) FUZZ_SEED='-seed=1 -runs=$$(FUZZ_SMOKE_RUNS)' NEWDIR=$(FUZZ_BUILD)/seen $(addprefix fuzz-run-,$(FUZZERS))

# Regenerates tests/fuzz/corpus from tests/lang, examples, stdlib and tests/fixtures.
fuzz-corpus: mls
	python3 tests/fuzz/make_corpus.py ./mls

valgrind: mls
	tools/valgrind.sh ./mls

bench: mls
	bench/run.sh ./mls
	bench/interrupt.sh ./mls
	$(MAKE) bench-mpi

# 1-rank and 2-rank epoch times and the 64-machine estimate (issue 14, docs/mpi.md)
.PHONY: bench-mpi
bench-mpi: mls
	bench/mpi.sh ./mls

run: deps-install
	$(MAKE) mls
	./mls examples/tour.mls

# The binary is built with PREFIX compiled in (MLS_STDLIB_DIR); the man page names PREFIX's
# paths; docs/ go to share/doc/mls, the editor files where Vim and Emacs look (editors/).
install: mls
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/mls/stdlib $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 mls $(DESTDIR)$(PREFIX)/bin/mls
	cp -r stdlib/. $(DESTDIR)$(PREFIX)/share/mls/stdlib/
	sed 's|/usr/local/share/|$(PREFIX)/share/|g; s|/usr/local/lib/mls|$(PREFIX)/lib/mls|g' man/mls.1 >$(DESTDIR)$(PREFIX)/share/man/man1/mls.1
	chmod 644 $(DESTDIR)$(PREFIX)/share/man/man1/mls.1
	install -d $(DESTDIR)$(PREFIX)/share/doc/mls $(DESTDIR)$(PREFIX)/share/emacs/site-lisp \
	  $(addprefix $(DESTDIR)$(PREFIX)/share/vim/vimfiles/,syntax ftdetect ftplugin) $(DESTDIR)$(PREFIX)/share/mls/editors
	cp -r docs/. $(DESTDIR)$(PREFIX)/share/doc/mls/
	for d in syntax ftdetect ftplugin; do install -m 644 editors/vim/$$d/mls.vim $(DESTDIR)$(PREFIX)/share/vim/vimfiles/$$d/; done
	install -m 644 editors/emacs/mls-mode.el $(DESTDIR)$(PREFIX)/share/emacs/site-lisp/
	cp -r editors/vscode $(DESTDIR)$(PREFIX)/share/mls/editors/
	for p in cuda plot kernel mpi xsmm; do if [ -e $(BUILD)/libmls_$$p.so ]; then \
	  install -D -m 755 $(BUILD)/libmls_$$p.so $(DESTDIR)$(PREFIX)/lib/mls/libmls_$$p.so; fi; done
	install -d $(DESTDIR)$(PREFIX)/share/jupyter/kernels/mls
	install -m 644 src/kernel/kernel.json $(DESTDIR)$(PREFIX)/share/jupyter/kernels/mls/kernel.json

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
