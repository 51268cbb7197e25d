"""The real suite under suites/: it loads, its ids are unique, and every family is there.

These tests read the YAML files only (no tensors, no backend), so they are fast. They guard the
catalog's promises (suites/README.md, "The families"): the item count, unique ids, docs on every
file, seed ports naming their seed test, dynamic scenarios with three or more shape sets, zero
sizes for every op, and code checks for each target class.
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
import yaml

from gemmconf.capability import HARDWARE_CLASSES
from gemmconf.codecheck import expand
from gemmconf.gemm.ops import OPS as SPECS
from gemmconf.gemm.ops import ops_where
from gemmconf.scenario import (
    BIAS_OPS,
    OPS,
    ScenarioInstance,
    discover,
    implied_markers,
    load_suite,
)

ROOT = Path(__file__).resolve().parents[1]
SUITES = ROOT / "suites"

# family -> files that make it up (relative to suites/)
FAMILIES = {
    "dense": ["dense/ops.yaml", "dense/bias.yaml"],
    "fp8": ["fp8/scaled_mm.yaml", "fp8/errors.yaml"],
    "int8": ["int8/int_mm.yaml"],
    "dynamic": ["dynamic/dynamic.yaml"],
    "zero_size": ["zero_size/zero_size.yaml"],
    "tma": ["tma/alignment.yaml", "tma/codecheck.yaml"],
    "epilogue": ["epilogue/epilogue.yaml"],
    "errors": ["errors/errors.yaml"],
    "stress": ["stress/stress.yaml"],
    "seeds": ["seeds/cutlass_backend.yaml", "seeds/max_autotune.yaml", "seeds/aot_inductor.yaml"],
}
SEED_FILES = {
    "seeds/cutlass_backend.yaml": "test_cutlass_backend.py",
    "seeds/max_autotune.yaml": "test_max_autotune.py",
    "seeds/aot_inductor.yaml": "test_aot_inductor.py",
}
MIN_ITEMS = 3000
# ops that can have a batch dim: their own (bmm) or a broadcast one (matmul, linear)
BATCHED_OPS = ops_where(lambda op: any("B" in o.shape or o.batch_prefix for o in op.inputs))


@pytest.fixture(scope="module")
def catalog() -> dict[str, list[ScenarioInstance]]:
    """Every suite file's instances, keyed by its path relative to suites/."""
    files = discover([SUITES], ROOT)
    return {str(p.relative_to(SUITES)): load_suite(p, root=ROOT) for p in files}


@pytest.fixture(scope="module")
def instances(catalog) -> list[ScenarioInstance]:
    return [i for file_instances in catalog.values() for i in file_instances]


def test_the_suite_has_enough_items(instances):
    assert len(instances) >= MIN_ITEMS, f"only {len(instances)} instances (want >= {MIN_ITEMS})"


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_file_exists_and_contributes(catalog, family):
    for name in FAMILIES[family]:
        assert (SUITES / name).is_file(), f"{family}: {name} is missing"
        assert catalog.get(name), f"{family}: {name} has no instances"


def test_every_instance_id_is_unique_across_the_suite(catalog):
    where: dict[str, list[str]] = collections.defaultdict(list)
    for name, file_instances in catalog.items():
        for instance in file_instances:
            where[instance.id].append(name)
    duplicates = {i: files for i, files in where.items() if len(files) > 1}
    assert not duplicates, f"ids defined more than once: {sorted(duplicates)[:10]}"


def test_suite_names_are_distinct_per_file(catalog):
    owners: dict[str, set[str]] = collections.defaultdict(set)
    for name, file_instances in catalog.items():
        for instance in file_instances:
            owners[instance.suite].add(name)
    shared = {suite: files for suite, files in owners.items() if len(files) > 1}
    assert not shared, f"suite names used by several files: {shared}"


@pytest.mark.parametrize(
    "name", sorted(str(p.relative_to(SUITES)) for p in discover([SUITES], ROOT))
)
def test_every_suite_file_has_a_doc(name):
    document = yaml.safe_load((SUITES / name).read_text())
    assert isinstance(document.get("doc"), str) and document["doc"].strip(), f"{name}: no doc"


@pytest.mark.parametrize("name", sorted(SEED_FILES))
def test_seed_ports_name_their_seed_test(catalog, name):
    seed_file = SEED_FILES[name]
    for instance in catalog[name]:
        assert instance.seed_test, f"{instance.id} has no seed"
        file_part, _, test = instance.seed_test.partition("::")
        assert file_part.startswith(seed_file) and test.startswith("test_"), instance.seed_test
        assert "seed" in instance.markers, f"{instance.id} lacks the seed marker"


def test_seed_ports_cover_each_seed_file(catalog):
    for name in SEED_FILES:
        tests = {i.seed_test for i in catalog[name]}
        assert len(tests) >= 20, f"{name}: only {len(tests)} seed tests ported"


def test_dynamic_scenarios_run_three_or_more_shape_sets(catalog):
    dynamic = [i for i in catalog["dynamic/dynamic.yaml"] if i.compile.mode != "static"]
    assert dynamic, "the dynamic family has no dynamic scenario"
    assert all(len(i.shape_sets) >= 3 for i in dynamic), [
        i.id for i in dynamic if len(i.shape_sets) < 3
    ]
    modes = {i.compile.mode for i in dynamic}
    assert modes == {"dynamic", "mark_dynamic"}
    assert {d for i in dynamic for d in i.compile.dims} >= {"B", "M", "N", "K"}
    assert any(i.compile.max_compiles is not None for i in dynamic), "no explicit budget"


