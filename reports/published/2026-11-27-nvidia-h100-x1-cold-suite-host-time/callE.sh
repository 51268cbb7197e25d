# Session 20 call E: the launch-path change A/B on one machine (tools/host_overhead.py --gpu,
# four runs alternating: 1b30860's tree, then the same with d731a8f's backend/compat.py and
# backend/lowering.py copied over it), then our tests at the session's final tree.
source .whl/prelude.sh
rm -rf /tmp/siteN /tmp/siteO && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/siteN . plugins/gemmconf-cutlass > /dev/null 2>&1
cp -r /tmp/siteN /tmp/siteO && cp devwork/s20/old/compat.py devwork/s20/old/lowering.py /tmp/siteO/gemmconf_reference/
L=$OUT/callE.txt
nvidia-smi --query-gpu=name,serial,driver_version --format=csv,noheader > $L
for round in 1 2; do
  for v in new old; do
    site=/tmp/siteN; [ $v = old ] && site=/tmp/siteO
    PYTHONPATH="$site:$PWD:$PYTHONPATH" timeout 60 python3 tools/host_overhead.py --gpu --calls 2000 --json $OUT/callE-host-$v-$round.json > $OUT/callE-host-$v-$round.txt 2>&1
    echo "$v round $round: exit $?" >> $L
    grep -E "^  (eager|torch.compile floor|reference)" $OUT/callE-host-$v-$round.txt >> $L
  done
done
export PYTHONPATH="/tmp/siteN:$PWD:$PYTHONPATH"
start=$(date +%s)
timeout 380 python3 -m pytest tests plugins/gemmconf-cutlass/tests -n 16 -q -p no:randomly -rfEx > $OUT/callE-tests.log 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s" >> $L
cat $L; tail -4 $OUT/callE-tests.log
