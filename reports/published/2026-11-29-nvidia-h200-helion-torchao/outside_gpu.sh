#!/usr/bin/env bash
# Issue 42, item 9, on the GPU: two third-party backends over the whole suite on one sm90 GPU,
# each its own integration kind (beside this script: helion_aten.py, Helion's matmul as an aten
# override; torchao_gemm.py, torchao's float8 and MX paths behind a compile step of their own),
# with standalone repros of their own failures. From the checkout's root, with .whl and
# .whl-outside carried:
#
#   source .whl/prelude.sh && bash reports/published/2026-11-29-nvidia-h200-helion-torchao/outside_gpu.sh
#
# .whl-outside holds torchao-0.18.0 and, in helion/, Helion 1.5.1, 1.4.0 and 1.2.0 (pip download --no-deps: their other
# requirements are on the GPU machine already). Runs, one after the other, each stopped by
# SIGTERM at its limit (the results so far are kept; set a limit in seconds to change it):
#   helion-aten             pytest suites --backend helion_aten:HelionAten        HELION_LIMIT=180
#   torchao-gemm            pytest suites --backend torchao_gemm:TorchaoGemm      TORCHAO_LIMIT=130
#   torchao-float8-linear   -m linear --backend torchao_gemm:TorchaoFloat8Linear  LINEAR_LIMIT=40
#   helion-aten-mx          -k "mx or nvfp4" on the aten override (eager's sm90 gaps: inherited)
#                                                                                 MX_LIMIT=30
# then `gemmconf repro` of up to REPROS (5) own failure groups per backend, each repro run
# alone (120 s in all). WORKERS (8) xdist workers; SUITES (suites) what the runs collect. At the
# defaults the script ends within about 600 s: 380 s of runs, 45 s of smoke test, 120 s of repros
# and gemmconf's install and the imports (expected: 7 to 8 minutes). Writes to $OUT (at most 8
# files come back): NAME.json.gz per run, logs.tar.gz (each run's output, the environment, the smoke test),
# repros.tar.gz (repro_*.py and what each printed), summary.txt (also printed).
# An import of helion, torchao or an adapter that fails stops the script (exit 2) before any
# run: a broken environment would fail every item for a reason that is not the backend's.
set -uo pipefail
OUT=${OUT:-reports/outside}
WORKERS=${WORKERS:-8}
SUITES=${SUITES:-suites}  # what each run collects (a CPU dry run: suites/dense/first.yaml)
REPROS=${REPROS:-5}
mkdir -p "$OUT"
work=$(mktemp -d)
mkdir -p "$work/logs" "$work/repros"
summary="$work/summary.txt"
export PYTHONUNBUFFERED=1
say() { echo "$@" | tee -a "$summary"; }
fatal() {
  say "FATAL: $*"
  tar -czf "$OUT/logs.tar.gz" -C "$work" logs
  cp "$summary" "$OUT/summary.txt"
  exit 2
}

