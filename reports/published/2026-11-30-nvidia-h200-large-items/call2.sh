#!/usr/bin/env bash
# Call 2: the whole reference suite on one H200, cold Triton cache, at 5a81763 (the pristine
# look at this process's keys; fp8 scales by broadcast and the input guard's word compares;
# stream-K's share_start); `report diff` against 2026-11-30-nvidia-h200-gpu-tests call 3
# (2442b4e, the same command), which also gives the durations; the large items' phases beside
# that run's. Then the touched modules' tests on this GPU.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
gunzip -c reports/published/2026-11-30-nvidia-h200-gpu-tests/call3-suite.json.gz > /tmp/durations.json
SUITE_LIMIT=400 TAG=call2 source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/call2-suite.json" > "$OUT/call2-diff.txt" 2>&1
echo "report diff: exit $?" | tee -a "$OUT/summary.txt"
head -12 "$OUT/call2-diff.txt" | tee -a "$OUT/summary.txt"
head -1 "$OUT/call2-timeline.txt" | tee -a "$OUT/summary.txt"
tail -1 "$OUT/call2-timeline.txt" | tee -a "$OUT/summary.txt"
python3 - /tmp/durations.json "$OUT/call2-suite.json" <<'PY' | tee "$OUT/call2-phases.txt"
import collections, json, sys
runs = [{r["id"]: r for r in json.load(open(p))["records"] if r.get("duration_s")} for p in sys.argv[1:]]
for label, run in zip(("2442b4e", "5a81763"), runs):
    phase = collections.Counter()
    for r in run.values():
        phase.update(r.get("phase_s") or {})
    total = sum(r["duration_s"] for r in run.values())
    print(f"{label}: {len(run)} items, {total:.0f} s of item time;", ", ".join(f"{k} {v:.0f}" for k, v in phase.most_common()))
old, new = runs
big = sorted(old.values(), key=lambda r: -r["duration_s"])[:12]
print("the 12 longest items of 2442b4e's run, then and now (s, phases):")
for r in big:
    n = new.get(r["id"], {})
    fmt = lambda x: {k: round(v, 1) for k, v in (x.get("phase_s") or {}).items() if v >= 0.5}
    print(f"  {r['id'][:48]:<48} {r['duration_s']:5.1f} {fmt(r)} | {n.get('duration_s', 0):5.1f} {fmt(n)}")
PY
timeout 150 python3 -m pytest tests/test_splitk.py tests/test_staging.py tests/test_integrity.py \
  tests/test_inputs.py tests/test_gemm.py -n 8 -q -p no:randomly -p no:cacheprovider \
  > "$OUT/call2-tests.log" 2>&1
echo "touched modules' tests: exit $?" | tee -a "$OUT/summary.txt"
tail -3 "$OUT/call2-tests.log" | tee -a "$OUT/summary.txt"
gzip -f "$OUT/call2-suite.json" "$OUT/call2-suite.log"
