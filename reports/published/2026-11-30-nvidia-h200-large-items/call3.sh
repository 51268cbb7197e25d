#!/usr/bin/env bash
# Call 3: the whole reference suite on one H200, cold Triton cache, at the tree that draws large
# operands piece by piece in their own dtype (no operand-sized fp32 copy) and integer values as
# int8; admitted to the host's memory by call 2's measured peaks (--durations-from call 2, whose
# fp8 items already quantized without the operand-sized scale copies). `report diff` against
# call 2; the items' host peaks beside call 2's and 2026-11-30-nvidia-h200-gpu-tests call 3's.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
gunzip -c reports/published/2026-11-30-nvidia-h200-large-items/call2-suite.json.gz > /tmp/durations.json
SUITE_LIMIT=400 TAG=call3 source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/call3-suite.json" > "$OUT/call3-diff.txt" 2>&1
echo "report diff: exit $?" | tee -a "$OUT/summary.txt"
head -8 "$OUT/call3-diff.txt" | tee -a "$OUT/summary.txt"
grep -E "waited for memory" "$OUT/call3-suite.log" | head -2 | tee -a "$OUT/summary.txt"
head -1 "$OUT/call3-timeline.txt" | tee -a "$OUT/summary.txt"
tail -1 "$OUT/call3-timeline.txt" | tee -a "$OUT/summary.txt"
gunzip -c reports/published/2026-11-30-nvidia-h200-gpu-tests/call3-suite.json.gz > /tmp/before.json
python3 - /tmp/before.json /tmp/durations.json "$OUT/call3-suite.json" <<'PY' | tee "$OUT/call3-host-peaks.txt"
import collections, json, sys
G = 2**30
runs = [{r["id"]: r for r in json.load(open(p))["records"]} for p in sys.argv[1:]]
labels = ("2442b4e", "5a81763", "this tree")
peak = lambda r: ((r or {}).get("metrics") or {}).get("host_memory_peak_bytes") or 0
for label, run in zip(labels, runs):
    timed = [r for r in run.values() if r.get("duration_s")]
    phase = collections.Counter()
    for r in timed:
        phase.update(r.get("phase_s") or {})
    big = [peak(r) for r in run.values() if peak(r) > G]
    print(f"{label}: {sum(r['duration_s'] for r in timed):.0f} s of item time ("
          + ", ".join(f"{k} {v:.0f}" for k, v in phase.most_common())
          + f"); {len(big)} items with host peaks over 1 GiB, {sum(big) / G:.1f} GiB in all")
ids = sorted(runs[0], key=lambda i: -peak(runs[0][i]))[:16]
print("host peak, GiB (2442b4e, 5a81763, this tree) and seconds, of the 16 largest:")
for i in ids:
    peaks = " ".join(f"{peak(run.get(i)) / G:6.2f}" for run in runs)
    secs = " ".join(f"{(run.get(i) or {}).get('duration_s') or 0:5.1f}" for run in runs)
    print(f"  {i[:50]:<50} {peaks} | {secs}")
PY
gzip -f "$OUT/call3-suite.json" "$OUT/call3-suite.log"
