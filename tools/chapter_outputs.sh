#!/bin/bash
# chapter_outputs.sh — the output a chapter shows is its program's output.
#
# A chapter marks each fenced block that shows what its program prints with
# a comment on the line before the fence:
#
#   <!-- output: 03_mlp_and_normalization 2-7 abs=1e-7 -->
#   ```
#   ...lines 2 to 7 of what build/tutorials/03_mlp_and_normalization prints...
#   ```
#
# `make test` runs every chapter's program (its output goes to
# BUILD/tutorials/PROGRAM.log) and then this script in `check` mode: each
# marked block must equal those lines of the log, token by token (words
# split at spaces). Numbers may differ by abs + tol * max(|a|, |b|) (both 0
# unless given: exact); `anynumbers` compares the words only (a gradcheck's
# worst element, which rounding picks, differs between builds). A block
# marked `timing` shows one machine's
# measurements (speeds, a peak that depends on the thread count; even its
# lines depend on the CPU's instruction sets), so `check` only makes sure
# its program ran. `update` mode (`make docs`) rewrites every marked block
# from the logs, the timing ones included.
#
# usage: tools/chapter_outputs.sh check|update BUILD_DIR [CHAPTER.md ...]
set -u
mode=${1:-}
build=${2:-}
if [ "$mode" != check ] && [ "$mode" != update ] || [ -z "$build" ]; then
  echo "usage: $0 check|update BUILD_DIR [CHAPTER.md ...]" >&2
  exit 2
fi
shift 2
chapters=("$@")
[ ${#chapters[@]} -gt 0 ] || chapters=(tutorials/[0-9]*.md)

status=0
blocks=0
for md in "${chapters[@]}"; do
  out=$(mktemp)
  awk -v mode="$mode" -v logs="$build/tutorials" -v md="$md" '
    function fail(msg) { printf "%s:%d: %s\n", md, marker_line, msg > "/dev/stderr"; failed = 1 }
    # A token split into a number and what surrounds it ("(0.52," -> "(", 0.52, ",").
    function split_number(tok, parts) {
      if (match(tok, /[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?/)) {
        parts[1] = substr(tok, 1, RSTART - 1)
        parts[2] = substr(tok, RSTART, RLENGTH)
        parts[3] = substr(tok, RSTART + RLENGTH)
        return 1
      }
      return 0
    }
    function tokens_agree(a, b,   pa, pb, x, y, d, m) {
      if (a == b) return 1
      if (!split_number(a, pa) || !split_number(b, pb)) return 0
      if (pa[1] != pb[1] || pa[3] != pb[3]) return 0
      if (anynumbers) return 1
      x = pa[2] + 0; y = pb[2] + 0
      d = x - y; if (d < 0) d = -d
      m = (x < 0 ? -x : x); if ((y < 0 ? -y : y) > m) m = (y < 0 ? -y : y)
      return d <= abs + tol * m
    }
    function compare_block(   i, na, nb, ta, tb, k) {
      if (nblock != nlog) { fail(sprintf("the block has %d lines, %s lines %d-%d have %d", nblock, logfile, first, last, nlog)); return }
      for (i = 1; i <= nblock; i++) {
        na = split(block[i], ta, " "); nb = split(loglines[i], tb, " ")
        if (na != nb) { fail(sprintf("line %d of the block differs from %s line %d:\n  chapter: %s\n  program: %s", i, logfile, first + i - 1, block[i], loglines[i])); return }
        for (k = 1; k <= na; k++)
          if (!tokens_agree(ta[k], tb[k])) {
            fail(sprintf("line %d of the block differs from %s line %d at \"%s\" (program: \"%s\"; abs %g, tol %g):\n  chapter: %s\n  program: %s",
                         i, logfile, first + i - 1, ta[k], tb[k], abs, tol, block[i], loglines[i]))
            return
          }
      }
    }
    state == "block" {
      if ($0 ~ /^```/) {
        if (mode == "check" && !timing) compare_block()
        else for (i = 1; i <= nlog; i++) print loglines[i]
        print; state = ""; next
      }
      block[++nblock] = $0
      if (mode == "check") print
      next
    }
    state == "fence" {
      print
      if ($0 !~ /^```/) { fail("an output marker must be followed by a ``` fence"); state = ""; next }
      state = "block"; nblock = 0; next
    }
    /^<!-- output: / {
      print
      marker_line = NR; blocks++
      program = $3; range = $4; tol = 0; abs = 0; timing = 0; anynumbers = 0
      for (i = 5; i <= NF; i++) {
        if ($i ~ /^tol=/) tol = substr($i, 5) + 0
        else if ($i ~ /^abs=/) abs = substr($i, 5) + 0
        else if ($i == "timing") timing = 1
        else if ($i == "anynumbers") anynumbers = 1
      }
      if (split(range, r, "-") != 2 || r[1] < 1 || r[2] < r[1]) { fail("bad line range \"" range "\" (FIRST-LAST)"); next }
      first = r[1] + 0; last = r[2] + 0
      logfile = logs "/" program ".log"
      nlog = 0; n = 0
      while ((getline line < logfile) > 0) { n++; if (n >= first && n <= last) loglines[++nlog] = line }
      close(logfile)
      if (n == 0) { fail("no output in " logfile " (run the chapter programs first: make test)"); next }
      state = "fence"; next
    }
    { print }
    END {
      if (state != "") fail("the block after the output marker never closes")
      printf "%d\n", blocks > "/dev/fd/3"
      exit failed
    }
  ' "$md" > "$out" 3> "$out.count"
  rc=$?
  blocks=$((blocks + $(cat "$out.count" 2>/dev/null || echo 0)))
  if [ $rc -ne 0 ]; then status=1
  elif [ "$mode" == update ] && ! cmp -s "$out" "$md"; then cp "$out" "$md"; echo "updated $md"
  fi
  rm -f "$out" "$out.count"
done
if [ $status -ne 0 ]; then
  echo "chapter outputs: a block differs from its program's output (make docs takes the programs' output)" >&2
  exit 1
fi
echo "chapter outputs: $blocks marked blocks $( [ "$mode" == check ] && echo match || echo are up to date with ) their programs' output"
