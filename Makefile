# gemmconf: `make run` and `make test` each set up .venv on a fresh machine, then run.
VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.gemmconf-installed
REPORTS ?= reports
BACKEND ?= reference
JOBS    ?= 2
# The project's tests wait for subprocesses, sleeps and timeouts for about a seventh of their
# time, and one worker spends its first minutes waiting on the CUTLASS plugin's nvcc builds (its
# tests are one `xdist_group`): two workers more than JOBS fill the cores (2 cores, caches cold,
# back to back on 2026-12-02: 424.7 and 447.9 s at -n 4 against 472.2 s at -n 3; before those
# tests were grouped, -n 3 took 400-416 s against 484 s at -n 2 and -n 4 was no faster,
# 2026-11-30).
# `--dist loadgroup` keeps the tests marked with one `xdist_group` on one worker
# (test_planted_bugs.py: the tests that read one planted backend's outcomes, computed once per
# group; the CUTLASS builds; inductor's addmm+relu).
TEST_JOBS ?= $(shell echo $$(($(JOBS) + 2)))
PYTEST  := $(PY) -m pytest
comma   := ,
export GEMMCONF_REQUIRE_BROWSER ?= 1
# Python writes bytecode (the checkout's modules, pytest's rewritten tests) whatever the machine
# sets: under PYTHONDONTWRITEBYTECODE (these machines set it) each of make test's ~270 Python
# processes compiled gemmconf, its tests and their conftest from source. Three test files with
# their subprocesses, two rounds on the dev CPU (2026-12-01): 148.8 -> 133.5 s, 129.5 -> 120.8 s.
unexport PYTHONDONTWRITEBYTECODE

# pytest exits 5 when it ran no test: for us that is a failure, never a pass. (Inside $(call),
# a comma separates arguments: write $(comma) in a backend list.)
define run_pytest
	$(PYTEST) $(1); status=$$?; \
	if [ $$status -eq 5 ]; then echo "error: pytest collected no tests ($(1))" >&2; exit 1; fi; \
	exit $$status
endef

.PHONY: run test setup lint clean browser

setup: $(STAMP)

# Keep a torch that is already importable (a GPU machine's CUDA build); otherwise install the
# pinned CPU wheel. Any looser torch spec would pull gigabytes of CUDA wheels.
$(STAMP): pyproject.toml plugins/gemmconf-cutlass/pyproject.toml constraints/cpu.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip==25.3
	if $(PY) -c "import torch" 2>/dev/null; then \
	  grep -v -E '^(torch|triton)==' constraints/cpu.txt > $(VENV)/constraints.txt; \
	else cp constraints/cpu.txt $(VENV)/constraints.txt; fi
	$(PY) -m pip install -q --no-compile -c $(VENV)/constraints.txt -e ".[dev]"
	# The direct CUTLASS backend, a package of its own (`--backend cutlass`, an entry point).
	$(PY) -m pip install -q --no-compile -c $(VENV)/constraints.txt -e plugins/gemmconf-cutlass
	# The `cutlass` extra's headers and emitter; its dependencies (cuda-python, scipy, ...) are
	# not needed for codegen and compile-only checks.
	$(PY) -m pip install -q --no-compile --no-deps nvidia-cutlass==4.2.0.0
	# The installed packages' bytecode, on every core: pip compiles it file by file on one (a
	# fresh venv on the 2-core dev CPU, 2026-12-01: installs 73.1 s with pip's compiling, 26.0 s
	# without; compileall -j 0 over all of site-packages 25.4 s). Bytecode is a cache: a file it
	# cannot compile (a test file of some package written for another Python) is compiled at
	# import or never, so its status is not the set-up's.
	$(PY) -m compileall -q -j 0 $$($(PY) -c "import sysconfig; print(sysconfig.get_path('purelib'))") >/dev/null || true
	touch $(STAMP)

# Headless Chromium for the report's browser test (Debian's package; CI runs as root).
browser:
	command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium)

# Lint, formatting, the import layers (pyproject's [tool.importlinter] contracts), the example
# CI workflow (docs/ci.md): actionlint, with shellcheck on its scripts, and the size budget of
# harness/ and backend/ (functions of at most 80 lines; ruff's C901 bound).
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/actionlint -config-file docs/ci/actionlint.yaml \
	  -shellcheck $(VENV)/bin/shellcheck -pyflakes= docs/ci/github-actions.yml
	$(PY) tools/function_sizes.py

# The conformance suite on the default backend; reports under reports/.
run: $(STAMP)
	mkdir -p $(REPORTS)
	$(call run_pytest,suites --backend $(BACKEND) -n $(JOBS) -q -rfE \
	  --results $(REPORTS)/results.json --junitxml $(REPORTS)/junit.xml \
	  --html $(REPORTS)/pytest.html --self-contained-html)

# Lint, the project's own tests and the cutlass plugin's (the browser test must find Chromium),
# then a CPU conformance run of the reference backend on the whole suite, and of eager on the
# suite files its expectations file names (tools/expected_files.py): elsewhere eager passes by
# construction on a CPU (its own comparison), and the whole suite on eager was 56 s of a 417 s
# suite stage (fresh clone, dev CPU, 2026-12-01). Then the reference backend's Blackwell
# items that run on a CPU: sm100 and sm120 code, cross-compiled (--target-arch). Each target's
# items (23 and 6) run in one pytest process (still isolated): xdist's workers took longer to
# start than they saved, and the two runs side by side (`make -j 2`) took 26 s against 26 s one
# after the other (a fresh clone on the dev CPU, 2026-12-01): each keeps both cores busy.
test: $(STAMP) lint browser
	$(call run_pytest,tests plugins/gemmconf-cutlass/tests -n $(TEST_JOBS) --dist loadgroup -q -rfE)
	$(call run_pytest,suites --backend reference -n $(JOBS) -q -rfE \
	  --results $(REPORTS)/ci-results.json --junitxml $(REPORTS)/ci-junit.xml)
	files=$$($(PY) tools/expected_files.py suites/expectations/eager.yaml) && test -n "$$files" && \
	$(call run_pytest,$$files --backend eager -n $(JOBS) -q -rfE \
	  --results $(REPORTS)/ci-results-eager.json --conformance-html none)
	$(call run_pytest,suites --backend reference --target-arch sm100 -m sm100 -p no:xdist -q -rfE \
	  --results $(REPORTS)/ci-results-sm100.json --conformance-html none)
	$(call run_pytest,suites --backend reference --target-arch sm120 -m sm120 -p no:xdist -q -rfE \
	  --results $(REPORTS)/ci-results-sm120.json --conformance-html none)

clean:
	rm -rf $(VENV) $(REPORTS)/*.json $(REPORTS)/*.xml $(REPORTS)/*.html $(REPORTS)/*.png
