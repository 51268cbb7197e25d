#!/usr/bin/env bash
# Call 5, on a fresh `nvidia-h200`, the head (TREE) after 27f1c1a (an early pass needs the
# further rounds' median below the bar) and 5cb61ac (failure groups): the whole reference suite
# cold at -n auto, `report diff` against 29d234c's cold run (2026-12-02-nvidia-h200-longer-rounds,
# call 2); the rounds each near-bar item took, against that run's.
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cat "$OUT/machine.txt" >> "$OUT/summary.txt"; rm "$OUT/machine.txt"
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
base=reports/published/2026-12-02-nvidia-h200-longer-rounds/call2-reference-suite.json.xz
xz -dkc "$base" > /tmp/durations.json
SUITE_LIMIT=260 TAG=call5-reference source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
tail -3 "$OUT/call5-reference-timeline.txt" >> "$OUT/summary.txt"
grep -A2 "who computed the passes" "$OUT/call5-reference-suite.log" >> "$OUT/summary.txt"
grep "borderline passes" "$OUT/call5-reference-suite.log" >> "$OUT/summary.txt"
python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/call5-reference-suite.json" > "$OUT/call5-reference-diff.txt" 2>&1
echo "report diff 29d234c -> this tree: exit $?; $(tail -1 "$OUT/call5-reference-diff.txt")" | tee -a "$OUT/summary.txt"
python3 - "$OUT/call5-reference-suite.json" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
def rounds(path):
    return {r["id"]: (r.get("metrics") or {}).get("rounds") for r in json.load(open(path))["records"]}
before, after = rounds("/tmp/durations.json"), rounds(sys.argv[1])
moved = {i: (before.get(i), r) for i, r in after.items() if before.get(i) != r}
print(f"items whose rounds differ from 29d234c's: {len(moved)} of {len(after)}", sorted(moved.items())[:8])
PY
xz -9 "$OUT/call5-reference-suite.json"
gzip -9 "$OUT/call5-reference-suite.log"
mv "$OUT/summary.txt" "$OUT/call5-summary.txt"
