#!/usr/bin/env bash
# pictures.sh BUILD OUT — draws the chapters' pictures from the sources
# their programs wrote into BUILD/tutorials (run the programs first: make
# test or make docs): every NN-name.dot with Graphviz, every NN-name.gp with
# gnuplot (the script sets `output out`), into OUT/NN-name.png.
#
# `make docs` draws them into tutorials/images (committed); `make test` into
# BUILD/pictures, so a source that no longer draws fails the build, and it
# checks that every picture a chapter shows exists and every source the
# programs write has its picture in tutorials/images.
set -u
build="${1:-build}"
out="${2:-$build/pictures}"
mkdir -p "$out"
status=0
sources=$(ls "$build"/tutorials/[0-9][0-9]-*.dot "$build"/tutorials/[0-9][0-9]-*.gp 2>/dev/null)
[ -n "$sources" ] || { echo "pictures: no sources in $build/tutorials (run the chapter programs first)"; exit 1; }
for source in $sources; do
  name=$(basename "${source%.*}")
  case "$source" in
    *.dot) dot -Tpng "$source" -o "$out/$name.png" ;;
    *.gp) gnuplot -e "out='$out/$name.png'" "$source" ;;
  esac || { echo "pictures: $source did not draw"; status=1; continue; }
  [ -f "tutorials/images/$name.png" ] || { echo "pictures: $source has no tutorials/images/$name.png (make docs draws it)"; status=1; }
done
for shown in $(grep -oh "](images/[^)]*\.png)" tutorials/*.md | sed 's/](\(.*\))/\1/' | sort -u); do
  [ -f "tutorials/$shown" ] || { echo "pictures: a chapter shows tutorials/$shown, which does not exist"; status=1; }
done
[ $status -eq 0 ] && echo "pictures: $(echo "$sources" | wc -w) drawn into $out; every picture the chapters show exists"
exit $status
