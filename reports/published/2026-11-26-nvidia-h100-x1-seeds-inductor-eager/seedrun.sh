# usage: bash devwork/seedrun.sh SEED LIMIT  (the whole suite on one GPU with run seed SEED)
source .whl/prelude.sh
seed=$1; limit=$2
python3 -c "import gemmconf.plugin" 2>/dev/null || {
  rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1; }
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
L=$OUT/seed$seed.txt
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv,noheader > $L
git log --oneline -1 >> $L; git diff --stat HEAD >> $L
ls ~/.triton/cache 2>/dev/null | wc -l | sed 's/^/triton cache entries at start: /' >> $L
gunzip -c reports/published/2026-11-26-nvidia-h100-x1-fp8-profile-and-memory/call3-suite-cold.json.gz > /tmp/durations.json
start=$(date +%s)
timeout $limit python3 -m pytest suites --backend reference -n auto -q -rfE -p no:benchmark -p no:randomly \
  --seed $seed --durations-from /tmp/durations.json --results $OUT/seed$seed.json --conformance-html none \
  > $OUT/seed$seed.log 2>&1
echo "suite seed $seed: exit $? in $(( $(date +%s) - start )) s" >> $L
python3 -c "import sys; from gemmconf.cli import main; sys.exit(main())" report diff /tmp/durations.json $OUT/seed$seed.json > $OUT/seed$seed-diff.txt 2>&1
echo "report diff seed 0 (session 16 call 3) -> seed $seed: exit $?" >> $L
gzip $OUT/seed$seed.json
cat $L
grep -E "GiB|waited|kernels:|passed|failed|FAILED|ERROR" $OUT/seed$seed.log | tail -25
head -40 $OUT/seed$seed-diff.txt
