#!/usr/bin/env bash
# Call 4, on `nvidia-h200` (one H200, 16 host cores): the whole reference suite cold at f260be9
# (ff1ff76's code; BASE, a `git archive` tarball carried beside the tree) and at b549d32 (the
# results-kept guard reads its comparisons in one transfer per call), base first, each with an
# empty Triton cache and the same --durations-from file; then `report diff` of the two.
set -u
export TREE="f260be9 and b549d32"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cp "$OUT/machine.txt" "$OUT/call4-machine.txt"
here=$PWD
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
rm -rf /tmp/base /tmp/gc-base && mkdir -p /tmp/base && tar -xzf "$BASE" -C /tmp/base
python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/gc-base /tmp/base \
  /tmp/base/plugins/gemmconf-cutlass >/dev/null 2>&1
cp -r .whl /tmp/base/
start=$(date +%s)
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc /tmp/gc-base > /dev/null 2>&1
echo "compileall: exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/summary.txt"
gunzip -c reports/published/2026-12-01-nvidia-h200-reference-suite-and-touched-tests/call1-cold-suite.json.gz \
  > /tmp/durations.json
(cd /tmp/base && PYTHONPATH="/tmp/gc-base:/tmp/base:${PYTHONPATH#/tmp/gc:}" SUITE_LIMIT=240 \
  TAG=call4-base source "$here/reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh")
SUITE_LIMIT=240 TAG=call4-kept source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
python3 -m gemmconf.cli report diff "$OUT/call4-base-suite.json" "$OUT/call4-kept-suite.json" \
  > "$OUT/call4-diff.txt" 2>&1
echo "report diff base -> kept: exit $?" | tee -a "$OUT/summary.txt"
tail -3 "$OUT/call4-diff.txt" | tee -a "$OUT/summary.txt"
gzip -f "$OUT"/call4-*-suite.json "$OUT"/call4-*-suite.log
