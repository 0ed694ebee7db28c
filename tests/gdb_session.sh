#!/usr/bin/env bash
# Replays the gdb session of tutorials/02-autograd.md against the debug build
# and checks that gdb shows what the chapter says it shows. Run by
# `make test-gdb` (and CI), so the chapter's commands cannot rot.
set -uo pipefail
bin=build/debug/tutorials/02_autograd
lambda="'nc::tanh(nc::Tensor const&)::{lambda(nc::Tensor const&)#1}::operator()(nc::Tensor const&) const'"
workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
out=$(cd "$workdir" && gdb -q -batch -x "$OLDPWD/tools/gdb/normcore.py" \
  -ex "break nc::call_node_backward" -ex "run" \
  -ex "print node.name" -ex "print node.output_shape" \
  -ex "continue" -ex "print node.name" -ex "print node.inputs[0]" -ex "bt" \
  -ex "break $lambda" -ex "delete 1" -ex "continue" -ex "print g" \
  "$OLDPWD/$bin" 2>&1)
if echo "$out" | grep -q "ptrace: Operation not permitted"; then
  echo "gdb session: SKIPPED (this machine does not allow ptrace)"; exit 0
fi
status=0
for expected in '$1 = "MeanBackward"' '$2 = Shape []' '$3 = "MulBackward"' \
                '$4 = Tensor [4, 2] float32 cpu, requires grad, grad_fn TanhBackward' \
                '(root=Tensor [] float32 cpu, requires grad, grad_fn MeanBackward, grad=Tensor (undefined), retain_graph=false, on_leaf_ready=...) at autograd/engine.cpp' \
                'in main (argc=1' 'at autograd/ops_elementwise.cpp' '$5 = Tensor [4, 2] float32 cpu'; do
  if ! grep -qF -- "$expected" <<<"$out"; then echo "gdb session: missing '$expected'"; status=1; fi
done
# Every "at FILE:LINE" the chapter quotes must be a place where gdb stops,
# so a quoted line number cannot drift when the code above it changes.
quoted=0
while read -r where; do
  quoted=$((quoted + 1))
  grep -qF -- "$where" <<<"$out" || { echo "gdb session: the chapter quotes '$where', gdb shows no such frame"; status=1; }
done < <(grep -oE 'at (autograd|tutorials)/[a-z_0-9]+\.cpp:[0-9]+' tutorials/02-autograd.md | sort -u)
[ $quoted -ge 4 ] || { echo "gdb session: expected at least 4 quoted file:line places in chapter 2, found $quoted"; status=1; }
if [ $status -ne 0 ]; then echo "$out"; echo "gdb session: FAILED"; else echo "gdb session: all 8 expected lines and $quoted quoted places seen"; fi
exit $status
