# shellcheck shell=bash
# Sourced first by every script here, from the project root: the carried wheels, gemmconf
# installed apart (--target), and what machine, versions and tree this is.
source .whl/prelude.sh
python3 -c "import gemmconf.plugin" 2>/dev/null || {
  rm -rf /tmp/gc && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/gc . plugins/gemmconf-cutlass >/dev/null 2>&1; }
export PYTHONPATH="/tmp/gc:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
python3 -c "import gemmconf.plugin" || { echo "gemmconf does not import"; exit 1; }
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  echo "host cores: $(nproc)"
  python3 -c "import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__)"
  echo "tree: ${TREE:-unknown}"
} | tee "$OUT/machine.txt"
