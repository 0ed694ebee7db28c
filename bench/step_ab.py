#!/usr/bin/env python3
"""Two builds of normcore, their training steps timed in alternation.

On a shared machine the speed drifts from minute to minute, so timing one
build and then the other compares two stretches of time as much as two
builds. Each round here runs `OLD bench` and `NEW bench` (--skip-gemm, the
same models, sizes and steps, --json), and which one goes first alternates
from round to round. Printed per model and size, as medians and ranges over
the rounds: the step time, the MFU (against the peak each run samples for
the step's products: the FMA's, or vdpbf16ps's for bfloat16 on AVX512-BF16),
the GEMMs' rate inside the step, every GEMM shape of the step as a
percentage of that peak, and the median of the rounds' own time ratios
(new / old: below 1, NEW is faster). A change is believable when its ratios
sit on one side of 1, or when the shapes it touches move and the others do
not.

  bench/step_ab.py /tmp/normcore_old build/normcore --rounds 8 --models gpt2 --sizes train
  bench/step_ab.py OLD NEW --precision bf16     # the steps with bfloat16 products

Only the standard library; normcore itself never needs Python.
"""
import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_json  # noqa: E402


def fail(message):
    sys.exit("step_ab: " + message)


def run_bench(binary, args, json_path):
    """One `bench` run: its training results, one dict per model and size."""
    flags = ["--models", args.models, "--sizes", args.sizes, "--skip-gemm", "--steps", str(args.steps)]
    if args.precision != "fp32":  # builds from before --precisions (2026-12-03) time float32 steps only
        flags += ["--precisions", args.precision]
    steps = bench_json.run_bench(binary, flags, json_path, fail).get("training")
    if not steps:
        fail("%s's bench timed no training step (models '%s', sizes '%s')" % (binary, args.models, args.sizes))
    return steps


def record(table, step, binary):
    """Adds one run's numbers for one model and size to `table` (label -> list over rounds)."""
    if "ms_per_step" not in step:
        fail("%s's JSON has no ms_per_step for %s %s" % (binary, step.get("model"), step.get("size")))
    for label, field in (("ms/step", "ms_per_step"), ("MFU %", "mfu_percent"), ("GEMM GF/s", "gemm_gflops_in_step")):
        if field in step:  # an older build's JSON, or a step with no measured peak (AMX), may lack one
            table.setdefault(label, []).append(step[field])
    # What the percentages divide by: builds before the id was written
    # divided every step by the FMA peak (and gave 16-bit steps no MFU).
    table.setdefault("peak", set()).add(step.get("mfu_peak", "fma"))
    for shape in step.get("gemm_shapes", []):
        if "percent_of_peak" in shape:
            table.setdefault(shape["shape"], []).append(shape["percent_of_peak"])


def spread(values):
    if not values:
        return "%24s" % "-"
    return "%7.1f [%6.1f-%6.1f]   " % (statistics.median(values), min(values), max(values))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", help="the normcore binary to compare against")
    parser.add_argument("new", help="the normcore binary under test")
    parser.add_argument("--rounds", type=int, default=6, help="rounds, each running both (default 6)")
    parser.add_argument("--models", default="gpt2", help="bench --models (default gpt2)")
    parser.add_argument("--sizes", default="train", help="bench --sizes (default train)")
    parser.add_argument("--steps", type=int, default=10, help="bench --steps (default 10)")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"],
                        help="the steps' --precision (default fp32; one, so that each model and size is one step)")
    args = parser.parse_args()
    binaries = {"old": os.path.abspath(args.old), "new": os.path.abspath(args.new)}  # never a lookup on PATH
    for binary in binaries.values():
        if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
            fail("%s is not an executable file (build it, or give its path)" % binary)
    if args.rounds < 1 or args.steps < 1:
        fail("--rounds and --steps must be at least 1")

    # results[side][(model, size)][label] -> one value per round
    results = {"old": {}, "new": {}}
    try:
        work = tempfile.TemporaryDirectory()
    except OSError as e:
        fail("no temporary directory to write bench's JSON in (%s)" % e)
    with work as directory:
        for r in range(args.rounds):
            order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
            for side in order:
                for step in run_bench(binaries[side], args, os.path.join(directory, side + ".json")):
                    record(results[side].setdefault((step["model"], step["size"]), {}), step, binaries[side])
            print("round %d of %d done (%s first)" % (r + 1, args.rounds, order[0]), file=sys.stderr)
    if results["old"].keys() != results["new"].keys():
        fail("the two builds timed different steps: old %s, new %s" %
             (sorted(results["old"]), sorted(results["new"])))

    print("old: %s\nnew: %s\nprecision: %s" % (binaries["old"], binaries["new"], args.precision))
    print("%d rounds, alternating; medians [ranges]; MFU and shapes as %% of the peak each run sampled for the "
          "step's products (fma: float32 FMA, bf16_dot: vdpbf16ps)" % args.rounds)
    for key, old in results["old"].items():
        new = results["new"][key]
        old_peak, new_peak = old.pop("peak"), new.pop("peak")
        ratios = [n / o for o, n in zip(old["ms/step"], new["ms/step"])]  # round by round
        print("\n%s %s: time new / old %.3f [%.3f-%.3f] (median of the rounds' ratios)" %
              (key[0], key[1], statistics.median(ratios), min(ratios), max(ratios)))
        print("  peak: old %s, new %s" % (",".join(sorted(old_peak)), ",".join(sorted(new_peak))))
        if old_peak != new_peak:
            print("  (the two builds divide by different peaks: compare times, not percentages)")
        print("  %-24s %-24s %-24s" % ("", "old", "new"))
        for label in list(old) + [label for label in new if label not in old]:
            print("  %-24s %s %s" % (label, spread(old.get(label, [])), spread(new.get(label, []))))


if __name__ == "__main__":
    main()
