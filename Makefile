# normcore — build, test, benchmark.
#
#   make            release build (-O3, native SIMD, OpenMP)   -> build/
#   make debug      -O0 -g build for stepping through in gdb    -> build/debug/
#   make asan       AddressSanitizer + UBSan build              -> build/asan/
#   make test       setup, build, the tutorial programs, the CLI checks, the kill -9 trials, 2-rank MPI training, the Catch2 suite
#   make run        setup, build, and the main job: normcore train (default GPT-2)
#   make test-asan  the same suite under the sanitizers
#   make test-gdb   replay tutorial 2's gdb session on the debug build
#   make docs       rewrite the chapters' marked output blocks and pictures from their programs (make test checks them)
#   make bench      normcore bench: FMA peak, GEMM GFLOP/s, training-step times (JSON in build/bench.json)
#   make fuzz       the libFuzzer targets of tests/fuzz (clang, ASan + UBSan), each run FUZZ_SECONDS
#   make setup      install the Debian packages normcore needs (idempotent)
#   make CUDA=0     a CPU-only build (the CUDA backend is built when nvcc is found)
#
# Header dependencies are tracked (-MMD), so editing a .h rebuilds what uses it.

CXX ?= g++
MODE ?= release
BUILD ?= build
# The fuzz targets are built with clang (libFuzzer): set before anything
# below asks the compiler what it is.
ifeq ($(MODE),fuzz)
  CXX := clang++
endif
# CXXFLAGS and LDFLAGS from the environment (a user's own, or conda's) go in
# front of the Makefile's flags. Make hands an environment variable on to
# the makes it starts with the value it has here, the Makefile's flags
# added, so each recursive make (make test runs some) would add them once
# more, and the build-flags file (below) would change at every level and
# recompile everything. So the value the user gave is kept apart, and every
# make starts from it.
# (`:=` copies the value at this point; `?=` would export a reference to
# CXXFLAGS, expanded after the flags below are appended.)
ifeq ($(origin NORMCORE_USER_CXXFLAGS),undefined)
  NORMCORE_USER_CXXFLAGS := $(CXXFLAGS)
endif
ifeq ($(origin NORMCORE_USER_LDFLAGS),undefined)
  NORMCORE_USER_LDFLAGS := $(LDFLAGS)
endif
export NORMCORE_USER_CXXFLAGS NORMCORE_USER_LDFLAGS
CXXFLAGS := $(NORMCORE_USER_CXXFLAGS)
LDFLAGS := $(NORMCORE_USER_LDFLAGS)
# The CPU the compiler builds for: x86-64 or 64-bit ARM (AArch64: Apple
# Silicon, Linux on ARM), from the compiler itself, so a cross compiler
# (CXX=aarch64-linux-gnu-g++) is handled like a native one.
TARGET_MACHINE := $(shell $(CXX) -dumpmachine 2>/dev/null)
TARGET_X86 := $(filter x86_64% i386% i686%,$(TARGET_MACHINE))
TARGET_ARM64 := $(filter aarch64% arm64%,$(TARGET_MACHINE))
# SIMD target. The default uses every instruction set of the building
# machine: on x86, AVX-512 where present (ARCH=-march=x86-64-v3 (AVX2) or
# ARCH=-march=x86-64 (plain SSE2) build a binary for older CPUs); on ARM,
# -mcpu=native (ARCH=-march=armv8-a runs on every AArch64 CPU,
# -march=armv8.2-a or -mcpu=apple-m1 on newer ones).
ifneq ($(TARGET_ARM64),)
  ARCH ?= -mcpu=native
else
  ARCH ?= -march=native
endif

# The CUDA backend (cuda/) is built when nvcc is found, in release mode; the
# debug and sanitizer builds stay CPU-only unless CUDA=1 is given. CUDA=0
# forces a CPU-only build. CUDA_ARCHS: the GPUs the fat binary runs on
# natively (compute capability x10), plus PTX for the newest, which newer
# GPUs compile at load time.
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_ARCHS ?= 75 80 86 89 90
ifeq ($(origin CUDA),undefined)
  ifeq ($(MODE)$(if $(NVCC),yes,no),releaseyes)
    CUDA := 1
  else
    CUDA := 0
  endif
endif
ifeq ($(CUDA),1)
  ifeq ($(NVCC),)
    $(error CUDA=1 but nvcc was not found: install the CUDA toolkit or set NVCC=/path/to/nvcc)
  endif
endif

