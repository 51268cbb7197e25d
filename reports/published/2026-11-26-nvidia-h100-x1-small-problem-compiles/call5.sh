# Session 18 call 5: our tests and the cutlass plugin's on the GPU machine, at 93414a2
# (gemm_kernel_unaligned committed), as session 16's call 4 ran them.
source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
L=$OUT/call5.txt
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > $L
git log --oneline -1 >> $L; git status --short | head >> $L
start=$(date +%s)
timeout 560 python3 -m pytest tests plugins/gemmconf-cutlass/tests -n 16 -q -p no:randomly -rfEx > $OUT/call5-tests.log 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s" >> $L
cat $L; grep -E "^(FAILED|ERROR|XFAIL)" $OUT/call5-tests.log | head -20; tail -3 $OUT/call5-tests.log
