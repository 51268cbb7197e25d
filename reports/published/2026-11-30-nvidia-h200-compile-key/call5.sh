# Call 5 on `nvidia-h200` (issue 43 item 1), from the project root with .whl carried, on the tree
# before the ptxas pin: TREE=b02eb01 bash .../call5.sh (this folder copied in beside it).
# The whole reference suite, cold, with envprobe/sitecustomize.py logging who sets
# TRITON_PTXAS_PATH in which process, during which test.
set -u
here=reports/published/2026-11-30-nvidia-h200-compile-key
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
# b02eb01's code (`git archive b02eb01 harness backend plugins pyproject.toml suites`, carried as
# .oldtree/b02eb01.tar) first on the path, and its suites run
rm -rf /tmp/old && mkdir -p /tmp/old && tar xf .oldtree/b02eb01.tar -C /tmp/old
python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/gc-old /tmp/old >/dev/null 2>&1
export PYTHONPATH="/tmp/gc-old:$PYTHONPATH"
python3 -c "import gemmconf, importlib.util as u; print('toolchain present:', u.find_spec('gemmconf.toolchain') is not None)" | tee -a "$OUT/summary.txt"
gunzip -c reports/published/2026-11-29-nvidia-h200-x2-suite-scaling/call1-one-gpu-suite.json.gz > /tmp/durations.json
export GEMMCONF_ENV_PROBE=/tmp/env-probe PYTHONPATH="$PWD/$here/envprobe:$PYTHONPATH"
rm -rf "$GEMMCONF_ENV_PROBE" && mkdir -p "$GEMMCONF_ENV_PROBE"
TAG=unpinned SUITE_LIMIT=250 source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
echo "processes that set a watched variable: $(ls "$GEMMCONF_ENV_PROBE" | wc -l)" | tee -a "$OUT/summary.txt"
grep -h " during " "$GEMMCONF_ENV_PROBE"/*.txt | sort | uniq -c | sort -rn | head -20 | tee -a "$OUT/summary.txt"
tar czf "$OUT/env-probe.tar.gz" -C /tmp env-probe
gzip -f "$OUT/unpinned-suite.json" "$OUT/unpinned-suite.log"
