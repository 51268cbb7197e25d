from torch_mlir.ir import Context
from torch_mlir.passmanager import PassManager
import torch_mlir.dialects.torch as td
names = ["buffer-deallocation","ownership-based-buffer-deallocation","buffer-deallocation-pipeline",
 "expand-realloc","one-shot-bufferize","refback-munge-calling-conventions","generate-runtime-verification",
 "sparse-assembler","sparsification-and-bufferization","convert-vector-to-llvm","bufferization-lower-deallocations",
 "finalize-memref-to-llvm","convert-linalg-to-loops","func.func(buffer-deallocation)"]
with Context() as ctx:
    for n in names:
        try:
            PassManager.parse(f"builtin.module({n})" if not n.startswith("func.func") else f"builtin.module({n})")
            print("ok  ", n)
        except Exception as e:
            print("FAIL", n, str(e).splitlines()[0][:100])
