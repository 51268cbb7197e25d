source .whl/prelude.sh
python3 -c "import gemmconf.plugin" 2>/dev/null || {
  rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1; }
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
git log --oneline -1 > $OUT/repro2.txt; git diff --stat HEAD >> $OUT/repro2.txt
timeout 200 python3 tools/repro_inductor.py default_blockwise default_rows 2>&1 | grep -v -i warn >> $OUT/repro2.txt
timeout 100 python3 tools/repro_eager_blockwise.py >> $OUT/repro2.txt 2>&1
echo "exit $?" >> $OUT/repro2.txt
cat $OUT/repro2.txt
