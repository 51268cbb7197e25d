"""The scenario loader: expansion, ids, and every validation error naming file:line and field."""

from __future__ import annotations

from pathlib import Path

import pytest
import suite_files
import yaml
from suite_files import write_suite as write

from gemmconf.scenario import ScenarioError, eval_dim, implied_markers, load_suite, value_id


def load_error(tmp_path: Path, text: str) -> str:
    with pytest.raises(ScenarioError) as info:
        load_suite(write(tmp_path, text))
    return str(info.value)


def test_axes_expand_to_their_product_minus_excludes(tmp_path):
    path = write(
        tmp_path,
        """
        scenarios:
          - name: mm
            op: mm
            axes:
              dtype: [fp32, fp16, bf16]
              shape: [{M: 8, N: 8, K: 8}, {M: 127, N: 65, K: 33}]
              layout: [nn, nt]
            exclude:
              - {dtype: fp32, layout: nt}
    """,
    )
    instances = load_suite(path)
    assert len(instances) == 3 * 2 * 2 - 2
    ids = [i.id for i in instances]
    assert ids[0] == "s/mm[fp32-8x8x8-nn]"
    assert "s/mm[bf16-127x65x33-nt]" in ids
    assert not any("fp32" in i and i.endswith("-nt]") for i in ids)
    assert len(set(ids)) == len(ids)


def test_ids_are_stable_and_readable(tmp_path):
    path = write(
        tmp_path,
        """
        suite: dense
        scenarios:
          - name: addmm
            op: addmm
            shape: {M: 4, N: 4, K: 4}
            axes:
              bias: [[M, N], [N]]
              alpha: [1, -2.5]
              case: [{id: beta0, beta: 0}]
    """,
    )
    ids = [i.id for i in load_suite(path)]
    assert ids == [
        "dense/addmm[bias_MN-alpha1-beta0]",
        "dense/addmm[bias_MN-alpha-2.5-beta0]",
        "dense/addmm[bias_N-alpha1-beta0]",
        "dense/addmm[bias_N-alpha-2.5-beta0]",
    ]
    assert ids == [i.id for i in load_suite(path)]


def test_case_axis_sets_several_fields(tmp_path):
    path = write(
        tmp_path,
        """
        scenarios:
          - name: s
            op: addmm
            bias: [M, N]
            shape: {M: 4, N: 4, K: 4}
            axes:
              case: [{id: neg, alpha: -1, beta: 2}]
    """,
    )
    (instance,) = load_suite(path)
    assert (instance.alpha, instance.beta) == (-1.0, 2.0)


def test_misspelled_key_names_file_line_and_key(tmp_path):
    message = load_error(
        tmp_path,
        """
        scenarios:
          - name: x
            op: mm
            shape: {M: 4, N: 4, K: 4}
            dtpye: fp16
    """,
    )
    assert message.startswith(f"{tmp_path / 's.yaml'}:5: dtpye: unknown key")
    assert "did you mean 'dtype'" in message


