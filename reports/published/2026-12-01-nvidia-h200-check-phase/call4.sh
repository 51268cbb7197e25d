#!/usr/bin/env bash
# Call 4, on `nvidia-h200`: the side-stream check with the default stream's blocks poisoned too.
# 1. test_integrity.py on CUDA and the three planted stream backends on five seeds each.
# 2. The whole reference suite cold at e8f55de (BASE, a `git archive` tarball without the
#    published folders: the one 10 ms sleep) and at this tree, base first, each with an empty
#    Triton cache and the same --durations-from file; `report diff` of the two.
# At most eight files come back: each suite's files go into one archive.
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
here=$PWD
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
rm -rf /tmp/base /tmp/gc-base && mkdir -p /tmp/base && tar -xzf "$BASE" -C /tmp/base
python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/gc-base /tmp/base \
  /tmp/base/plugins/gemmconf-cutlass >/dev/null 2>&1
cp -r .whl /tmp/base/
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc /tmp/gc-base > /dev/null 2>&1
{
  timeout 120 python3 -m pytest tests/test_integrity.py -n 8 -q -rfEs -p no:randomly 2>&1 | tail -8
  timeout 60 python3 - 2>&1 <<'PY'
import sys
sys.path.insert(0, "tests")
import planted_backends
from gemmconf.outcome import StreamMismatch
from gemmconf.runner import run_item
from gemmconf.scenario import load_suite

item = next(i for i in load_suite("suites/dense/first.yaml") if i.id == "first/mm[fp32-64x64x64-nn]")
for backend in (planted_backends.default_stream_launch, planted_backends.slow_default_stream_launch,
                planted_backends.synchronizing):
    caught, inconclusive, seconds = 0, 0, []
    for seed in range(5):
        outcome = run_item(item, backend, seed=seed, device="cuda", target=None)
        caught += any(isinstance(p, StreamMismatch) for p in outcome.problems)
        inconclusive += outcome.metrics.get("side_stream_inconclusive", 0)
        seconds.append(round(outcome.duration_s, 2))
    print(f"{backend.name}: caught on {caught} of 5 seeds, inconclusive on {inconclusive}; item s {seconds}")
PY
} > "$OUT/call4-validation.txt" 2>&1
tail -12 "$OUT/call4-validation.txt" | tee -a "$OUT/summary.txt"
gunzip -c reports/published/2026-12-01-nvidia-h200-reference-suite-and-touched-tests/call1-cold-suite.json.gz \
  > /tmp/durations.json
(cd /tmp/base && PYTHONPATH="/tmp/gc-base:/tmp/base:${PYTHONPATH#/tmp/gc:}" SUITE_LIMIT=185 \
  TAG=call4-base source "$here/reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh")
(cd "$OUT" && gzip -f call4-base-suite.json && cp call4-base-suite.json.gz /tmp/ && \
  tar czf call4-base.tgz call4-base-suite.* call4-base-timeline.txt && rm -f call4-base-suite.* call4-base-timeline.txt)
SUITE_LIMIT=185 TAG=call4-new source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
(cd "$OUT" && gzip -f call4-new-suite.json && cp call4-new-suite.json.gz /tmp/ && \
  tar czf call4-new.tgz call4-new-suite.* call4-new-timeline.txt && rm -f call4-new-suite.* call4-new-timeline.txt)
gunzip -f /tmp/call4-base-suite.json.gz /tmp/call4-new-suite.json.gz
python3 -m gemmconf.cli report diff /tmp/call4-base-suite.json /tmp/call4-new-suite.json \
  > "$OUT/call4-diff.txt" 2>&1
echo "report diff base -> new: exit $?" | tee -a "$OUT/summary.txt"
tail -3 "$OUT/call4-diff.txt" | tee -a "$OUT/summary.txt"
