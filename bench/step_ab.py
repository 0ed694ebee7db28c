#!/usr/bin/env python3
"""step_ab.py OLD NEW [--rounds N] [--models M] [--sizes S] [--steps K] -- two normcore
binaries' training steps, alternating, on a machine whose speed drifts.

Each round runs `OLD bench` and `NEW bench` (--skip-gemm, the same models, sizes and steps,
--json), the first of the two alternating from round to round, so that both see the same
stretches of a shared machine. Printed per model and size: the medians and ranges over the
rounds of the step time, the MFU (against the FMA peak each run samples) and the rate of
its GEMMs, the median of the rounds' own time ratios (new / old: below 1, NEW is faster),
and every GEMM shape of the step as a percentage of the peak. A change is believable when
its ratio range sits on one side of 1, or when the shapes it touches move and the others
do not.

  bench/step_ab.py /tmp/normcore_old build/normcore --rounds 8 --models gpt2 --sizes train

Only the standard library; normcore itself never needs Python.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run_bench(binary, args, json_path):
    """One `bench` run; its training results, one dict per model and size."""
    command = [binary, "bench", "--models", args.models, "--sizes", args.sizes, "--skip-gemm",
               "--steps", str(args.steps), "--json", json_path]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
        sys.exit("step_ab: %s failed (exit %d):\n  %s" % (" ".join(command), done.returncode, "\n  ".join(tail)))
    with open(json_path) as f:
        return json.load(f)["training"]


def spread(values):
    return "%7.1f [%6.1f-%6.1f]" % (statistics.median(values), min(values), max(values))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", help="the normcore binary to compare against")
    parser.add_argument("new", help="the normcore binary under test")
    parser.add_argument("--rounds", type=int, default=6, help="rounds, each running both (default 6)")
    parser.add_argument("--models", default="gpt2", help="bench --models (default gpt2)")
    parser.add_argument("--sizes", default="train", help="bench --sizes (default train)")
    parser.add_argument("--steps", type=int, default=10, help="bench --steps (default 10)")
    args = parser.parse_args()
    for binary in (args.old, args.new):
        if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
            sys.exit("step_ab: %s is not an executable file (build it, or give its path)" % binary)
    if args.rounds < 1 or args.steps < 1:
        sys.exit("step_ab: --rounds and --steps must be at least 1")

    # results[side][(model, size)][what] -> one value per round
    results = {"old": {}, "new": {}}
    with tempfile.TemporaryDirectory() as work:
        for r in range(args.rounds):
            order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
            for side in order:
                binary = args.old if side == "old" else args.new
                for t in run_bench(binary, args, os.path.join(work, side + ".json")):
                    row = results[side].setdefault((t["model"], t["size"]), {})
                    row.setdefault("ms/step", []).append(t["ms_per_step"])
                    row.setdefault("MFU %", []).append(t["mfu_percent"])
                    row.setdefault("GEMM GF/s", []).append(t["gemm_gflops_in_step"])
                    for shape in t["gemm_shapes"]:
                        row.setdefault(shape["shape"], []).append(shape["percent_of_peak"])
            print("round %d of %d done (%s first)" % (r + 1, args.rounds, order[0]), file=sys.stderr)

    print("%d rounds, alternating; medians [ranges]; shapes as %% of the FMA peak sampled in each run" % args.rounds)
    for key, old_row in results["old"].items():
        new_row = results["new"][key]
        ratios = [n / o for o, n in zip(old_row["ms/step"], new_row["ms/step"])]
        print("\n%s %s: time new / old %.3f [%.3f-%.3f] (median of the rounds' ratios)" %
              (key[0], key[1], statistics.median(ratios), min(ratios), max(ratios)))
        print("  %-24s %-24s %-24s" % ("", "old", "new"))
        for what, values in old_row.items():
            if what in new_row and len(new_row[what]) == len(values):
                print("  %-24s %s  %s" % (what, spread(values), spread(new_row[what])))


if __name__ == "__main__":
    main()
