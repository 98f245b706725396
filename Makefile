# tpusim -- build, test and benchmark.
#
# Every user-facing target first runs `deps`, which installs any missing
# Debian package (apt-get, through sudo when not root) and does nothing when
# all are present. Flags come from pkg-config and are expanded lazily, so a
# fresh machine can run `make test` alone.
#
#   make            tpusim and libtpusim.a          make test    suites + end-to-end
#   make asan       the tests under ASan+UBSan      make bench   benchmarks (slow)
#   make fuzz       libFuzzer on every parser (FUZZ_SECONDS=600 each)
#   make demo       the main job                    make headers each header alone
#   make test-all   tests including the slow tag    make echo    effective flags
#   make docs-images  the pictures in docs/ and README.md, from the commands they print
#   make install / make uninstall  (PREFIX=/usr/local, DESTDIR= for staging; the Python package too)
#   make python     the Python package in build/python (PYTHON=/usr/bin/python3)

.DEFAULT_GOAL := all
CC      ?= cc
MODE    ?= release
PKGS     = check openblas sdl2 SDL2_ttf SDL2_image jansson zlib libjpeg libpng libprotobuf-c
DEB_PKGS = build-essential pkg-config libopenblas-dev libsdl2-dev libsdl2-ttf-dev \
           libsdl2-image-dev check libjansson-dev zlib1g-dev libjpeg-dev libpng-dev libjpeg-turbo-progs dataset-fashion-mnist \
           fonts-dejavu-core xvfb xauth valgrind python3 python3-numpy \
           parallel gnuplot-nox slurmctld slurmd slurm-client munge clang \
           python3-jsonschema python3-dev python3-pytest python3-pandas python3-matplotlib \
           jupyter-nbconvert python3-ipykernel protobuf-c-compiler libprotobuf-c-dev libonnx-dev python3-onnx
WARN     = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wvla -Wformat=2
CFLAGS_debug   = -O0 -g3
CFLAGS_asan    = -O1 -g3 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
CFLAGS_release = -O3 -g
# -ffp-contract=off: a*b+c is never fused behind our back; where the model
# wants a fused multiply-add (the MXU cell) it says fmaf() explicitly.
CFLAGS   = -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(WARN) -ffp-contract=off \
           $(CFLAGS_$(MODE)) $(EXTRA_CFLAGS) -I. -I$(B)/gen -MMD -MP $(shell pkg-config --cflags $(PKGS))
LDFLAGS  = $(filter -fsanitize=%,$(CFLAGS)) -pthread
LDLIBS   = $(shell pkg-config --libs $(PKGS)) -lm -lpthread
B        = build/$(MODE)

LIB_SRCS   :=
LIB_GEN_OBJS :=
CLI_SRCS   :=
TEST_SRCS  :=
BENCH_SRCS :=
include base/base.mk sim/sim.mk mxu/mxu.mk vpu/vpu.mk datafeed/datafeed.mk frontend/frontend.mk cli/cli.mk \
        viz/viz.mk scalesim/scalesim.mk sweep/sweep.mk tests/tests.mk

LIB_OBJS   = $(LIB_SRCS:%.c=$(B)/%.o)
CLI_OBJS   = $(CLI_SRCS:%.c=$(B)/%.o)
TESTS      = $(TEST_SRCS:%.c=$(B)/%)
BENCHES    = $(BENCH_SRCS:%.c=$(B)/%)
LIB        = $(B)/libtpusim.a
BIN        = $(B)/tpusim

.PHONY: all deps python test-python test test-all asan fuzz valgrind bench demo docs-images install uninstall headers perf clean echo FORCE
all: tpusim

# ./tpusim points at the release build; other modes (asan, debug) leave it alone.
tpusim: $(BIN) $(LIB)
	@if [ "$(MODE)" = release ]; then ln -sf $(BIN) tpusim; fi

