"""tools/kernel_ab.py: what its IR comparison takes as the same code, and what it does not."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("kernel_ab", REPO / "tools/kernel_ab.py")
assert _spec is not None and _spec.loader is not None
kernel_ab = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernel_ab)

TTIR = """module {
  tt.func public @gemm_kernel(%a_ptr: !tt.ptr<f16> loc("a_ptr"(#loc)), %M: i32 loc("M"(#loc))) {
    %c1_i32 = arith.constant 1 : i32 loc(#loc1)
    %cst = arith.constant dense<1> : tensor<64x1xi32> loc(#loc2)
    %acc = arith.addi %M, %c1_i32 : i32 loc(#loc3)
    %0 = tt.splat %acc : i32 -> tensor<64x1xi32> loc(#loc4)
    %1 = arith.cmpi slt, %0, %cst : tensor<64x1xi32> loc(#loc5)
    tt.return loc(#loc6)
  } loc(#loc)
} loc(#loc)
#loc = loc("/tmp/site-old/gemmconf_reference/kernels.py":560:0)
#loc1 = loc(callsite(#loc7 at #loc8))
"""


def test_source_locations_and_debug_labels_are_left_out() -> None:
    text = kernel_ab.without_locations(TTIR)
    assert "loc(" not in text and "#loc" not in text and "kernels.py" not in text
    assert "arith.cmpi slt" in text
    ptx = '\t.loc\t1 40 7\n\tadd.s32 \t%r1, %r2, 1;\n$L__tmp3:\n\t.file\t1 "/a/kernels.py"\n'
    assert kernel_ab.without_locations(ptx) == "\tadd.s32 \t%r1, %r2, 1;"


def test_renamed_values_and_reordered_constants_compare_equal_but_changed_ops_do_not() -> None:
    base = kernel_ab.canonical_names(kernel_ab.without_locations(TTIR))
    lines = TTIR.splitlines()
    reordered = "\n".join([*lines[:2], lines[3], lines[2], *lines[4:]])  # constants swapped
    renamed = TTIR.replace("%acc", "%acc_0").replace("%cst", "%cst_3")
    changed = TTIR.replace("arith.cmpi slt", "arith.cmpi sle")
    other_constant = TTIR.replace("arith.constant 1 : i32", "arith.constant 2 : i32")
    for same in (reordered, renamed):
        assert kernel_ab.canonical_names(kernel_ab.without_locations(same)) == base
    for different in (changed, other_constant):
        assert kernel_ab.canonical_names(kernel_ab.without_locations(different)) != base


def test_values_hash_by_dtype_shape_strides_and_bits() -> None:
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    assert kernel_ab.value_hash(x) == kernel_ab.value_hash(x.clone())
    assert kernel_ab.value_hash(x) != kernel_ab.value_hash(x.t().contiguous().t())  # strides
    assert kernel_ab.value_hash(x) != kernel_ab.value_hash(x.to(torch.float64))
    y = x.clone()
    y[1, 2] = torch.nextafter(y[1, 2], torch.tensor(10.0))  # one ulp
    assert kernel_ab.value_hash(x) != kernel_ab.value_hash(y)
    assert kernel_ab.value_hash(torch.zeros(0, 3, dtype=torch.float8_e4m3fn))


def test_diff_counts_each_difference_and_forgives_a_cut_off_run(tmp_path: Path, capsys) -> None:
    def write(name: str, items: dict, incomplete: bool = False) -> str:
        path = tmp_path / name
        document = {"versions": {}, "device": "CPU", "items": items, "incomplete": incomplete}
        path.write_text(json.dumps(document))
        return str(path)

    item = {"outcome": "passed", "calls": ["a"], "plans": ["p"], "code": []}
    old = write("old.json", {"x": item, "y": item})
    assert kernel_ab.main(["diff", old, write("same.json", {"x": item, "y": item})]) == 0
    moved = write("moved.json", {"x": dict(item, calls=["b"]), "y": item})
    assert kernel_ab.main(["diff", old, moved]) == 1
    assert "DIFFERS x: calls" in capsys.readouterr().out
    code = {"sm90": {"ttir": "1", "ttir~": "c", "ptx": "p"}}
    coded = write("coded.json", {"x": dict(item, code=[code]), "y": item})
    names_only = dict(item, code=[{"sm90": dict(code["sm90"], ttir="2")}])
    assert kernel_ab.main(["diff", coded, write("names.json", {"x": names_only, "y": item})]) == 0
    other_ptx = dict(item, code=[{"sm90": dict(code["sm90"], ptx="q")}])
    assert kernel_ab.main(["diff", coded, write("ptx.json", {"x": other_ptx, "y": item})]) == 1
    shard = write("shard.json", {"x": item}, incomplete=True)
    assert kernel_ab.main(["diff", old, shard]) == 0  # y was not reached: not a difference
    assert kernel_ab.main(["diff", old, f"{shard},{write('rest.json', {'y': item})}"]) == 0