def test_dynamic_shape_sets_cross_alignment_and_reach_zero(catalog):
    dynamic = catalog["dynamic/dynamic.yaml"]
    ks = {tuple(dict(s)["K"] for s in i.shape_sets) for i in dynamic if i.dtype == "bf16"}
    assert (64, 33, 128) in ks, "no bf16 K 64 -> 33 -> 128 alignment crossing"
    reaches_zero = {d for i in dynamic for s in i.shape_sets[1:] for d, v in s if v == 0}
    assert reaches_zero >= {"M", "N", "K", "B"}


def _zero_dims(instance: ScenarioInstance) -> set[str]:
    used = {str(e) for o in instance.operands for e in o.shape}
    return {d for s in instance.shape_sets for d, v in s if v == 0 and d in used}


def test_zero_size_family_covers_every_dim_of_every_op(catalog):
    zero = catalog["zero_size/zero_size.yaml"]
    covered: dict[str, set[str]] = collections.defaultdict(set)
    for instance in zero:
        covered[instance.op] |= _zero_dims(instance)
    for op in OPS:
        if SPECS[op].composite:  # seed programs: their GEMMs' zero sizes are the base ops'
            continue
        wanted = {"M", "N", "K"} | ({"B"} if op in BATCHED_OPS else set())
        assert covered[op] >= wanted, f"{op}: zero sizes for {sorted(wanted - covered[op])} missing"


def test_zero_size_family_is_static_and_dynamic_with_a_bias_at_k0(catalog):
    zero = catalog["zero_size/zero_size.yaml"]
    assert {i.compile.mode for i in zero if i.has_zero_size} >= {
        "static",
        "dynamic",
        "mark_dynamic",
    }
    k0_bias_ops = {i.op for i in zero if "K" in _zero_dims(i) and i.bias is not None}
    # eager rejects a grouped GEMM's bias ("Bias not supported yet"): nothing to compute at K = 0
    exempt = set(ops_where(lambda op: op.grouped or op.composite))
    assert k0_bias_ops >= set(BIAS_OPS) - exempt


def test_code_checks_exist_for_each_target(catalog):
    codecheck = catalog["tma/codecheck.yaml"]
    targets = {b.target for i in codecheck for b in i.checks.filecheck}
    assert targets >= {"sm80", "sm90", "sm100"}
    for instance in codecheck:
        assert instance.requires.target in ("sm80", "sm90", "sm100"), instance.id
        for block in instance.checks.filecheck:
            assert block.backends == ("reference",), f"{instance.id}: block for every backend"
            assert block.target == instance.requires.target, instance.id


def test_sm90_tma_checks_split_aligned_from_misaligned(catalog):
    """Aligned cases demand a TMA copy, misaligned ones forbid it; no case gets both."""
    copy = "ttng.async_tma_copy_global_to_local"
    sm90 = [i for i in catalog["tma/codecheck.yaml"] if i.name == "sm90_tma"]
    assert sm90
    for instance in sm90:
        align = instance.axis_record()["align"]
        texts = [
            expand(b.text)
            for b in instance.checks.filecheck
            if all(instance.axis_record().get(a) in ok for a, ok in b.when)
        ]
        wants = any(f"CHECK: {copy}" in t for t in texts)
        forbids = any(f"CHECK-NOT: {copy}" in t for t in texts)
        assert wants != forbids, instance.id
        assert wants == (align in ("aligned", "padded")), instance.id
        assert "tma" in instance.markers


def test_gpu_only_items_say_so_and_cpu_items_stay_small(instances):
    """CPU-run items keep M*N*K small enough for the Triton interpreter."""
    for instance in instances:
        if instance.requires.device == "gpu" or instance.requires.min_class:
            continue
        for shape_set in instance.shape_sets:
            dims = dict(shape_set)
            work = dims.get("B", 1) * dims.get("M", 1) * dims.get("N", 1) * dims.get("K", 1)
            assert work <= 2**28, f"{instance.id}: {dims} runs on a CPU"
            assert dims.get("K", 0) <= 65536, instance.id


def test_every_item_carries_a_hardware_class_marker(instances):
    for instance in instances:
        markers = implied_markers(instance)
        assert markers[0] == SPECS[instance.op].marker  # variants carry their base op's
        assert markers[1] in HARDWARE_CLASSES, instance.id


@pytest.mark.parametrize(
    "family,marker",
    [
        ("epilogue", "epilogue"),
        ("stress", "stress"),
        ("tma", "tma"),
        ("seeds", "seed"),
    ],
)
def test_family_markers(catalog, family, marker):
    for name in FAMILIES[family]:
        if name == "tma/codecheck.yaml":
            continue  # its MMA-only scenarios are code checks, not TMA scenarios
        for instance in catalog[name]:
            assert marker in implied_markers(instance), f"{instance.id} lacks {marker}"


def test_error_scenarios_name_an_exception(catalog):
    for name in ("errors/errors.yaml", "fp8/errors.yaml"):
        assert all(i.checks.raises for i in catalog[name]), name
    for name in ("int8/int_mm.yaml", "zero_size/zero_size.yaml"):
        assert any(i.checks.raises for i in catalog[name]), name
