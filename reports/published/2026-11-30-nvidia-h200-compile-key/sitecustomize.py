"""A probe for issue 43 item 1 (why one kernel signature id gets several Triton hashes in a run).

Put this folder first on PYTHONPATH: every Python process then installs a Triton compilation
listener that writes one JSON line per compile or disk-cache load to
$GEMMCONF_KEY_PROBE/<pid>.jsonl: Triton's hash, the parts of its cache key (the function's
cache_key, the specialisation's attributes, signature and constants, the options and environment
in the metadata), and the gemmconf signature id of the launch that asked for it (found on the
stack). Diagnosis only.
"""

import json
import os
import sys

_DIR = os.environ.get("GEMMCONF_KEY_PROBE")


def _our_signature():
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "jit" and "signature" in frame.f_locals:
            return frame.f_locals["signature"]
        frame = frame.f_back
    return None


def _listener(*, src, metadata, cache_hit, **_event):
    try:
        fn = getattr(src, "fn", None)
        line = {
            "pid": os.getpid(),
            "hit": bool(cache_hit),
            "ours": _our_signature(),
            "name": getattr(src, "name", None),
            "fn_key": getattr(fn, "cache_key", None),
            "attrs": str(getattr(src, "attrs", None)),
            "signature": str(sorted(getattr(src, "signature", {}).items())),
            "constants": str(
                sorted((str(k), str(v)) for k, v in getattr(src, "constants", {}).items())
            ),
            "metadata": {k: v for k, v in dict(metadata).items()},
        }
        with open(os.path.join(_DIR, f"{os.getpid()}.jsonl"), "a") as out:
            out.write(json.dumps(line, default=str) + "\n")
    except Exception as exc:  # never break a compile
        with open(os.path.join(_DIR, f"{os.getpid()}.err"), "a") as out:
            out.write(repr(exc) + "\n")


if _DIR:
    try:
        from triton import knobs

        knobs.compilation.listener = _listener
    except Exception:
        pass
