# shellcheck shell=bash
# Sourced by tools/gpu_perf.sh, gpu_families.sh, compare_trees.sh and kernel_ab_gpu.sh, from
# the project root.
# install_gemmconf LOG: gemmconf must be installed (its pytest plugin is an entry point):
# editable, else into /tmp/site (added to PYTHONPATH); the calling script exits where it cannot.
install_gemmconf() {
  local log=$1
  python3 -c "import gemmconf, gemmconf_reference" 2>/dev/null ||
    python3 -m pip install -q --no-deps --no-build-isolation -e . >>"$log" 2>&1 ||
    { python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site . >>"$log" 2>&1 &&
      export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"; } ||
    { echo "cannot install gemmconf here" | tee -a "$log"; exit 1; }
  python3 -c "import gemmconf.plugin" || { echo "gemmconf does not import" | tee -a "$log"; exit 1; }
  compile_bytecode "$log"
}

# compile_bytecode LOG: torch's, triton's, sympy's and numpy's bytecode, compiled once (3 s on
# 16 cores). The lent GPU machines' image sets PYTHONDONTWRITEBYTECODE=1 and ships torch without
# bytecode, so every process compiled torch from source (import 3.2 against 1.4 s) and every
# timing carried it (reports/published/2026-12-01-nvidia-h200-worker-start/).
compile_bytecode() {
  local site
  site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
  python3 -m compileall -q -j 0 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
    >>"$1" 2>&1 || echo "compileall: some files not compiled (see $1)"
}

# install_trees ARCHIVE UNPACKED SITE PARTS OLD: two trees side by side, each installed apart
# (pip --target): ARCHIVE's (`git archive` of the commit compared against), unpacked into
# UNPACKED, into SITE-OLD, and this checkout into SITE-new; install logs PARTS/<tree>-install.log.
# The calling script exits, printing the log, where a tree cannot be installed. UNPACKED and both
# SITE folders start empty: a warm machine keeps /tmp from an earlier call, and `pip install
# --target` leaves an existing folder as it was (2026-11-29: an A/B ran an earlier call's tree).
install_trees() {
  local archive=$1 unpacked=$2 site=$3 parts=$4 old=$5 tree src
  rm -rf "$unpacked" "$site-$old" "$site-new" && mkdir -p "$unpacked"
  tar xzf "$archive" -C "$unpacked"
  for tree in "$old" new; do
    src=$([ "$tree" = "$old" ] && echo "$unpacked" || echo "$PWD")
    python3 -m pip install -q --no-deps --no-build-isolation --target "$site-$tree" "$src" \
      >"$parts/$tree-install.log" 2>&1 || { cat "$parts/$tree-install.log"; exit 1; }
  done
}
