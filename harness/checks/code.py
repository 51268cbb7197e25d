"""The scenario's FileCheck blocks for this backend, run on the artifacts it generated
(gemmconf.codecheck); blocks for another target are recorded as not run here."""

from __future__ import annotations

from typing import Any

from gemmconf import codecheck
from gemmconf.checks.base import Findings
from gemmconf.item import ItemRun
from gemmconf.outcome import CodeCheckFailed, Problem
from gemmconf.scenario import ScenarioInstance

EXCERPT_CHARS = 4000  # of the first failed block's artifact, in the outcome


class CodeChecks:
    name = "code checks"

    def applies(self, item: ItemRun) -> bool:
        return True  # blocks not run on this target are recorded even when none runs

    def run(self, item: ItemRun) -> Findings:
        blocks, not_run = applicable_checks(item.instance, item.backend.name, item.target)
        metrics: dict[str, Any] = {}
        if not_run:
            metrics["code_checks_not_run"] = [block.record() for block in not_run]
        if not blocks:
            return Findings(metrics=metrics)
        compiled = item.compiled
        artifacts = item.backend_raises("artifacts()", lambda: compiled.artifacts())
        item.stage = "running the code checks"
        results = tuple(codecheck.check_artifacts(blocks, artifacts, target=item.target))
        excerpt = None
        problems: list[Problem] = []
        for check in results:
            if not check.passed:
                problems.append(CodeCheckFailed(check))
                text = artifacts.get(check.block.artifact)
                if text and excerpt is None:
                    excerpt = text[:EXCERPT_CHARS]
        metrics["code_checks"] = len(blocks)
        metrics["code_check_engine"] = codecheck.default_engine().name
        return Findings(
            problems=tuple(problems), metrics=metrics, code_checks=results, code_excerpt=excerpt
        )


def applicable_checks(
    instance: ScenarioInstance, backend_name: str, target: str | None
) -> tuple[list[codecheck.CheckBlock], list[codecheck.NotRunHere]]:
    """This backend's blocks for the instance's axes: those that run on `target`, the others."""
    axes = instance.axis_record()
    base_name = backend_name.split(":")[0]
    blocks = []
    for spec in instance.checks.filecheck:
        if spec.backends and backend_name not in spec.backends and base_name not in spec.backends:
            continue
        if any(axes.get(axis) not in accepted for axis, accepted in spec.when):
            continue
        blocks.append(codecheck.CheckBlock(spec.artifact, spec.text, spec.source, spec.target))
    return codecheck.split_by_target(blocks, target)
