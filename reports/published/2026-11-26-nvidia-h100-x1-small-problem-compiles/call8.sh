# Session 18 call 8: gemmconf.pristine on an H100 (torch 2.11): its tests and README's, then the
# whole suite on the reference backend (cold) and a slice on inductor, looking for false alarms.
source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
L=$OUT/call8.txt
nvidia-smi --query-gpu=name,serial --format=csv,noheader > $L
git status --short | head -12 >> $L
python3 -c "import torch; print('computed-kernel lookup:', hasattr(torch._C, '_dispatch_get_computed_kernel_for_dispatch_key'))" >> $L
timeout 150 python3 -m pytest tests/test_pristine.py tests/test_readme.py -q -p no:randomly -rfE > $OUT/call8-tests.log 2>&1
echo "tests: exit $?" >> $L
gunzip -c reports/published/2026-11-26-nvidia-h100-x1-seeds-inductor-eager/call2-seed2.json.gz > /tmp/durations.json
start=$(date +%s)
timeout 330 python3 -m pytest suites --backend reference -n auto -q -rfE -p no:benchmark -p no:randomly \
  --durations-from /tmp/durations.json --results $OUT/call8-suite.json --conformance-html none \
  > $OUT/call8-suite.log 2>&1
echo "suite (reference): exit $? in $(( $(date +%s) - start )) s" >> $L
start=$(date +%s)
timeout 150 python3 -m pytest suites --backend inductor -n auto -q -rfE -p no:benchmark -p no:randomly \
  -k "first or epilogue" --results $OUT/call8-inductor.json --conformance-html none \
  > $OUT/call8-inductor.log 2>&1
echo "inductor slice: exit $? in $(( $(date +%s) - start )) s" >> $L
for f in $OUT/call8-suite.json $OUT/call8-inductor.json; do
  python3 -c "
import json,sys; d=json.load(open('$f')); r=[x for x in d['records'] if 'PyTorch altered' in (x.get('reason') or '')]
print('$f'.split('/')[-1], len(d['records']), 'records,', len(r), 'PyTorch altered')" >> $L
  gzip $f
done
cat $L; tail -3 $OUT/call8-tests.log; tail -3 $OUT/call8-suite.log; tail -3 $OUT/call8-inductor.log
