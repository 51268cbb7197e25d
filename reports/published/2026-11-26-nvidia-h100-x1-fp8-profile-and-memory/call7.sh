source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
git log --oneline -1 > $OUT/call7.txt
timeout 400 python3 devwork/s16_tiles.py 7 2>&1 | tee $OUT/call7-tiles.txt | grep -v Warning
