# The seed ports that keep the seed's inductor config (inductor_config) or run under compiled
# autograd, on an sm90 GPU: every item of the two seed files on default inductor, the converted
# rows on the max-autotune backends the seeds tested, the compiled-autograd ports, and the item
# that the whole-suite inductor run (gpu_inductor.sh) ended as a harness error.
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
run() {  # NAME LIMIT pytest-arguments...
  local name=$1 limit=$2 start
  shift 2
  start=$(date +%s)
  timeout -s TERM "$limit" python3 -m pytest "$@" -q -rfE -p no:benchmark -p no:randomly \
    --results "/tmp/ports/$name.json" --conformance-html none >"/tmp/ports/$name.log" 2>&1
  echo "$name: exit $? in $(($(date +%s) - start)) s; $(tail -n 1 "/tmp/ports/$name.log")"
  grep -E "^(FAILED|ERROR|XPASS)" "/tmp/ports/$name.log" | cut -c1-240
}
mkdir -p /tmp/ports
run converted "${LIMIT:-300}" suites/seeds/cutlass_backend.yaml suites/seeds/max_autotune.yaml \
  --backend inductor-max-autotune:TRITON,inductor-max-autotune:CUTLASS --item-timeout auto -n 8 \
  -k "(persistent_tma or launches) and not autotune:CUTLASS or (diff_matmul_share_same_kernel or number_mm_precompiles or streamk_with_dynamic) and autotune:CUTLASS"
run seed-files-inductor 150 suites/seeds/cutlass_backend.yaml suites/seeds/max_autotune.yaml \
  --backend inductor,eager --item-timeout auto -n 16
run compiled-autograd 60 suites/backward -k compiled_autograd --backend eager,reference,inductor -n 8
python3 - /tmp/ports/*.json <<'PY'
import json, sys
for path in sys.argv[1:]:
    for r in json.load(open(path))["records"]:
        if r["outcome"] in ("failed", "error", "xpassed") or r["id"].startswith(
            "seed_max_autotune/non_contiguous_input_bmm_padded"):
            print(r["outcome"], r["id"], r["backend"], "|", r.get("kind"), "|",
                  (r.get("reason") or "")[:300].replace("\n", " "))
PY
tar czf "$OUT/seed-ports.tar.gz" -C /tmp/ports .
