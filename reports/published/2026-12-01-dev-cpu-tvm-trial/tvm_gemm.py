"""gemmconf adapter for Apache TVM's relax torch.compile frontend (apache-tvm 0.27).

TVM registers no torch.compile backend by name (torch's own `tvm` needs TVM's removed `relay`),
so its compiler function goes through gemmconf's public adapter:

    gemmconf run dense/first.yaml --backend tvm_gemm:backend -p no:xdist

`relax_dynamo()` returns `(gm, example_inputs) -> callable`: it translates dynamo's FX graph with
`from_fx`, runs relax's default pipeline, builds for the host's llvm target and runs the result in
relax's VirtualMachine.
"""

from tvm.relax.frontend.torch import relax_dynamo

from gemmconf.backends.dynamo import dynamo_backend

# the default pipeline (tvm.relax.get_pipeline()), llvm for this CPU
backend = dynamo_backend(relax_dynamo(), name="tvm-relax")
