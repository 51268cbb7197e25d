# shellcheck shell=bash
# Compile once, A/B on one H200 (issue 43 item 1): the cold reference suite at the tree before
# compile-once (BASE, a `git archive` tarball carried beside the tree) and at this tree, one after
# the other, with the same --durations-from file. Outputs packed into $OUT/compile-once-ab.tar.gz.
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
here=$PWD
gunzip -c reports/published/2026-11-29-nvidia-h200-kernels-ab-reference-suite/reference-suite.json.gz > /tmp/durations.json
rm -rf /tmp/base /tmp/gc-base && mkdir -p /tmp/base && tar -xf "$BASE" -C /tmp/base
python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/gc-base /tmp/base /tmp/base/plugins/gemmconf-cutlass >/dev/null 2>&1
cp -r .whl /tmp/base/ 2>/dev/null
(cd /tmp/base && PYTHONPATH="/tmp/gc-base:/tmp/base:${PYTHONPATH#/tmp/gc:}" TAG=before source "$here/reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh")
PYTHONPATH="$here:$PYTHONPATH" TAG=after source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
for t in before after; do python3 tools/compile_once.py "$OUT/$t-suite.json" 2>&1 | tee -a "$OUT/summary.txt"; done
python3 -c "import sys; from gemmconf.cli import main; sys.exit(main())" report diff "$OUT/before-suite.json" "$OUT/after-suite.json" 2>&1 | tail -3 | tee -a "$OUT/summary.txt"
cd "$OUT" && tar czf compile-once-ab.tar.gz ./*-suite.json ./*-suite.log ./*-timeline.txt && rm -f ./*-suite.json ./*-suite.log
