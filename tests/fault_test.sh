#!/usr/bin/env bash
# Kills a training run with SIGKILL at random moments while it writes a
# checkpoint every step, a few times, and checks each time what a user
# would find: the checkpoint loads, train_log.csv has its header and every
# step up to the checkpoint's, and resuming continues the log without gaps
# or repeats; then one run that stops on a NaN step by itself, checked the
# same way. Run by `make test` with the build directory as $1.
set -uo pipefail
bin="${1:-build}/normcore"
trials="${FAULT_TRIALS:-6}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "fault: FAILED: $*"; failures=$((failures + 1)); }
for i in $(seq 1 40); do echo "a line of text to learn from, number $i"; done > "$work/text.txt"
args=(--data "$work/text.txt" --layers 2 --width 64 --heads 2 --seq 16 --batch 2 --steps 100000 --eval-every 0
      --eval-batches 1 --sample-tokens 0 --checkpoint-every 1 --seed 3)

# The metadata string KEY of a safetensors file.
meta() { perl -e 'open(F, "<:raw", $ARGV[0]) or exit 1; read(F, my $n, 8); read(F, my $h, unpack("Q<", $n));
                  print $1 if $h =~ /"$ARGV[1]":"([^"]*)"/' "$1" "$2"; }

for t in $(seq 1 "$trials"); do
  run="$work/run$t"
  "$bin" train "${args[@]}" --run-dir "$run" > "$work/out$t.txt" 2>&1 &
  pid=$!
  ckpt="$run/checkpoint.safetensors"
  # Wait for the first checkpoint (start-up takes longer under the
  # sanitizers), then kill within the next half second: a random step, at a
  # random point of its checkpoint write.
  for _ in $(seq 1 600); do [ -f "$ckpt" ] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  sleep "0.$((RANDOM % 5))$((RANDOM % 10))"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  if [ ! -f "$ckpt" ]; then fail "trial $t: no checkpoint was written in 30 s: $(tail -3 "$work/out$t.txt")"; continue; fi
  step=$(meta "$ckpt" step)
  [ -n "$step" ] && [ "$step" -ge 1 ] || { fail "trial $t: the checkpoint has no step"; continue; }
  "$bin" generate --resume "$ckpt" --max-tokens 1 > /dev/null 2>&1 || fail "trial $t: the checkpoint at step $step does not load"
  log="$run/train_log.csv"
  [ "$(head -1 "$log")" == "step,loss,val_loss,lr,grad_norm,time_s" ] || fail "trial $t: the log lost its header"
  logged=$(tail -n +2 "$log" | cut -d, -f1 | head -n "$step" | tr '\n' ' ')
  [ "$logged" == "$(seq -s ' ' 1 "$step") " ] || fail "trial $t: the log lacks steps up to the checkpoint's $step: $logged"
  # Resume for two more steps: one log, steps 1..step+2, each once.
  "$bin" train "${args[@]}" --resume "$ckpt" --stop-after $((step + 2)) --run-dir "$run" > "$work/resume$t.txt" 2>&1 \
    || fail "trial $t: resuming from step $step failed: $(tail -3 "$work/resume$t.txt")"
  [ "$(tail -n +2 "$log" | cut -d, -f1 | tr '\n' ' ')" == "$(seq -s ' ' 1 $((step + 2))) " ] \
    || fail "trial $t: after resuming, the log is not steps 1..$((step + 2)) once each"
  [ ! -e "$ckpt.tmp" ] || fail "trial $t: a stale checkpoint temporary survived the resume"
  echo "fault: trial $t: killed at step $step or after; the checkpoint loads, the log is whole, the resume continues"
done
# One more trial, whose fault is a NaN instead of a kill: plain SGD at lr 10
# without clipping diverges on this data within a few dozen steps (the
# gradient norm turns NaN). The run must stop by itself at that step, naming
# it, with the checkpoint of the step before (every step writes one) and the
# log holding exactly the steps up to it; resuming with --skip-nonfinite goes
# on, and the steps it skips are logged too (one row per step, no gaps).
run="$work/nan"; ckpt="$run/checkpoint.safetensors"; log="$run/train_log.csv"
diverge=(--optimizer sgd --lr 10 --grad-clip 0)
"$bin" train "${args[@]}" "${diverge[@]}" --stop-after 200 --run-dir "$run" > "$work/nan.txt" 2>&1 \
  && fail "NaN trial: SGD at lr 10 should diverge within 200 steps: $(tail -2 "$work/nan.txt")"
bad=$(sed -n 's/^normcore: error: step \([0-9]*\): the \(training loss\|gradient norm\) is .*/\1/p' "$work/nan.txt")
step=$(meta "$ckpt" step)
if [ -z "$bad" ] || [ -z "$step" ]; then
  fail "NaN trial: no 'step N: the ... is nan' error or no checkpoint: $(tail -2 "$work/nan.txt")"
else
  [ "$step" -eq $((bad - 1)) ] || fail "NaN trial: the run stopped at step $bad but its checkpoint is step $step's"
  [ "$(tail -n +2 "$log" | cut -d, -f1 | tr '\n' ' ')" == "$(seq -s ' ' 1 "$step") " ] \
    || fail "NaN trial: the log is not steps 1..$step once each"
  "$bin" generate --resume "$ckpt" --max-tokens 1 > /dev/null 2>&1 || fail "NaN trial: the checkpoint at step $step does not load"
  "$bin" train "${args[@]}" "${diverge[@]}" --skip-nonfinite --resume "$ckpt" --stop-after $((step + 3)) --run-dir "$run" \
    > "$work/nanresume.txt" 2>&1 || fail "NaN trial: resuming with --skip-nonfinite failed: $(tail -2 "$work/nanresume.txt")"
  grep -q "^step $bad: skipped, the" "$work/nanresume.txt" || fail "NaN trial: the resumed run did not skip step $bad: $(cat "$work/nanresume.txt")"
  [ "$(tail -n +2 "$log" | cut -d, -f1 | tr '\n' ' ')" == "$(seq -s ' ' 1 $((step + 3))) " ] \
    || fail "NaN trial: after resuming, the log is not steps 1..$((step + 3)) once each: $(tail -n +2 "$log" | cut -d, -f1 | tr '\n' ' ')"
  [ "$(meta "$ckpt" step)" == $((step + 3)) ] || fail "NaN trial: the resumed run's checkpoint is not at step $((step + 3))"
  "$bin" generate --resume "$ckpt" --max-tokens 1 > /dev/null 2>&1 || fail "NaN trial: the resumed checkpoint does not load"
  grep -q "tok_per_s=inf\|ms_per_step=0.0 " "$work/nanresume.txt" && fail "NaN trial: skipped steps count no time: $(grep summary "$work/nanresume.txt")"
  echo "fault: NaN trial: stopped at step $bad with step $step's checkpoint and log; resumed over the NaN steps, logging them"
fi

if [ $failures -eq 0 ]; then echo "fault: all $trials trials and the NaN trial passed"; else echo "fault: $failures check(s) failed"; exit 1; fi