# V=1 shows the full commands
Q = $(if $(V),,@)
$(B)/%.o: %.c $(B)/.flags
	@mkdir -p $(@D)
	$(if $(V),,@echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

$(LIB): $(LIB_OBJS) $(LIB_GEN_OBJS)
	@rm -f $@
	$(Q)ar rcs $@ $^
$(BIN): $(CLI_OBJS) $(LIB)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $(CLI_OBJS) $(LIB) $(LDLIBS)
# static pattern rules: the .o files count as explicit, so make keeps them
$(TESTS) $(BENCHES): $(B)/tests/%: $(B)/tests/%.o $(B)/tests/test_util.o $(LIB)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(FUZZ_REPLAYS): $(B)/tests/fuzz/%-replay: $(B)/tests/fuzz/fz_%.o $(B)/tests/fuzz/replay.o \
                 $(B)/tests/fuzz/fuzz_util.o $(B)/tests/test_util.o $(FUZZ_CLI) $(LIB)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(FUZZ_BINS): $(B)/tests/fuzz/%-fuzz: $(B)/tests/fuzz/fz_%.o $(B)/tests/fuzz/fuzz_util.o $(FUZZ_CLI) $(LIB)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

# rewritten only when the flags change, so changing MODE or CFLAGS_* rebuilds exactly once
$(B)/.flags: FORCE | deps
	@mkdir -p $(@D); echo '$(CFLAGS)' | cmp -s - $@ || echo '$(CFLAGS)' > $@
FORCE:

deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# {==================================================================
# The Python module (docs/PYTHON.md): the package python/tpusim/ and its
# CPython extension, tpusim._tpusim, linking the engine and the command line
# (all but main.o) compiled once more with -fPIC under $(B)/pic/. Built for
# the system's python3 (Debian's; `python3` on PATH may be another one):
# `make python`, then PYTHONPATH=$(PY_OUT).
# ==================================================================
PYTHON   ?= /usr/bin/python3
PY_CFG    = $(shell $(PYTHON) -c "import sys, sysconfig; print(sysconfig.get_paths()['include'], sysconfig.get_config_var('EXT_SUFFIX'), '%d.%d' % sys.version_info[:2])" 2>/dev/null)
PY_INC    = $(word 1,$(PY_CFG))
PY_EXT    = $(word 2,$(PY_CFG))
PY_VER    = $(word 3,$(PY_CFG))
PY_OUT    = $(if $(filter release,$(MODE)),build/python,$(B)/python)
PY_SO     = $(PY_OUT)/tpusim/_tpusim$(PY_EXT)
PY_FILES  = $(PY_OUT)/tpusim/__init__.py
PIC_OBJS  = $(LIB_SRCS:%.c=$(B)/pic/%.o) $(filter-out $(B)/pic/cli/main.o,$(CLI_SRCS:%.c=$(B)/pic/%.o)) \
            $(B)/pic/python/tpusim_module.o $(LIB_GEN_OBJS:$(B)/%=$(B)/pic/%)
# shared libraries only: libcheck is for the test programs
PY_LDLIBS = $(shell pkg-config --libs $(filter-out check,$(PKGS))) -lm -lpthread
# the sanitizers' runtimes, preloaded into the interpreter by `make asan`'s
# Python tests (an extension cannot bring ASan in after the fact)
PY_PRELOAD = $(if $(filter asan,$(MODE)),LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)" ASAN_OPTIONS=detect_leaks=0)

$(B)/pic/%.o: %.c $(B)/.flags
	@mkdir -p $(@D)
	$(if $(V),,@echo "  CC -fPIC $<")
	$(Q)$(CC) $(CFLAGS) -fPIC -c -o $@ $<
$(B)/pic/python/%.o: python/%.c $(B)/.flags
	@mkdir -p $(@D)
	$(if $(V),,@echo "  CC -fPIC $<")
	$(Q)$(CC) $(CFLAGS) -isystem $(PY_INC) -fPIC -c -o $@ $<
$(B)/pic/sim/config.o: $(B)/gen/sim/presets.h
$(PY_SO): $(PIC_OBJS)
	@mkdir -p $(@D)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) -shared $(LDFLAGS) -o $@ $^ $(PY_LDLIBS)
$(PY_OUT)/tpusim/%.py: python/tpusim/%.py
	@mkdir -p $(@D)
	$(Q)cp $< $@
python: $(PY_SO) $(PY_FILES)
# pytest (Debian's python3-pytest) over tests/python/, against this MODE's build
PYTEST = $(TEST_ENV) $(PY_PRELOAD) PYTHONPATH=$(CURDIR)/$(PY_OUT) TPUSIM=$(CURDIR)/$(BIN) MODE=$(MODE) \
         $(PYTHON) -m pytest -q -p no:cacheprovider tests/python
