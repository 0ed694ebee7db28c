#!/bin/bash
# prose_numbers.sh — every measured number in a chapter's prose has a source.
#
# A number a chapter states in its prose comes either from its program (one
# of the chapter's marked output blocks holds it: tools/chapter_outputs.sh
# keeps those equal to what the program prints; or it is a setting written
# in the program's source) or from a committed file the chapter cites: a
# path in backticks or a link, to a file or a folder, whose text holds it.
# Anything else is a number nobody can re-derive, and it goes stale the day
# the code changes; this check fails on it, naming the chapter, the line and
# the number.
#
# "A number" is what looks measured: a decimal (0.52, 1.2e-05), a number
# with thousands separators (6,838), a percentage (64%), a ratio (3.2x) or a
# count with a unit (93 ms, 61.8 MiB). Plain integers (4 blocks, T = 128)
# are settings; code spans, links' targets, HTML comments, math and fenced
# blocks are not prose. A source "holds" a number of four or more
# significant digits when it has the same digits (1.9670, 126,252: a
# quoted number is quoted whole), and a shorter one when one of its numbers
# rounds to it, sign aside (0.052 stands for a file's -0.0524; 64% for 64.2
# or 0.642). Any file the chapter cites counts, not only the nearest: a
# table often sits a section after the sentence naming its folder. So a
# stale number is caught unless some cited file happens to hold the same
# digits, which short numbers (0.10) in large tables can. Constants that are neither measured nor in a file (tanh(2) =
# 0.96, a number a paper reports) are listed, each with its reason, in
# tools/prose_numbers.allow as "CHAPTER.md NUMBER  # why".
#
# usage: tools/prose_numbers.sh [CHAPTER.md ...]   (from the repository root)
set -u
chapters=("$@")
[ ${#chapters[@]} -gt 0 ] || chapters=(tutorials/[0-9]*.md)
allow=tools/prose_numbers.allow
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

failures=0
checked=0
in_git=no
git rev-parse --is-inside-work-tree > /dev/null 2>&1 && in_git=yes
for md in "${chapters[@]}"; do
  name=$(basename "$md")
  program=tutorials/$(basename "$md" .md | tr - _).cpp
  # Pass 1, the chapter: its prose numbers (line, number, snippet) to
  # numbers.tsv, the text of its marked output blocks to outputs.txt, the
  # paths it cites to cites.txt.
  awk -v numbers="$work/numbers.tsv" -v outputs="$work/outputs.txt" -v cites="$work/cites.txt" '
    function add_cites(text,   t) {
      t = text
      while (match(t, /`[A-Za-z0-9_.\/-]+`/)) { print substr(t, RSTART + 1, RLENGTH - 2) > cites; t = substr(t, RSTART + RLENGTH) }
      t = text
      while (match(t, /\]\([A-Za-z0-9_.\/-]+\)/)) { print substr(t, RSTART + 2, RLENGTH - 3) > cites; t = substr(t, RSTART + RLENGTH) }
    }
    # Prose is scanned a paragraph at a time (arithmetic wraps across lines),
    # each number reported at the first line of its paragraph.
    function scan(text, first,   line, t, m) {
      line = text
      gsub(/[ \t]+/, " ", line)
      gsub(/<!--.*-->/, "", line)
      gsub(/`[^`]*`/, "", line)
      gsub(/\]\([^)]*\)/, "]", line)
      gsub(/\$[^$]*\$/, "", line)
      # Arithmetic written out is a derivation the reader can redo, not a
      # measurement: the operands of x, +, *, / and =, and the result after an
      # "=" that follows a number, a bracket or a number and its unit
      # ("(8 x 6)^(-1/4) = 0.3799", "4 bytes = 475 MiB").
      t = line " "
      t = without_results(t)
      gsub(/ [x*+\/] [0-9][0-9,.]*/, "", t)
      gsub(/[0-9][0-9,.]* [x*+\/] /, "", t)
      gsub(/[0-9][0-9,.]* =/, "=", t)
      while (match(t, /(^|[^A-Za-z0-9_.^\/:,])([0-9][0-9]?[0-9]?(,[0-9][0-9][0-9])+(\.[0-9]+)?|[0-9]+\.[0-9]+([eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+|[0-9]+(\.[0-9]+)?%|[0-9]+(\.[0-9]+)?x([^A-Za-z0-9]|$)|[0-9]+ ?(ms|MiB|GiB|KiB|GB|MB|KB|GFLOP\/s|TFLOP\/s|tokens\/s)([^A-Za-z0-9]|$))/)) {
        m = substr(t, RSTART, RLENGTH)
        t = substr(t, RSTART + RLENGTH)
        sub(/^[^0-9]/, "", m)
        match(m, /^[0-9][0-9,]*(\.[0-9]+)?([eE][-+]?[0-9]+)?%?/)
        printf "%d\t%s\t%s\n", first, substr(m, RSTART, RLENGTH), substr(line, 1, 100) > numbers
      }
    }
    # The text without the results of its formulas: "768 = 2,304" -> "768 =".
    function without_results(t,   kept, result) {
      kept = ""
      while (match(t, /[0-9)]( [A-Za-z]+)? = [0-9][0-9,.]*([eE][-+]?[0-9]+)?/)) {
        result = substr(t, RSTART, RLENGTH)
        sub(/ = .*/, " =", result)
        kept = kept substr(t, 1, RSTART - 1) result
        t = substr(t, RSTART + RLENGTH)
      }
      return kept t
    }
    function end_paragraph() { if (para != "" && !indented_code) scan(para, para_line); para = "" }
    BEGIN { printf "" > numbers; printf "" > outputs; printf "" > cites }
    /^ *```/ {
      end_paragraph()
      if (fence) { fence = 0; marked = 0 } else { fence = 1; marked = last_was_marker }
      last_was_marker = 0; next
    }
    fence { if (marked) print > outputs; next }
    { last_was_marker = ($0 ~ /^ *<!-- output:/) }
    /^[ \t]*$/ { end_paragraph(); next }
    /^#/ || /^ *[-*] / || /^ *[0-9]+\. / || /^\|/ { end_paragraph() }
    {
      add_cites($0)
      # A paragraph indented by 4 spaces, not in a list, is a code block.
      if (para == "") { para_line = FNR; indented_code = ($0 ~ /^    / && !in_list) }
      if ($0 ~ /^ *([-*]|[0-9]+\.) /) in_list = 1
      else if ($0 !~ /^ /) in_list = 0
      para = para " " $0
    }
    END { end_paragraph() }
  ' "$md"
  # The sources: the outputs, the program, and every cited file (a folder:
  # the text files in it; files over 4 MB are skipped).
  sources=("$work/outputs.txt")
  [ -f "$program" ] && sources+=("$program")
  paths=()
  while read -r path; do
    path=${path#../}
    path=${path%/}
    [ -n "$path" ] && [ -e "$path" ] || continue
    case "$path" in /*) continue ;; esac  # outside the repository (/usr/local/cuda)
    paths+=("./$path")
  done < <(sort -u "$work/cites.txt")
  if [ ${#paths[@]} -gt 0 ]; then
    # Their files: the committed ones (what a fresh clone has) where git can
    # tell, under 4 MB, text (grep -I) and not empty. A few processes for
    # all of them: one per file (stat, grep) took most of the check's 21 s.
    if [ "$in_git" = yes ]; then list=(git ls-files -z -- "${paths[@]}"); else list=(find "${paths[@]}" -type f -print0); fi
    # (Each path gets one "./" in front, so that find never reads a name as
    # an option; -L follows a symbolic link to its file; a committed file
    # deleted here is skipped, as find's complaint about it is.)
    while IFS= read -r -d '' f; do sources+=("$f"); done < <("${list[@]}" | sed -z 's|^\./||; s|^|./|' |
      xargs -0 -r sh -c 'find -L "$@" -maxdepth 0 -type f -size -4000000c -print0 2>/dev/null' sh |
      xargs -0 -r grep -IlZ . 2>/dev/null)
  fi
  # Pass 2: which prose numbers some source holds. Each prose number is
  # wanted under the key it reads as at its own precision (0.052 -> "0.052";
  # 2.7e-3 -> "0.0027"; 64% -> "64" and, as a fraction, "0.64"); every
  # number in the sources is rounded to each precision and looked up.
  awk -v name="$name" -v md="$md" -v allowfile="$allow" '
    function key(x, d) { if (x < 0) x = -x; return sprintf("%.*f", d, x) }
    function decimals(s,   mant, e, d) {  # the digits after the point, in fixed notation
      mant = s; e = 0
      if (match(s, /[eE]/)) { mant = substr(s, 1, RSTART - 1); e = substr(s, RSTART + 1) + 0 }
      d = index(mant, ".") ? length(mant) - index(mant, ".") : 0
      d -= e
      return d < 0 ? 0 : d
    }
    function significant(s,   digits) {  # significant digits of a plain number
      digits = s; sub(/[eE].*/, "", digits); gsub(/[^0-9]/, "", digits); sub(/^0+/, "", digits)
      return length(digits)
    }
    function want(k, d, i) { wanted[k] = wanted[k] " " i; precisions[d] = 1 }
    FILENAME == allowfile { if ($1 == name) allowed[$2] = 1; next }
    FILENAME ~ /numbers\.tsv$/ {
      split($0, f, "\t")
      n++; line_of[n] = f[1]; text_of[n] = f[2]; snip_of[n] = f[3]
      s = f[2]; gsub(/,/, "", s)
      pct = sub(/%$/, "", s)
      d = decimals(s)
      if (significant(s) >= 4) exact[s] = exact[s] " " n
      else {
        want(key(s + 0, d), d, n)
        if (pct) want(key((s + 0) / 100, d + 2), d + 2, n)
      }
      if (text_of[n] in allowed) found[n] = 1
      next
    }
    function look_up(tok,   x, d, k, ids, j) {
      if (tok !~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/) return
      sub(/^[-+]/, "", tok)
      if (tok in exact) { split(exact[tok], ids, " "); for (j in ids) found[ids[j]] = 1; delete exact[tok] }
      x = tok + 0
      for (d in precisions) {
        k = key(x, d)
        if (k in wanted) { split(wanted[k], ids, " "); for (j in ids) found[ids[j]] = 1; delete wanted[k] }
      }
    }
    {
      # A comma separates numbers (CSV), except in 126,252 (thousands).
      if ($0 ~ /[0-9],[0-9][0-9][0-9]/) {
        t = $0
        while (match(t, /[0-9]+(,[0-9][0-9][0-9])+(\.[0-9]+)?/)) {
          tok = substr(t, RSTART, RLENGTH); gsub(/,/, "", tok); look_up(tok)
          t = substr(t, RSTART + RLENGTH)
        }
      }
      count = split($0, parts, /[^0-9.eE+-]+/)
      for (p = 1; p <= count; p++) look_up(parts[p])
    }
    END {
      for (i = 1; i <= n; i++) {
        if (found[i]) continue
        printf "%s:%d: \"%s\" has no source: not in the chapter'"'"'s output blocks or program, nor in a file it cites, nor in %s\n    %s\n", md, line_of[i], text_of[i], allowfile, snip_of[i]
        bad++
      }
      printf "%d %d\n", n, bad + 0 > "/dev/stderr"
    }
  ' "$allow" "$work/numbers.tsv" "${sources[@]}" 2> "$work/counts"
  read -r n bad < "$work/counts"
  checked=$((checked + n))
  failures=$((failures + bad))
done

if [ $failures -gt 0 ]; then
  echo "prose numbers: $failures of $checked without a source" >&2
  exit 1
fi
echo "prose numbers: all $checked have a source (an output block, the program, a cited file, or the allowlist)"
