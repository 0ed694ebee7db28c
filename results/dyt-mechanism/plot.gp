# gnuplot -e "dir='results/dyt-mechanism'" results/dyt-mechanism/plot.gp
# Three panels from trace-compact.csv (dyt_trace.py), per step: the training
# loss, the RMS of the stream entering the final norm, and the gradient norm
# that the final DyT passes back into the stream, for the runs that tell
# the story.
if (!exists("dir")) dir = "results/dyt-mechanism"
set terminal pngcairo size 1500,480 font ",10"
set output dir."/mechanism.png"
set datafile separator ","
set datafile missing "nan"
set multiplot layout 1,3 title "DyT GPT-2 (4 blocks, C = 64, bytes), AdamW unless said: why it stops learning, and the final gain that fixes it"
src(v) = sprintf("< awk -F, '$1==\"%s\"' %s/trace-compact.csv", v, dir)
# One colour per run in every panel.
gain1 = 'lw 1.5 lc rgb "#9400d3" title "DyT, final gain 1"'
gain8 = 'lw 1.5 lc rgb "#d55e00" title "DyT, final gain 8"'
auto = 'lw 1.5 lc rgb "#009e73" title "DyT, final gain 17.7 (auto)"'
nonorm = 'lw 1.5 lc rgb "#56b4e9" title "no norm"'
sgd = 'lw 1.5 lc rgb "#e69f00" title "DyT, final gain 1, SGD"'
set key top right
set xlabel "step"
set title "training loss (one batch; the no-norm run spikes above 6 at step 43)"
set yrange [2:6]
plot src("dyt") using 2:3 with lines @gain1, src("dyt+gf=8") using 2:3 with lines @gain8, \
     src("dyt+gf=17.7") using 2:3 with lines @auto, src("none") using 2:3 with lines @nonorm, \
     src("dyt-sgd") using 2:3 with lines @sgd
set title "RMS of the stream entering the final norm"
set logscale y
set format y "10^{%L}"
set yrange [*:*]
plot src("dyt") using 2:4 with lines @gain1, src("dyt+gf=8") using 2:4 with lines @gain8, \
     src("dyt+gf=17.7") using 2:4 with lines @auto, src("none") using 2:4 with lines @nonorm, \
     src("dyt-sgd") using 2:4 with lines @sgd
set title "gradient passed back through the final DyT (0 not drawn)"
set key bottom left
plot src("dyt") using 2:($7 > 0 ? $7 : 1/0) with lines @gain1, src("dyt+gf=8") using 2:($7 > 0 ? $7 : 1/0) with lines @gain8, \
     src("dyt+gf=17.7") using 2:7 with lines @auto, src("dyt-sgd") using 2:7 with lines @sgd
unset multiplot
