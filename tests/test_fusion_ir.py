"""The inductor backends' `ir_pre_fusion` and `ir_post_fusion` artifacts (the scheduler's nodes as
inductor's logs of those names write them), given for scenarios whose FileCheck blocks read them,
and the seed port that checks them (seed_max_autotune/mutation_rename_fusion_ir, a GPU item: the
seed's multi-template mm exists only there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemmconf import inputs, program
from gemmconf.backends.base import for_item
from gemmconf.backends.inductor import FUSION_IR, make_inductor, make_inductor_max_autotune
from gemmconf.codecheck import check_artifacts
from gemmconf.scenario import load_suite

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT / "suites" / "seeds" / "max_autotune.yaml"


@pytest.fixture(scope="module")
def ports():
    found = {i.id: i for i in load_suite(SEEDS, root=ROOT) if "mutation_rename" in i.id}
    return found


def compiled_artifacts(backend, instance) -> dict[str, str]:
    scoped = for_item(backend, instance)
    fn = program.make_function(instance)
    tensors = inputs.build(instance, 0, 0).tensors
    compiled = scoped.compile(fn, tensors, dynamic=instance.compile.dynamic)
    compiled(*tensors)
    return compiled.artifacts()


def test_only_a_scenario_that_checks_the_fusion_ir_gets_it_uncached(ports):
    checked = ports["seed_max_autotune/mutation_rename_fusion_ir"]
    plain = ports["seed_max_autotune/mutation_rename[fp32]"]
    backend = make_inductor_max_autotune()
    plain_scoped = for_item(backend, plain)  # the seed's config patches, no fusion IR
    assert not plain_scoped.fusion_ir and not backend.fusion_ir
    assert "force_disable_caches" not in plain_scoped.inductor_patches()
    scoped = for_item(backend, checked)
    assert scoped.fusion_ir and scoped.inductor_patches()["force_disable_caches"] is True
    assert "force_disable_caches" not in backend.inductor_patches()
    assert set(FUSION_IR) <= set(compiled_artifacts(make_inductor(), checked))
    assert not set(FUSION_IR) & set(compiled_artifacts(make_inductor(), plain))


def test_the_seeds_checks_read_the_scheduler_ir(ports):
    """On the CPU inductor lowers the 3 x 3 mm to an extern kernel from the start: the post-fusion
    block (the extern kernel's unmet dependency named buf1) holds on the real artifact, and the
    pre-fusion block fails there (no multi-template buffer: the GPU's autotuned choice)."""
    checked = ports["seed_max_autotune/mutation_rename_fusion_ir"]
    found = compiled_artifacts(make_inductor(), checked)
    assert "op2: ExternKernelSchedulerNode" in found["ir_post_fusion"]
    pre, post = check_artifacts(checked.checks.filecheck, found, target=None)
    assert post.passed, post.diagnostic
    assert not pre.passed and "MultiTemplateBuffer" in pre.diagnostic


def fusion_ir(node: str, unmet: str) -> str:
    return (
        f"op2: {node}\n"
        f"op2.writes = [StarDep(name='buf2', mode=None)]\n"
        f"op2.unmet_dependencies = [StarDep(name='{unmet}', mode=None)]\n"
        "op2.met_dependencies = [StarDep(name='arg2_1', mode=None)]\n"
    )


@pytest.mark.parametrize(
    ("pre", "post", "passes"),
    [
        # the seed's case: the renamed mutation's buffer named before and after finalizing
        (
            fusion_ir("SchedulerNode(MultiTemplateBuffer)", "buf1"),
            fusion_ir("ExternKernelSchedulerNode(ExternKernelOut)", "buf1"),
            (True, True),
        ),
        # a scheduler that normalized the dependency differently after finalizing
        (
            fusion_ir("SchedulerNode(MultiTemplateBuffer)", "buf1"),
            fusion_ir("ExternKernelSchedulerNode(ExternKernelOut)", "buf0"),
            (True, False),
        ),
        # no multi-template mm before fusion; a Triton template chosen after
        (
            fusion_ir("ExternKernelSchedulerNode(ExternKernelOut)", "buf1"),
            fusion_ir("SchedulerNode(TritonTemplateBuffer)", "buf1"),
            (False, False),
        ),
    ],
)
def test_a_wrong_fusion_ir_fails_the_seeds_checks(ports, pre, post, passes):
    checked = ports["seed_max_autotune/mutation_rename_fusion_ir"]
    artifacts = {"ir_pre_fusion": pre, "ir_post_fusion": post}
    results = check_artifacts(checked.checks.filecheck, artifacts, target=None)
    assert tuple(r.passed for r in results) == passes, [r.diagnostic for r in results]


def test_a_backend_without_the_artifacts_fails_the_checks(ports):
    checked = ports["seed_max_autotune/mutation_rename_fusion_ir"]
    results = check_artifacts(checked.checks.filecheck, {"python": "x"}, target=None)
    assert [r.passed for r in results] == [False, False]
    assert "no 'ir_pre_fusion' artifact" in results[0].diagnostic


@pytest.mark.parametrize(
    ("wrapper", "passes"),
    [
        ("launchKernel(kernels.triton_poi_fused_add_0, grid_0, grid_1, grid_2, 4, 0, args);", True),
        ('launchKernel("/tmp/c/triton_poi_fused_add_0.cubin", grid_0, grid_1, grid_2);', False),
        ("cpp_fused_add_0((float*)(buf0.data_ptr()));  // a wrapper without launches", False),
    ],
)
def test_the_cpp_wrapper_check_of_test_simple(wrapper, passes):
    """seed_aoti/simple_cpp_wrapper (a GPU item): the C++ wrapper launches its kernels through
    launchKernel( and names no kernel file in a launch."""
    (checked, _) = [
        i
        for i in load_suite(ROOT / "suites" / "seeds" / "aot_inductor.yaml", root=ROOT)
        if i.id.startswith("seed_aoti/simple_cpp_wrapper")
    ]
    results = check_artifacts(checked.checks.filecheck, {"python": wrapper}, target=None)
    assert all(r.passed for r in results) is passes, [r.diagnostic for r in results]
