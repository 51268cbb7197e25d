# Session 18 call 4: the cold one-GPU suite of the working tree on call 3's machine.
source .whl/prelude.sh
export PYTHONPATH="/tmp/site_new:$PWD:$PYTHONPATH"
L=$OUT/call4.txt
nvidia-smi --query-gpu=name,serial --format=csv,noheader > $L
export TRITON_CACHE_DIR=/tmp/tcache-new; rm -rf $TRITON_CACHE_DIR
start=$(date +%s)
timeout 420 python3 -m pytest suites --backend reference -n auto -q -rfE -p no:benchmark -p no:randomly \
  --durations-from /tmp/durations.json --results $OUT/call4-suite-new.json --conformance-html none \
  > $OUT/call4-suite-new.log 2>&1
echo "suite (working tree): exit $? in $(( $(date +%s) - start )) s" >> $L
gzip $OUT/call4-suite-new.json
cat $L; tail -4 $OUT/call4-suite-new.log
