# After the expectations of gpu_seed_ports.sh's findings: the two seed files whole on default
# inductor (the first run stopped 9 items short), the converted rows again, and who computed
# (the compile no longer recorded by the attribution profiler) on dense/first.yaml.
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
run() {  # NAME LIMIT pytest-arguments...
  local name=$1 limit=$2 start
  shift 2
  start=$(date +%s)
  timeout -s TERM "$limit" python3 -m pytest "$@" -q -rfE -p no:benchmark -p no:randomly \
    --results "/tmp/recheck/$name.json" --conformance-html none >"/tmp/recheck/$name.log" 2>&1
  echo "$name: exit $? in $(($(date +%s) - start)) s; $(tail -n 1 "/tmp/recheck/$name.log")"
  grep -E "^(FAILED|ERROR|XPASS)" "/tmp/recheck/$name.log" | cut -c1-240
}
mkdir -p /tmp/recheck
run seed-files-inductor 160 suites/seeds/cutlass_backend.yaml suites/seeds/max_autotune.yaml \
  --backend inductor --item-timeout auto -n 16
run converted 170 suites/seeds/max_autotune.yaml suites/seeds/cutlass_backend.yaml \
  --backend inductor-max-autotune:TRITON,inductor-max-autotune:CUTLASS --item-timeout auto -n 8 \
  -k "(persistent_tma or launches) and not autotune:CUTLASS or (diff_matmul_share_same_kernel or number_mm_precompiles or streamk_with_dynamic) and autotune:CUTLASS"
run computed-by 60 suites/dense/first.yaml --backend reference,inductor -n 8
python3 - /tmp/recheck/computed-by.json <<'PY'
import json, sys
from collections import Counter
records = json.load(open(sys.argv[1]))["records"]
print("computed_by:", dict(Counter((r["backend"], r.get("computed_by")) for r in records)))
PY
tar czf "$OUT/recheck.tar.gz" -C /tmp/recheck .
