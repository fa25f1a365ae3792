"""Run a timing program in a fresh interpreter and read back its result (imports neither torch nor mpgraph, so
the caller's environment reaches the child as the caller built it)."""

import json
import subprocess
import sys


def run_json(code, env, what="the timing process"):
    """Run ``code`` with ``python -c`` under ``env``; the JSON object on its last output line. A failing child
    stops the benchmark with its exit status and the tail of its error output."""
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{what} failed (exit {r.returncode}):\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])
