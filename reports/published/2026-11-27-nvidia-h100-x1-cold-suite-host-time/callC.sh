# Session 20 call C: where the reference's torch.compile path spends its host time (py-spy).
source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
L=$OUT/callC.txt
nvidia-smi --query-gpu=name,serial --format=csv,noheader > $L
python3 devwork/s20/hostprof.py code >> $L 2>&1
for p in reference floor gemmcall; do
  timeout 60 /tmp/site/bin/py-spy record -r 200 -f raw -o $OUT/prof-$p.txt -- python3 devwork/s20/hostprof.py $p 300000 > $OUT/spy-$p.log 2>&1
  tail -2 $OUT/spy-$p.log >> $L
done
timeout 60 /tmp/site/bin/py-spy record -r 100 --native -f raw -o $OUT/prof-reference-native.txt -- python3 devwork/s20/hostprof.py reference 200000 > $OUT/spy-native.log 2>&1
tail -2 $OUT/spy-native.log >> $L
cat $L
