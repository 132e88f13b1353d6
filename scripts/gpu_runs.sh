#!/usr/bin/env bash
# The GPU work of the paper-scale page, in chunks that each fit a time limit:
#   1. the CUDA test module (tests/test_cuda.py: every function that takes `device`, small, on cuda vs the CPU);
#   2. the named paper-scale runs without a current result, cheapest first (python -m lib.paper_scale --plan), so
#      that a short session completes whole runs; a round of pieces starts only when its estimated time is left.
# Every finished piece is stored at once in book/paper_scale/pieces (ELD_PAPER_SCALE_DIR to change it), so calling
# this script again, here or on another machine given that folder (commit it), continues where the last call stopped.
#
#   scripts/gpu_runs.sh [NAME ...]        default: the CUDA tests, then every run of the plan; runs named are
#                                         planned even when their result is current (to run them again)
#   BUDGET_S=540 scripts/gpu_runs.sh      start no new round after BUDGET_S seconds (default 540: under 10 minutes)
#   SKIP_TESTS=1                          skip the CUDA test module
#   SMOKE=1                               the runs' tiny configurations (a dry run of this script on a CPU; nothing
#                                         lands among the committed results or pieces)
#   ELD_COMMIT=<sha>                      the commit, for the results' provenance, where the copy has no git
#   GPU_RUNS_LOGS=DIR                     where the logs go (default _build/gpu_runs)
# Results go to book/paper_scale/results, logs to $GPU_RUNS_LOGS. When OUT is set (a machine that sends back only
# the files under $OUT), everything this call wrote is packed into $OUT/gpu_runs.tar.gz, paths from the repository's
# root: `tar xzf gpu_runs.tar.gz` in the repository puts the results, the pieces and the logs in place.
# Exit status: 0 when every requested run has written its result, 3 when pieces remain (call again), 1 on error.
set -u
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
test -x "$PY" || PY=python3
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
BUDGET_S=${BUDGET_S:-540}
LOGS=${GPU_RUNS_LOGS:-_build/gpu_runs}
if [ -n "${SMOKE:-}" ]; then
    export ELD_PAPER_SCALE_DIR=$LOGS/smoke              # smoke pieces and results stay with the logs
    DEVICE=cpu
else
    export ELD_PAPER_SCALE_DIR=${ELD_PAPER_SCALE_DIR:-book/paper_scale/pieces}
    DEVICE=cuda
fi
mkdir -p "$LOGS" "$ELD_PAPER_SCALE_DIR"
: >"$LOGS/summary.txt"
start=$SECONDS
left() { echo $((BUDGET_S - (SECONDS - start))); }

pack() {
    [ -n "${OUT:-}" ] || return 0
    local items=("$LOGS")
    [ -n "${SMOKE:-}" ] || items+=(book/paper_scale/results "$ELD_PAPER_SCALE_DIR")
    tar czf "$OUT/gpu_runs.tar.gz" "${items[@]}" && cp "$LOGS/summary.txt" "$OUT/summary.txt" 2>/dev/null
    echo "packed ${items[*]} into \$OUT/gpu_runs.tar.gz (tar xzf it in the repository's root)"
}
trap pack EXIT
say() { echo "$*" | tee -a "$LOGS/summary.txt"; }

"$PY" - <<'PYEOF' | tee "$LOGS/device.txt"
import platform, torch
print("python", platform.python_version(), "torch", torch.__version__, "CUDA", torch.version.cuda,
      "available:", torch.cuda.is_available())
if torch.cuda.is_available():
    print("device:", torch.cuda.get_device_name(0))
PYEOF

if [ -z "${SMOKE:-}" ] && ! "$PY" -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
    say "no CUDA GPU here: the paper-scale runs would fall back to the CPU (use SMOKE=1 for a dry run)"; exit 1
fi

if [ -z "${SKIP_TESTS:-}" ] && [ ! -e "$LOGS/test_cuda.done" ]; then
    timeout "$(left)" "$PY" -m pytest -q -rs -p no:cacheprovider tests/test_cuda.py -s 2>&1 | tee "$LOGS/test_cuda.txt"
    rc=${PIPESTATUS[0]}
    say "tests/test_cuda.py: exit $rc after $((SECONDS - start)) s ($(tail -n 1 "$LOGS/test_cuda.txt"))"
    [ "$rc" -eq 0 ] && touch "$LOGS/test_cuda.done"
    [ "$rc" -eq 0 ] || { say "tests/test_cuda.py failed: see $LOGS/test_cuda.txt"; exit 1; }
fi

# the plan: one line per run without a current result, cheapest first: name, pieces left, seconds a piece, jobs
# (runs named on the command line are planned even when their result is current: to run them again on a GPU)
mapfile -t plan < <("$PY" -m lib.paper_scale --plan --device "$DEVICE" ${SMOKE:+--smoke} "$@")
say "plan (run, pieces left, seconds a piece, at a time): ${plan[*]/%/;}"
status=0
for line in "${plan[@]}"; do
    read -r name _ piece_s jobs <<<"$line"
    [ -n "${SMOKE:-}" ] && piece_s=5
    need=$((piece_s * 5 / 4 + 20))                     # a round's estimate, a quarter more, and the start-up
    while :; do
        if [ "$(left)" -lt "$need" ]; then
            say "time budget used ($(left) s left, a round of $name needs about $need): call again to continue"
            exit 3
        fi
        t0=$SECONDS
        timeout "$(left)" "$PY" -m lib.paper_scale "$name" --device "$DEVICE" --max-pieces "$jobs" --jobs "$jobs" \
            --no-progress ${SMOKE:+--smoke} 2>&1 | tee -a "$LOGS/$name.log"
        rc=${PIPESTATUS[0]}
        case $rc in
            0) say "$name: result written ($((SECONDS - t0)) s for the last round)"; break ;;
            3) say "$name: a round of $jobs piece(s) stored in $((SECONDS - t0)) s"; continue ;;
            124) say "$name: a round ran out of time (its unfinished pieces start again next call)"; exit 3 ;;
            *) if [ "$jobs" -gt 1 ]; then
                   say "$name failed with $jobs pieces at a time (exit $rc); again one at a time"; jobs=1; continue
               fi
               say "$name failed (exit $rc): see $LOGS/$name.log"; status=1; break ;;
        esac
    done
done
exit $status
