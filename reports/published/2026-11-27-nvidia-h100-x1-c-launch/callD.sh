# Session 21 call D: host A/B (HEAD 7ef0a8f's backend against the working tree's, alternating
# processes, three each), then tools/host_overhead.py on the working tree
source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > $OUT/pip.log 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
NEWPP="$PYTHONPATH"; OLDPP="$PWD/devwork/s21/oldpkg:$PYTHONPATH"
for i in 1 2 3; do
  PYTHONPATH="$OLDPP" timeout 60 python3 devwork/s21/ab.py old >> $OUT/callD-ab.jsonl 2>>$OUT/callD-ab.err
  PYTHONPATH="$NEWPP" timeout 60 python3 devwork/s21/ab.py new >> $OUT/callD-ab.jsonl 2>>$OUT/callD-ab.err
done
python3 devwork/s21/ab_summary.py $OUT/callD-ab.jsonl > $OUT/callD-ab.txt 2>&1
timeout 60 python3 tools/host_overhead.py --gpu --calls 2000 --json $OUT/callD-host.json > $OUT/callD-host.txt 2>&1
cat $OUT/callD-ab.txt $OUT/callD-host.txt
