source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
L=$OUT/call4.txt
git log --oneline -1 > $L; git status --short >> $L
# 1. inductor's CUTLASS availability on a GPU host: nothing left in the user's folder
mkdir -p /tmp/user && (cd /tmp/user && timeout 120 python3 -m gemmconf.cli backends > $OUT/call4-backends.txt 2>&1; echo "backends: exit $?" >> $L; echo "left in the user's folder: $(ls -A /tmp/user | tr '\n' ' ')" >> $L)
# 2. our tests on the GPU machine
start=$(date +%s)
timeout 420 python3 -m pytest tests plugins/gemmconf-cutlass/tests -n 16 -q -p no:randomly -rfEx --tb=short \
  > $OUT/call4-gpu-tests.txt 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s" >> $L
cat $L; grep -i "cutlass" $OUT/call4-backends.txt | head -5; tail -15 $OUT/call4-gpu-tests.txt
