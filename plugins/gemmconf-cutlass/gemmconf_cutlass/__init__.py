"""gemmconf-cutlass: CUTLASS 3.x sm90 GEMM kernels as a gemmconf system under test.

`pytest suites --backend cutlass` finds `backend.CutlassBackend` through this package's entry
point in the group `gemmconf.backends` (nothing is imported here, so `codegen` loads without
torch). The package imports from gemmconf only what a backend author has: the Backend protocol
(`gemmconf.backends.base`), the torch.compile adapter (`gemmconf.backends.dynamo`), the cache
directory (`gemmconf.backends.cache`) and the tools' interface (`gemmconf.api`); the import-linter
contract in gemmconf's pyproject.toml keeps it so.

Modules, in the order a call goes through them:

- `backend`: the Backend object (availability, compile, configure, compile_timeout_s and the
  packaged `expectations.yaml`);
- `lowering`: the torch.compile backend that rewrites each aten graph's GEMM nodes;
- `planning`: one GEMM call's tensors -> the kernel spec and the staged operands;
- `codegen`: a kernel spec -> `.cu` source (cutlass_library) -> nvcc build, cached on disk;
- `launch`: a plan launched through ctypes on the GPU, or computed in torch (`emulate_launch`);
- `survey`: `python -m gemmconf_cutlass`, the kernels a suite run needs, planned on the CPU and
  prebuilt in parallel.
"""
