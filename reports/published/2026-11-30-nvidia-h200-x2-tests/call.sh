# our tests on the GPU machine (issue 45: GPU paths run there), from the project root, .whl carried
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
export PYTHONPATH="$PYTHONPATH:$PWD"
start=$(date +%s)
timeout 480 python3 -m pytest ${ONLY:-tests plugins/gemmconf-cutlass/tests} -n 24 --dist loadgroup -q -p no:randomly -rfEx > "$OUT/gpu-tests.log" 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/summary.txt"
grep -E "^(FAILED|ERROR|XFAIL|XPASS)" "$OUT/gpu-tests.log" | head -60
tail -3 "$OUT/gpu-tests.log"
gzip -f "$OUT/gpu-tests.log"
# Call 2 (after 058256a): only the test files changed for the GPU, the same way:
#   ONLY="tests/test_suite_facts.py tests/test_plugin.py tests/test_compile_layer.py tests/test_compile_once.py"
