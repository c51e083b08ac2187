# Redshift - build, test, install.
#
#   make              librs.a and every command into build/bin (CPU backend;
#                     the CUDA backend too when nvcc is found, unless CUDA=0)
#   make test         check lib/'s layering, build and run every Check suite,
#                     lint the man pages and run their examples, run
#                     rs-serve's and the installer's tests; every stage
#                     runs, and the summary names those that failed
#   make asan         the same tests under AddressSanitizer + UBSan
#   make fuzz         libFuzzer targets (fuzz/fuzz_*.c: GGUF, tokenizer, request
#                     parser, chat template, output parser, streaming path),
#                     run FUZZ_SECONDS each on a seed corpus (fuzz/seeds/)
#   make install PREFIX=/usr/local
#
# Every lib/<layer>/*.c goes into librs.a, every cmd/rs-*.c becomes a command
# and every tests/check_<m>.c is a suite (exporting <m>_suite()), so adding a
# file needs no edit here.  Sources include "rs_<m>.h" by name: every lib/
# folder is on the include path (LIB_INC), and scripts/check-layers.sh keeps
# each layer from including a higher one.

BUILD	?= build
PREFIX	?= /usr/local
CC	?= cc
NVCC	?= $(shell command -v nvcc 2>/dev/null)
FUZZ_SECONDS ?= 60
RS_FIXTURES ?= ../shared/fixtures
export RS_FIXTURES

# CUDA defaults to what the build folder was built with (its config-cuda
# stamp, below: `make CUDA=0` then `make install` installs that CPU build
# rather than rebuilding it with nvcc), and in a fresh folder to on when
# nvcc exists and there are kernels to build.  CUDA= on the command line
# always wins.
ifeq ($(origin CUDA), undefined)
CUDA_BUILT := $(patsubst $(BUILD)/config-cuda%,%,$(firstword \
	      $(wildcard $(BUILD)/config-cuda[01])))
CUDA := $(or $(CUDA_BUILT),$(if $(and $(NVCC),$(wildcard kernels/*.cu)),1,0))
endif

PKGS	:= jansson libpcre2-8 libutf8proc
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)

VERSION	:= 0.1.0
OPT	?= -O2
# CFLAGS, CPPFLAGS and LDFLAGS are the user's (a packager's hardening
# flags, say): they go on every compile and link, rs-serve's included,
# after the flags the build needs (RS_CFLAGS, RS_LDFLAGS), which a
# CFLAGS on the command line no longer replaces.
CFLAGS	?= $(OPT) -g
LIB_DIRS := $(sort $(patsubst %/,%,$(dir $(wildcard lib/*/*.[ch]))))
LIB_INC	:= $(addprefix -I,$(LIB_DIRS))
RS_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -pthread -MMD -MP \
	   $(LIB_INC) -Icmd $(PKG_CFLAGS) -DRS_VERSION='"$(VERSION)"' \
	   $(EXTRA_CFLAGS)
RS_LDFLAGS := -pthread $(EXTRA_LDFLAGS)
LDLIBS	:= $(PKG_LIBS) -lm
ALL_CFLAGS = $(RS_CFLAGS) $(CPPFLAGS) $(CFLAGS)
ALL_LDFLAGS = $(RS_LDFLAGS) $(LDFLAGS)

