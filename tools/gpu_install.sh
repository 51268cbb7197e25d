# shellcheck shell=bash
# Sourced by tools/gpu_perf.sh and tools/gpu_families.sh, from the project root.
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
}
