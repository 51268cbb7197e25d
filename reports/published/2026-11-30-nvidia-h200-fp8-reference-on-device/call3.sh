#!/usr/bin/env bash
# Call 3: the whole reference suite on one H200, cold Triton cache, at the tree whose fp8 operands
# reach the fp64 reference as stored values and scales; admitted to the host's memory by the
# 2026-11-30 large-items call 3 run's measured peaks (--durations-from it). `report diff`
# against that run; the items' host peaks beside its.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cp "$OUT/machine.txt" "$OUT/call3-machine.txt"
gunzip -c reports/published/2026-11-30-nvidia-h200-large-items/call3-suite.json.gz > /tmp/durations.json
SUITE_LIMIT=420 TAG=call3 source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/call3-suite.json" > "$OUT/call3-diff.txt" 2>&1
echo "report diff: exit $?" | tee -a "$OUT/summary.txt"
head -8 "$OUT/call3-diff.txt" | tee -a "$OUT/summary.txt"
grep -E "waited for memory" "$OUT/call3-suite.log" | head -2 | tee -a "$OUT/summary.txt"
tail -1 "$OUT/call3-timeline.txt" | tee -a "$OUT/summary.txt"
python3 - /tmp/durations.json "$OUT/call3-suite.json" <<'PY' | tee "$OUT/call3-host-peaks.txt"
import collections, json, sys
G = 2**30
runs = [{r["id"]: r for r in json.load(open(p))["records"]} for p in sys.argv[1:]]
labels = ("d2a54fa", "this tree")
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
fp8 = [i for i in runs[0] if "fp8" in i and peak(runs[0][i]) > G]
print(f"fp8 items with host peaks over 1 GiB in d2a54fa's run: {len(fp8)}; their peaks "
      + " -> ".join(f"{sum(peak(run.get(i)) for i in fp8) / G:.1f}" for run in runs) + " GiB")
ids = sorted(runs[0], key=lambda i: -peak(runs[0][i]))[:16]
print("host peak, GiB (d2a54fa, this tree) and seconds (check phase), of the 16 largest:")
for i in ids:
    peaks = " ".join(f"{peak(run.get(i)) / G:6.2f}" for run in runs)
    secs = " ".join(f"{(run.get(i) or {}).get('duration_s') or 0:5.1f} ({((run.get(i) or {}).get('phase_s') or {}).get('check', 0):4.1f})" for run in runs)
    print(f"  {i[:50]:<50} {peaks} | {secs}")
PY
gzip -f "$OUT/call3-suite.json" "$OUT/call3-suite.log"
