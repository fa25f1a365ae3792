#!/usr/bin/env bash
# A GPU call for a Triton kernel change: the CUDA tests, the A/B of the launcher against an older spmm.py,
# and gpu_check.py (correctness and speed of every kernel, the guide's GAT step). Outputs to $OUT.
# Usage, from the repository root: OUT=/some/dir OLD=path/to/spmm_old.py bash benchmarks/gpu_ab.sh
set -u
O=${OUT:-/tmp/mpgraph_gpu}
mkdir -p "$O"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout "$limit" "$@" > "$O/$name.out" 2>&1; local rc=$?
  echo "$name rc=$rc $((SECONDS - t0))s" | tee -a "$O/steps.txt"; }
step pytest "${PYTEST_LIMIT:-90}" "$PY" -m pytest -q -n 8 -k "gpu or cuda" tests/ops/test_triton_kernels.py \
  tests/ops/test_triton_dispatch.py tests/ops/test_validation.py
step ab "${AB_LIMIT:-120}" "$PY" benchmarks/triton_ab.py --old "${OLD:?set OLD}" --budget "${AB_BUDGET:-100}"
step gpu_check "${CHECK_LIMIT:-130}" "$PY" benchmarks/gpu_check.py --budget "${CHECK_BUDGET:-100}"
