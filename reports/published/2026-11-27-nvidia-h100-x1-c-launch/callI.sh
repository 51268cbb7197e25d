# Session 21 call I: the torch: field under torch 2.11 (an H100): inductor on the entries that
# name "<2.13" (expected here) and ">=2.13" (not here: the items must pass)
source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
start=$(date +%s)
timeout 300 python3 -m pytest suites/blockscaled suites/zero_size suites/errors suites/codecheck --backend inductor -n 8 -q -p no:randomly -rXx \
  -k "tensorwise_rowwise or tensorwise-m0 or tensorwise-n0 or bias_mismatch or blockscaled_mma" \
  --results $OUT/callI.json --conformance-html none > $OUT/callI.log 2>&1
echo "exit $? in $(( $(date +%s) - start )) s" >> $OUT/callI.log
tail -16 $OUT/callI.log | cut -c1-220