LIB_SRC	:= $(sort $(wildcard lib/*/*.c))
CMD_SRC	:= $(sort $(wildcard cmd/rs-*.c))
CLI_SRC	:= $(sort $(wildcard cmd/cli*.c))
TEST_SRC := $(sort $(filter-out tests/check_main.c tests/check_cuda.c, \
	    $(wildcard tests/check_*.c)))
TEST_HELP := $(sort $(wildcard tests/t_*.c))
SUITES	:= $(patsubst tests/check_%.c,%,$(TEST_SRC))

LIB_OBJ	:= $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ	:= $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
CMDS	:= $(patsubst cmd/%.c,$(BUILD)/bin/%,$(CMD_SRC)) $(BUILD)/bin/rs-serve
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/obj/%.o) $(TEST_HELP:%.c=$(BUILD)/obj/%.o) \
	    $(BUILD)/obj/tests/check_main.o

ifeq ($(CUDA),1)
ifeq ($(strip $(NVCC)),)
$(error CUDA=1 but no nvcc: put it on the PATH, name it with NVCC=, or build the CPU backend with CUDA=0)
endif
# an nvcc named on the command line brings its own tree (headers, cudart),
# over a CUDA_HOME in the environment (scripts/cuda129.sh's sm_70 build)
ifeq ($(origin NVCC)$(origin CUDA_HOME),command lineenvironment)
CUDA_HOME := $(patsubst %/bin/nvcc,%,$(NVCC))
endif
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
# SASS for each arch listed (sm_XY runs on compute capability X.Y to X.9:
# sm_80 on the A100 and the RTX 30 / 40 series), and the PTX of the last
# one, which the driver compiles for any newer GPU (CUDA_PTX= for none)
CUDA_ARCHS ?= 75 80 90
CUDA_PTX ?= $(lastword $(CUDA_ARCHS))
NVCCFLAGS ?= -O3 -lineinfo
NVCCFLAGS += -std=c++17 -DRS_CUDA=1 $(LIB_INC) -Ikernels $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
	     $(if $(CUDA_PTX),-gencode arch=compute_$(CUDA_PTX)$(comma)code=compute_$(CUDA_PTX)) \
	     -Xcompiler -Wall,-Wextra
CU_SRC	:= $(sort $(wildcard kernels/*.cu))
CU_OBJ	:= $(CU_SRC:%.cu=$(BUILD)/obj/%.o)
RS_CFLAGS += -DRS_CUDA=1 -I$(CUDA_HOME)/include -Ikernels
CUDA_LIBDIR ?= $(firstword $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/lib))
LDLIBS	+= -L$(CUDA_LIBDIR) -lcudart_static -lstdc++ -ldl -lrt
endif
comma	:= ,

.PHONY: all lib cmds test test-layers test-unit test-man test-serve \
	test-install test-cuda \
	volta ampere asan fuzz \
	install clean config
all: config lib cmds

config:
	@echo "redshift $(VERSION): CUDA=$(CUDA)$(if $(filter 1,$(CUDA)), (nvcc $(NVCC), archs $(CUDA_ARCHS)$(if $(CUDA_PTX), + PTX $(CUDA_PTX))), (CPU backend only$(if $(NVCC),$(if $(wildcard kernels/*.cu),,: no CUDA kernels yet),: no nvcc found)))"

lib: $(BUILD)/librs.a
cmds: $(CMDS)

$(BUILD)/librs.a: $(LIB_OBJ) $(CU_OBJ)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

# objects are rebuilt when the configuration (CUDA on or off) changes
STAMP	:= $(BUILD)/config-cuda$(CUDA)
$(STAMP):
	@mkdir -p $(@D)
	@rm -f $(BUILD)/config-cuda*
	@touch $@

$(BUILD)/obj/%.o: %.c $(STAMP)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

# (-MMD: header dependencies, as for the C objects: a .cuh change rebuilds
# every kernel that includes it)
$(BUILD)/obj/%.o: %.cu
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -MF $(@:.o=.d) -c $< -o $@

# keep the command objects (make would delete them as intermediates)
.SECONDARY: $(patsubst cmd/%.c,$(BUILD)/obj/cmd/%.o,$(CMD_SRC))

$(BUILD)/bin/%: $(BUILD)/obj/cmd/%.o $(CLI_OBJ) $(BUILD)/librs.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ $(LDLIBS) -o $@

# rs-serve is a Kore application (cmd/rs-serve/, conf/build.conf): kodev
# compiles Kore's sources (Debian's kore package ships them) and our glue
# into one binary, writing only under $(BUILD).  Its objects are rebuilt
# whenever this rule runs, since kodev does not track our headers.  The
# link flags reach Kore's own Makefile too (kodev runs it with our
# environment), so the CLI objects go in as an archive, which may repeat.
KORE_SOURCE ?= /usr/share/kore
SERVE_DEPS := $(wildcard cmd/rs-serve/src/*.[ch] cmd/rs-serve/conf/*)
SERVE_OBJDIR := $(abspath $(BUILD))/obj/rs-serve

$(BUILD)/bin/rs-serve: $(SERVE_DEPS) $(CLI_OBJ) $(BUILD)/librs.a
	@mkdir -p $(@D) $(SERVE_OBJDIR)
	@rm -f $(SERVE_OBJDIR)/serve_*.o $(SERVE_OBJDIR)/libcli.a
	ar rcs $(SERVE_OBJDIR)/libcli.a $(CLI_OBJ)
	cd cmd/rs-serve && env MAKEFLAGS= KORE_SOURCE=$(KORE_SOURCE) \
	    KORE_OBJDIR=$(SERVE_OBJDIR) KODEV_OUTPUT=$(abspath $(@D)) \
	    CC="$(CC)" CFLAGS="-pthread $(addprefix -I$(CURDIR)/,$(LIB_DIRS)) \
	    -I$(CURDIR)/cmd $(if $(filter 1,$(CUDA)),-DRS_CUDA=1) \
	    $(EXTRA_CFLAGS) $(CPPFLAGS) $(CFLAGS)" \
	    LDFLAGS="$(SERVE_OBJDIR)/libcli.a \
	    $(abspath $(BUILD)/librs.a) $(ALL_LDFLAGS) $(LDLIBS)" \
	    kodev build >/dev/null

# Kernel playgrounds (kernels/dev/<op>_<type>.cu, style.md §2.6):
# `make build/dev/matvec_q4_k` builds one; it validates every version
# against the CPU oracle before timing it.
$(BUILD)/dev/%: kernels/dev/%.cu $(BUILD)/librs.a
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) $< $(BUILD)/librs.a $(PKG_LIBS) -o $@

# ---- tests ----

$(BUILD)/gen/suites.h: Makefile $(TEST_SRC)
	@mkdir -p $(@D)
	@printf '%s\n' $(foreach s,$(SUITES),'RS_SUITE($(s))') > $@.tmp
	@mv $@.tmp $@

$(BUILD)/obj/tests/check_main.o: tests/check_main.c $(BUILD)/gen/suites.h $(STAMP)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -I$(BUILD)/gen -c $< -o $@

$(BUILD)/obj/tests/%.o: tests/%.c $(STAMP)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -Itests -c $< -o $@

$(BUILD)/tests/check_all: $(TEST_OBJ) $(BUILD)/librs.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ $(CHECK_LIBS) $(LDLIBS) -o $@

# Every stage runs even when an earlier one fails; the last line says
# which failed (scripts/test-stages.sh).
TEST_STAGES := test-layers test-unit test-man test-serve test-install

test: all $(BUILD)/tests/check_all
	@MAKE="$(MAKE) --no-print-directory" sh scripts/test-stages.sh \
	    $(TEST_STAGES)

# GPU tests: kernels against their CPU oracles and the engine end to end.
# Needs CUDA=1 and a GPU; run on the device machine.
$(BUILD)/tests/check_cuda: $(BUILD)/obj/tests/check_cuda.o \
	    $(TEST_HELP:%.c=$(BUILD)/obj/%.o) $(BUILD)/librs.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ $(CHECK_LIBS) $(LDLIBS) -o $@

test-cuda: all $(BUILD)/tests/check_cuda
	RS_BIN=$(BUILD)/bin $(BUILD)/tests/check_cuda

# Volta: the whole project for sm_70 + compute_70 PTX into build/sm70, on
# CUDA 12.9's headers, ptxas and runtime with clang as the CUDA compiler
# (scripts/cuda129.sh: PyPI has no 12.x nvcc), then every kernel through
# NVIDIA's own 12.9 front end, NVRTC, for compute_70
# (scripts/cuda129-nvrtc.sh).  `build/sm70/tests/check_cuda` runs the
# tests on any GPU, through the driver's JIT on newer ones.
volta:
	$(MAKE) BUILD=build/sm70 CUDA=1 CUDA_ARCHS=70 \
	    NVCC="$$(bash scripts/cuda129.sh)" all build/sm70/tests/check_cuda
	bash scripts/cuda129-nvrtc.sh

# The SM80 code (A100, the RTX 30 / 40 series: tensor cores, no
# programmatic launch) as compute_80 PTX alone into build/sm80: a Hopper
# GPU runs the default build's sm_90 SASS, and this build's
# `build/sm80/tests/check_cuda` through the driver's JIT, the kernels
# taking their SM80 branches (scripts/gpu-check.sh, section ampere).
ampere:
	$(MAKE) BUILD=build/sm80 CUDA=1 CUDA_ARCHS= CUDA_PTX=80 \
	    build/sm80/tests/check_cuda

# lib/'s layers: no file includes a header of a layer above its own
test-layers:
	sh scripts/check-layers.sh

test-unit: $(BUILD)/tests/check_all cmds
	RS_BIN=$(BUILD)/bin $(BUILD)/tests/check_all

test-man: cmds
	RS_BIN=$(BUILD)/bin sh scripts/man-test.sh man/*.1 man/*.7

# rs-serve end to end: the OpenAI Python SDK and curl against a server on
# 127.0.0.1 (tests/serve/requirements.txt; scripts/deps.sh installs it),
# and the hostile-client suite (tests/serve/hostile.py, docs/hardening.md).
test-serve: cmds
	RS_BIN=$(BUILD)/bin PYTHONDONTWRITEBYTECODE=1 python3 -m pytest -q \
	    -p no:cacheprovider tests/serve

# scripts/install-redshift.sh and uninstall-redshift.sh in a fake root with
# PATH shims (tests/install/run.sh): nothing is downloaded, built or started.
test-install:
	bash tests/install/run.sh

asan:
	$(MAKE) BUILD=build-asan CUDA=0 OPT=-O1 \
	    EXTRA_CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	    EXTRA_LDFLAGS="-fsanitize=address,undefined" test

# ---- fuzzing (clang's libFuzzer) ----

FUZZ_SRC := $(sort $(wildcard fuzz/fuzz_*.c))
FUZZ_BIN := $(FUZZ_SRC:fuzz/%.c=$(BUILD)/fuzz/%)
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 $(LIB_INC) $(PKG_CFLAGS) \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined

$(BUILD)/fuzz/%: fuzz/%.c $(LIB_SRC)
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) $< $(LIB_SRC) $(PKG_LIBS) -lm -o $@

# each target's log in $(BUILD)/fuzz/NAME.log; a crash fails the target
# (its input saved as $(BUILD)/fuzz/NAME-crash-..., the log's end shown)
fuzz: $(FUZZ_BIN)
	@for f in $(FUZZ_BIN); do \
	    n=$${f##*/}; c=$(BUILD)/fuzz/corpus-$$n; log=$(BUILD)/fuzz/$$n.log; \
	    mkdir -p $$c; \
	    sh fuzz/seed.sh $$n $$c || exit 1; \
	    echo "fuzz: $$n for $(FUZZ_SECONDS)s"; \
	    if ! $$f -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
	        -rss_limit_mb=2048 -print_final_stats=1 \
	        -artifact_prefix=$(BUILD)/fuzz/$$n- $$c >$$log 2>&1; then \
	        tail -n 40 $$log; echo "fuzz: $$n failed (log: $$log)"; \
	        exit 1; \
	    fi; \
	    tail -n 12 $$log; \
	done

# ---- install ----

# bash-completion finds completions under every XDG data dir, so PREFIX's
# share/ works (its pkg-config completionsdir is absolute: /usr/share/...)
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
	    $(DESTDIR)$(PREFIX)/share/man/man7 $(DESTDIR)$(BASHCOMPDIR) \
	    $(DESTDIR)$(ZSHCOMPDIR)
	install -m 755 $(CMDS) $(DESTDIR)$(PREFIX)/bin
	install -m 644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 man/*.7 $(DESTDIR)$(PREFIX)/share/man/man7
	install -m 644 completions/bash/* $(DESTDIR)$(BASHCOMPDIR)
	install -m 644 completions/zsh/* $(DESTDIR)$(ZSHCOMPDIR)

# the build folder (BUILD=, default build, which holds build/sm70 and
# build/sm80) and, for the default, make asan's
clean:
	rm -rf $(BUILD) $(if $(filter build,$(BUILD)),build-asan)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
