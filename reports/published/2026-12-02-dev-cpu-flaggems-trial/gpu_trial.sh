#!/usr/bin/env bash
# FlagGems 5.0.2 through gemmconf on one H200: the GPU half of the 2026-12-02 CPU trial
# (reports/published/2026-12-02-dev-cpu-flaggems-trial/). From the checkout's root, with .whl
# carried (the prelude installs gemmconf's test dependencies from it):
#
#   source .whl/prelude.sh && bash reports/published/2026-12-02-dev-cpu-flaggems-trial/gpu_trial.sh
#
# Needs no network: the wheels are beside this script, in wheels/ (flag_gems 5.0.2, and
# SQLAlchemy 2.0.48 trimmed to what flag_gems imports, installed only where sqlalchemy is
# missing). The adapter, fg_backend.py, sits beside this script too.
#
# Steps (expected 7 to 8 minutes at the defaults):
#   1. gemmconf from this tree into /tmp/fg-gc (the prelude puts only .whl's wheels and the
#      checkout root on PYTHONPATH; the package lives in harness/, so it is installed), ~15 s
#   2. flag_gems (+ sqlalchemy where missing) into /tmp/fg-site, byte-compiled, ~10 s
#   3. imports, FlagGems' vendor and arch, availability of the adapter (fatal if any fails), ~10 s
#   4. a smoke test outside gemmconf: mm/addmm/bmm bf16 on cuda through the adapter, <= 45 s
#   5. run A: pytest suites/dense suites/epilogue, stopped by SIGTERM at LIMIT_A (190) s
#   6. run B: every other mm/addmm/bmm/baddbmm/linear/matmul item that is not `stress`
#      (pytest suites --ignore dense --ignore epilogue -m ...), stopped at LIMIT_B (190) s
#   7. gemmconf report groups of each run (the first 12 groups) into summary.txt
# A CPU dry run (TRITON_INTERPRET=1, a python with torch first on PATH): A_ARGS=suites/dense/first.yaml
# B_ARGS=suites/k_tails B_MARK=mm WORKERS=2 (the smoke test fails there: no cuda).
# Each run: -n WORKERS (8) xdist workers, a cold FlagGems tuning cache (FLAGGEMS_CACHE_DIR
# fresh), results kept at SIGTERM (complete: false where cut short).
# Writes to $OUT (4 files): summary.txt (also printed), dense_epilogue.json.xz, wide.json.xz,
# logs.tar.xz (install, imports, smoke, each run's output, each run's groups).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-reports/flaggems-gpu}
WORKERS=${WORKERS:-8}
LIMIT_A=${LIMIT_A:-190}
LIMIT_B=${LIMIT_B:-190}
A_ARGS=${A_ARGS:-"suites/dense suites/epilogue"}  # run A's selection (word-split)
B_ARGS=${B_ARGS:-"suites --ignore=suites/dense --ignore=suites/epilogue"}
B_MARK=${B_MARK:-"(mm or addmm or bmm or baddbmm or linear or matmul) and not stress"}
mkdir -p "$OUT"
work=$(mktemp -d)
mkdir -p "$work/logs"
summary="$work/summary.txt"
export PYTHONUNBUFFERED=1
say() { echo "$@" | tee -a "$summary"; }
finish() {
  tar -cJf "$OUT/logs.tar.xz" -C "$work" logs
  cp "$summary" "$OUT/summary.txt"
}
fatal() {
  say "FATAL: $*"
  finish
  exit 2
}
start_all=$(date +%s)
say "flaggems gpu trial: $(date -u +%FT%TZ), tree $(git log --oneline -1 2>/dev/null | cut -c1-60)"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | tee -a "$summary"

# 1. gemmconf of this tree (build/ may hold an earlier tree's files: README, "Quickstart")
rm -rf /tmp/fg-gc build
python3 -m pip install -q --no-deps --no-build-isolation --no-compile --target /tmp/fg-gc . \
  >"$work/logs/gemmconf-install.log" 2>&1 || fatal "gemmconf did not install (logs/gemmconf-install.log)"
# 2. flag_gems, and sqlalchemy where this python lacks it
rm -rf /tmp/fg-site
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/fg-site \
  "$here"/wheels/flag_gems-5.0.2-py3-none-any.whl >"$work/logs/flaggems-install.log" 2>&1 ||
  fatal "flag_gems did not install (logs/flaggems-install.log)"
if ! python3 -c "import sqlalchemy" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/fg-site \
    "$here"/wheels/sqlalchemy-2.0.48-1trim-py3-none-any.whl >>"$work/logs/flaggems-install.log" 2>&1 ||
    fatal "sqlalchemy did not install (logs/flaggems-install.log)"
  say "sqlalchemy: installed from wheels/ (this python had none)"
