#!/usr/bin/env bash
# run_exercises.sh BUILD [yours] — the exercises' checks (exercises/README.md).
# By default (make test): every reference solution must pass its check, and
# every learner's file must either pass or still be the stub ("not yet").
# A check that cannot run here (a CUDA exercise without a GPU) says
# "skipped" and why; a CUDA exercise in a build without the CUDA backend is
# not built at all, and this says so.
# With `yours` (make exercises): only the learner's files, one line each.
set -u
build="${1:-build}"
only_yours="${2:-}"
status=0
for dir in exercises/*/; do
  name=$(basename "$dir")
  [ -f "$dir/check.cpp" ] || continue
  if [ ! -x "$build/exercises/$name/yours" ] && ls "$dir"*.cu >/dev/null 2>&1; then
    echo "  $name: skipped: a CUDA exercise, built only with the CUDA backend (the CUDA toolkit, or make CUDA=1)"
    continue
  fi
  if [ -z "$only_yours" ]; then
    out=$("$build/exercises/$name/solution" 2>&1)
    if [ $? -ne 0 ] || ! grep -q -e ": passed$" -e ": skipped: " <<<"$out"; then
      echo "exercises: the reference solution of $name fails its own check:"; echo "$out"; status=1
    fi
    grep -q ": skipped: " <<<"$out" && echo "  $name: the reference solution's check was skipped: ${out#*skipped: }"
  fi
  out=$("$build/exercises/$name/yours" 2>&1)
  code=$?
  echo "$out" | sed "s|^|  $name: |"
  [ $code -eq 0 ] || status=1
done
if [ -z "$only_yours" ] && [ $status -eq 0 ]; then echo "exercises: every reference solution that could run passes its check"; fi
exit $status
