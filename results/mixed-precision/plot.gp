# Loss curves of results/mixed-precision/run.sh: the training loss of each
# precision (a 50-step moving average), and its difference from float32's.
set terminal pngcairo size 1200,800 font "sans,11"
set output "results/mixed-precision/losses.png"
set datafile separator ","
set multiplot layout 2,2 title "The same runs with float32, bfloat16 and float16 operands (train --precision), 1,500 steps"
do for [model in "gpt2 llama"] {
  set title model." L4 C128: training loss (50-step mean)"
  set xlabel "step"; set ylabel "loss"; set key top right
  plot for [p in "fp32 bf16 fp16"] "< awk -F, 'NR>1{s+=$2; q[NR]=$2; if(NR>51) s-=q[NR-50]; if(NR>50) print $1\",\"s/50}' results/mixed-precision/runs/".model."-".p."/train_log.csv" \
       using 1:2 with lines lw 2 lc rgb (p eq "fp32" ? "black" : p eq "bf16" ? "#1f77b4" : "#ff7f0e") title p
}
do for [model in "gpt2 llama"] {
  set title model.": training loss minus float32's (100-step mean)"
  set xlabel "step"; set ylabel "difference (nats)"; set key top right
  plot for [p in "bf16 fp16"] "< paste -d, results/mixed-precision/runs/".model."-fp32/train_log.csv results/mixed-precision/runs/".model."-".p."/train_log.csv | awk -F, 'NR>1{d=$8-$2; s+=d; q[NR]=d; if(NR>101) s-=q[NR-100]; if(NR>100) print $1\",\"s/100}'" \
       using 1:2 with lines lw 2 lc rgb (p eq "bf16" ? "#1f77b4" : "#ff7f0e") title p, 0 with lines lc rgb "gray" notitle
}
unset multiplot