@pytest.mark.parametrize(
    ("body", "line", "field", "words"),
    [
        ("    op: mmm\n    shape: {M: 1, N: 1, K: 1}\n", 3, "op", "not one of"),
        ("    op: mm\n    shape: {M: 4, N: 4, K: 4}\n    dtype: fp12\n", 5, "dtype", "fp12"),
        ("    op: mm\n    shape: {M: 4, N: 4, K: -1}\n", 4, "shape", "size >= 0"),
        (
            "    op: mm\n    shape: {M: 4, N: 4, K: 4}\n    bias: [M, N]\n",
            5,
            "bias",
            "takes no bias",
        ),
        ("    op: addmm\n    shape: {M: 4, N: 4, K: 4}\n", 2, "bias", "needs a bias"),
        (
            "    op: mm\n    shape: {M: 4, N: 4, K: 4}\n    values: tf32_exact\n",
            5,
            "values",
            "tf32_exact is for dtype tf32, not fp32",
        ),
        (
            "    op: mm\n    shape: {M: 4, N: 4, K: 4}\n    layout: diagonal\n",
            5,
            "layout",
            "layout",
        ),
        (
            "    op: mm\n    shape: {M: 4, N: 4, K: 4}\n    operands: {b: {shape: [K+1, N]}}\n",
            4,
            "shape",
            "inner dimensions differ",
        ),
        (
            "    op: mm\n    shape: {M: 4, N: 4, K: 4}\n    compile: dynamic\n",
            5,
            "compile",
            "at least 2 shape sets",
        ),
        ("    op: scaled_mm\n    shape: {M: 16, N: 16, K: 16}\n", 2, "scaling", "scaling recipe"),
        (
            "    op: scaled_mm\n    scaling: rowwise\n    shape: {M: 16, N: 16, K: 24}\n",
            5,
            "shape",
            "K % 16",
        ),
        (
            "    op: scaled_mm\n    scaling: blockwise\n    shape: {M: 16, N: 64, K: 128}\n",
            5,
            "shape",
            "K and N to be multiples of 128",
        ),
        (
            "    op: bmm\n    shape: {B: 2, M: 4, N: 4, K: 4}\n"
            "    operands: {b: {shape: [B+1, K, N]}}\n",
            4,
            "shape",
            "batch sizes differ",
        ),
        (
            "    op: mm\n    shape: {M: 4, N: 4, K: 4}\n    scaling: rowwise\n",
            5,
            "scaling",
            "only scaled_mm, scaled_grouped_mm, scaled_mm_v2 take a scaling recipe",
        ),
        (
            "    op: mm\n    shape: {M: 4, N: 4, K: 4}\n    out_dtype: bf16\n",
            5,
            "out_dtype",
            "only scaled_mm, grouped_mm, scaled_grouped_mm, scaled_mm_v2 take out_dtype",
        ),
        (
            "    op: mm\n    shape: {M: 4, N: 4, K: 4}\n    alpha: 2\n",
            5,
            "alpha",
            "ops with one: addmm, baddbmm",
        ),
        (
            "    op: mm\n    shape: {M: 4, N: 4, K: 4}\n    epilogue: [relu, {clamp: 3}]\n",
            5,
            "epilogue",
            "clamp takes",
        ),
        (
            "    op: mm\n    shape: {M: 4, N: 4, K: 4}\n    checks: {raises: Oops}\n",
            5,
            "checks",
            "not one of",
        ),
        (
            "    op: mm\n    shape: {M: 4, N: 4, K: 4}\n"
            "    checks: {raises: {type: RuntimeError, or_correct: maybe}}\n",
            5,
            "checks",
            "raises.or_correct must be true or false",
        ),
        (
            "    op: int_mm\n    dtype: int8\n    shape: {M: 32, N: 32, K: 32}\n"
            "    checks: {raises: {type: RuntimeError, or_correct: true}}\n",
            6,
            "checks",
            "which an integer op does not have",
        ),
        (
            "    op: mm\n    shape: {M: 4, N: 4, K: 4}\n"
            "    checks: {raises: {type: RuntimeError, or_correct: true}, numeric: none}\n",
            5,
            "checks",
            "numeric 'none' has no place in it",
        ),
        (  # a result allowed must be one the reference computes: eager's shape rules hold
            "    op: mm\n    shape: {M: 4, N: 4, K: 4}\n    operands: {b: {shape: [K + 1, N]}}\n"
            "    checks: {raises: {type: RuntimeError, or_correct: true}}\n",
            4,
            "shape",
            "allows a result (raises.or_correct) must describe a valid one",
        ),
        (
            "    op: mm\n    shape: {M: 4, N: 4, K: 4}\n    markers: [nightly]\n",
            5,
            "markers",
            "unknown marker",
        ),
        (
            "    op: bmm\n    shape: {M: 4, N: 4, K: 4}\n    layout: {a: expand}\n",
            4,
            "shape",
            "does not set B",
        ),
        (
            "    op: mm\n    shape: {M: 4, N: 4, K: 4}\n    requires: {min_class: sm70}\n",
            5,
            "requires",
            "sm70",
        ),
        (
            "    op: mm\n    shape: {M: 4, N: 4, K: 4}\n"
            "    requires: {min_class: sm100, max_class: sm90}\n",
            5,
            "requires",
            "min_class sm100 is above max_class sm90",
        ),
        (
            "    op: mm\n    shape: {M: 4, N: 4, K: 4}\n    operands: {a: {shape: [M, K +]}}\n",
            5,
            "operands",
            "operand 'a': bad expression 'K +'",
        ),
        (
            "    op: mm\n    shape: {M: 4, N: 4, K: 4}\n    operands: {a: {shape: M}}\n",
            5,
            "operands",
            "operand 'a': shape must be a list of expressions",
        ),
        (
            "    op: grouped_mm\n    shape: {B: 2, M: 8, N: 4, K: 8}\n"
            "    operands: {a: {shape: [M, K]}}\n    group_sizes: [M // 2, M //]\n",
            6,
            "group_sizes",
            "bad expression 'M //'",
        ),
    ],
)
def test_bad_fields_name_line_and_field(tmp_path, body, line, field, words):
    message = load_error(tmp_path, "scenarios:\n  - name: x\n" + body)
    assert f"s.yaml:{line}: {field}:" in message, message
    assert words in message