# gemmconf itself (gpu_suite.sh's way), then the outside wheels into a folder of their own
python3 -c "import gemmconf.plugin" 2>/dev/null ||
  { python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site . >"$work/logs/gemmconf-install.log" 2>&1 &&
    export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"; }
python3 -c "import gemmconf.plugin" 2>>"$work/logs/gemmconf-install.log" ||
  fatal "gemmconf does not import (logs/gemmconf-install.log)"
ls .whl-outside/*.whl >/dev/null 2>&1 || fatal "no .whl-outside/*.whl: carry .whl-outside"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/outside-site .whl-outside/*.whl >"$work/logs/outside-install.log" 2>&1 ||
  fatal "pip could not install .whl-outside/*.whl: $(tail -n 3 "$work/logs/outside-install.log")"
# Helion: the newest of the carried releases that imports on this torch (1.5.1 needs a torch
# newer than 2.11: torch._inductor's IntelGPUError)
helion=none
for wheel in $(ls .whl-outside/helion/helion-*.whl | sort -V -r); do
  rm -rf /tmp/helion-site
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/helion-site "$wheel" >>"$work/logs/outside-install.log" 2>&1 || continue
  if PYTHONPATH="/tmp/helion-site:/tmp/outside-site${PYTHONPATH:+:$PYTHONPATH}" python3 -c "import helion, helion.language" >>"$work/logs/helion-import.log" 2>&1; then
    helion=$(basename "$wheel"); break
  fi
  say "$(basename "$wheel") does not import here: $(tail -n 1 "$work/logs/helion-import.log")"
done
[ "$helion" != none ] || fatal "no carried helion release imports here (logs/helion-import.log)"
say "helion: $helion"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)  # the adapters sit beside this script
export PYTHONPATH="$here:/tmp/helion-site:/tmp/outside-site${PYTHONPATH:+:$PYTHONPATH}"
git log --oneline -1 2>/dev/null | cut -c1-80 | tee -a "$summary"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$summary"

# torchao loads its C++ extension when torch >= 2.11; should that abort the interpreter (an
# extension built for another torch), torchao's switch imports it without (a warning says so)
if ! python3 -c "import torchao" >"$work/logs/torchao-import.log" 2>&1; then
  say "torchao did not import with its C++ extension: $(tail -n 2 "$work/logs/torchao-import.log" | tr '\n' ' ')"
  say "retrying with TORCHAO_FORCE_SKIP_LOADING_SO_FILES=1"
  export TORCHAO_FORCE_SKIP_LOADING_SO_FILES=1
fi
python3 - >"$work/logs/imports.log" 2>&1 <<'PY'
import importlib.metadata as md
import torch, triton
import helion, torchao
import helion_aten, torchao_gemm
for backend in (helion_aten.HelionAten(), torchao_gemm.TorchaoGemm()):
    reason = backend.availability()
    assert reason is None, f"{backend.name} unavailable: {reason}"
print("versions:", ", ".join(f"{name} {md.version(name)}" for name in
      ("torch", "triton", "helion", "torchao", "gemmconf")))
print("torchao C++ ops loaded:", [n for n in dir(torch.ops.torchao) if not n.startswith("_")][:8])
PY
status=$?
grep -v -i -e warn -e "^ *$" "$work/logs/imports.log" | tail -n 6 | tee -a "$summary"
[ $status -eq 0 ] || fatal "helion, torchao or an adapter does not import (logs/imports.log): $(tail -n 2 "$work/logs/imports.log" | tr '\n' ' ')"

# A smoke test of each path on this GPU, outside gemmconf: not fatal (the runs record it)
timeout 45 python3 - >"$work/logs/smoke.log" 2>&1 <<'PY'
import torch, helion_aten, torchao_gemm
a = torch.randn(300, 200, device="cuda", dtype=torch.bfloat16)
b = torch.randn(200, 100, device="cuda", dtype=torch.bfloat16)
compiled = helion_aten.HelionAten().compile(torch.mm, (a, b), dynamic=False)
error = (compiled(a, b).float() - a.float() @ b.float()).abs().max().item()
print(f"smoke helion mm bf16 300x100x200: max abs error vs fp32 {error:.3g}")
qa, qb = a.to(torch.float8_e4m3fn), b.t().contiguous().t().to(torch.float8_e4m3fn)
one = torch.ones((), device="cuda")
out = torchao_gemm.scaled_mm(qa, qb, one, one, out_dtype=torch.bfloat16)
ref = torch._scaled_mm(qa, qb, one, one, out_dtype=torch.bfloat16)
print(f"smoke torchao float8 tensorwise: max abs diff vs _scaled_mm {(out - ref).abs().max().item():.3g}")
PY
echo "smoke exit $?" >>"$work/logs/smoke.log"
grep -e "^smoke" -e Error "$work/logs/smoke.log" | tail -n 4 | tee -a "$summary"

run() {  # NAME LIMIT SPEC [pytest selection...]
  local name=$1 limit=$2 spec=$3
  shift 3
  local start=$(date +%s)
  timeout -s TERM "$limit" python3 -m pytest $SUITES "$@" --backend "$spec" -n "$WORKERS" -q \
    --tb=no -p no:benchmark --results "$OUT/$name.json" --conformance-html none \
    >"$work/logs/$name.log" 2>&1
  local rc=$?
  [ -f "$OUT/$name.json" ] || { [ -f "$OUT/$name.json.partial" ] && mv "$OUT/$name.json.partial" "$OUT/$name.json"; }
  say ""
  say "== $name ($spec $*): pytest exit $rc$([ $rc -eq 124 ] && echo ', stopped at its limit'), $(($(date +%s) - start)) s"
  python3 - "$OUT/$name.json" 2>&1 <<'PY' | tee -a "$summary"
import json, sys
from collections import Counter
try:
    document = json.load(open(sys.argv[1]))
except (OSError, ValueError) as exc:
    sys.exit(f"  no results: {exc}")
records = document["records"]
outcomes = Counter(r["outcome"] for r in records)
print(f"  {len(records)} records (complete: {document.get('complete')}):",
      ", ".join(f"{n} {o}" for o, n in outcomes.most_common()))
print("  passes computed by:", dict(Counter(r.get("computed_by") or "not observed"
                                          for r in records if r["outcome"] == "passed")))
failed = [r for r in records if r["outcome"] in ("failed", "xpassed", "error")]
own = Counter(r.get("kind") or r["outcome"] for r in failed if not r.get("inherited"))
inherited = Counter(f"{r['inherited']}: {r.get('kind')}" for r in failed if r.get("inherited"))
print("  own failures by kind:", dict(own.most_common()))
print("  inherited failures:", dict(inherited.most_common()))
PY
  grep -A 16 "failures by cause" "$work/logs/$name.log" | grep -v "repro:" | head -n 17 | tee -a "$summary"
}

run helion-aten "${HELION_LIMIT:-180}" helion_aten:HelionAten
run torchao-gemm "${TORCHAO_LIMIT:-130}" torchao_gemm:TorchaoGemm
run torchao-float8-linear "${LINEAR_LIMIT:-40}" torchao_gemm:TorchaoFloat8Linear -m linear
run helion-aten-mx "${MX_LIMIT:-30}" helion_aten:HelionAten -k "mx or nvfp4"

# Standalone repros: the representatives of each backend's largest own failure groups, each
# written by `gemmconf repro` and then run alone (exit 1: it fails there as in the run)
say ""
timeout 120 python3 - "$OUT" "$work/repros" "$REPROS" "$WORKERS" 2>"$work/logs/repros.log" <<'PY' | tee -a "$summary"
import subprocess, sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from gemmconf.report.groups import group_failures
from gemmconf.report.merge import load
out, folder, count, workers = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
specs = {"helion-aten": "helion_aten:HelionAten", "torchao-gemm": "torchao_gemm:TorchaoGemm",
         "torchao-float8-linear": "torchao_gemm:TorchaoFloat8Linear"}
picked = []
for name, spec in specs.items():
    path = out / f"{name}.json"
    if path.exists():
        own = [g for g in group_failures(load(path)["records"])
               if g.inherited is None and g.kind != "harness error"]
        picked += [(name, spec, group) for group in own[:count]]

def repro(entry):
    name, spec, group = entry
    ident = group.representative.id
    stem = "repro_" + "".join(c if c.isalnum() else "_" for c in ident).strip("_") + "_" + name
    write = subprocess.run(
        [sys.executable, "-m", "gemmconf.cli", "repro", ident, "--backend", spec, "-o", f"{stem}.py"],
        cwd=folder, capture_output=True, text=True, timeout=60)
    if write.returncode != 0:
        (folder / f"{stem}.txt").write_text(write.stdout + write.stderr)
        last = (write.stdout + write.stderr).strip().splitlines()[-1:] or [""]
        return f"{ident} on {name} ({group.size} x {group.kind}): not written: {last[0][:160]}"
    try:
        ran = subprocess.run([sys.executable, f"{stem}.py"], cwd=folder, capture_output=True,
                             text=True, timeout=60)
        text, status = ran.stdout + ran.stderr, ran.returncode
    except subprocess.TimeoutExpired:
        text, status = "timed out after 60 s", "timeout"
    (folder / f"{stem}.txt").write_text(text)
    first = next((line for line in text.splitlines() if line.startswith(("FAILED", "PASSED"))), "")
    return f"{ident} on {name} ({group.size} x {group.kind}): exit {status}: {first[:160]}"

print(f"== repros: {len(picked)} own failure groups")
with ThreadPoolExecutor(workers) as pool:
    for line in pool.map(repro, picked):
        print(line)
PY

for name in helion-aten torchao-gemm torchao-float8-linear helion-aten-mx; do
  [ -f "$OUT/$name.json" ] && gzip -f "$OUT/$name.json"
done
rm -f "$OUT"/*.partial
pip_freeze=$(python3 -m pip list 2>/dev/null | grep -i -e torch -e triton -e helion -e pytest)
echo "$pip_freeze" >"$work/logs/pip-list.txt"
tar -czf "$OUT/logs.tar.gz" -C "$work" logs
tar -czf "$OUT/repros.tar.gz" -C "$work" repros
cp "$summary" "$OUT/summary.txt"
ls -la "$OUT"
