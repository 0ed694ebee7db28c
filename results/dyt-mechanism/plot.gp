# gnuplot -e "dir='results/dyt-mechanism'" results/dyt-mechanism/plot.gp
# Three panels from trace-compact.csv (dyt_trace.py): the training loss, the
# RMS of the stream entering the final norm, and the gradient norm leaving
# the final DyT into the stream, per step, for the runs that tell the story.
if (!exists("dir")) dir = "results/dyt-mechanism"
set terminal pngcairo size 1500,460 font ",10"
set output dir."/mechanism.png"
set datafile separator ","
set datafile missing "nan"
set multiplot layout 1,3 title "DyT GPT-2 (4 blocks, C = 64, bytes), AdamW: why it stops learning, and the final gain that fixes it"
src(v) = sprintf("< awk -F, '$1==\"%s\"' %s/trace-compact.csv", v, dir)
set key top right
set xlabel "step"
set title "training loss (one batch)"
set yrange [2:6]
plot src("dyt") using 2:3 with lines lw 1.5 lc rgb "#9400d3" title "DyT, final gain 1", \
     src("dyt+gf=17.7") using 2:3 with lines lw 1.5 lc rgb "#009e73" title "DyT, final gain 17.7 (auto)", \
     src("none") using 2:3 with lines lw 1.5 lc rgb "#56b4e9" title "no norm", \
     src("dyt-sgd") using 2:3 with lines lw 1.5 lc rgb "#e69f00" title "DyT, gain 1, SGD"
set title "RMS of the stream entering the final norm"
set logscale y
set yrange [*:*]
plot src("dyt") using 2:4 with lines lw 1.5 lc rgb "#9400d3" title "DyT, final gain 1", \
     src("dyt+gf=17.7") using 2:4 with lines lw 1.5 lc rgb "#009e73" title "DyT, final gain 17.7 (auto)", \
     src("none") using 2:4 with lines lw 1.5 lc rgb "#56b4e9" title "no norm", \
     src("dyt-sgd") using 2:4 with lines lw 1.5 lc rgb "#e69f00" title "DyT, gain 1, SGD"
set title "gradient norm through the final DyT into the stream (0 not drawn)"
set key center right
plot src("dyt") using 2:($7 > 0 ? $7 : 1/0) with lines lw 1.5 lc rgb "#9400d3" title "DyT, final gain 1", \
     src("dyt+gf=17.7") using 2:7 with lines lw 1.5 lc rgb "#009e73" title "DyT, final gain 17.7 (auto)", \
     src("dyt-sgd") using 2:7 with lines lw 1.5 lc rgb "#e69f00" title "DyT, gain 1, SGD"
unset multiplot
