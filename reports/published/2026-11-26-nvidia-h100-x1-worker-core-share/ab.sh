# Session 19 calls 2-5: the cold one-GPU suite, an empty Triton cache each time.
# usage: bash ab.sh NAME new|old
#   new: the working tree as it was at the call (call 2: the per-worker thread share only;
#        calls 4 and 5: the share and the large-draw threads, as committed)
#   old: the same install with 6d7a2cf's harness/inputs.py and harness/plugin/hardware.py
#        copied over it (call 3; devwork/old held those two files)
# Calls 2 and 3 ran without the timeline lines; calls 4 and 5 with them.
source .whl/prelude.sh
name=$1; which=$2
if [ ! -d /tmp/siteB ]; then
  python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/siteB . plugins/gemmconf-cutlass > /dev/null 2>&1
  cp -r /tmp/siteB /tmp/siteA
  cp devwork/old/inputs.py /tmp/siteA/gemmconf/inputs.py
  cp devwork/old/plugin/hardware.py /tmp/siteA/gemmconf/plugin/hardware.py
fi
site=/tmp/siteB; [ "$which" = old ] && site=/tmp/siteA
export PYTHONPATH="$site:$PWD:$PYTHONPATH"
export GEMMCONF_TIMELINE=/tmp/tl-$name; mkdir -p $GEMMCONF_TIMELINE
export TRITON_CACHE_DIR=/tmp/tcache-$name; rm -rf $TRITON_CACHE_DIR
L=$OUT/$name.txt
nvidia-smi --query-gpu=name,serial,driver_version --format=csv,noheader > $L
echo "$which: $site; OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset}" >> $L
python3 -c "import gemmconf.inputs as i, inspect; print('pool:', 'get_num_threads' in inspect.getsource(i._drawn))" >> $L
gunzip -c reports/published/2026-11-26-nvidia-h100-x1-small-problem-compiles/call6-cold.json.gz > /tmp/durations.json
vmstat -n 5 > $OUT/$name-vmstat.txt 2>&1 & VM=$!
start=$(date +%s)
TIMEFORMAT="tree cpu: real %R user %U sys %S"
{ time timeout 540 python3 -m pytest suites --backend reference -n auto -q -rfE -p no:benchmark -p no:randomly \
  --durations-from /tmp/durations.json --results $OUT/$name.json --conformance-html none -p tools.timeline \
  > $OUT/$name.log 2>&1 ; } 2>> $L
echo "suite: exit $? in $(( $(date +%s) - start )) s" >> $L
kill $VM
gzip $OUT/$name.json
python3 tools/timeline.py $GEMMCONF_TIMELINE > $OUT/$name-timeline.txt 2>&1
cat $L; tail -3 $OUT/$name.log