test-python: python tpusim
	$(PYTEST)
# }==================================================================

# Test runners: libcheck suites (check prints its own summary line per suite),
# then the end-to-end tests of the binary.
TEST_ENV = OPENBLAS_NUM_THREADS=1 SDL_VIDEODRIVER=dummy CK_DEFAULT_TIMEOUT=600
test: $(TESTS) $(FUZZ_REPLAYS) tpusim python $(B)/tests/bench_hbm   # bench_hbm: t_docs_images redraws its plot
	@fail=0; for t in $(TESTS); do $(TEST_ENV) $$t || fail=1; done; \
	for f in $(FUZZ_NAMES); do $(TEST_ENV) FUZZ_OOM=1 $(B)/tests/fuzz/$$f-replay tests/fuzz/$$f || fail=1; done; \
	$(PYTEST) || fail=1; \
	TPUSIM=$(BIN) MODE=$(MODE) bash tests/e2e/run.sh || fail=1; exit $$fail
test-all: $(TESTS) $(FUZZ_REPLAYS) tpusim python $(B)/tests/bench_hbm
	@fail=0; for t in $(TESTS); do $(TEST_ENV) CK_INCLUDE_TAGS= TPU_SLOW=1 $$t || fail=1; done; \
	for f in $(FUZZ_NAMES); do $(TEST_ENV) FUZZ_OOM=1 $(B)/tests/fuzz/$$f-replay tests/fuzz/$$f || fail=1; done; \
	$(PYTEST) || fail=1; \
	TPUSIM=$(BIN) MODE=$(MODE) bash tests/e2e/run.sh || fail=1; exit $$fail
asan:
	$(MAKE) MODE=asan test
# In-process fuzzing with libFuzzer (clang), ASan and UBSan: each target of
# tests/fuzz/ for FUZZ_SECONDS (default 600) from its seed corpus, one after
# the other (FUZZ_TARGETS="npy idx" for some). Findings go to build/fuzz/crashes/,
# the figures to build/fuzz/report.md (docs/TESTING.md).
FUZZ_SECONDS ?= 600
FUZZ_TARGETS ?= $(FUZZ_NAMES)
# (clang's -Wformat=2 also flags the v*printf wrappers, which gcc checks
# at their callers through the format attribute; and the MXU kernels' gcc-only
# target attribute, irrelevant here.)
CFLAGS_fuzz   = -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
                -fno-sanitize-recover=all -Wno-format-nonliteral -Wno-unknown-warning-option \
                -Wno-ignored-attributes
fuzz: deps
	$(MAKE) MODE=fuzz CC=clang $(FUZZ_TARGETS:%=build/fuzz/tests/fuzz/%-fuzz)
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz/run.sh $(FUZZ_TARGETS)
# Each suite under valgrind's memcheck (no fork, so leaks are attributed).
valgrind: $(TESTS)
	@fail=0; for t in $(TESTS); do $(TEST_ENV) CK_FORK=no TPU_VALGRIND=1 valgrind -q --error-exitcode=9 \
	  --leak-check=full --errors-for-leak-kinds=definite $$t || fail=1; done; exit $$fail
# OpenBLAS runs one thread with its own best kernel for this CPU: an
# OPENBLAS_CORETYPE override in the environment would flatter our ratios.
bench: $(BENCHES) tpusim
	@env -u OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS=1 TPUSIM=$(BIN) BENCHES="$(BENCHES)" bash tests/bench/run.sh
# {==================================================================
# Install: the program, its man page (generated from its --help texts by
# dist/mkman.py), bash completion, the examples, and the engine as a static
# library with its public headers and a pkg-config file. Uninstall removes
# exactly those files, then the directories of ours that are left empty.
# ==================================================================
PREFIX     ?= /usr/local
VERSION    := $(shell sed -n 's/^\#define TPU_VERSION "\(.*\)"/\1/p' base/base.h)
PUB_HDRS   := base/base.h mxu/mxu.h vpu/vpu.h vpu/vpu_ops.def datafeed/df.h sim/sim.h sim/stall.def \
              sim/ops.def frontend/fe.h viz/viz.h scalesim/scalesim.h sweep/sweep.h
