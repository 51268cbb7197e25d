"""The note beside a wrong-values failure whose result is the product of inputs rounded to a
narrower float than the item allows (bf16 under TF32's license, TF32 where fp32 is asked for):
gemmconf.diagnoses.narrow_inputs_note, on the failed shape set's first draw."""

from __future__ import annotations

from gemmconf.checks.base import NOTHING, Findings
from gemmconf.diagnoses import narrow_inputs_note
from gemmconf.item import ItemRun
from gemmconf.outcome import NumericFailure


class NarrowInputs:
    name = "narrow inputs"

    def applies(self, item: ItemRun) -> bool:
        return item.reference_fn is not None and not item.instance.backward

    def run(self, item: ItemRun) -> Findings:
        failure = next((p for p in item.problems if isinstance(p, NumericFailure)), None)
        if failure is None or failure.verdict.attributes_failed:
            return NOTHING
        drawn = item.draws[failure.shape_set]
        draw = next((d for d in drawn if not d.overwritten), drawn[0])  # values as returned
        item.stage = "looking for inputs rounded to a narrower float"
        note = narrow_inputs_note(item.instance, draw.inputs, draw.actual, item.reference_fn)
        return NOTHING if note is None else Findings(notes=(note,))
