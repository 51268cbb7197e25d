"""Everything that differs between the torch/triton versions the backend supports, by job.

Supported: torch 2.11-2.13+, triton 3.6-3.7+ (docs/design.md, "Versions to support"). The APIs used
here exist in all of them; the guards make a missing one fail with a clear message rather than
deep inside a compile. Expected IR spellings (what a code check looks for) are not the backend's
business: the suites name them `%{wgmma}` etc., from `gemmconf.codecheck.IR_SPELLINGS`.

- `interpreter.py`: whether kernels run in the Triton interpreter, and its speed-ups;
- `launch.py`: the direct C launch of compiled kernels and in-kernel descriptors' scratch;
- `codegen.py`: compiling for a GPU arch (targets, AST sources, pointer types, cache keys);
- `dynamo.py`: dynamo's op rules and the TF32 setting.
"""

from gemmconf_reference.compat.codegen import (
    TRITON_POINTER_TYPES,
    ast_source,
    gpu_target,
    settle_cache_keys,
    triton_version,
)
from gemmconf_reference.compat.dynamo import DYNAMO_SKIPPED_OPS, ops_in_graph, tf32_allowed
from gemmconf_reference.compat.interpreter import (
    TRITON_INTERPRET_ENV,
    index_scalars_as_numpy_allows,
    interpreted_as_compiled,
    interpreting,
    memoize_interpreter_patching,
    memoize_interpreter_types,
    skip_nested_interpreter_patching,
)
from gemmconf_reference.compat.launch import (
    c_launch,
    has_tensor_descriptors,
    launch_scratch,
    set_tma_allocator,
)

__all__ = [
    "DYNAMO_SKIPPED_OPS",
    "TRITON_INTERPRET_ENV",
    "TRITON_POINTER_TYPES",
    "ast_source",
    "c_launch",
    "gpu_target",
    "has_tensor_descriptors",
    "index_scalars_as_numpy_allows",
    "interpreted_as_compiled",
    "interpreting",
    "launch_scratch",
    "memoize_interpreter_patching",
    "memoize_interpreter_types",
    "ops_in_graph",
    "set_tma_allocator",
    "settle_cache_keys",
    "skip_nested_interpreter_patching",
    "tf32_allowed",
    "triton_version",
]
