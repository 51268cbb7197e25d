# Session 18 calls 6 and 7: the one-GPU suite at 8f8296b, cold (call 6, a fresh machine) then
# warm (call 7, the same machine right after). usage: bash suite.sh NAME
source .whl/prelude.sh
name=$1
python3 -c "import gemmconf.plugin" 2>/dev/null || {
  rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1; }
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
L=$OUT/$name.txt
nvidia-smi --query-gpu=name,serial,driver_version --format=csv,noheader > $L
git status --short | head -3 >> $L
ls ~/.triton/cache 2>/dev/null | wc -l | sed 's/^/triton cache entries at start: /' >> $L
gunzip -c reports/published/2026-11-26-nvidia-h100-x1-seeds-inductor-eager/call2-seed2.json.gz > /tmp/durations.json
start=$(date +%s)
timeout 500 python3 -m pytest suites --backend reference -n auto -q -rfE -p no:benchmark -p no:randomly \
  --durations-from /tmp/durations.json --results $OUT/$name.json --conformance-html none \
  > $OUT/$name.log 2>&1
echo "suite: exit $? in $(( $(date +%s) - start )) s" >> $L
gzip $OUT/$name.json
cat $L; tail -4 $OUT/$name.log
