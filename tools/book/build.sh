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

n=$(wc -l < "$work/sequence")
while read -r page; do
  root=$(root_of "$page")
  # The chapter list, with this page marked.
  nav="<ol>"
  while read -r p; do
    cls=""; [ "$p" = "$page" ] && cls=' class="here"'
    nav="$nav<li><a$cls href=\"$root$(html_of "$p")\">$(title_of "$p" | sed 's/&/\&amp;/g; s/</\&lt;/g')</a></li>"
  done < "$work/sequence"
  nav="$nav</ol>"
  i=$(grep -nxF "$page" "$work/sequence" | cut -d: -f1 || true)
  prev=""; next=""
  if [ -n "$i" ]; then
    [ "$i" -gt 1 ] && prev=$root$(html_of "$(sed -n "$((i - 1))p" "$work/sequence")")
    [ "$i" -lt "$n" ] && next=$root$(html_of "$(sed -n "$((i + 1))p" "$work/sequence")")
  fi
  target="$out/$(html_of "$page")"
  mkdir -p "$(dirname "$target")"
  BOOK_DOC=$page BOOK_FILES=$work/files BOOK_PAGES=$work/pages BOOK_NEEDS=$work/needs \
    pandoc --from gfm+tex_math_dollars --to html5 --standalone --template "$here/template.html" \
      --lua-filter "$here/links.lua" --mathjax="${root}mathjax/MathJax.js?config=TeX-AMS_CHTML" \
      --metadata pagetitle="$(title_of "$page")" -V root="$root" -V nav="$nav" -V prev="$prev" -V next="$next" \
      -o "$target" "$page"
done < "$work/pages"

# What the pages link to: pictures copied, source files and directories as pages.
escape() { sed 's/&/\&amp;/g; s/</\&lt;/g; s/>/\&gt;/g'; }
source_page() {  # repository path -> OUT/src/path.html, one anchored row per line
  local path=$1 target="$out/src/$1.html"
  local root; root=$(root_of "src/$path")
  mkdir -p "$(dirname "$target")"
  { printf '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>%s · normcore</title>' "$path"
    printf '<link rel="stylesheet" href="%sbook.css"></head><body><main><p><a href="%sindex.html">normcore</a></p><h1>%s</h1>\n<table class="listing">\n' \
      "$root" "$root" "$path"
    escape < "$path" | awk '{ printf "<tr id=\"L%d\"><td class=\"n\"><a href=\"#L%d\">%d</a></td><td>%s</td></tr>\n", NR, NR, NR, $0 }'
    printf '</table></main></body></html>\n'; } > "$target"
}
sort -u "$work/needs" | while read -r kind path; do
  case $kind in
    copy) mkdir -p "$out/$(dirname "$path")"; cp "$path" "$out/$path" ;;
    src) source_page "$path" ;;
    dir)
      root=$(root_of "src/$path/index.html")
      mkdir -p "$out/src/$path"
      { printf '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>%s/ · normcore</title>' "$path"
        printf '<link rel="stylesheet" href="%sbook.css"></head><body><main><h1>%s/</h1>\n<ul>\n' "$root" "$path"
        grep "^$path/" "$work/files" | while read -r f; do
          rel=${f#"$path"/}
          if grep -qxF "$f" "$work/pages"; then link="$root$(html_of "$f")"
          else link="$(echo "$rel" | sed 's|[^/]*$||')$(basename "$f").html"; source_page "$f"; fi
          printf '<li><a href="%s">%s</a></li>\n' "$link" "$(echo "$rel" | escape)"
        done
        printf '</ul></main></body></html>\n'; } > "$out/src/$path/index.html"
      ;;
  esac
done
cp "$here/book.css" "$out/book.css"
# MathJax 2 from Debian, the parts a TeX-to-HTML page loads (symlinks resolved).
mkdir -p "$out/mathjax"
cp -rL $mathjax/MathJax.js $mathjax/config $mathjax/extensions $mathjax/jax $mathjax/fonts "$out/mathjax/"
echo "book: $(wc -l < "$work/pages") pages, $(find "$out/src" -name '*.html' 2>/dev/null | wc -l) source pages in $out (open $out/index.html)"
