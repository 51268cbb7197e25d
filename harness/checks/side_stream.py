"""The same answer on a non-default CUDA stream (a caller that uses streams): bit for bit the
default stream's, or judged again and right."""

from __future__ import annotations

from gemmconf import integrity
from gemmconf.checks.base import NOTHING, Findings
from gemmconf.item import Draw, ItemRun, bitwise_equal
from gemmconf.outcome import StreamMismatch


class SideStream:
    name = "side stream"

    def applies(self, item: ItemRun) -> bool:
        return item.device == "cuda" and item.judges_values

    def run(self, item: ItemRun) -> Findings:
        item.stage = "calling on a side stream"
        first, call = item.first_draw, item.first_call()
        sizes = integrity.nbytes_of(first.actual) if item.poison else ()
        actual = item.backend_call(
            "the call on a non-default CUDA stream",
            lambda: integrity.side_stream_call(call, sizes),
        )
        item.stage = "comparing the side stream's answer"
        if bitwise_equal(integrity.tensors_of(first.actual), integrity.tensors_of(actual)):
            return NOTHING  # the answer of the default stream, bit for bit (judged already)
        item.stage = "judging the side stream's answer"
        verdict = item.judge_one(Draw(first.inputs, first.expected, actual))
        return NOTHING if verdict.passed else Findings(problems=(StreamMismatch(verdict),))
