"""gemmconf adapter for torch-mlir 20261001 (FX importer -> linalg-on-tensors -> RefBackend).

    gemmconf run dense/first.yaml --backend mlir_gemm:backend -p no:xdist
"""

from gemmconf.backends.dynamo import dynamo_backend

from mlir_refbackend import mlir_compile

backend = dynamo_backend(mlir_compile, name="torch-mlir-ref")