def test_alias_layout_needs_equal_shapes(tmp_path):
    message = load_error(
        tmp_path,
        """
        scenarios:
          - name: x
            op: mm
            shape: {M: 8, N: 4, K: 8}
            layout: alias
    """,
    )
    assert "layout:" in message and "alias" in message
    ok = write(
        tmp_path,
        """
        scenarios:
          - name: x
            op: mm
            shape: {M: 8, N: 8, K: 8}
            layout: alias
    """,
        "ok.yaml",
    )
    (instance,) = load_suite(ok)
    assert [o.layout for o in instance.operands] == ["row", "alias"]


def test_exclude_rule_that_matches_nothing_is_an_error(tmp_path):
    message = load_error(
        tmp_path,
        """
        scenarios:
          - name: x
            op: mm
            shape: {M: 4, N: 4, K: 4}
            axes:
              dtype: [fp16, bf16]
            exclude:
              - {dtype: fp61}
    """,
    )
    assert "s.yaml:8: exclude:" in message and "matches no combination" in message


def test_duplicate_names_and_keys(tmp_path):
    message = load_error(
        tmp_path,
        """
        scenarios:
          - {name: x, op: mm, shape: {M: 1, N: 1, K: 1}}
          - {name: x, op: mm, shape: {M: 1, N: 1, K: 1}}
    """,
    )
    assert "s.yaml:3: name: duplicate scenario name" in message
    message = load_error(
        tmp_path,
        """
        scenarios:
          - name: x
            op: mm
            op: bmm
    """,
    )
    assert "s.yaml:4" in message and "duplicate key" in message


def test_yaml_syntax_error_has_a_line(tmp_path):
    message = load_error(tmp_path, "scenarios:\n  - name: [x\n")
    assert "s.yaml:3: yaml:" in message


def test_filecheck_block_source_points_at_the_check_text(tmp_path):
    path = write(
        tmp_path,
        """
        scenarios:
          - name: x
            op: mm
            shape: {M: 4, N: 4, K: 4}
            checks:
              filecheck:
                - artifact: ttgir
                  target: sm90
                  check: |
                    CHECK: ttng.warp_group_dot
    """,
    )
    (instance,) = load_suite(path)
    (block,) = instance.checks.filecheck
    assert block.source.endswith("s.yaml:10:13")  # line and column where the text starts
    assert block.target == "sm90"
    bad = load_error(
        tmp_path,
        """
        scenarios:
          - name: x
            op: mm
            shape: {M: 4, N: 4, K: 4}
            checks:
              filecheck:
                - artifact: ttgir
                  check: |
                    CHECK: foo
                    CHECK-NXT: bar
    """,
    )
    assert "s.yaml:10: checks.filecheck.check: unknown directive 'CHECK-NXT:'" in bad


