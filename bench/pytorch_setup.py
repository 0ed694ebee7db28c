"""PyTorch's best CPU setting on this machine, shared by the benchmarks that
time it beside normcore (compare_pytorch.py, generate/pytorch_generate.py).
Call tune_environment() before `import torch` or `import numpy` (both load
the same OpenBLAS, which reads its settings once, when it loads).

- GOMP_SPINCOUNT=0, so PyTorch's OpenMP pool does not spin while OpenBLAS's
  own thread pool works (they fight over the cores otherwise);
- the OPENBLAS_* variables of the environment removed, OPENBLAS_NUM_THREADS
  set to the threads, and OPENBLAS_CORETYPE set to the fastest of a few
  kernels for this CPU (a 1024^3 product timed in fresh processes, five
  rounds in turn, picks it).
  OpenBLAS 0.3.21 (Debian 12) does not recognise recent Xeons and falls back
  to a slow generic kernel: SkylakeX's AVX-512 kernel is right here.
Debian's python3-torch uses the system BLAS: install libopenblas0-pthread,
or PyTorch runs on the reference BLAS (about 3 GFLOP/s).
"""
import os
import subprocess
import sys

PROBE = """
import time, numpy
a, b = numpy.ones((1024, 1024), numpy.float32), numpy.ones((1024, 1024), numpy.float32)
best = 1e9
for _ in range(16):
    t = time.perf_counter(); a @ b; best = min(best, time.perf_counter() - t)
print(2 * 1024 ** 3 / best / 1e9)
"""

# Core types to try ("": OpenBLAS's own detection). A name this OpenBLAS
# does not know makes it fall back to another kernel (it says so with
# OPENBLAS_VERBOSE=2), and one the CPU cannot run crashes: both are dropped.
CANDIDATES = ["SkylakeX", "Cooperlake", "Zen", "Haswell", ""]


def probe_coretype(threads, rounds=5):
    """The OPENBLAS_CORETYPE with the fastest 1024^3 float32 product: each
    candidate in a fresh process (numpy, which loads the same OpenBLAS as
    PyTorch), `rounds` times in turn, each kernel's best round kept, so that
    one slow moment of a shared machine does not decide. Candidates that
    select the same kernel (a named one and OpenBLAS's own detection) pool
    their rounds."""
    best, names, unusable = {}, {}, []
    for r in range(rounds):
        for core in CANDIDATES[r % len(CANDIDATES):] + CANDIDATES[:r % len(CANDIDATES)]:
            if core in unusable:
                continue
            env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
            env.update(OPENBLAS_NUM_THREADS=str(threads), OPENBLAS_VERBOSE="2")
            if core:
                env["OPENBLAS_CORETYPE"] = core
            out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True)
            said = out.stdout + out.stderr
            kernel = [line.split(":", 1)[1].strip() for line in said.splitlines() if line.startswith("Core:")]
            try:
                rate = float(out.stdout.strip().splitlines()[-1])
            except (ValueError, IndexError):
                rate = None
            if rate is None or "Core not found" in said or not kernel:
                unusable.append(core)
                continue
            best[kernel[0]] = max(best.get(kernel[0], 0.0), rate)
            if core or kernel[0] not in names:
                names[kernel[0]] = core  # a name that selects it, OpenBLAS's detection only if none does
    for core in unusable:
        print(f"  probe OPENBLAS_CORETYPE={core or '(detected)'}: not usable here (unknown to this OpenBLAS, "
              f"or the CPU cannot run it)", file=sys.stderr)
    for kernel, rate in best.items():
        print(f"  probe: OpenBLAS's {kernel} kernel {rate:.1f} GFLOP/s (best of {rounds} rounds)", file=sys.stderr)
    return names[max(best, key=best.get)] if best else ""


def tune_environment(threads, coretype="auto"):
    """Sets the variables above for `threads` threads; coretype "auto" probes,
    "detected" leaves the choice to OpenBLAS."""
    for k in list(os.environ):
        if k.startswith("OPENBLAS_"):
            del os.environ[k]
    os.environ["GOMP_SPINCOUNT"] = "0"
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["OPENBLAS_NUM_THREADS"] = str(threads)
    core = probe_coretype(threads) if coretype == "auto" else "" if coretype == "detected" else coretype
    if core:
        os.environ["OPENBLAS_CORETYPE"] = core


def setting():
    """One line naming the setting in force, for the benchmark's output."""
    return (f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(detected)')}, "
            f"GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT', '(unset)')}, "
            f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '(unset)')}")
