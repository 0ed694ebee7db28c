#!/usr/bin/env bash
# run_exercises.sh BUILD [yours] — the exercises' checks (exercises/README.md).
# By default (make test): every reference solution must pass its check, and
# every learner's file must either pass or still be the stub ("not yet").
# With `yours` (make exercises): only the learner's files, one line each.
set -u
build="${1:-build}"
only_yours="${2:-}"
status=0
for dir in exercises/*/; do
  name=$(basename "$dir")
  [ -f "$dir/check.cpp" ] || continue
  if [ -z "$only_yours" ]; then
    out=$("$build/exercises/$name/solution" 2>&1)
    if [ $? -ne 0 ] || ! grep -q ": passed$" <<<"$out"; then
      echo "exercises: the reference solution of $name fails its own check:"; echo "$out"; status=1
    fi
  fi
  out=$("$build/exercises/$name/yours" 2>&1)
  code=$?
  echo "$out" | sed "s|^|  $name: |"
  [ $code -eq 0 ] || status=1
done
if [ -z "$only_yours" ] && [ $status -eq 0 ]; then echo "exercises: every reference solution passes its check"; fi
exit $status
