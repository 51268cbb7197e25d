# shellcheck shell=bash
# The whole reference suite cold on one H200 at the head of 2026-11-30, ordered by the durations
# of 2026-11-30-nvidia-h200-x2-tests-2's call 4 (9d16460, one GPU), then `report diff` against
# that run (issue 45: the same records and outcomes on an sm90 GPU); then Nsight Compute on the
# 8192^3 anchors, bf16 and fp8 rowwise, the reference's kernel and cuBLAS's (issue 41, item 2:
# where the rest goes).
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
old=reports/published/2026-11-30-nvidia-h200-x2-tests-2/call4-lanes-new-suite.json.gz
gunzip -c "$old" > /tmp/durations.json
SUITE_LIMIT=300 TAG=head source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/head-suite.json" > "$OUT/diff.txt" 2>&1
echo "report diff: exit $?" | tee -a "$OUT/summary.txt"
tail -4 "$OUT/diff.txt" | tee -a "$OUT/summary.txt"
head -1 "$OUT/head-timeline.txt" | tee -a "$OUT/summary.txt"
gzip -f "$OUT/head-suite.json" "$OUT/head-suite.log"
ncu --version | tail -1 | tee -a "$OUT/summary.txt"
for recipe in bf16 fp8; do
  timeout 150 ncu --profile-from-start off --set full -o "/tmp/ncu-$recipe" -f \
    python3 tools/ncu_fp8.py "$recipe" > "$OUT/ncu-$recipe.log" 2>&1
  echo "ncu $recipe: exit $?" | tee -a "$OUT/summary.txt"
  ncu --import "/tmp/ncu-$recipe.ncu-rep" --page details > "$OUT/ncu-$recipe-details.txt" 2>&1
  grep -E "^  [a-z_]+.*\(|Duration|SM Frequency|Compute \(SM\) Throughput|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Executed Ipc Active|Issue Slots Busy|Waves Per SM|Block Size|Grid Size" \
    "$OUT/ncu-$recipe-details.txt" | cut -c1-160 | tee -a "$OUT/summary.txt"
done
