"""A probe: every process logs who sets TRITON_PTXAS_PATH (or TRITON_LIBDEVICE_PATH), with the
running test and the stack, to $GEMMCONF_ENV_PROBE/<pid>.txt. Diagnosis only."""

import os
import traceback

_DIR = os.environ.get("GEMMCONF_ENV_PROBE")
_WATCHED = ("TRITON_PTXAS_PATH", "TRITON_LIBDEVICE_PATH")

if _DIR:
    _set = os._Environ.__setitem__

    def _logging_set(self, key, value):
        if key in _WATCHED:
            with open(os.path.join(_DIR, f"{os.getpid()}.txt"), "a") as out:
                out.write(f"{key}={value} during {os.environ.get('PYTEST_CURRENT_TEST')}\n")
                out.write("".join(traceback.format_stack(limit=40)) + "\n")
        _set(self, key, value)

    os._Environ.__setitem__ = _logging_set