EXAMPLES   := $(sort $(wildcard docs/examples/*))
I          := $(DESTDIR)$(PREFIX)
INST_FILES := bin/tpusim share/man/man1/tpusim.1 share/bash-completion/completions/tpusim \
              lib/libtpusim.a lib/pkgconfig/tpusim.pc $(PUB_HDRS:%=include/tpusim/%) \
              $(EXAMPLES:docs/examples/%=share/doc/tpusim/examples/%) share/doc/tpusim/LICENSE
# the Python package, in the system python3's site directory under PREFIX
# (Debian's: lib/python3.X/dist-packages, on sys.path for /usr/local and /usr)
PY_SITE     = lib/python$(PY_VER)/dist-packages
PY_INST     = $(PY_SITE)/tpusim/__init__.py $(PY_SITE)/tpusim/_tpusim$(PY_EXT)
INST_DIRS  := $(PY_SITE)/tpusim/__pycache__ $(PY_SITE)/tpusim include/tpusim/base include/tpusim/mxu include/tpusim/vpu include/tpusim/datafeed \
              include/tpusim/sim include/tpusim/frontend include/tpusim/viz include/tpusim/scalesim \
              include/tpusim/sweep include/tpusim \
              share/doc/tpusim/examples share/doc/tpusim
$(B)/tpusim.1: $(BIN) dist/mkman.py
	$(Q)python3 dist/mkman.py $(BIN) > $@.tmp && mv $@.tmp $@
# tpusim.pc is written by the install itself, from this call's PREFIX: a
# file made at build time would keep the PREFIX of the first build.
install: $(BIN) $(LIB) $(B)/tpusim.1 python
	install -d $(I)/$(PY_SITE)/tpusim $(I)/bin $(I)/share/man/man1 $(I)/share/bash-completion/completions $(I)/lib/pkgconfig \
	  $(I)/share/doc/tpusim/examples $(addprefix $(I)/include/tpusim/,$(sort $(dir $(PUB_HDRS))))
	install -m 755 $(BIN) $(I)/bin/tpusim
	install -m 644 $(B)/tpusim.1 $(I)/share/man/man1/tpusim.1
	install -m 644 dist/tpusim.bash $(I)/share/bash-completion/completions/tpusim
	install -m 644 $(LIB) $(I)/lib/libtpusim.a
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' -e 's|@PKGS@|$(filter-out check,$(PKGS))|' \
	  dist/tpusim.pc.in > $(I)/lib/pkgconfig/tpusim.pc.tmp && chmod 644 $(I)/lib/pkgconfig/tpusim.pc.tmp && \
	  mv $(I)/lib/pkgconfig/tpusim.pc.tmp $(I)/lib/pkgconfig/tpusim.pc
	for h in $(PUB_HDRS); do install -m 644 $$h $(I)/include/tpusim/$$h || exit 1; done
	install -m 644 $(EXAMPLES) $(I)/share/doc/tpusim/examples/
	install -m 644 LICENSE $(I)/share/doc/tpusim/LICENSE
	install -m 644 $(PY_FILES) $(I)/$(PY_SITE)/tpusim/
	install -m 755 $(PY_SO) $(I)/$(PY_SITE)/tpusim/
uninstall:
	rm -f $(addprefix $(I)/,$(INST_FILES) $(PY_INST)) $(I)/$(PY_SITE)/tpusim/__pycache__/*.pyc
	-for d in $(INST_DIRS); do [ ! -d $(I)/$$d ] || rmdir $(I)/$$d 2>/dev/null || true; done
# }==================================================================

# The pictures in the docs, regenerated from the commands the docs print.
# The exercises' pictures are docs/TEACHING.md's commands, exactly.
docs-images: tpusim $(B)/tests/bench_hbm
	$(B)/tests/bench_hbm build/hbm.csv > /dev/null && gnuplot -e "csv='build/hbm.csv'; out='docs/hbm-bandwidth.png'" docs/hbm-bandwidth.gp
	$(BIN) viz --chip teach --headless --png docs/viz-teach.png
	$(BIN) viz --headless --at full-array --png docs/viz-128.png
	@mkdir -p docs/teaching
	$(BIN) viz --cores 1 --m 8 --n 256 --k 256 --headless --at wavefront --png docs/teaching/ex1-batch8.png
	$(BIN) viz --cores 1 --m 512 --n 256 --k 256 --headless --at full-array --png docs/teaching/ex1-batch512.png
	$(BIN) viz --chip teach --cores 1 --m 64 --n 130 --k 16 --headless --at partial-tile --png docs/teaching/ex2-n130.png
	$(BIN) viz --chip teach --cores 1 --m 64 --n 64 --k 64 --precision bf16x3 --headless --at wavefront --png docs/teaching/ex3-bf16x3.png
	$(BIN) viz --chip teach --model mlp --batch 64 --infeed-ready 2000000 --headless --at infeed-wait --png docs/teaching/ex4-infeed.png
	$(BIN) viz --pipeline docs/examples/train-naive.json --steps 24 --headless --png docs/teaching/ex4-pipeline-naive.png
	$(BIN) viz --pipeline docs/examples/train-prefetch.json --steps 24 --headless --png docs/teaching/ex4-pipeline-prefetch.png
	$(BIN) viz --chip teach --model mlp --batch 64 --headless --at all-reduce --png docs/teaching/ex5-allreduce.png
	rm -rf build/seed-sweep && $(BIN) sweep --out build/seed-sweep -j 2 train \
	  --model seed_cnn,vgg19@192x192x3:5,xception@192x192x3:5,resnet152v2@192x192x3:5 --batch 32,64,128,256 \
	  --cores 1,2,4,8 --chip tpu-v2-8 --level timing --data synthetic --synthetic-n 2936 --epochs 1 > /dev/null || true   # 1 point does not fit HBM (docs/SWEEPS.md)
	cp "build/seed-sweep/images_per_s-vs-batch-by-cores-model=vgg19@192x192x3:5.png" docs/sweep-seed-vgg19.png
	docs/teaching/ex6-dataflow.sh $(BIN) docs/teaching/ex6-dataflow.png
	TPUSIM=$(BIN) docs/seq-sweep.sh docs/sweep-seq.png
	rm -rf build/pod-weak && $(BIN) sweep --out build/pod-weak -j 2 train --model resnet50 --chip tpu-v3-2048 \
	  --cores 8,32,128,512,2048 --batch-per-core 32,128 --level timing --data synthetic --synthetic-n 262144 \
	  --steps-per-epoch 1 > /dev/null && cp build/pod-weak/images_per_s-vs-cores-by-batch-per-core.png docs/sweep-pod-weak.png
	rm -rf build/pod-strong && $(BIN) sweep --out build/pod-strong -j 2 train --model resnet50 --chip tpu-v3-2048 \
	  --cores 32,128,512,2048 --batch 2048,4096 --level timing --data synthetic --synthetic-n 8192 \
	  --steps-per-epoch 1 > /dev/null && cp build/pod-strong/images_per_s-vs-cores-by-batch.png docs/sweep-pod-strong.png
	rm -rf build/pod-share && $(BIN) sweep --out build/pod-share --no-plot -j 2 train --model resnet50 --chip tpu-v3-2048 \
	  --cores 32,128,512,2048 --batch 2048,4096 --level timing --data synthetic --synthetic-n 8192 --steps-per-epoch 1 \
	  > /dev/null && $(BIN) plot build/pod-share/results.csv --y collective_wait_share && \
	  cp build/pod-share/collective_wait_share-vs-cores-by-batch.png docs/sweep-pod-allreduce.png
# The main job: mlp on Fashion-MNIST on a simulated tpu-v2-8, 2 epochs, fed by
# a prefetching pipeline; writes a Perfetto trace to build/train-trace.json.
demo: tpusim
	$(BIN) train --model mlp --data fashion-mnist --chip tpu-v2-8 --epochs 2 \
	  --pipeline docs/examples/train-prefetch.json --trace build/train-trace.json
headers: | deps
	@for h in */*.h; do echo "#include \"$$h\"" | $(CC) $(filter-out -MMD -MP,$(CFLAGS)) -x c -fsyntax-only - || exit 1; done; echo "headers: ok"
perf:
	$(MAKE) EXTRA_CFLAGS=-fopt-info-vec-optimized all 2>&1 | grep -E 'mxu_|vpu_' | head -40
echo:
	@echo 'CC     = $(CC)'; echo 'MODE   = $(MODE)'; echo 'CFLAGS = $(CFLAGS)'; echo 'LDLIBS = $(LDLIBS)'
clean:
	rm -rf build tpusim

-include $(shell find $(B) -name '*.d' 2>/dev/null)
