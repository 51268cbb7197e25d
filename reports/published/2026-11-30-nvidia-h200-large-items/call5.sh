#!/usr/bin/env bash
# Call 5: test_interrupt's "SIGTERM while the results are written" case, which failed in call 4's
# loaded run (16 workers; 194.6 s; the results file complete but exit_status 1), run alone with
# its steps printed (call5_probe_sigterm.py): at d2a54fa, then with d9d6b5f's pristine.py in the
# installed copy (the pristine look is the one change of this session in that run's path), then
# test_interrupt.py whole (-n 10). As run, from the project root with the probe and
# `git show d9d6b5f:harness/pristine.py` saved there as probe_sigterm.py and old_pristine_d9d6b5f.py.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
export PYTHONPATH="$PYTHONPATH:$PWD"
timeout 100 python3 probe_sigterm.py head > $OUT/probe-head.txt 2>&1; echo "head probe exit $?"; head -1 $OUT/probe-head.txt; tail -4 $OUT/probe-head.txt
cp /tmp/gc/gemmconf/pristine.py /tmp/pristine-head.py && cp old_pristine_d9d6b5f.py /tmp/gc/gemmconf/pristine.py
timeout 100 python3 probe_sigterm.py old-pristine > $OUT/probe-old.txt 2>&1; echo "old probe exit $?"; head -1 $OUT/probe-old.txt; tail -4 $OUT/probe-old.txt
cp /tmp/pristine-head.py /tmp/gc/gemmconf/pristine.py
timeout 120 python3 -m pytest tests/test_interrupt.py -n 10 -q -p no:randomly -p no:cacheprovider > $OUT/interrupt.txt 2>&1; echo "test_interrupt exit $?"; tail -3 $OUT/interrupt.txt
