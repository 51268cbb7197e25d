source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
L=$OUT/call6.txt
git log --oneline -1 > $L; which ncu >> $L 2>&1; ncu --version | tail -1 >> $L
# the reference's fp8 rowwise kernel and cuBLAS's at 8192^3: clocks locked to base (ncu's default), then free
timeout 240 ncu --profile-from-start off --set full -o /tmp/fp8-base python3 tools/ncu_fp8.py > $OUT/call6-ncu-base-log.txt 2>&1
echo "ncu base clocks: exit $?" >> $L
timeout 240 ncu --profile-from-start off --clock-control none --set full -o /tmp/fp8-free python3 tools/ncu_fp8.py > $OUT/call6-ncu-free-log.txt 2>&1
echo "ncu free clocks: exit $?" >> $L
ncu --import /tmp/fp8-base.ncu-rep --page details > $OUT/call6-ncu-base-details.txt 2>&1
ncu --import /tmp/fp8-free.ncu-rep --page details > $OUT/call6-ncu-free-details.txt 2>&1
cat $L
for f in base free; do echo "== $f"; grep -E "^  [a-zA-Z_]+.*\(|SM Frequency|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Issue Slots Busy|Registers Per|Achieved Occupancy" $OUT/call6-ncu-$f-details.txt | head -40; done