# IEEE-safe flags only: no -ffast-math (it changes results and once broke a GELU
# backward in llm.c). -fno-math-errno just lets sqrt compile to one instruction.
# -fno-trapping-math tells GCC that no one reads the floating-point exception
# flags (clang's default), so a loop with a comparison in it (exp_fast's
# clamp, GELU) may become vector code on CPUs without AVX-512's masks.
# Without it, on AVX2 and NEON, GCC 12 left such loops scalar ("control flow
# in loop"): GELU's forward and backward were 23% of a training run's time on
# a Zen 3. No operation changes meaning, but GCC fuses a * b + c into one FMA
# where it sees fit (its default), and a loop laid out differently may fuse
# differently: a last bit can change. 30 training steps on the Zen 3 wrote a
# byte-identical checkpoint with and without it.
# OpenMP: GCC and Linux clang take -fopenmp. Apple's clang has no OpenMP
# runtime of its own: Homebrew's libomp (brew install libomp), reached
# through the preprocessor; Homebrew's headers (nlohmann-json) are added
# too. (macOS is not tested: README, "Other machines".)
ifeq ($(shell uname -s),Darwin)
  BREW_PREFIX := $(shell brew --prefix 2>/dev/null)
  LIBOMP_PREFIX := $(shell brew --prefix libomp 2>/dev/null)
  OPENMP_CFLAGS ?= -Xpreprocessor -fopenmp -I$(LIBOMP_PREFIX)/include -I$(BREW_PREFIX)/include
  OPENMP_LDFLAGS ?= -L$(LIBOMP_PREFIX)/lib -lomp -L$(BREW_PREFIX)/lib
endif
OPENMP_CFLAGS ?= -fopenmp
OPENMP_LDFLAGS ?= -fopenmp
COMMON_FLAGS := -std=c++17 $(OPENMP_CFLAGS) -Wall -Wextra -Wno-unused-parameter -I. -MMD -MP
ifeq ($(MODE),release)
  MODE_FLAGS := -O3 $(ARCH) -fno-math-errno -fno-trapping-math
else ifeq ($(MODE),debug)
  MODE_FLAGS := -O0 -g
else ifeq ($(MODE),fuzz)
  # clang's libFuzzer, with ASan + UBSan, and the exact allocator (no size
  # classes, no cache: a read past a tensor's end is seen).
  MODE_FLAGS := -O1 -g1 $(ARCH) -fno-omit-frame-pointer -fsanitize=address,undefined,fuzzer-no-link \
                -fno-sanitize-recover=undefined -DNORMCORE_EXACT_ALLOCATOR -Wno-unknown-warning-option
else ifeq ($(MODE),asan)
  # -Wno-maybe-uninitialized: GCC 12 warns inside Catch2's use of <regex> at -O1.
  # -g1 (and the fuzz build's): line tables only, all a sanitizer's report
  # needs to name file:line in each frame; full -g (local variables, types,
  # for gdb, which uses the debug build) made the library's files compile
  # 25-28% slower (nn/models.cpp 8.1 s -> 5.9 s).
  # float-cast-overflow (a float to int conversion out of range, or of NaN)
  # is in clang's `undefined` group but not in GCC's: named, so both check it.
  MODE_FLAGS := -O1 -g1 $(ARCH) -fno-omit-frame-pointer -fsanitize=address,undefined,float-cast-overflow \
                -fno-sanitize-recover=undefined,float-cast-overflow -Wno-maybe-uninitialized
else
  $(error MODE must be release, debug, asan or fuzz, got '$(MODE)')
endif
# clang (macOS's compiler, and `make CXX=clang++` here) reports each `omp
# simd` loop it could not vectorize (a library call such as std::exp on
# doubles in the loop body), where GCC says nothing; that is no defect.
# GCC-only warning options are dropped for it.
ifneq ($(findstring clang,$(shell $(CXX) --version 2>/dev/null | head -1)),)
  COMMON_FLAGS += -Wno-pass-failed
  MODE_FLAGS := $(filter-out -Wno-maybe-uninitialized,$(MODE_FLAGS))
endif
CXXFLAGS += $(COMMON_FLAGS) $(MODE_FLAGS)
LDFLAGS += $(OPENMP_LDFLAGS) $(filter -fsanitize=%,$(MODE_FLAGS))
LDLIBS := -lz
# STATIC_RUNTIME=1 (make gpu-bundle): the C++ runtime, OpenMP and zlib linked
# in, so the binaries run on a machine without Debian's libraries.
ifeq ($(STATIC_RUNTIME),1)
  LDFLAGS := $(filter-out $(OPENMP_LDFLAGS),$(LDFLAGS)) -static-libstdc++ -static-libgcc
  LDLIBS := -Wl,--push-state,-Bstatic -lgomp -lz -Wl,--pop-state -lpthread -ldl
endif

