#!/bin/bash
# build.sh OUT: the README, the chapters and every other Markdown page of the
# repository rendered into a static HTML book in OUT (make book: build/book).
# Math ($...$, $$...$$) is typeset by a local copy of Debian's MathJax, so
# the book works offline, opened from disk. Links between pages, to
# pictures and to source files work in the book (tools/book/links.lua);
# every source file a page links to or quotes gets a page of its own with
# numbered lines.
set -euo pipefail
out=${1:-build/book}
mathjax=/usr/share/javascript/mathjax
here=$(dirname "$0")
for tool in pandoc; do
  command -v $tool > /dev/null || { echo "book: $tool is missing (make setup-book installs it)" >&2; exit 1; }
done
[ -f $mathjax/MathJax.js ] || { echo "book: $mathjax/MathJax.js is missing (make setup-book installs libjs-mathjax)" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git ls-files > "$work/files"
# The pages: every tracked Markdown file but the tests' data notes. The
# chapter list, in reading order, is the README, the chapters, the
# reference, the glossary and the exercises.
grep '\.md$' "$work/files" | grep -v '^tests/' > "$work/pages"
{ echo README.md; grep '^tutorials/[0-9][0-9]-.*\.md$' "$work/pages" | sort
  echo tutorials/reference.md; echo tutorials/glossary.md; echo exercises/README.md; } > "$work/sequence"
: > "$work/needs"

# A page's title: its first heading, without the leading #.
title_of() { local t; t=$(sed -n 's/^# *//p' "$1" | head -1); echo "${t:-$1}"; }
html_of() { if [ "$1" = README.md ]; then echo index.html; else echo "${1%.md}.html"; fi; }
root_of() {  # the way up from a page to the book's root
  local d=${1%/*}
  if [ "$d" = "$1" ]; then echo ""; else echo "$d" | sed 's|[^/]*|..|g; s|$|/|'; fi
}

# Each title and file name once (a process per lookup costs seconds on a
# slow machine: 44 pages x 18 entries).
mapfile -t sequence < "$work/sequence"
n=${#sequence[@]}
titles=(); htmls=()
for p in "${sequence[@]}"; do
  t=$(title_of "$p"); t=${t//&/"&amp;"}; titles+=("${t//</"&lt;"}")
  htmls+=("$(html_of "$p")")
done
while read -r page; do
  root=$(root_of "$page")
  # The chapter list, with this page marked; the pages before and after.
  nav="<ol>"; prev=""; next=""
  for ((j = 0; j < n; j++)); do
    cls=""
    if [ "${sequence[j]}" = "$page" ]; then
      cls=' class="here"'
      ((j > 0)) && prev=$root${htmls[j - 1]}
      ((j + 1 < n)) && next=$root${htmls[j + 1]}
    fi
    nav="$nav<li><a$cls href=\"$root${htmls[j]}\">${titles[j]}</a></li>"
  done
  nav="$nav</ol>"
  target="$out/$(html_of "$page")"
  mkdir -p "$(dirname "$target")"
  BOOK_DOC=$page BOOK_FILES=$work/files BOOK_PAGES=$work/pages BOOK_NEEDS=$work/needs \
    pandoc --from gfm+tex_math_dollars --to html5 --standalone --template "$here/template.html" \
      --lua-filter "$here/links.lua" --mathjax="${root}mathjax/MathJax.js?config=TeX-AMS_CHTML" \
      --metadata pagetitle="$(title_of "$page")" -V root="$root" -V nav="$nav" -V prev="$prev" -V next="$next" \
      -o "$target" "$page"
done < "$work/pages"

# What the pages link to: pictures copied, source files and directories as
# pages. Source files are listed first and written by one process at the end.
declare -A is_page
while read -r p; do is_page[$p]=1; done < "$work/pages"
: > "$work/sources"
sort -u "$work/needs" | while read -r kind path; do
  case $kind in
    copy) mkdir -p "$out/$(dirname "$path")"; cp "$path" "$out/$path" ;;
    src) echo "$path" >> "$work/sources" ;;
    dir)
      root=$(root_of "src/$path/index.html")
      mkdir -p "$out/src/$path"
      { printf '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>%s/ · normcore</title>' "$path"
        printf '<link rel="stylesheet" href="%sbook.css"></head><body><main><h1>%s/</h1>\n<ul>\n' "$root" "$path"
        while read -r f; do
          [[ $f == "$path"/* ]] || continue
          rel=${f#"$path"/}
          if [ -n "${is_page[$f]:-}" ]; then link="$root${f%.md}.html"
          else link="$rel.html"; echo "$f" >> "$work/sources"; fi
          rel=${rel//&/"&amp;"}; rel=${rel//</"&lt;"}
          printf '<li><a href="%s">%s</a></li>\n' "$link" "${rel//>/"&gt;"}"
        done < "$work/files"
        printf '</ul></main></body></html>\n'; } > "$out/src/$path/index.html"
      ;;
  esac
done
sort -u "$work/sources" | "$here/source_pages.pl" "$out"
cp "$here/book.css" "$out/book.css"
# MathJax 2 from Debian, the parts a TeX-to-HTML page loads (symlinks resolved).
mkdir -p "$out/mathjax"
cp -rL $mathjax/MathJax.js $mathjax/config $mathjax/extensions $mathjax/jax $mathjax/fonts "$out/mathjax/"
echo "book: $(wc -l < "$work/pages") pages, $(find "$out/src" -name '*.html' 2>/dev/null | wc -l) source pages in $out (open $out/index.html)"
