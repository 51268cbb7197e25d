source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
timeout 400 python3 devwork/s16_quarters.py 5 2>&1 | tee $OUT/call10-quarters.txt | grep -v Warning
