"""PyTorch's best CPU setting on this machine, shared by the benchmarks that
time it beside normcore (compare_pytorch.py, generate/pytorch_generate.py).
Call tune_environment() before `import torch` or `import numpy` (both load
the same OpenBLAS, which reads its settings once, when it loads).

- GOMP_SPINCOUNT=0, so PyTorch's OpenMP pool does not spin while OpenBLAS's
  own thread pool works (they fight over the cores otherwise);
- the OPENBLAS_* variables of the environment removed, OPENBLAS_NUM_THREADS
  set to the threads, and OPENBLAS_CORETYPE set to the fastest of a few
  kernels for this CPU (a 1024^3 matmul probe in fresh processes picks it).
  OpenBLAS 0.3.21 (Debian 12) does not recognise recent Xeons and falls back
  to a slow generic kernel: SkylakeX's AVX-512 kernel is right here.
Debian's python3-torch uses the system BLAS: install libopenblas0-pthread,
or PyTorch runs on the reference BLAS (about 3 GFLOP/s).
"""
import os
import subprocess
import sys

PROBE = """
import time, torch
torch.set_num_threads({threads})
a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
best = 1e9
for _ in range(8):
    t = time.perf_counter(); a @ b; best = min(best, time.perf_counter() - t)
print(2 * 1024 ** 3 / best / 1e9)
"""


def probe_coretype(threads):
    """The OPENBLAS_CORETYPE with the fastest 1024^3 matmul (each in a fresh process)."""
    rates = {}
    for core in ["SkylakeX", "Cooperlake", "Haswell", ""]:
        env = dict(os.environ, OPENBLAS_CORETYPE=core) if core else dict(os.environ)
        out = subprocess.run([sys.executable, "-c", PROBE.format(threads=threads)], env=env,
                             capture_output=True, text=True)
        try:
            rates[core] = float(out.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            continue
    for core, rate in rates.items():
        print(f"  probe OPENBLAS_CORETYPE={core or '(detected)'}: {rate:.1f} GFLOP/s", file=sys.stderr)
    return max(rates, key=rates.get)


def tune_environment(threads, coretype="auto"):
    """Sets the variables above for `threads` threads; coretype "auto" probes."""
    for k in list(os.environ):
        if k.startswith("OPENBLAS_"):
            del os.environ[k]
    os.environ["GOMP_SPINCOUNT"] = "0"
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["OPENBLAS_NUM_THREADS"] = str(threads)
    core = probe_coretype(threads) if coretype == "auto" else coretype
    if core:
        os.environ["OPENBLAS_CORETYPE"] = core


def setting():
    """One line naming the setting in force, for the benchmark's output."""
    return (f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(detected)')}, "
            f"GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT', '(unset)')}, "
            f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '(unset)')}")