def test_dynamic_modes_and_markers(tmp_path):
    path = write(
        tmp_path,
        """
        scenarios:
          - name: x
            op: scaled_mm
            scaling: rowwise
            shapes: [{M: 16, N: 32, K: 32}, {M: 0, N: 32, K: 32}]
            compile: {mode: mark_dynamic, dims: [M]}
    """,
    )
    (instance,) = load_suite(path)
    assert instance.compile.dynamic is None and instance.compile.dims == ("M",)
    assert instance.out_dtype == "bf16"
    markers = implied_markers(instance)
    for marker in ("scaled_mm", "fp8", "dynamic", "zero_size"):
        assert marker in markers
    assert "fp8" in instance.requires.features


def test_sm120_and_max_class_requirements(tmp_path):
    path = write(
        tmp_path,
        """
        scenarios:
          - name: below_blackwell
            op: mm
            shape: {M: 4, N: 4, K: 4}
            requires: {device: gpu, max_class: sm90}
          - name: consumer_blackwell_code
            op: mm
            shape: {M: 4, N: 4, K: 4}
            requires: {target: sm120}
    """,
    )
    below, code = load_suite(path)
    assert below.requires.max_class == "sm90"
    assert implied_markers(below)[:2] == ["mm", "sm80"]
    assert "sm120" in implied_markers(code) and "cpu" in implied_markers(code)


def test_eval_dim_and_value_ids():
    assert eval_dim("K+1", {"K": 7}) == 8
    assert eval_dim("2*M-1", {"M": 3}) == 5
    assert eval_dim(16, {}) == 16
    with pytest.raises(ValueError, match="not set"):
        eval_dim("B", {"M": 1})
    with pytest.raises(ValueError, match="unsupported"):
        eval_dim("M**2", {"M": 1})
    assert value_id({"M": 1, "N": 2, "K": 3}) == "1x2x3"
    assert value_id({"B": 4, "M": 1, "N": 2, "K": 3}) == "4b1x2x3"
    assert value_id(True, "use_fast_accum") == "use_fast_accum"
    assert value_id(None, "bias") == "no_bias"
    assert value_id(["relu", {"mul": 2}], "epilogue") == "relu+mul2"


def test_the_repository_suites_load():
    root = Path(__file__).resolve().parents[1]
    files = sorted((root / "suites").rglob("*.yaml"))
    files = [f for f in files if "expectations" not in f.parts]
    assert files
    total = sum(len(load_suite(f, root=root)) for f in files)
    assert total > 50


def test_libyaml_and_pyyaml_read_every_suite_file_alike():
    """The fast loader (libyaml, where PyYAML has it) gives the same values, lines, key lines
    and block-scalar columns as PyYAML's own parser, over every shipped suite file."""
    from gemmconf import bundled_suites
    from gemmconf.scenario.source import LineLoader, PyLineLoader

    def plain(value):
        if isinstance(value, dict):
            return (
                {k: plain(v) for k, v in value.items()},
                getattr(value, "line", None),
                dict(getattr(value, "key_lines", {})),
            )
        return [plain(v) for v in value] if isinstance(value, list) else value

    files = sorted(bundled_suites().rglob("*.yaml"))
    assert len(files) > 20
    for path in files:
        text = path.read_text()
        fast, own = (plain(yaml.load(text, Loader=loader)) for loader in (LineLoader, PyLineLoader))
        assert fast == own, path


def test_a_process_reads_an_unchanged_suite_file_once(tmp_path):
    """Loaded again only when the file changed; each caller gets a list of its own."""
    path = suite_files.write_suite(tmp_path, suite_files.TINY)
    first = load_suite(path, tmp_path)
    first.clear()  # the caller's list, not the kept one
    again = load_suite(path, tmp_path)
    assert again[0] is load_suite(path, tmp_path)[0]  # kept, not read again
    assert again[0].id == "tiny/mm[fp32-8x8x8]"
    path.write_text(suite_files.TINY.replace("name: mm", "name: mm_renamed", 1))
    assert load_suite(path, tmp_path)[0].id == "tiny/mm_renamed[fp32-8x8x8]"  # changed: read again
    path.write_text("suite: tiny\nscenarios: 3\n")
    with pytest.raises(ScenarioError, match="scenarios"):  # errors are never kept
        load_suite(path, tmp_path)