CU_SRCS :=
ifeq ($(CUDA),1)
  CU_SRCS := $(wildcard cuda/*.cu)
  CXXFLAGS += -DNORMCORE_CUDA
  NVCCFLAGS := -std=c++17 -O3 -I. -DNORMCORE_CUDA -MMD -MP -Xcompiler -Wall \
               $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
               -gencode arch=compute_$(lastword $(CUDA_ARCHS)),code=compute_$(lastword $(CUDA_ARCHS))
  # The CUDA runtime is linked statically (nvcc's default, and it needs no
  # library on the machine but the driver). cuBLAS comes from the machine,
  # opened at the first product on the GPU (cuda/cublas_library.cuh: linked
  # in, it cost every command 0.4 s and 218 MB at start-up); the run path
  # is where the program looks for it.
  LDLIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart_static -lrt -ldl
  # ... and where it looks last (a sanitizer's dlopen skips the run path).
  NVCCFLAGS += -DNORMCORE_CUDA_LIB_DIR='"$(CUDA_HOME)/lib64"'
endif

# Data-parallel training over MPI (train/distributed.h, chapter 14): built
# with Open MPI when mpicxx is found (make setup installs it), in release
# and debug builds; MPI=0 builds without it, MPI=1 insists. Only
# train/distributed.cpp includes mpi.h.
MPICXX ?= $(shell command -v mpicxx 2>/dev/null)
ifeq ($(origin MPI),undefined)
  ifeq ($(if $(MPICXX),yes,no)$(filter asan fuzz,$(MODE))$(STATIC_RUNTIME),yes)
    MPI := 1
  else
    MPI := 0
  endif
endif
ifeq ($(MPI),1)
  ifeq ($(MPICXX),)
    $(error MPI=1 but mpicxx was not found: make setup installs Open MPI (libopenmpi-dev))
  endif
  MPI_CFLAGS := -DNORMCORE_MPI $(shell $(MPICXX) --showme:compile)
  MPI_LIBS := $(shell $(MPICXX) --showme:link)
endif

# NCCL (cuda/multi_gpu.h): data-parallel ranks on GPUs sum their gradients
# GPU to GPU. Built with CUDA and MPI when the CUDA toolkit ships nccl.h
# (NVIDIA's CUDA 13 installs do; Debian has no package), else the gradients
# go through host memory. NCCL=0 builds without it, NCCL=1 insists.
NCCL_HOME ?= $(CUDA_HOME)
ifeq ($(origin NCCL),undefined)
  ifeq ($(CUDA)$(MPI)$(if $(wildcard $(NCCL_HOME)/include/nccl.h),yes,no),11yes)
    NCCL := 1
  else
    NCCL := 0
  endif
endif
ifeq ($(NCCL),1)
  ifneq ($(CUDA)$(MPI),11)
    $(error NCCL=1 needs the CUDA backend and MPI (CUDA=$(CUDA) MPI=$(MPI)))
  endif
  ifeq ($(wildcard $(NCCL_HOME)/include/nccl.h),)
    $(error NCCL=1 but $(NCCL_HOME)/include/nccl.h was not found: set NCCL_HOME)
  endif
  NCCL_LIBS := -L$(NCCL_HOME)/lib64 -Wl,-rpath,$(NCCL_HOME)/lib64 -lnccl
endif

LIB_SRCS := $(wildcard tensor/*.cpp tensor/cpu/*.cpp tensor/ops/*.cpp autograd/*.cpp nn/*.cpp analysis/*.cpp optim/*.cpp data/*.cpp)
# tests/emulated/ runs the GPU's kernel headers on the CPU: it is compiled
# against the CUDA emulator's cuda_runtime.h (tests/cuda_emulator/), never
# the toolkit's, so it runs, and is the same, with or without CUDA.
TEST_SRCS := $(wildcard tests/*.cpp tests/emulated/*.cpp tests/cuda_emulator/*.cpp)
# EMULATED=0 leaves the emulated GPU kernels out of the test binary
# (test-arm64: its run skips them, qemu being too slow for them anyway).
ifeq ($(EMULATED),0)
  TEST_SRCS := $(wildcard tests/*.cpp)
endif
# Catch2's main last (see the ASan build's flags for it below).
TEST_SRCS := $(filter-out tests/main.cpp,$(TEST_SRCS)) tests/main.cpp
TUTORIAL_SRCS := $(wildcard tutorials/*.cpp)
TUTORIAL_BINS := $(patsubst tutorials/%.cpp,$(BUILD)/tutorials/%,$(TUTORIAL_SRCS))
# Chapter 9's GEMM ladder, one program per rung (tools/gemm_ladder.sh runs them).
LADDER_BINS := $(patsubst tutorials/%.cpp,$(BUILD)/tutorials/%,$(wildcard tutorials/gemm_ladder/*.cpp))
# The sizes of the ladder's tables in chapter 9 (make docs: 1024 and 1000 show
# what a power-of-two row stride does to the cache; make test runs
# two small odd sizes, for the edge cases).
LADDER_SIZES ?= 512 1024 1000

# The `normcore` program: its commands (cli/), the training runtime the
# commands and the studies call (train/), and the studies (studies/).
APP_SRCS := $(wildcard cli/*.cpp train/*.cpp studies/*.cpp)

# The hand-run benchmark tools of bench/, built and given a tiny run by
# `make test` so they do not rot: attention_time, and gemm_ab's program with
# both sides built from the working tree (gemm_ab.sh builds one side from
# an older revision).
BENCH_TOOLS := $(BUILD)/bench/attention_time $(BUILD)/bench/gemm_ab_self
# The exercises (exercises/README.md): each folder's check.cpp is linked twice,
# with the file the learner fills in ("yours") and with solution.cpp.
# A CUDA exercise (one with a .cu file) is built only with the CUDA backend.
EXERCISES_CUDA := $(patsubst exercises/%/,%,$(sort $(dir $(wildcard exercises/*/*.cu))))
EXERCISES := $(patsubst exercises/%/check.cpp,%,$(wildcard exercises/*/check.cpp))
ifneq ($(CUDA),1)
  EXERCISES := $(filter-out $(EXERCISES_CUDA),$(EXERCISES))
endif
EXERCISE_BINS := $(foreach e,$(EXERCISES),$(BUILD)/exercises/$(e)/yours $(BUILD)/exercises/$(e)/solution)

LIB := $(BUILD)/libnormcore.a
TEST_BIN := $(BUILD)/tests/run_tests
APP_BIN := $(BUILD)/normcore

# Parallel compilation inside the sub-makes below (one job per core).
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

obj = $(patsubst %.cpp,$(BUILD)/obj/%.o,$(1))

.PHONY: all debug asan test test-asan arm64 test-arm64 setup-arm64 test-gdb docs run bench setup corpus clean fuzz fuzz-build fuzz-seeds gpu-bundle gpu-check-dry-run exercises book setup-book test-book
.SECONDARY:  # keep object files that make would otherwise treat as intermediate
all: $(LIB) $(APP_BIN) $(TEST_BIN) $(TUTORIAL_BINS) $(LADDER_BINS) $(BENCH_TOOLS) $(EXERCISE_BINS)

debug:
	$(MAKE) -j$(JOBS) MODE=debug BUILD=build/debug all
asan:
	$(MAKE) -j$(JOBS) MODE=asan BUILD=build/asan all

# stb_image/stb_image_write (Debian's libstb-dev) shift negative values in
# their JPEG code, which UBSan reports; those two files skip that one check.
ifneq ($(filter asan fuzz,$(MODE)),)
$(BUILD)/obj/data/images.o $(BUILD)/obj/tests/test_images.o $(BUILD)/obj/tests/fuzz/make_seeds.o: CXXFLAGS += -fno-sanitize=shift
endif

$(BUILD)/obj/tests/emulated/%.o $(BUILD)/obj/tests/cuda_emulator/%.o: CXXFLAGS += -Itests/cuda_emulator -Wno-unknown-pragmas

# Under the sanitizers the test files and the exercises compile without
# optimization (-O0): the checks in them are thin next to the library they
# call, which stays at -O1, so the suite runs as fast (85 s either way here)
# while their compilation takes a third of the time (Catch2's main alone: 51 s
# at -O1, 20 s at -O0). The emulated GPU kernels are the exception: they do
# real work in the test binary, so they keep -O1 (make applies the more
# specific pattern, the one with the shorter stem, last: its -O1 follows -O0).
# The release build does the same (with -O3 for the emulated kernels): on a
# 2-core machine whose builds are slow, the test objects took 1m32s at -O3
# and 1m04s so, in each of CI's two release builds (x86, the ARM one); the
# whole suite passed at -O0 in 1m22s.
ifeq ($(MODE),asan)
$(BUILD)/obj/tests/%.o $(BUILD)/obj/exercises/%.o: CXXFLAGS += -O0
$(BUILD)/obj/tests/emulated/%.o $(BUILD)/obj/tests/cuda_emulator/%.o: CXXFLAGS += -O1
# Catch2's main (tests/main.cpp: the whole of Catch2's runner) is not our
# code to check, and it was the ASan build's largest object: 36 s of one
# core at -O0 with the sanitizers, 15 s without them (a later, slower host
# than the timings above). Uninstrumented code links and runs beside
# instrumented code. TEST_SRCS lists main.cpp last, so that where main.o and
# a test file both hold a copy of an inline function (Catch2's templates,
# std:: ones), the linker keeps the test file's instrumented one.
$(BUILD)/obj/tests/main.o: CXXFLAGS += -fno-sanitize=all
endif
ifeq ($(MODE),release)
$(BUILD)/obj/tests/%.o $(BUILD)/obj/exercises/%.o: CXXFLAGS += -O0
$(BUILD)/obj/tests/emulated/%.o $(BUILD)/obj/tests/cuda_emulator/%.o: CXXFLAGS += -O3
endif

# The AVX micro-kernels are compiled for their instruction set whatever ARCH
# says, and run only after a CPUID check (tensor/cpu/gemm_kernels.cpp); on
# other CPUs their files are empty and get no x86 flags.
ifneq ($(TARGET_X86),)
$(BUILD)/obj/tensor/cpu/gemm_kernel_avx2.o: CXXFLAGS += -mavx2 -mfma -mf16c
$(BUILD)/obj/tensor/cpu/gemm_kernel_avx512.o: CXXFLAGS += -mavx512f -mfma
$(BUILD)/obj/tensor/cpu/gemm_kernel_avx512_bf16.o: CXXFLAGS += -mavx512f -mavx512bf16
$(BUILD)/obj/tensor/cpu/gemm_kernel_amx.o: CXXFLAGS += -mamx-tile -mamx-bf16
endif

# Make rebuilds a file when a prerequisite is newer; it never notices that
# the flags changed. So the compiler and flags of this build directory are
# written to $(BUILD)/build-flags whenever they differ from the last run's,
# and every C++ object depends on that file: a new flag in this Makefile,
# or ARCH=... or MODE=... given for the same BUILD, recompiles everything,
# where the old objects would otherwise be kept and linked with new ones.
# Not in it: the per-file flags above (fixed for their files) and nvcc's
# flags, so that asking for other CUDA architectures does not recompile
# the CUDA files (CI builds build/ for one, then runs gpu-check-dry-run,
# which names none). $(file) needs GNU make 4.2; an older make (macOS's
# 3.81) gets an empty file, once, and the old behaviour.
BUILD_FLAGS_FILE := $(BUILD)/build-flags
build_flags := $(CXX) $(CXXFLAGS) $(MPI_CFLAGS) NCCL=$(NCCL) | $(LDFLAGS) $(LDLIBS) $(MPI_LIBS)
ifneq ($(build_flags),$(file <$(BUILD_FLAGS_FILE)))
  ifeq ($(findstring n,$(firstword -$(MAKEFLAGS))),)  # not for make -n, which changes nothing
    $(shell mkdir -p $(BUILD))
    $(file >$(BUILD_FLAGS_FILE),$(build_flags))
  endif
endif
$(BUILD_FLAGS_FILE):
	@mkdir -p $(dir $@) && touch $@

$(BUILD)/obj/%.o: %.cpp $(BUILD_FLAGS_FILE)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

# The library, and next to it the linker flags a program built against it
# needs (OpenMP, zlib, and the CUDA runtime, libdl and the run path where
# cuBLAS is found when the CUDA backend is in):
# g++ ... prog.cpp build/libnormcore.a $$(cat build/link-flags), and the
# compiler it was built with (a program against a clang-built library is
# compiled with clang++: the two compilers use different OpenMP runtimes).
$(LIB): $(call obj,$(LIB_SRCS)) $(patsubst %.cu,$(BUILD)/obj/%.o,$(CU_SRCS))
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^
	@echo "$(strip $(LDFLAGS) $(LDLIBS))" > $(BUILD)/link-flags
	@echo "$(CXX)" > $(BUILD)/compiler

# The tests link the program's code too (all but main), for the units that
# live there (the training runtime, the studies' protocol).
$(TEST_BIN): $(call obj,$(TEST_SRCS)) $(call obj,$(filter-out cli/main.cpp,$(APP_SRCS))) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $^ -o $@ $(LDFLAGS) $(LDLIBS)

$(BUILD)/tutorials/%: $(BUILD)/obj/tutorials/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $^ -o $@ $(LDFLAGS) $(LDLIBS)

$(APP_BIN): $(call obj,$(APP_SRCS)) $(LIB)
	$(CXX) $^ -o $@ $(LDFLAGS) $(LDLIBS)

# MPI reaches only train/distributed.cpp and the two programs that link it.
$(BUILD)/obj/train/distributed.o: CXXFLAGS += $(MPI_CFLAGS)
$(APP_BIN) $(TEST_BIN): LDLIBS += $(MPI_LIBS)
ifeq ($(NCCL),1)
$(BUILD)/obj/train/distributed.o: CXXFLAGS += -DNORMCORE_NCCL
$(BUILD)/obj/cuda/multi_gpu.o: NVCCFLAGS += -DNORMCORE_NCCL -I$(NCCL_HOME)/include
$(APP_BIN) $(TEST_BIN): LDLIBS += $(NCCL_LIBS)
endif

exercise_objs = $(patsubst %.cu,$(BUILD)/obj/%.o,$(patsubst %.cpp,$(BUILD)/obj/%.o,$(1)))
define EXERCISE_RULES
$(BUILD)/exercises/$(1)/yours: $(BUILD)/obj/exercises/$(1)/check.o \
    $(call exercise_objs,$(filter-out %/check.cpp %/solution.cpp %/solution.cu,$(wildcard exercises/$(1)/*.cpp exercises/$(1)/*.cu))) $(LIB)
	@mkdir -p $$(dir $$@)
	$$(CXX) $$^ -o $$@ $$(LDFLAGS) $$(LDLIBS)
$(BUILD)/exercises/$(1)/solution: $(BUILD)/obj/exercises/$(1)/check.o \
    $(call exercise_objs,$(wildcard exercises/$(1)/solution.cpp exercises/$(1)/solution.cu)) $(LIB)
	@mkdir -p $$(dir $$@)
	$$(CXX) $$^ -o $$@ $$(LDFLAGS) $$(LDLIBS)
endef
$(foreach e,$(EXERCISES),$(eval $(call EXERCISE_RULES,$(e))))

# Your exercises' checks (the reference solutions run in `make test` too).
exercises:
	@$(MAKE) --no-print-directory -j$(JOBS) MODE=$(MODE) BUILD=$(BUILD) $(EXERCISE_BINS)
	@tools/run_exercises.sh $(BUILD) yours

$(BUILD)/bench/attention_time: $(BUILD)/obj/bench/attention/attention_time.o $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $^ -o $@ $(LDFLAGS) $(LDLIBS)

$(BUILD)/obj/bench/gemm_ab/side_%.o: bench/gemm_ab/side.cpp $(BUILD_FLAGS_FILE)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -DAB_RUN=run_$* -c $< -o $@

$(BUILD)/obj/bench/gemm_ab/side16_%.o: bench/gemm_ab/side16.cpp $(BUILD_FLAGS_FILE)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -DAB_RUN16=run16_$* -c $< -o $@

$(BUILD)/bench/gemm_ab_self: $(BUILD)/obj/bench/gemm_ab/main.o $(BUILD)/obj/bench/gemm_ab/side_old.o \
                             $(BUILD)/obj/bench/gemm_ab/side_new.o $(BUILD)/obj/bench/gemm_ab/side16_old.o \
                             $(BUILD)/obj/bench/gemm_ab/side16_new.o $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $^ -o $@ $(LDFLAGS) $(LDLIBS)

# Setup first (packages), then the build, then the suite, then every tutorial
# chapter's program (so the tutorials never rot). Catch2's summary closes it.
test:
	@$(MAKE) --no-print-directory setup
	@$(MAKE) --no-print-directory -j$(JOBS) MODE=$(MODE) BUILD=$(BUILD) all
	@for t in $(TUTORIAL_BINS); do echo "== tutorial program $$t"; (cd $(BUILD)/tutorials && ./$$(basename $$t)) > $$t.log 2>&1 \
	  || { cat $$t.log; echo "tutorial program $$t failed"; exit 1; }; echo "   ok (output in $$t.log)"; done
	for n in 67 101; do tools/gemm_ladder.sh $(BUILD) $$n || exit 1; done > $(BUILD)/tutorials/09_gemm_ladder.log \
	  || { cat $(BUILD)/tutorials/09_gemm_ladder.log; echo "the GEMM ladder failed"; exit 1; }
	tools/chapter_outputs.sh check $(BUILD)
	tools/prose_numbers.sh
	tools/pictures.sh $(BUILD) $(BUILD)/pictures
	tools/run_exercises.sh $(BUILD)
	tests/cli_test.sh $(BUILD)
	tests/build_flags_test.sh
	tests/fault_test.sh $(BUILD)
	tests/mpi_test.sh $(BUILD)
	$(BUILD)/bench/attention_time 2 70 8
	$(BUILD)/bench/attention_time 4 200 8 --views 2
	GEMM_AB_EVICT_MB=1 $(BUILD)/bench/gemm_ab_self 2 33x65x17:TN 33x65x17:TN:fp16 33x65x17:NT:bf16
	bench/generate/generate_speed.sh tests/data/reference/gpt2_pre 8 1 $(BUILD)/normcore
	$(TEST_BIN) $(if $(TEST_FILTER),'$(TEST_FILTER)')

# The suite and the command line under ASan + UBSan: the unit tests less
# those tagged [slow] (long training runs and the 124M model, whose code
# paths the faster tests cover too), and cli_test.sh less the two studies'
# smoke runs (five minutes under ASan; each is ~100 ordinary `train` runs
# that its other sections check) and bench's GEMM tables (20 s under ASan;
# the unit suite checks the products). The release pass of `make test` runs
# everything, the tutorials, exercises, fault and MPI trials included; on a
# 2-core virtual machine whose system calls are slow, building and running
# all of it a second time under ASan took 12 minutes of CI's 30.
test-asan:
	@$(MAKE) --no-print-directory setup
	@$(MAKE) --no-print-directory -j$(JOBS) MODE=asan BUILD=build/asan build/asan/normcore build/asan/tests/run_tests
	NORMCORE_CLI_QUICK=1 tests/cli_test.sh build/asan
	build/asan/tests/run_tests '~[slow]'

# The chapters' output blocks rewritten from their programs' output
# (tools/chapter_outputs.sh; `make test` checks that they agree).
docs: all
	@for t in $(TUTORIAL_BINS); do (cd $(BUILD)/tutorials && ./$$(basename $$t)) > $$t.log 2>&1 \
	  || { cat $$t.log; echo "tutorial program $$t failed"; exit 1; }; done
	for n in $(LADDER_SIZES); do tools/gemm_ladder.sh $(BUILD) $$n || exit 1; done > $(BUILD)/tutorials/09_gemm_ladder.log
	tools/chapter_outputs.sh update $(BUILD)
	tools/pictures.sh $(BUILD) tutorials/images

# The fuzz targets (tests/fuzz/fuzz_*.cpp), one per parser, built with clang
# and run FUZZ_SECONDS each from the seed corpus in tests/fuzz/corpus/ (new
# inputs go to build/fuzz/corpus/, findings to build/fuzz/findings/).
# FUZZ_RUNS=N runs a fixed number of inputs instead: with the fixed seed the
# run is the same on every machine, so CI cannot fail by chance on a finding
# another machine's timing would not reach (campaigns: tests/fuzz/campaign.sh).
FUZZ_SECONDS ?= 30
FUZZ_RUNS ?=
FUZZ_SEED ?= 1  # a fixed seed keeps CI's runs comparable; FUZZ_SEED=0 lets libFuzzer pick one
FUZZ_BUDGET := $(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS),-max_total_time=$(FUZZ_SECONDS))
# The image target decodes every input with stb and writes it to a file
# first: about ten times slower per input than the other parsers (427 inputs/s
# against 2,500-25,000 under ASan), so with FUZZ_RUNS it runs this many.
FUZZ_IMAGE_RUNS ?= 25000
# Addresses leak into libFuzzer's comparison dictionary, so a fixed-count run
# repeats itself only without address-space randomization (setarch -R).
FUZZ_NO_ASLR := $(if $(FUZZ_RUNS),$(shell setarch $$(uname -m) -R true 2>/dev/null && echo setarch $$(uname -m) -R))
FUZZ_TARGETS := $(patsubst tests/fuzz/%.cpp,%,$(wildcard tests/fuzz/fuzz_*.cpp))
ifeq ($(MODE),fuzz)
$(BUILD)/fuzz/%: $(BUILD)/obj/tests/fuzz/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $^ -o $@ -fsanitize=address,undefined,fuzzer -fopenmp $(LDLIBS)
$(BUILD)/fuzz/make_seeds: $(BUILD)/obj/tests/fuzz/make_seeds.o $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $^ -o $@ -fsanitize=address,undefined -fopenmp $(LDLIBS)
endif
fuzz-build:
	@$(MAKE) --no-print-directory setup
	@$(MAKE) --no-print-directory -j$(JOBS) MODE=fuzz BUILD=build/fuzz CUDA=0 $(addprefix build/fuzz/fuzz/,$(FUZZ_TARGETS))
# $(JOBS) targets at a time (each runs on one core; one after another the
# CI's fixed-count runs took 79 s on 2 cores, two at a time 49 s), each by
# tests/fuzz/run_target.sh.
fuzz: fuzz-build
	@printf '%s\n' $(FUZZ_TARGETS) | FUZZ_BUDGET="$(FUZZ_BUDGET)" FUZZ_SEED="$(FUZZ_SEED)" FUZZ_PREFIX="$(FUZZ_NO_ASLR)" \
	  FUZZ_IMAGE_BUDGET="$(if $(FUZZ_RUNS),-runs=$(FUZZ_IMAGE_RUNS),$(FUZZ_BUDGET))" \
	  xargs -P $(JOBS) -n 1 tests/fuzz/run_target.sh || { echo "fuzz: a target found a bug (above)"; exit 1; }
	@echo "fuzz: no findings"
fuzz-seeds:
	@$(MAKE) --no-print-directory -j$(JOBS) MODE=fuzz BUILD=build/fuzz CUDA=0 build/fuzz/fuzz/make_seeds
	build/fuzz/fuzz/make_seeds

# What the lent GPU machine runs (CUDA 13, PyTorch, no Debian packages, no
# network): normcore and the test binary for sm_90 on a portable x86-64-v3
# target, with the C++ runtime, OpenMP and zlib linked in, built here into
# build/gpu/. tools/gpu_check.sh runs it there; the run takes the working
# tree and build/gpu along (at most 64 MiB), which the size check keeps.
GPU_BUNDLE := build/gpu/normcore build/gpu/tests/run_tests build/gpu/tutorials/10_cuda build/gpu/exercises/10_sum_v2/solution
gpu-bundle:
	@$(MAKE) --no-print-directory -j$(JOBS) MODE=release BUILD=build/gpu CUDA=1 CUDA_ARCHS=90 ARCH=-march=x86-64-v3 \
	  STATIC_RUNTIME=1 $(GPU_BUNDLE)
	@size=$$(du -cb $(GPU_BUNDLE) | tail -1 | cut -f1); \
	  echo "gpu-bundle: $(GPU_BUNDLE), $$((size / 1048576)) MiB"; \
	  [ $$size -lt $$((48 * 1048576)) ] || { echo "gpu-bundle: over 48 MiB, too large to carry"; exit 1; }
# The GPU check's script on this machine's CPU, its CUDA steps skipped: so
# CI checks the script itself.
gpu-check-dry-run:
	@$(MAKE) --no-print-directory -j$(JOBS) $(APP_BIN) $(TEST_BIN) $(BUILD)/tutorials/10_cuda
	tools/gpu_check.sh --dry-run build/gpu-check-dry-run

# 64-bit ARM without ARM hardware: the library, the test binary and normcore
# cross-compiled with Debian's aarch64 g++ for any ARMv8 CPU, with the C++
# runtime, OpenMP and zlib linked in, then run under qemu-aarch64 (an
# emulator of ARM instructions) by tools/arm64_check.sh. setup-arm64
# installs the cross compiler, qemu and arm64's zlib (Debian multiarch).
ARM64_CXX ?= aarch64-linux-gnu-g++
ARM64_PACKAGES := crossbuild-essential-arm64 qemu-user
setup-arm64: setup
	@tools/install_packages.sh setup-arm64 --arch arm64 $(ARM64_PACKAGES) zlib1g-dev:arm64
arm64: setup-arm64
	@$(MAKE) --no-print-directory -j$(JOBS) MODE=release BUILD=build/arm64 CXX=$(ARM64_CXX) ARCH=-march=armv8-a \
	  CUDA=0 MPI=0 EMULATED=0 STATIC_RUNTIME=1 build/arm64/tests/run_tests build/arm64/normcore
test-arm64: arm64
	tools/arm64_check.sh build/arm64

# Replays chapter 2's gdb session on the debug build (tests/gdb_session.sh),
# which needs only chapter 2's program.
test-gdb:
	@$(MAKE) --no-print-directory setup
	@$(MAKE) --no-print-directory -j$(JOBS) MODE=debug BUILD=build/debug build/debug/tutorials/02_autograd
	tests/gdb_session.sh

# The main job: setup, build, then train the default small GPT-2 on the
# fortunes corpus (a few minutes on 2 cores) and print a sample.
run:
	@$(MAKE) --no-print-directory setup
	@$(MAKE) --no-print-directory -j$(JOBS) $(APP_BIN)
	$(APP_BIN) train

bench:
	@$(MAKE) --no-print-directory -j$(JOBS) $(APP_BIN)
	$(APP_BIN) bench --json $(BUILD)/bench.json

# Debian packages: compiler, Catch2 (tests), gdb (tutorial 2), graphviz (to
# render graph dumps), fortunes (the default training text), nlohmann-json
# (safetensors headers, config.json), zlib and stb (images), Fashion-MNIST
# (the default ViT data), gnuplot (the experiments' plots), clang with its
# libFuzzer runtime and OpenMP (make fuzz), and GCIDE and the Python
# documentation (with the fortunes, the studies' corpus: make corpus).
# Installs only what is missing.
PACKAGES := g++ make catch2 gdb graphviz fortunes nlohmann-json3-dev zlib1g-dev libstb-dev dataset-fashion-mnist gnuplot-nox \
            clang libclang-rt-14-dev libomp-14-dev dict-gcide python3.11-doc libopenmpi-dev openmpi-bin
setup:
	@tools/install_packages.sh setup $(PACKAGES)

# The book: README and chapters as static HTML in build/book (pandoc; math
# by Debian's MathJax, copied in, so it works offline from disk), and its
# test in headless Chromium (tools/book/check.sh). Not in `make setup`:
# Chromium is large, and only the book needs these.
BOOK_PACKAGES := pandoc libjs-mathjax fonts-mathjax chromium
setup-book:
	@tools/install_packages.sh setup-book $(BOOK_PACKAGES)
book: setup-book
	tools/book/build.sh build/book
test-book: book
	tools/book/check.sh build/book build/book-check

# The studies' corpus (data/corpus.h): about 49 MB of English in
# runs/corpus/{train,tuning,validation}.txt, written once (seconds).
corpus: setup
	@$(MAKE) --no-print-directory -j$(JOBS) $(APP_BIN)
	$(APP_BIN) corpus build --out runs/corpus

clean:
	rm -rf build

# The compiler's dependency lists. Make tries to remake every makefile it
# includes, and without the empty rule below its built-in `%: %.o` would
# make side_new.d from side_new.d.o, which the side_%.o rule above offers
# to compile (with -DAB_RUN=run_new.d, an error) after any header change.
%.d: ;
-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
