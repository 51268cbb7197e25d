# Default inductor (`--backend inductor`) over the whole suite on every GPU of the machine,
# cold caches. Issue 40: 0 FAIL and 0 XPASS that the expectations do not explain.
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
start=$(date +%s)
timeout -s TERM "${LIMIT:-540}" python3 -m pytest suites --backend inductor -n auto -q -rfE \
  -p no:benchmark -p no:randomly --results "$OUT/gpu-inductor.json" --conformance-html none \
  >"$OUT/gpu-inductor.log" 2>&1
echo "gpu inductor: exit $? in $(($(date +%s) - start)) s"
tail -n 3 "$OUT/gpu-inductor.log"
python3 - "$OUT/gpu-inductor.json" <<'PY'
import json, sys
from collections import Counter
records = json.load(open(sys.argv[1]))["records"]
print("outcomes:", dict(Counter(r["outcome"] for r in records)))
for r in records:
    if r["outcome"] in ("failed", "error", "xpassed"):
        print(r["outcome"], r["id"], "|", r.get("kind"), "|", (r.get("reason") or "")[:200].replace("\n", " "))
PY
gzip -f "$OUT/gpu-inductor.json"
