# inductor on the modern-GEMM suites, run seeds 0 and 1, verdicts compared
source .whl/prelude.sh
python3 -c "import gemmconf.plugin" 2>/dev/null || {
  rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1; }
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
L=$OUT/ind.txt
S="suites/grouped suites/blockscaled suites/fp8 suites/dense/first.yaml suites/backward"
for seed in 0 1; do
  start=$(date +%s)
  timeout 250 python3 -m pytest $S --backend inductor -n auto -q -rfE -p no:benchmark -p no:randomly \
    --seed $seed --results $OUT/ind-seed$seed.json --conformance-html none > $OUT/ind-seed$seed.log 2>&1
  echo "inductor seed $seed: exit $? in $(( $(date +%s) - start )) s" >> $L
  tail -3 $OUT/ind-seed$seed.log >> $L
done
python3 -c "import sys; from gemmconf.cli import main; sys.exit(main())" report diff $OUT/ind-seed0.json $OUT/ind-seed1.json > $OUT/ind-diff.txt 2>&1
echo "diff exit $?" >> $L
cat $L; head -60 $OUT/ind-diff.txt
grep -E "^FAILED|^ERROR" $OUT/ind-seed0.log | head -40
