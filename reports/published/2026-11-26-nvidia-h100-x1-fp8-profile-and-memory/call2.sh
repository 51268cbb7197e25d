source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
L=$OUT/call2.txt
git log --oneline -1 > $L
for case in int_mm mm_bf16; do
  timeout 200 python3 -m pytest suites/integrity/k_tails.yaml --backend reference -p no:xdist -p no:randomly --no-isolate \
    -p devwork.memhist -q -rfE -k "index_width and $case" --results $OUT/call2-$case.json --conformance-html none > $OUT/call2-$case.txt 2>&1
  echo "$case: exit $?" >> $L
  mv $OUT/memsnap.pickle $OUT/memsnap-$case.pickle
done
gzip $OUT/memsnap-*.pickle
ls -la $OUT >> $L
cat $L; tail -5 $OUT/call2-*.txt
