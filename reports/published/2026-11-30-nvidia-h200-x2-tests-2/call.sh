# shellcheck shell=bash
# Our tests on the GPU machine after 8a07c87 (the out= target's fill), from the project root,
# .whl carried: the probe of the out= target, the whole of tests/ and the plugin's, then the
# four-shards test alone with its whole diff (-vv).
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
export PYTHONPATH="$PYTHONPATH:$PWD"
here=reports/published/2026-11-30-nvidia-h200-x2-tests-2
timeout 120 python3 "$here/out_target_probe.py" > "$OUT/probe.txt" 2>&1
echo "probe: exit $?" | tee "$OUT/summary.txt"
grep -E "^(out/|  (watch|after|problems|reason))" "$OUT/probe.txt" | cut -c1-240
start=$(date +%s)
timeout 420 python3 -m pytest tests plugins/gemmconf-cutlass/tests -n 24 --dist loadgroup -q \
  -p no:randomly -rfEx > "$OUT/gpu-tests.log" 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/summary.txt"
grep -E "^(FAILED|ERROR|XFAIL|XPASS)" "$OUT/gpu-tests.log" | cut -c1-300 | head -40
tail -2 "$OUT/gpu-tests.log"
timeout 90 python3 -m pytest tests/test_shard.py -k four_shards -vv -p no:randomly -n 0 \
  > "$OUT/shard.log" 2>&1
echo "four shards: exit $?" | tee -a "$OUT/summary.txt"
tail -3 "$OUT/shard.log"
gzip -f "$OUT/gpu-tests.log" "$OUT/shard.log"
