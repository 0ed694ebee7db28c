#!/usr/bin/env bash
# gemm_ladder.sh BUILD [N] — chapter 9's GEMM ladder: runs every rung's
# program (tutorials/gemm_ladder/, one per rung) on N x N matrices (default
# 512) and prints their rows as one table. Each program checks its result
# against a float64 product and exits non-zero if an element is off, so a
# rung that breaks fails `make test` (which runs the ladder at N = 67).
set -u
build="${1:-build}"
n="${2:-512}"
[[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 4096 ] || { echo "gemm_ladder.sh: the size must be a whole number from 1 to 4096, not \"$n\"" >&2; exit 2; }
ls "$build"/tutorials/gemm_ladder/[0-9]_* >/dev/null 2>&1 || { echo "gemm_ladder.sh: no rung programs in $build/tutorials/gemm_ladder (make first)" >&2; exit 2; }
printf '%-40s %9s\n' "C = A B, $n x $n x $n, float32" "speed"
status=0
for program in $(ls "$build"/tutorials/gemm_ladder/[0-9]_* | sort); do
  "$program" "$n" || { echo "gemm ladder: $program failed"; status=1; }
done
exit $status
