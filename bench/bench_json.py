"""One `normcore bench ... --json FILE` run and its JSON, for the tools that
put bench's numbers beside something else (step_ab.py: another build;
gemm_openblas.py: OpenBLAS). Only the standard library."""
import json
import os
import subprocess


def run_bench(binary, flags, json_path, fail, env=None):
    """Runs BINARY bench FLAGS --json JSON_PATH and returns the parsed JSON;
    calls fail(message) (which must not return) when the run fails or
    writes no readable JSON."""
    if os.path.exists(json_path):
        os.remove(json_path)  # a run that writes nothing must not pass off the last round's file
    command = [binary, "bench"] + flags + ["--json", json_path]
    completed = subprocess.run(command, capture_output=True, text=True, env=env)
    if completed.returncode != 0:
        tail = (completed.stdout + completed.stderr).strip().splitlines()[-5:]
        fail("%s failed (exit %d):\n  %s" % (" ".join(command), completed.returncode, "\n  ".join(tail)))
    try:
        with open(json_path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail("%s wrote no readable JSON to %s (%s)" % (binary, json_path, e))
