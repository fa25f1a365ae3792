#!/usr/bin/env bash
# One GPU session's checks in one call (about 6-7 minutes on an H200 with torch 2.11 / triton 3.6 there):
# versions and `mpgraph info`; the CUDA tests; gpu_check.py (Triton kernels: correctness, speed, the
# guide's GAT step); triton_configs.py (launch configurations, fp32 against 16-bit); and `mpgraph bench
# precision` on CUDA (the guide's claims: memory and convergence per precision). Each step has its own
# time limit, and every output goes to $OUT (default /tmp/mpgraph_gpu), so a slow step loses only itself.
# Usage, from the repository root: OUT=/some/dir bash benchmarks/gpu_session.sh
set -u
O=${OUT:-/tmp/mpgraph_gpu}
mkdir -p "$O"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" MPLBACKEND=Agg
PY=${PYTHON:-python3}
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout "$limit" "$@" > "$O/$name.out" 2>&1; local rc=$?
  echo "$name rc=$rc $((SECONDS - t0))s" | tee -a "$O/steps.txt"; }
step env 60 bash -c "nvidia-smi -L; $PY -c 'import torch, triton, numpy, numba; print(torch.__version__, triton.__version__, numpy.__version__, numba.__version__, torch.cuda.get_device_name())'; $PY -m mpgraph.cli.main info"
step pytest "${PYTEST_LIMIT:-100}" "$PY" -m pytest -q -n 8 -k "gpu or cuda" tests/ops/test_triton_kernels.py \
  tests/ops/test_triton_dispatch.py tests/ops/test_validation.py
step gpu_check "${CHECK_LIMIT:-130}" "$PY" benchmarks/gpu_check.py --budget "${CHECK_BUDGET:-100}"
step configs "${CONFIGS_LIMIT:-80}" "$PY" benchmarks/triton_configs.py --budget "${CONFIGS_BUDGET:-60}"
step precision "${PRECISION_LIMIT:-100}" "$PY" -m mpgraph.cli.main bench precision --device cuda --scale 0.05 \
  --epochs 30 --json "$O/precision.json"
