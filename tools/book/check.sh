#!/bin/bash
# check.sh BOOK OUT: the book's test, in a real browser (make test-book).
#   1. Every relative link and picture of every page resolves to a file of
#      the book, and every #anchor to an id in that file.
#   2. Headless Chromium (Debian's) opens every page from disk, offline:
#      no console message and no resource that fails to load; MathJax
#      typeset every formula ($...$ and $$...$$), with no error and no TeX
#      left in the text outside code.
#   3. Screenshots of two pages, chapter 2 and chapter 8, into OUT (the
#      ones tools/book/screenshots/ holds were looked at).
set -uo pipefail
book=${1:-build/book}
out=${2:-build/book-check}
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "book check: chromium is missing (make setup-book installs it)" >&2; exit 1; }
mkdir -p "$out"
failures=0
fail() { echo "book check: $*" >&2; failures=$((failures + 1)); }

# ---- 1. links and pictures ----------------------------------------------------------
pages=$(cd "$book" && find . -name '*.html' -not -path './src/*' -not -path './mathjax/*' | sed 's|^\./||' | sort)
links=0
for page in $pages; do
  dir=$(dirname "$page")
  # Every href="..." and src="..." that is not a URL (http:, file:, data:, mailto:).
  for target in $(grep -o -E '(href|src)="[^"]*"' "$book/$page" | sed -E 's/^(href|src)="//; s/"$//' |
                  grep -v -E '^[a-zA-Z][a-zA-Z+.-]*:'); do
    links=$((links + 1))
    path=${target%%#*}
    anchor=""
    [[ $target == *"#"* ]] && anchor=${target#*#}
    path=${path%%\?*}  # MathJax.js?config=...
    if [ -z "$path" ]; then file="$book/$page"; else file="$book/$dir/$path"; fi
    if [ ! -f "$file" ]; then fail "$page links to $target, which is not in the book"; continue; fi
    if [ -n "$anchor" ] && ! grep -q -F "id=\"$anchor\"" "$file"; then
      fail "$page links to $target: no id \"$anchor\" there"
    fi
  done
done
echo "book check: $links links and pictures in $(echo "$pages" | wc -l) pages resolve"

# ---- 1b. the glossary: each term occurs in the chapter its entry links to ----------
# (the link's anchor is checked above, in the rendered book). Lines are
# joined first, so a term broken over two lines is still found.
terms=0
while IFS= read -r entry; do
  term=$(echo "$entry" | sed -E 's/^\*\*([^*]*)\*\*:.*/\1/')
  chapter=$(echo "$entry" | grep -o -E '\]\([^)#]*\.md' | tail -1 | sed 's/^](//')
  terms=$((terms + 1))
  if [ -z "$chapter" ] || [ ! -f "tutorials/$chapter" ]; then fail "glossary: '$term' links to no chapter"; continue; fi
  tr '\n' ' ' < "tutorials/$chapter" | tr -s ' ' | grep -q -i -F -- "$term" ||
    fail "glossary: '$term' does not occur in tutorials/$chapter, which its entry links to"
done < <(grep '^\*\*' tutorials/glossary.md)
echo "book check: $terms glossary entries checked against the chapters they link to"

# ---- 2. every page in the browser --------------------------------------------------
# --virtual-time-budget lets MathJax finish before the DOM is dumped; with
# --enable-logging=stderr every console message is a CONSOLE line.
run_browser() {  # url, then extra flags
  local url=$1; shift
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --virtual-time-budget=15000 --enable-logging=stderr --v=0 "$@" "$url"
}
# One page in the browser; what fails goes to SCRATCH/failures, the number
# of typeset formulas to SCRATCH/formulas.
check_in_browser() {  # page, scratch directory
  local page=$1 scratch=$2
  local url; url="file://$(cd "$book" && pwd)/$page"
  : > "$scratch/failures"
  run_browser "$url" --user-data-dir="$scratch/profile" --dump-dom > "$scratch/dom.html" 2> "$scratch/console.log"
  if grep -E 'CONSOLE|ERR_FILE_NOT_FOUND|Failed to load|Uncaught' "$scratch/console.log" > "$scratch/errors.log"; then
    echo "$page: the browser reported $(head -c 300 "$scratch/errors.log" | tr '\n' ' ')" >> "$scratch/failures"
  fi
  # pandoc wraps each formula in <span class="math inline|display">; MathJax
  # puts one typeset MathJax_CHTML element in each.
  local expected typeset leftover
  expected=$(grep -o 'class="math \(inline\|display\)"' "$book/$page" | wc -l)
  typeset=$(grep -o 'class="[^"]*MathJax_CHTML"' "$scratch/dom.html" | wc -l)
  echo "$typeset" > "$scratch/formulas"
  [ "$typeset" -eq "$expected" ] || echo "$page: $expected formulas, $typeset typeset by MathJax" >> "$scratch/failures"
  grep -q -E 'class="[^"]*(mjx-merror|MathJax_Error)|Math Processing Error' "$scratch/dom.html" &&
    echo "$page: MathJax reports an error" >> "$scratch/failures"
  # TeX left in the text: a backslash command or a $ delimiter outside code, scripts and the typeset math.
  leftover=$(perl -0777 -ne '
      s{<(script|style|pre|code)\b.*?</\1>}{}gs; s{<style\b.*?</style>}{}gs;
      s{<[^>]*>}{ }g; print "$1\n" while /(\\\\[a-zA-Z]+\{?|\$\$?[^\s\$][^\$]{0,40}\$)/g' "$scratch/dom.html" | head -3 | tr '\n' ' ')
  [ -z "$leftover" ] || echo "$page: TeX left unrendered: $leftover" >> "$scratch/failures"
}
# Two browsers at a time (one page takes 2-4 s, partly waiting), each page
# in its own scratch directory.
i=0
for page in $pages; do
  i=$((i + 1))
  rm -rf "$out/page-$i"  # nothing left from an earlier run
  mkdir -p "$out/page-$i"
  check_in_browser "$page" "$out/page-$i" &
  if ((i % 2 == 0)); then wait; fi
done
wait
formulas=0
for ((j = 1; j <= i; j++)); do
  n=$(cat "$out/page-$j/formulas" 2> /dev/null)
  if ! [[ $n =~ ^[0-9]+$ ]] || [ ! -f "$out/page-$j/failures" ]; then
    fail "page $j of the list: its check left no result"
    continue
  fi
  formulas=$((formulas + n))
  while IFS= read -r failure; do fail "$failure"; done < "$out/page-$j/failures"
  rm -rf "$out/page-$j/profile"  # Chromium's profile, 10+ MB a page
done
echo "book check: $(echo "$pages" | wc -l) pages opened in $("$browser" --version 2>/dev/null | head -1), $formulas formulas typeset"

# ---- 3. screenshots ------------------------------------------------------------------
for page in tutorials/02-autograd.html tutorials/08-geonorm.html; do
  shot="$out/$(basename "$page" .html).png"
  run_browser "file://$(cd "$book" && pwd)/$page" --window-size=1280,1400 --screenshot="$shot" > /dev/null 2>&1
  [ -s "$shot" ] || fail "no screenshot of $page"
done
echo "book check: screenshots in $out"
[ "$failures" -eq 0 ] || { echo "book check: $failures failures" >&2; exit 1; }
echo "book check: passed"
