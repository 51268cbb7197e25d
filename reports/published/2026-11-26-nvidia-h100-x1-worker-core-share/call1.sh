# Session 19 call 1: the cold one-GPU suite under py-spy (every process, 20 Hz, idle excluded),
# every ptxas run timed through a wrapper, the tree's CPU seconds from bash's `time`.
source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
export TRITON_CACHE_DIR=/tmp/tcache; rm -rf $TRITON_CACHE_DIR
REAL=$(python3 -c "import triton, os; print(os.path.join(os.path.dirname(triton.__file__), 'backends/nvidia/bin/ptxas'))")
cat > /tmp/ptxas-timed <<W
#!/bin/bash
s=\$(date +%s.%N); "$REAL" "\$@"; rc=\$?; echo "\$s \$(date +%s.%N)" >> /tmp/ptxas.log; exit \$rc
W
chmod +x /tmp/ptxas-timed; export TRITON_PTXAS_PATH=/tmp/ptxas-timed
L=$OUT/call1.txt
nvidia-smi --query-gpu=name,serial,driver_version --format=csv,noheader > $L
nproc >> $L; git log --oneline -1 >> $L; ls -la $REAL >> $L
gunzip -c reports/published/2026-11-26-nvidia-h100-x1-small-problem-compiles/call6-cold.json.gz > /tmp/durations.json
vmstat -n 5 > $OUT/call1-vmstat.txt 2>&1 & VM=$!
start=$(date +%s)
SPY="/tmp/site/bin/py-spy record --subprocesses --nonblocking -r 20 -f raw -o $OUT/call1-pyspy.txt --"
/tmp/site/bin/py-spy record -r 20 -f raw -o /tmp/probe.txt -- python3 -c "import time; t=time.time()
while time.time()-t<1: pass" >> $L 2>&1 || { echo "py-spy unusable: suite without it" >> $L; SPY=""; }
TIMEFORMAT="tree cpu: real %R user %U sys %S"
{ time timeout 480 $SPY \
  python3 -m pytest suites --backend reference -n auto -q -rfE -p no:benchmark -p no:randomly \
  --durations-from /tmp/durations.json --results $OUT/call1-suite.json --conformance-html none \
  > $OUT/call1-suite.log 2>&1 ; } 2>> $L
echo "suite: exit $? in $(( $(date +%s) - start )) s" >> $L
kill $VM
wc -l /tmp/ptxas.log >> $L
awk '{s+=$2-$1} END {print "ptxas seconds:", s}' /tmp/ptxas.log >> $L
cp /tmp/ptxas.log $OUT/call1-ptxas.log
gzip $OUT/call1-suite.json; [ -f $OUT/call1-pyspy.txt ] && gzip $OUT/call1-pyspy.txt
cat $L; tail -5 $OUT/call1-suite.log
