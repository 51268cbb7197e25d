"""Condense call C's py-spy raw profiles: per path, the share of the timed loop's samples
(stacks through hostprof.py:50) in each frame, inclusive, and the leaves.

    python profile_summary.py prof-reference.txt prof-floor.txt prof-gemmcall.txt
"""

import collections
import sys

for name in sys.argv[1:]:
    inclusive, leaves, total = collections.Counter(), collections.Counter(), 0
    for line in open(name):
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack:
            continue
        frames = stack.split(";")
        loop = [i for i, frame in enumerate(frames) if "hostprof.py:50" in frame]
        if not loop:
            continue  # imports and set-up before the timed loop
        below = frames[loop[0] + 1 :]
        total += int(count)
        leaves[below[-1] if below else "(the loop line itself)"] += int(count)
        for frame in set(below):
            inclusive[frame] += int(count)
    print(f"== {name}: {total} samples in the timed loop")
    for frame, count in inclusive.most_common(16):
        print(f"  {100 * count / total:5.1f}%  {frame[:120]}")
    print("  leaves:")
    for frame, count in leaves.most_common(8):
        print(f"  {100 * count / total:5.1f}%  {frame[:120]}")
