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
# build VAR=value...: make the object with those variables in the
# environment, and without those of a make that runs this script (`make
# test CXXFLAGS=...` would hide the environment's flags, and the user's
# flags it hands on would replace them); make's messages in English.
build() {
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u NORMCORE_USER_CXXFLAGS -u NORMCORE_USER_LDFLAGS LC_ALL=C "$@" \
        make --no-print-directory CUDA=0 MPI=0 BUILD="$dir" "$object" 2>&1
}
# The object made a few seconds older than anything written next, so that a
# file system that keeps whole seconds still sees the flags file as newer.
age() { touch -d '-5 sec' "$object"; }
fail() { echo "build_flags_test: $1"; echo "make said:"; echo "$2"; exit 1; }

out=$(build CXXFLAGS=-DNORMCORE_FLAGS_TEST)
[[ $out == *"-DNORMCORE_FLAGS_TEST"* ]] || fail "the first build did not compile with the flag" "$out"
out=$(build CXXFLAGS=-DNORMCORE_FLAGS_TEST)
[[ $out == *"up to date"* ]] || fail "the same flags again recompiled the object" "$out"
age
out=$(build)
[[ $out == *"dtype.cpp"* && $out != *"-DNORMCORE_FLAGS_TEST"* ]] ||
    fail "without the flag the object was not recompiled (or still had it)" "$out"
age
out=$(build CXXFLAGS=-DNORMCORE_FLAGS_TEST)
[[ $out == *"-DNORMCORE_FLAGS_TEST"* ]] || fail "with the flag back the object was not recompiled" "$out"
# A make started by another, as make test starts some: the first one's
# recipe makes the same object. The second is handed CXXFLAGS with the
# first one's flags added, and the user's own apart: it must start from
# the user's, see the same flags and find nothing to do.
printf '%s\n' 'include Makefile' 'second-make:' \
    '	@$(MAKE) --no-print-directory -f Makefile CUDA=0 MPI=0 BUILD=$(BUILD) $(OBJECT)' > "$dir/recursive.mk"
out=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u NORMCORE_USER_CXXFLAGS -u NORMCORE_USER_LDFLAGS LC_ALL=C \
      CXXFLAGS=-DNORMCORE_FLAGS_TEST make --no-print-directory -f "$dir/recursive.mk" CUDA=0 MPI=0 BUILD="$dir" \
      OBJECT="$object" second-make 2>&1)
[[ $out == *"up to date"* ]] || fail "a make started by another recompiled the object" "$out"
grep -q -- "-DNORMCORE_FLAGS_TEST" "$dir/build-flags" || fail "build-flags does not hold the flags" "$(cat "$dir/build-flags")"
echo "build_flags_test: a change of flags recompiles; the same flags, also in a make started by another, do not"
