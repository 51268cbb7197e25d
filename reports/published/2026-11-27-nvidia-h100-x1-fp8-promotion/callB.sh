source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv | tee $OUT/callB-gpu.txt
TRITON_DUMP_PTXAS_LOG=1 timeout 400 python3 devwork/s22/ov_bench.py 5 > /tmp/full.txt 2>&1
echo "exit $?"
grep -E "C7514|Compiling entry|Used [0-9]+ reg" /tmp/full.txt | sort | uniq -c | tee $OUT/callB-ptxas.txt
grep -v -E "ptxas|^ +[0-9]+ bytes|^$|Warning" /tmp/full.txt | tee $OUT/callB-ov.txt
