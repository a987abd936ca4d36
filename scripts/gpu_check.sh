#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and cupy: the whole test suite with the GPU as the default
# device, then the GPU benchmark (benchmarks/gpu.py); one summary line each, full logs in $LOGS.
set -uo pipefail
cd "$(dirname "$0")/.."
LOGS=${LOGS:-/tmp/ag-gpu-check}
mkdir -p "$LOGS"
if ! python -c "import cupy; cupy.cuda.runtime.getDeviceCount()" > "$LOGS/cupy.log" 2>&1; then
    echo "GPU check: no usable GPU here ($(tail -1 "$LOGS/cupy.log"))"
    exit 1
fi
# with xdist each worker compiles the CUDA kernels of its own tests (the full corpus is compiled in CI)
workers=$(python -c "import xdist" 2>/dev/null && echo "-n 8")
AG_TEST_DEVICE=gpu python -m pytest -q -p no:cacheprovider $workers > "$LOGS/tests.log" 2>&1
tests=$?
echo "GPU tests: $(tail -1 "$LOGS/tests.log")"
python benchmarks/bench.py --device gpu --out "$LOGS" > "$LOGS/bench.log" 2>&1
bench=$?
tail -1 "$LOGS/bench.log"
exit $(( tests || bench ))
