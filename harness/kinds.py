"""Failure kinds: what a failed (or error) record says went wrong, in words a report counts.

A record's `kind` is one of these. Reports count them separately, so that "the backend does not
implement this" (unsupported) and "the backend computes this wrong" (wrong values) never mix. This
module imports nothing, so reports (which may not import torch) can read it.
"""

from __future__ import annotations

WRONG_VALUES = "wrong values"  # numbers off (the oracle), unwritten outputs, stale results
WRONG_LAYOUT = "wrong layout"  # the output's dtype, shape, device or strides differ from eager's
WRONG_ERROR = "wrong error"  # an error scenario: another exception class (or message) than eager's
NO_ERROR = "no error"  # an error scenario: the backend returned where eager raises
UNSUPPORTED = "unsupported"  # NotImplementedError, or a declared refusal (`supports`)
# the backend raised where eager returns, its process died, or it changed PyTorch for the whole
# process (eager and the fp64 reference would run its kernels: gemmconf.pristine)
CRASH = "crash"
TIMEOUT = "timeout"
RECOMPILES = "recompiles"  # more compiles than the scenario allows
NOT_COMPILED = "not compiled"  # torch.compile ran the program without calling the backend
CODE_CHECK = "code check"  # generated code lacks what a FileCheck block promises
OUT_OF_MEMORY = "out of memory"
INPUTS_MODIFIED = "inputs modified"  # the call wrote into its inputs
# a result the backend returned changed when it was called again (a reused output buffer)
OVERWRITTEN = "overwritten result"
# a result shares memory with an input that is not an out= target (eager's are their own)
ALIASED_OUTPUT = "aliased output"
NONDETERMINISTIC = "nondeterministic"  # `deterministic: true`: two calls differ
BATCH_VARIANT = "not batch-invariant"  # `batch_invariant: true`: a row depends on M
MISSING_HARDWARE = "missing hardware"  # --require-hardware named a class this machine lacks
# not the item's backend's failure: gemmconf's own fault (reference, inputs, recorder, scenario), or
# another backend of the run that altered PyTorch in the process (gemmconf.pristine)
HARNESS_ERROR = "harness error"

KINDS = (
    WRONG_VALUES,
    WRONG_LAYOUT,
    WRONG_ERROR,
    NO_ERROR,
    INPUTS_MODIFIED,
    OVERWRITTEN,
    ALIASED_OUTPUT,
    NONDETERMINISTIC,
    BATCH_VARIANT,
    RECOMPILES,
    NOT_COMPILED,
    CODE_CHECK,
    CRASH,
    OUT_OF_MEMORY,
    TIMEOUT,
    UNSUPPORTED,
    MISSING_HARDWARE,
    HARNESS_ERROR,
)
