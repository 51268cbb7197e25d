source .whl/prelude.sh
python3 -c "import gemmconf.plugin" 2>/dev/null || {
  rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1; }
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
timeout 400 python3 tools/repro_inductor.py default_padded default_k_mismatch default_int_mm_n0 default_rows default_blockwise default_scaled_v2 > $OUT/repro-default.txt 2>&1
echo "exit $?" >> $OUT/repro-default.txt
grep -v "Warning\|warn" $OUT/repro-default.txt | tail -60
