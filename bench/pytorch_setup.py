"""PyTorch's (and OpenBLAS's) best CPU setting on this machine, shared by the
benchmarks that time them beside normcore (compare_pytorch.py,
generate/pytorch_generate.py, gemm_openblas.py). The probe times numpy,
which on Debian loads the same OpenBLAS as PyTorch.
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
print("rate=%f" % (2 * 1024 ** 3 / best / 1e9))
"""

# Core types to try ("": OpenBLAS's own detection). A name this OpenBLAS
# does not know makes it fall back to another kernel (it says so with
# OPENBLAS_VERBOSE=2: "Core not found"), and one the CPU cannot run
# crashes: both are dropped.
CANDIDATES = ["SkylakeX", "Cooperlake", "Zen", "Haswell", ""]


def probe_once(core, threads):
    """(kernel, GFLOP/s) of one probe process with OPENBLAS_CORETYPE=core, or
    (None, why) when it could not tell."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
    env.update(OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads), OPENBLAS_VERBOSE="2")
    if core:
        env["OPENBLAS_CORETYPE"] = core
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True)
    lines = (out.stdout + out.stderr).splitlines()
    if any("Core not found" in line for line in lines):
        return None, "unknown to this OpenBLAS (it falls back to another kernel)"
    kernels = [line.split(":", 1)[1].strip() for line in lines if line.startswith("Core:")]
    rates = [float(line[5:]) for line in lines if line.startswith("rate=")]
    if out.returncode != 0 or not rates:
        return None, "the probe failed (exit %d): %s" % (out.returncode, " | ".join(lines[-3:]))
    if not kernels:
        return None, "OpenBLAS named no kernel (not OpenBLAS, or one built for a single CPU)"
    return kernels[0], rates[0]


def probe_coretype(threads, rounds=5):
    """The OPENBLAS_CORETYPE with the fastest 1024^3 float32 product: each
    candidate in a fresh process (numpy, which on Debian loads the same
    OpenBLAS as PyTorch, through libblas.so.3, and starts in a fraction of
    PyTorch's time), `rounds` times in turn, each kernel's best round kept,
    so that one slow moment of a shared machine does not decide. Candidates
    that select the same kernel pool their rounds; the name returned is the
    kernel's own where it is a candidate ("" for OpenBLAS's own detection
    when no candidate names it)."""
    best, chose, why_not = {}, {}, {}
    for r in range(rounds):
        for core in CANDIDATES[r % len(CANDIDATES):] + CANDIDATES[:r % len(CANDIDATES)]:
            if core in why_not:
                continue  # dropped in an earlier round
            kernel, rate = probe_once(core, threads)
            if kernel is None:
                why_not[core] = rate
                continue
            best[kernel] = max(best.get(kernel, 0.0), rate)
            chose.setdefault(kernel, set()).add(core)
    for core, why in why_not.items():
        print(f"  probe OPENBLAS_CORETYPE={core or '(detected)'}: not used: {why}", file=sys.stderr)
    for kernel, rate in best.items():
        print(f"  probe: OpenBLAS's {kernel} kernel {rate:.1f} GFLOP/s (best of {rounds} rounds)", file=sys.stderr)
    if not best:
        return ""
    fastest = max(best, key=best.get)
    # The kernel's own name, else OpenBLAS's detection, else any name that chose it.
    for core in sorted(chose[fastest], key=lambda c: (c.lower() != fastest.lower(), c != "", c)):
        return core


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
