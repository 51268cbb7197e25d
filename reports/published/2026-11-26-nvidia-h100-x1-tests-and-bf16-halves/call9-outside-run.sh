# An outside user on a GPU machine: gemmconf's wheel installed into a fresh folder, run from an
# empty directory with a backend that is not part of the project (mybackend.py).
source .whl/prelude.sh > /dev/null   # wheels of the packages this machine lacks, into /tmp/site
python3 -m pip install -q --no-deps --no-index --target /tmp/osite outside_gpu/gemmconf-0.1.0-py3-none-any.whl
mkdir -p /tmp/empty && cp outside_gpu/mybackend.py /tmp/empty/ && cd /tmp/empty
export PYTHONPATH=/tmp/osite:/tmp/site:/tmp/empty
python3 -c "import gemmconf, gemmconf_reference; print(gemmconf.__file__, gemmconf_reference.__file__)"
ls
/tmp/osite/bin/gemmconf run --backend mybackend:MyGemm -k "dense and bf16" -n 8 -q -p no:randomly --results my.json 2>&1 | tail -4
/tmp/osite/bin/gemmconf run --backend mybackend:BuggyBias -k "bias and bf16" -n 8 -q -p no:randomly --results buggy.json 2>&1 | tail -4
/tmp/osite/bin/gemmconf run --backend mybackend:BuggyLayout -k "shapes_2d and bf16" -n 8 -q -p no:randomly --results layout.json 2>&1 | tail -3
/tmp/osite/bin/gemmconf run --backend reference -k "grouped or fscaled" -n 8 -q -p no:randomly --results ref.json 2>&1 | tail -4
ls
