"""The same answer on a non-default CUDA stream (a caller that uses streams): bit for bit the
default stream's, or judged again and right. A wrong answer there is a failure whenever it was
read. A right one shows that the default stream played no part only where the copy finished
before that stream woke (gemmconf.integrity.side_stream_call); a note says so where none did."""

from __future__ import annotations

from gemmconf import integrity
from gemmconf.checks.base import NOTHING, Findings
from gemmconf.item import Draw, ItemRun, bitwise_equal
from gemmconf.outcome import StreamMismatch

# A right answer read after the default stream woke proves nothing by itself: the call is made
# again with the sleep doubled, up to ATTEMPTS times (about 2, 4, ... 64 ms). Before (until
# 2026-12-01) one 10 ms sleep was trusted: a default-stream backend with 50 ms of host work
# before its launch passed on 5 of 5 seeds on an H200.
ATTEMPTS = 6


class SideStream:
    name = "side stream"

    def applies(self, item: ItemRun) -> bool:
        return item.device == "cuda" and item.judges_values

    def run(self, item: ItemRun) -> Findings:
        first, call = item.first_draw, item.first_call()
        sizes = integrity.nbytes_of(first.actual) if item.poison else ()
        first_tensors = integrity.tensors_of(first.actual)
        cycles = integrity.SIDE_STREAM_SLEEP_CYCLES
        for attempt in range(ATTEMPTS):
            item.stage = "calling on a side stream"
            answer = item.backend_call(
                "the call on a non-default CUDA stream",
                lambda c=cycles, a=attempt > 0: integrity.side_stream_call(call, sizes, c, again=a),
            )
            item.stage = "comparing the side stream's answer"
            if not bitwise_equal(first_tensors, integrity.tensors_of(answer.value)):
                item.stage = "judging the side stream's answer"
                verdict = item.judge_one(Draw(first.inputs, first.expected, answer.value))
                if not verdict.passed:
                    return Findings(problems=(StreamMismatch(verdict),))
            if answer.in_time:
                return NOTHING  # right, and read before the default stream could write it
            cycles *= 2
        return _late(answer)


def _late(answer: integrity.SideStreamAnswer) -> Findings:
    """Right answers, none read before the default stream woke. Where the last copy (after
    about 64 ms of sleep) was queued while the default stream still slept, something kept it
    waiting past the wake: a wait for the default stream's work, as a caller's stream is made to
    wait (74 items of the reference backend, most of them backward passes, were read late in
    every attempt on an H200, 2026-12-01), or the side stream's own work outlasting the sleep.
    It passes, counted in metrics.side_stream_copy_waited. Queued after the wake, nothing can be
    told: a note says so."""
    if answer.queued_asleep:
        return Findings(metrics={"side_stream_copy_waited": 1})
    note = (
        "The side-stream check could not tell whether the default stream played a part: the "
        f"backend's call returned after the default stream's sleep ended in each of {ATTEMPTS} "
        f"attempts (the last about {answer.slept_cycles / 2e6:.0f} ms), for example because it "
        "waited for the whole device (torch.cuda.synchronize()). Its answers there were right "
        "(metrics.side_stream_inconclusive)."
    )
    return Findings(metrics={"side_stream_inconclusive": 1}, notes=(note,))
