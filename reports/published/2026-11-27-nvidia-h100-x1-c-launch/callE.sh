# Session 21 call E: our tests on the H100 (the launch path's new test meets triton 3.6's own
# CudaLauncher), then the host A/B again, each process pinned to one core (taskset -c 5),
# four processes of each tree, alternating.
source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > $OUT/pip.log 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
NEWPP="$PYTHONPATH"; OLDPP="$PWD/devwork/s21/oldpkg:$PYTHONPATH"
L=$OUT/callE.txt
nvidia-smi --query-gpu=name,serial,driver_version --format=csv,noheader > $L
start=$(date +%s)
timeout 330 python3 -m pytest tests plugins/gemmconf-cutlass/tests -n 16 -q -p no:randomly -rfEx > $OUT/callE-tests.log 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s" >> $L
for i in 1 2 3 4; do
  PYTHONPATH="$OLDPP" timeout 60 taskset -c 5 python3 devwork/s21/ab.py old >> $OUT/callE-ab.jsonl 2>>$OUT/callE-ab.err
  PYTHONPATH="$NEWPP" timeout 60 taskset -c 5 python3 devwork/s21/ab.py new >> $OUT/callE-ab.jsonl 2>>$OUT/callE-ab.err
done
python3 devwork/s21/ab_summary.py $OUT/callE-ab.jsonl > $OUT/callE-ab.txt 2>&1
cat $L $OUT/callE-ab.txt; tail -4 $OUT/callE-tests.log
