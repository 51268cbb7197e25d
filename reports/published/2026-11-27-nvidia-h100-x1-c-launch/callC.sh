# Session 21 call C: host A/B (HEAD 7ef0a8f's backend against the working tree's, alternating
# processes), tools/host_overhead.py, the cold one-GPU suite diffed against session 20's call D.
source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > $OUT/pip.log 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
NEWPP="$PYTHONPATH"; OLDPP="$PWD/devwork/s21/oldpkg:$PYTHONPATH"
L=$OUT/callC.txt
nvidia-smi --query-gpu=name,serial,driver_version,clocks.sm --format=csv,noheader > $L
for i in 1 2 3; do
  PYTHONPATH="$OLDPP" timeout 60 python3 devwork/s21/ab.py old >> $OUT/callC-ab.jsonl 2>>$OUT/callC-ab.err
  PYTHONPATH="$NEWPP" timeout 60 python3 devwork/s21/ab.py new >> $OUT/callC-ab.jsonl 2>>$OUT/callC-ab.err
done
python3 devwork/s21/ab_summary.py $OUT/callC-ab.jsonl > $OUT/callC-ab.txt 2>&1
timeout 60 python3 tools/host_overhead.py --gpu --calls 2000 --json $OUT/callC-host.json > $OUT/callC-host.txt 2>&1
export TRITON_CACHE_DIR=/tmp/tcache-F; rm -rf $TRITON_CACHE_DIR
gunzip -c reports/published/2026-11-26-nvidia-h100-x1-small-problem-compiles/call6-cold.json.gz > /tmp/durations.json
start=$(date +%s)
TIMEFORMAT="tree cpu: real %R user %U sys %S"
{ time timeout 300 python3 -m pytest suites --backend reference -n auto -q -rfE -p no:benchmark -p no:randomly \
  --durations-from /tmp/durations.json --results $OUT/callC-suite.json --conformance-html none \
  > $OUT/callC-suite.log 2>&1 ; } 2>> $L
echo "suite: exit $? in $(( $(date +%s) - start )) s" >> $L
gunzip -c reports/published/2026-11-27-nvidia-h100-x1-cold-suite-host-time/callD-suite.json.gz > /tmp/callD.json
python3 -c "import sys; from gemmconf.cli import main; sys.exit(main())" report diff /tmp/callD.json $OUT/callC-suite.json > $OUT/callC-diff.txt 2>&1
echo "diff: exit $?" >> $L
gzip $OUT/callC-suite.json
cat $L $OUT/callC-ab.txt $OUT/callC-host.txt; tail -2 $OUT/callC-suite.log; tail -3 $OUT/callC-diff.txt
