# Device-only instrumentation (session 18): log every triton.compile call a process makes.
import os

if os.environ.get("KDUMP"):
    import json
    import time

    import triton.compiler as _jit

    _orig = _jit.compile

    def _logged(src, *args, **kwargs):
        start = time.perf_counter()
        result = _orig(src, *args, **kwargs)
        spent = time.perf_counter() - start
        options = kwargs.get("options") or {}
        rec = {
            "fn": getattr(getattr(src, "fn", None), "__name__", None),
            "sig": getattr(src, "signature", None),
            "const": {str(k): repr(v) for k, v in getattr(src, "constants", {}).items()},
            "attrs": {str(k): v for k, v in getattr(src, "attrs", {}).items()},
            "opts": {k: options.get(k) for k in ("num_warps", "num_stages", "num_ctas", "maxnreg")},
            "t": round(spent, 4),
            "ts": time.time(),
        }
        with open(f"{os.environ['KDUMP']}/{os.getpid()}.jsonl", "a") as handle:
            handle.write(json.dumps(rec, default=str) + "\n")
        return result

    _jit.compile = _logged
