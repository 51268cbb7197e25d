# shellcheck shell=bash
# Sourced by the scripts here after setup.sh: run NAME CACHE LIMIT pytest-arguments... runs one
# pytest with TORCHINDUCTOR_CACHE_DIR=$work/cache-CACHE (a new name: an empty cache), stops it
# after LIMIT seconds, and prints each record's outcome, kind, err_ratio and reason (BRIEF=1:
# only records that did not pass or skip).
run() {  # NAME CACHE LIMIT pytest-arguments...
  local name=$1 cache=$2 limit=$3 start
  shift 3
  start=$(date +%s)
  TORCHINDUCTOR_CACHE_DIR="$work/cache-$cache" timeout -s TERM "$limit" python3 -m pytest "$@" \
    -q -rfE -p no:benchmark -p no:randomly --item-timeout auto --results "$work/$name.json" \
    --conformance-html none >"$work/$name.log" 2>&1
  echo "$name: exit $? in $(($(date +%s) - start)) s; $(tail -n 1 "$work/$name.log")"
  python3 - "$work/$name.json" "${BRIEF:-0}" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["records"]:
    if sys.argv[2] == "1" and r["outcome"] in ("passed", "skipped"):
        continue
    m = r.get("metrics") or {}
    print(f"  {r['id']} @ {r['backend']}: {r['outcome']} {r.get('kind') or ''}"
          f" err_ratio={m.get('err_ratio')} {(r.get('reason') or '')[:140]}"[:260])
PY
}