fi
python3 -m compileall -q -j 0 /tmp/fg-site /tmp/fg-gc >/dev/null 2>&1
export PYTHONPATH="$here:/tmp/fg-site:/tmp/fg-gc${PYTHONPATH:+:$PYTHONPATH}"
export FLAGGEMS_CACHE_DIR="$work/flaggems-cache"  # a cold tuning cache
gemmconf() { python3 -c 'import sys; from gemmconf.cli import main; sys.argv[0] = "gemmconf"; sys.exit(main())' "$@"; }
say "install: $(($(date +%s) - start_all)) s"

# 3. imports
timeout 120 python3 - >"$work/logs/imports.log" 2>&1 <<'PY'
import importlib.metadata as md
import sys
import torch, triton
import gemmconf
import fg_backend
flag_gems = fg_backend._import_flag_gems()  # `import flag_gems` on a GPU; the CPU shims elsewhere
print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__,
      "flag_gems", flag_gems.__version__, "gemmconf", md.version("gemmconf"), gemmconf.__file__)
print("flag_gems vendor", flag_gems.vendor_name, "device", flag_gems.device,
      "dispatch key", flag_gems.runtime.device.dispatch_key)
event = flag_gems.runtime.backend.BackendArchEvent()
print("flag_gems arch", getattr(event, "arch", None), "mm from", flag_gems.mm.__module__)
reason = fg_backend.FlagGems().availability()
assert reason is None, reason
PY
status=$?
grep -v -i -e warn -e "^ *$" "$work/logs/imports.log" | tail -n 4 | tee -a "$summary"
[ $status -eq 0 ] || fatal "an import failed (logs/imports.log): $(tail -n 2 "$work/logs/imports.log" | tr '\n' ' ')"

# 4. smoke test, outside gemmconf (not fatal)
timeout 45 python3 - >"$work/logs/smoke.log" 2>&1 <<'PY'
import time, torch, fg_backend
backend = fg_backend.FlagGems()
a = torch.randn(300, 200, device="cuda", dtype=torch.bfloat16)
b = torch.randn(200, 100, device="cuda", dtype=torch.bfloat16)
c = torch.randn(100, device="cuda", dtype=torch.bfloat16)
for name, fn, args in [("mm", torch.mm, (a, b)), ("addmm", torch.addmm, (c, a, b)),
                       ("bmm", torch.bmm, (a.view(3, 100, 200), b.expand(3, 200, 100)))]:
    start = time.time()
    with torch.profiler.profile() as prof:
        out = backend.compile(fn, args, dynamic=False)(*args)
        torch.cuda.synchronize()
    ref = fn(*(x.double() for x in args))
    kernels = sorted({e.name for e in prof.events() if "kernel" in e.name.lower()})[:3]
    print(f"smoke {name} bf16: max abs error vs fp64 {(out.double() - ref).abs().max().item():.3g}"
          f" (eager {(fn(*args).double() - ref).abs().max().item():.3g}), {time.time() - start:.1f} s,"
          f" kernels {kernels}")
PY
echo "smoke exit $?" >>"$work/logs/smoke.log"
grep -e "^smoke" -e Error "$work/logs/smoke.log" | tail -n 5 | tee -a "$summary"

run() {  # NAME LIMIT [pytest arguments...]
  local name=$1 limit=$2
  shift 2
  local start=$(date +%s)
  timeout -s TERM "$limit" python3 -m pytest "$@" --backend fg_backend:FlagGems -n "$WORKERS" -q \
    --tb=no -p no:cacheprovider --results "$OUT/$name.json" --conformance-html none \
    >"$work/logs/$name.log" 2>&1
  local rc=$?
  [ -f "$OUT/$name.json" ] || { [ -f "$OUT/$name.json.partial" ] && mv "$OUT/$name.json.partial" "$OUT/$name.json"; }
  say "run $name: exit $rc in $(($(date +%s) - start)) s: $(grep -E '(passed|failed).* in [0-9.]+s' "$work/logs/$name.log" | tail -n 1)"
  grep -e "who computed" -e "failing by kind" "$work/logs/$name.log" | tail -n 2 | tee -a "$summary"
  if [ -f "$OUT/$name.json" ]; then
    gemmconf report groups "$OUT/$name.json" --limit 12 >"$work/logs/$name-groups.txt" 2>&1
    head -n 60 "$work/logs/$name-groups.txt" | tee -a "$summary"
    xz -9 -T0 -f "$OUT/$name.json"
  fi
}

# 5, 6. the runs
# shellcheck disable=SC2086  # A_ARGS and B_ARGS are lists of words
run dense_epilogue "$LIMIT_A" $A_ARGS
# shellcheck disable=SC2086
run wide "$LIMIT_B" $B_ARGS -m "$B_MARK"
say "total: $(($(date +%s) - start_all)) s"
finish
