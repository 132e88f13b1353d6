#!/usr/bin/env bash
# The GPU work of the paper-scale page, in chunks that each fit a time limit:
#   1. the CUDA test module (tests/test_cuda.py: every function that takes `device`, small, on cuda vs the CPU);
#   2. the named paper-scale runs (python -m lib.paper_scale), one piece per call, until each is complete.
# Every finished piece is stored at once (ELD_PAPER_SCALE_DIR, default .paper_scale), so calling this script again,
# on the same machine or on a fresh one given that folder, continues where the last call stopped.
#
#   scripts/gpu_runs.sh [NAME ...]        default: the CUDA tests, then every named run
#   BUDGET_S=540 scripts/gpu_runs.sh      start no new chunk after BUDGET_S seconds (default 540: under 10 minutes)
#   PIECE_S=300                           a new piece is started only with at least this many seconds left
#                                         (set it to about the longest piece: python -m lib.paper_scale --list)
#   SKIP_TESTS=1                          skip the CUDA test module
#   SMOKE=1                               the runs' tiny configurations (a dry run of this script on a CPU)
# Results go to $OUT/results (when OUT is set; else book/paper_scale/results), logs to $OUT (or _build/gpu_runs).
# Exit status: 0 when every requested run has written its result, 3 when pieces remain (call again), 1 on error.
set -u
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
test -x "$PY" || PY=python3
export PYTHONPATH=$PWD
BUDGET_S=${BUDGET_S:-540}
PIECE_S=${PIECE_S:-300}
LOGS=${OUT:-_build/gpu_runs}
RESULTS=${OUT:+$OUT/results}
RESULTS=${RESULTS:-book/paper_scale/results}
mkdir -p "$LOGS" "$RESULTS"
start=$SECONDS
left() { echo $((BUDGET_S - (SECONDS - start))); }

"$PY" - <<'PYEOF' | tee "$LOGS/device.txt"
import torch
print("torch", torch.__version__, "CUDA", torch.version.cuda, "available:", torch.cuda.is_available())
if torch.cuda.is_available():
    print("device:", torch.cuda.get_device_name(0))
PYEOF

if [ -z "${SMOKE:-}" ] && ! "$PY" -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
    echo "no CUDA GPU here: the paper-scale runs would fall back to the CPU (use SMOKE=1 for a dry run)"; exit 1
fi

if [ -z "${SKIP_TESTS:-}" ] && [ ! -e "$LOGS/test_cuda.done" ]; then
    timeout "$(left)" "$PY" -m pytest -q -rs tests/test_cuda.py -s 2>&1 | tee "$LOGS/test_cuda.txt"
    rc=${PIPESTATUS[0]}
    [ "$rc" -eq 0 ] && touch "$LOGS/test_cuda.done"
    [ "$rc" -eq 0 ] || { echo "tests/test_cuda.py failed (exit $rc): see $LOGS/test_cuda.txt"; exit 1; }
fi

if [ $# -gt 0 ]; then names=("$@"); else
    mapfile -t names < <("$PY" -c "from lib.paper_scale import paper_runs; print('\n'.join(n for n, r in paper_runs().items() if r.paper_scale))")
fi
status=0
for name in "${names[@]}"; do
    while :; do
        if [ "$(left)" -lt "$PIECE_S" ]; then
            echo "time budget used: $name not finished; call again to continue"; exit 3
        fi
        timeout "$(left)" "$PY" -m lib.paper_scale "$name" --max-pieces 1 --out "$RESULTS" --no-progress ${SMOKE:+--smoke} \
            2>&1 | tee -a "$LOGS/$name.log"
        rc=${PIPESTATUS[0]}
        case $rc in
            0) break ;;                                     # result written
            3) continue ;;                                  # one more piece stored; go on
            124) echo "$name: a piece ran out of time (it is redone from its start next call)"; exit 3 ;;
            *) echo "$name failed (exit $rc): see $LOGS/$name.log"; status=1; break ;;
        esac
    done
done
exit $status
