source .whl/prelude.sh
L=$OUT/call5.txt
git log --oneline -1 > $L; git status --short >> $L
# 1. an outside user: gemmconf's wheel alone, run from an empty folder on a backend of their own
rm -rf /tmp/outside && python3 -m pip install -q --no-deps --target /tmp/outside devwork/gemmconf-0.1.0-py3-none-any.whl > /dev/null 2>&1
mkdir -p /tmp/user && cp devwork/mybackend.py /tmp/user/
(cd /tmp/user && PYTHONPATH=/tmp/outside:/tmp/user timeout 200 python3 -m gemmconf.cli run --backend mybackend:MyGemm -k "dense and bf16" -n 8 -q \
  > $OUT/call5-outside.txt 2>&1; echo "outside run: exit $?" >> $L; echo "in the user's folder: $(ls -A /tmp/user | tr '\n' ' ')" >> $L)
# 2. our tests on the GPU machine, from the checkout
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
start=$(date +%s)
timeout 400 python3 -m pytest tests plugins/gemmconf-cutlass/tests -n 16 -q -p no:randomly -rfEx --tb=short \
  > $OUT/call5-gpu-tests.txt 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s" >> $L
cat $L; tail -4 $OUT/call5-outside.txt; tail -8 $OUT/call5-gpu-tests.txt
