# Session 21 call G (ran as devwork/s21/callG2.sh): expectation entries with `hardware:` on an H100: eager and the reference on
# the items whose entries now name the CPU (or sm90), inductor on scaled_grouped (no entry on
# sm90 now: it must pass)
source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
L=$OUT/callG.txt
nvidia-smi --query-gpu=name,serial --format=csv,noheader > $L
run() {  # name backend -k
  local start=$(date +%s)
  timeout 200 python3 -m pytest suites --backend $2 -n 8 -q -p no:randomly -rfEX -k "$3" \
    --results $OUT/callG-$1.json --conformance-html none > $OUT/callG-$1.log 2>&1
  echo "$1: exit $? in $(( $(date +%s) - start )) s: $(tail -1 $OUT/callG-$1.log)" >> $L
}
run eager eager,reference "blockwise or scaled_grouped or blockscaled_mma or batch_invariant"
run inductor inductor "scaled_grouped and not rejected"
cat $L; grep -E "XPASS|FAILED|XFAIL" $OUT/callG-*.log | head -40
