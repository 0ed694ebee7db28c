#!/usr/bin/python3
"""normcore's GEMM table against OpenBLAS's sgemm, on the same shapes.

`normcore bench` gives each GEMM shape of a transformer as a percentage of
the FMA peak it samples. This puts a library beside it: OpenBLAS (the BLAS
under Debian's numpy and PyTorch) multiplying the same shapes, stored the
same way (TN: A stored transposed, as a weight gradient reads dY; NT: B
stored transposed, as x W^T reads W), best of the same number of calls,
taken round-robin over the shapes, each timed call right after an untimed
one of the same shape, as normcore's bench takes them (cli/bench.cpp;
OpenBLAS writes into an output made once, normcore into a new one, which
its allocator hands back without touching it). Each round runs `normcore bench --skip-training` and the
OpenBLAS timer, each in a fresh process, which one goes first alternating
from round to round, because the machine's speed drifts. OpenBLAS gets its
best setting (pytorch_setup.py: the fastest OPENBLAS_CORETYPE of a probe,
its own threads, as many as normcore's).

Printed per shape: each side's rate as a percentage of the peak normcore
sampled in the same round (medians and ranges over the rounds), and the
median and range of the rounds' own ratios, normcore's rate over
OpenBLAS's (above 1: normcore faster); then the median of those per-shape
medians.

  /usr/bin/python3 bench/gemm_openblas.py build/normcore --rounds 3

Needs numpy linked to OpenBLAS (Debian: python3-numpy, libopenblas0-pthread);
normcore itself never needs Python.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_json  # noqa: E402

# The OpenBLAS side, run as `python3 -c TIMER SHAPES_JSON REPEATS`: prints
# {"gflops": [...]} in the order of the shapes.
TIMER = r"""
import json, sys, time
import numpy as np
shapes, repeats = json.loads(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(1)
cases = []
for s in shapes:
    m, k, n, layout = s["m"], s["k"], s["n"], s["layout"]
    a = rng.standard_normal((k, m) if layout[0] == "T" else (m, k), dtype=np.float32)
    b = rng.standard_normal((n, k) if layout[1] == "T" else (k, n), dtype=np.float32)
    cases.append((a.T if layout[0] == "T" else a, b.T if layout[1] == "T" else b,
                  np.empty((m, n), dtype=np.float32), 2.0 * m * k * n))
best = [float("inf")] * len(cases)
for a, b, c, _ in cases:
    np.matmul(a, b, out=c)  # warm-up: OpenBLAS's threads, the pages
for _ in range(repeats):
    for i, (a, b, c, _) in enumerate(cases):
        np.matmul(a, b, out=c)  # untimed: this shape's operands back into the caches, as normcore's bench does
        start = time.perf_counter()
        np.matmul(a, b, out=c)
        best[i] = min(best[i], time.perf_counter() - start)
print(json.dumps({"gflops": [flop / t / 1e9 for (_, _, _, flop), t in zip(cases, best)]}))
"""


def fail(message):
    sys.exit("gemm_openblas: " + message)


def run_normcore(binary, args, json_path, env):
    """One `bench --skip-training` run: (its GEMM rows, its sampled FMA peak)."""
    flags = ["--skip-training", "--repeats", str(args.repeats), "--threads", str(args.threads)]
    result = bench_json.run_bench(binary, flags, json_path, fail, env)
    try:
        peak = float(result["machine"]["fma_peak_gflops"])
        rows = [{"m": int(row["m"]), "k": int(row["k"]), "n": int(row["n"]), "layout": str(row["layout"]),
                 "what": str(row.get("what", "")), "gflops": float(row["gflops"])} for row in result["gemm"]]
    except (ValueError, KeyError, TypeError) as e:
        fail("%s wrote no readable GEMM table to %s (%s)" % (binary, json_path, e))
    if not rows:
        fail("%s's bench timed no GEMM shape" % binary)
    if peak <= 0 or any(row["gflops"] <= 0 for row in rows):
        fail("%s's bench gave a rate or an FMA peak that is not positive" % binary)
    return rows, peak


def run_openblas(args, shapes):
    """The OpenBLAS timer on the shapes: a list of GFLOP/s in their order."""
    command = args.timer + [json.dumps(shapes), str(args.repeats)]
    completed = subprocess.run(command, capture_output=True, text=True)
    if completed.returncode != 0:
        tail = (completed.stdout + completed.stderr).strip().splitlines()[-5:]
        fail("the OpenBLAS timer failed (exit %d):\n  %s" % (completed.returncode, "\n  ".join(tail)))
    try:
        rates = [float(rate) for rate in json.loads(completed.stdout.strip().splitlines()[-1])["gflops"]]
    except (ValueError, KeyError, IndexError, TypeError) as e:
        fail("the OpenBLAS timer printed no rates (%s): %s" % (e, completed.stdout.strip()[-200:]))
    if len(rates) != len(shapes):
        fail("the OpenBLAS timer gave %d rates for %d shapes" % (len(rates), len(shapes)))
    if any(rate <= 0 for rate in rates):
        fail("the OpenBLAS timer gave a rate that is not positive: %s" % rates)
    return rates


def spread(values):
    return "%6.1f [%5.1f-%5.1f]" % (statistics.median(values), min(values), max(values))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("normcore", help="the normcore binary")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each timing both (default 3)")
    parser.add_argument("--repeats", type=int, default=20, help="calls per shape, the best kept (default 20)")
    parser.add_argument("--threads", type=int, default=2, help="threads for both (default 2)")
    parser.add_argument("--coretype", default="auto",
                        help="OPENBLAS_CORETYPE (auto: the probe's fastest; detected: OpenBLAS's own choice)")
    parser.add_argument("--timer", default=None,
                        help="the command that times OpenBLAS, given SHAPES_JSON REPEATS (default: numpy, this "
                             "file's timer); a stand-in for testing this script")
    args = parser.parse_args()
    if args.rounds < 1 or args.repeats < 1 or args.threads < 1:
        fail("--rounds, --repeats and --threads must be at least 1")
    binary = os.path.abspath(args.normcore)  # never a lookup on PATH
    if not os.access(binary, os.X_OK):
        fail("%s is not an executable normcore binary" % binary)
    # normcore runs in the environment this script was given, not the one
    # tuned for OpenBLAS below (its --threads sets its own thread count).
    normcore_env = dict(os.environ)
    if args.timer is None:
        import pytorch_setup

        pytorch_setup.tune_environment(args.threads, args.coretype)
        args.timer = [sys.executable, "-c", TIMER]
        setting = pytorch_setup.setting()
    else:
        args.timer = shlex.split(args.timer)
        setting = "a stand-in timer: " + " ".join(args.timer)

    shapes, table = None, {}
    with tempfile.TemporaryDirectory() as scratch:
        json_path = os.path.join(scratch, "bench.json")
        for r in range(args.rounds):
            turns = ["normcore", "openblas"] if r % 2 == 0 else ["openblas", "normcore"]
            for side in turns:
                if side == "normcore":
                    rows, peak = run_normcore(binary, args, json_path, normcore_env)
                    if shapes is None:
                        shapes = [{k: row[k] for k in ("m", "k", "n", "layout", "what")} for row in rows]
                    elif [(s["m"], s["k"], s["n"], s["layout"]) for s in shapes] != \
                            [(row["m"], row["k"], row["n"], row["layout"]) for row in rows]:
                        fail("normcore's bench timed different shapes from one round to the next")
                    normcore_rates = [row["gflops"] for row in rows]
                else:
                    if shapes is None:  # the first round: normcore runs first and lists the shapes
                        fail("internal: no shapes yet")
                    openblas_rates = run_openblas(args, shapes)
            for i, shape in enumerate(shapes):
                entry = table.setdefault(i, {"normcore": [], "openblas": [], "ratio": []})
                entry["normcore"].append(100 * normcore_rates[i] / peak)
                entry["openblas"].append(100 * openblas_rates[i] / peak)
                entry["ratio"].append(normcore_rates[i] / openblas_rates[i])
            print("round %d of %d done (%s first; FMA peak %.1f GFLOP/s)" % (r + 1, args.rounds, turns[0], peak),
                  file=sys.stderr)

    print("OpenBLAS: %s; %d threads, %d rounds, best of %d calls per shape" %
          (setting, args.threads, args.rounds, args.repeats), flush=True)
    print("% of the FMA peak normcore sampled in each round: median [min-max] over the rounds;")
    print("normcore / OpenBLAS: the rounds' rate ratios, median [min-max] (above 1: normcore faster)")
    print("%-20s %-6s %-24s %-20s %-20s %s" % ("M x K x N", "layout", "what", "normcore", "OpenBLAS",
                                             "normcore / OpenBLAS"))
    medians = []
    for i, shape in enumerate(shapes):
        entry = table[i]
        dims = "%d x %d x %d" % (shape["m"], shape["k"], shape["n"])
        medians.append(statistics.median(entry["ratio"]))
        print("%-20s %-6s %-24s %-20s %-20s %.2f [%.2f-%.2f]" % (
            dims, shape["layout"], shape["what"][:24], spread(entry["normcore"]), spread(entry["openblas"]),
            medians[-1], min(entry["ratio"]), max(entry["ratio"])))
    print("the median of the %d shapes' median ratios: %.2f" % (len(medians), statistics.median(medians)))


if __name__ == "__main__":
    main()
