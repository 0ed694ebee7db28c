#!/usr/bin/env bash
# arm64_check.sh ARM_BUILD [X86_BUILD] — the 64-bit ARM build, checked on an
# x86 machine (make test-arm64 cross-compiles it into build/arm64 first).
# qemu-aarch64 runs ARM programs here by translating their instructions; it
# is 20-40 times slower than native code, and its speed says nothing about
# a real ARM CPU's, so nothing here is timed.
#   1. The programs are AArch64 code; the ARM library holds the NEON
#      micro-kernel and no AVX code, and the x86 library (X86_BUILD,
#      default build) no NEON code.
#   2. The Catch2 suite under qemu, all but two groups, for time: the CUDA
#      emulator's cases ([cuda-emulated], about 50 s of the suite's 70 s
#      natively: fibers and long double references; they test GPU kernels,
#      not the CPU's, and make test-arm64 leaves them out of the ARM build,
#      EMULATED=0) and four cases tagged [slow] (two model-wide
#      gradchecks, the 124M-parameter count, cached vs uncached generation;
#      their parts are covered by smaller cases that do run), and the
#      cases that run several threads at once ([threads]: the GEMM shared
#      by 2 and 3 OpenMP threads, split along K, and its row shares, the
#      one-row product's threads, parallel_for nested in two threads, a
#      long sum on 1, 2 and 3 threads, the gradient averager's ranks and
#      the study cells as threads): under
#      qemu-user they did not finish in minutes (threads waiting on each
#      other, emulated), where natively each takes under a second; not
#      investigated further. That leaves
#      the GEMM with every micro-kernel on awkward sizes, the fast exp and
#      tanh, every op and gradient, the float64 PyTorch references, the
#      file formats and the optimizers.
#   3. normcore trains a small model for a few steps, says it uses the neon
#      micro-kernel, and ends with the summary line.
set -uo pipefail
build="${1:-build/arm64}"
x86_build="${2:-build}"
failures=0
fail() { echo "arm64: FAILED: $*"; failures=$((failures + 1)); }
# OpenMP threads spin while they wait; under an emulator that costs minutes.
export OMP_NUM_THREADS=1
run() { qemu-aarch64 -L /usr/aarch64-linux-gnu "$@"; }

for program in "$build/tests/run_tests" "$build/normcore"; do
  [ -x "$program" ] || { echo "arm64: $program is missing (make test-arm64 builds it)"; exit 1; }
  file "$program" | grep -q "ARM aarch64" || fail "$program is not AArch64 code: $(file "$program")"
done

# 1. Each CPU family's kernels only in its own build.
arm_symbols=$(aarch64-linux-gnu-nm -C "$build/libnormcore.a" 2>/dev/null)
grep -q "kNeonKernel" <<<"$arm_symbols" || fail "the ARM library has no NEON micro-kernel"
if grep -q "kAvx2Kernel\|kAvx512Kernel\|fma_loop_avx" <<<"$arm_symbols"; then fail "the ARM library holds AVX code"; fi
if [ -f "$x86_build/libnormcore.a" ]; then
  x86_symbols=$(nm -C "$x86_build/libnormcore.a" 2>/dev/null)
  grep -q "kAvx512Kernel" <<<"$x86_symbols" || fail "the x86 library ($x86_build) has no AVX-512 micro-kernel"
  if grep -q "kNeonKernel\|fma_loop_neon" <<<"$x86_symbols"; then fail "the x86 library holds NEON code"; fi
else
  echo "arm64: no x86 library in $x86_build; its check is skipped"
fi

# 2. The suite, in two halves at once: qemu-user runs one thread and the
#    suite runs on one (OMP_NUM_THREADS=1), so one process leaves the other
#    core idle. The halves split by tags: those with any of a few tags that
#    took about half the suite's time natively (tokenizers, GEMM, 16-bit
#    numbers, one-row products), and those with none of them; every case is
#    in exactly one half, and the counts are checked against the list.
start=$(date +%s)
base="~[cuda-emulated]~[slow]~[threads]"
half_tags=(bpe matmul half gemv)
first_spec=$(for t in "${half_tags[@]}"; do printf '%s[%s],' "$base" "$t"; done)
first_spec=${first_spec%,}
second_spec="$base$(printf '~[%s]' "${half_tags[@]}")"
run "$build/tests/run_tests" "$first_spec" > "$build/arm64_tests_1.log" 2>&1 &
first=$!
run "$build/tests/run_tests" "$second_spec" > "$build/arm64_tests_2.log" 2>&1 &
second=$!
wait "$first" || { tail -40 "$build/arm64_tests_1.log"; fail "the test suite's first half under qemu-aarch64"; }
wait "$second" || { tail -40 "$build/arm64_tests_2.log"; fail "the test suite's second half under qemu-aarch64"; }
cases() { local n; n=$(sed -n 's/.* in \([0-9]*\) test cases.*/\1/p' "$1" | tail -1); echo "${n:-0}"; }
listed=$(run "$build/tests/run_tests" "$base" --list-test-names-only | grep -c .)
ran=$(( $(cases "$build/arm64_tests_1.log") + $(cases "$build/arm64_tests_2.log") ))
[ "$ran" -eq "$listed" ] || fail "the two halves ran $ran test cases, the suite lists $listed"
echo "arm64: the suite's two halves: $(tail -2 "$build/arm64_tests_1.log" | head -1); $(tail -2 "$build/arm64_tests_2.log" | head -1); under qemu-aarch64 in $(($(date +%s) - start)) s"

# 3. A short training run.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'It was the best of times, it was the worst of times.\n%.0s' {1..100} > "$work/tiny.txt"
out=$(run "$build/normcore" train --data "$work/tiny.txt" --steps 3 --layers 1 --width 32 --heads 2 --seq 16 --batch 2 \
        --eval-batches 1 --sample-tokens 20 --run-dir "$work/run" 2>&1) || fail "normcore train under qemu: $out"
grep -q "^cpu: 1 threads, the neon GEMM micro-kernel$" <<<"$out" || fail "train does not name the neon micro-kernel: $out"
grep -q "^summary: steps=3 " <<<"$out" || fail "train printed no summary line: $out"

if [ "$failures" -gt 0 ]; then echo "arm64: $failures check(s) failed"; exit 1; fi
echo "arm64: all checks passed (AArch64 build, NEON selected, suite and a training run under qemu)"
