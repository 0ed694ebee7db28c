#!/usr/bin/env bash
# build_flags_test.sh — the Makefile recompiles a build directory's objects
# when the compiler flags change (Makefile, "build-flags"): make alone
# compares only the files' times, and would keep an object compiled the old
# way. One small file, in a build directory of its own, compiled with an
# extra flag (given through the environment, which the Makefile appends
# to), then again unchanged, without the flag, and with it again.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build
dir=$(mktemp -d build/flags-test.XXXXXX)
trap 'rm -rf "$dir"' EXIT
object=$dir/obj/tensor/dtype.o
# (Without the variables of a make that runs this script: `make test
# CXXFLAGS=...` would hide the environment's flags.)
build() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory CUDA=0 MPI=0 BUILD="$dir" "$object" 2>&1; }
fail() { echo "build_flags_test: $1"; echo "make said:"; echo "$2"; exit 1; }

out=$(CXXFLAGS=-DNORMCORE_FLAGS_TEST build)
[[ $out == *"-DNORMCORE_FLAGS_TEST"* ]] || fail "the first build did not compile with the flag" "$out"
out=$(CXXFLAGS=-DNORMCORE_FLAGS_TEST build)
[[ $out == *"up to date"* ]] || fail "the same flags again recompiled the object" "$out"
out=$(build)
[[ $out == *"dtype.cpp"* && $out != *"-DNORMCORE_FLAGS_TEST"* ]] ||
    fail "without the flag the object was not recompiled (or still had it)" "$out"
out=$(CXXFLAGS=-DNORMCORE_FLAGS_TEST build)
[[ $out == *"-DNORMCORE_FLAGS_TEST"* ]] || fail "with the flag back the object was not recompiled" "$out"
grep -q -- "-DNORMCORE_FLAGS_TEST" "$dir/build-flags" || fail "build-flags does not hold the flags" "$(cat "$dir/build-flags")"
echo "build_flags_test: a change of flags recompiles, the same flags do not"
