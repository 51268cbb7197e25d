"""The sequential test of gemmconf.drawing on log-normal rounds: the failure rate per median (a
multiple of the bar) and spread, and the rounds a clean pass at 0.6 times the bar takes. Run with
the checkout's harness on the path."""

import math
import random

from gemmconf import drawing


def run(m, s, rng):
    ratios = []
    while True:
        ratios.append(m * math.exp(rng.gauss(0, s)))
        if len(ratios) == 1 and ratios[0] > drawing.CONFIRM_BELOW:
            return "failed", 1
        d = drawing.sequential(ratios)
        if d:
            return d, len(ratios)


rng = random.Random(1)
N = 4000
for s in (0.0, 0.1, 0.2, 0.3, 0.4, 0.6):
    row = []
    for m in (0.6, 1.0, 1.2, 1.3, 1.35, 1.4, 1.5, 1.7, 2.0, 2.5, 3.0, 4.0):
        c = {"failed": 0, "passed": 0, "borderline": 0}
        n = 0
        for _ in range(N):
            d, k = run(m, s, rng)
            c[d] += 1
            n += k
        row.append(f"{m}:{100 * c['failed'] / N:.1f}%" + (f"(r{n / N:.1f})" if m == 0.6 else ""))
    print(s, " ".join(row))
