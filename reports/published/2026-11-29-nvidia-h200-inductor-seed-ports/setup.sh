# shellcheck shell=bash
# Sourced first by every script here, from the project root: the carried wheels, gemmconf
# installed apart (--target), and what machine, versions and tree this is.
source .whl/prelude.sh
# A warm machine keeps /tmp from earlier calls: reinstall unless /tmp/gc holds this tree's code
# (before 2026-11-29 08:40 UTC it reinstalled only when gemmconf did not import, so a later
# tree ran an earlier call's harness).
tree_hash=$(find harness backend plugins pyproject.toml -type f \( -name '*.py' -o -name '*.toml' \
  -o -name '*.ini' -o -name '*.json' \) -print0 | sort -z | xargs -0 sha1sum | sha1sum | cut -c1-16)
if [ "$(cat /tmp/gc/.tree 2>/dev/null)" != "$tree_hash" ]; then
  rm -rf /tmp/gc && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/gc . plugins/gemmconf-cutlass >/dev/null 2>&1 &&
    echo "$tree_hash" > /tmp/gc/.tree
fi
export PYTHONPATH="/tmp/gc:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
python3 -c "import gemmconf.plugin" || { echo "gemmconf does not import"; exit 1; }
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  echo "host cores: $(nproc)"
  python3 -c "import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__)"
  echo "tree: ${TREE:-unknown} (installed code $tree_hash)"
} | tee "$OUT/machine.txt"
