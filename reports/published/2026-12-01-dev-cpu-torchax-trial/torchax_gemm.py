"""gemmconf backend for torchax 0.0.13: the program runs through torchax.interop.jax_jit
(what torchax.compile(fn) returns for a function): jax.jit over the torch function, whose
aten ops torchax lowers to jax. torchax registers no torch.compile backend (its
CompileOptions(mode="dynamo") raises "dynamo mode is not supported yet")."""
import jax
import torch
import torch._ops


def _import_torchax():
    # WORKAROUND (not torchax's code): torchax 0.0.13 names named-tensor overloads
    # (aten.prod.dim_Dimname, aten.unbind.Dimname, ...) that torch 2.13 no longer has, so
    # `import torchax` raises AttributeError (out/repros/01_import_fails_torch213.py). While it
    # imports, a missing overload resolves to one the op has; torch is restored after.
    packet = torch._ops.OpOverloadPacket
    orig = packet.__getattr__

    def lenient(self, key):
        try:
            return orig(self, key)
        except AttributeError:
            if key.startswith("__"):
                raise
            return orig(self, self.overloads()[0])  # any real overload of the op

    packet.__getattr__ = lenient
    try:
        import torchax
        from torchax import interop
        torchax.default_env()  # builds the op tables (imports decompositions.py, ops/*)
    finally:
        packet.__getattr__ = orig
    return torchax, interop


torchax, interop = _import_torchax()


class Compiled:
    def __init__(self, fn):
        self.fn = fn
        self.env = torchax.default_env()
        self._jitted = {}  # jax.jit per pattern of non-tensor args (closed over, static)

    def _get(self, key, statics, pos):
        if key not in self._jitted:
            def torch_fn(*tensors):
                args = list(statics)
                for i, t in zip(pos, tensors):
                    args[i] = t
                return self.fn(*args)
            self._jitted[key] = jax.jit(interop.jax_view(torch_fn))
        return self._jitted[key]

    def __call__(self, *inputs):
        pos = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)]
        statics = tuple(None if isinstance(x, torch.Tensor) else x for x in inputs)
        key = (tuple(pos), repr(statics))
        jitted = self._get(key, statics, pos)
        xs = self.env.t2j_copy([inputs[i] for i in pos])  # torch CPU -> jax arrays
        out = jitted(*xs)                                  # jax-executed torch program
        return self.env.j2t_copy(out)                      # jax arrays -> torch CPU

    def artifacts(self) -> dict[str, str]:
        return {}

    def compiles(self) -> int:
        return sum(j._cache_size() for j in self._jitted.values())


class TorchaxJit:
    name = "torchax"

    def availability(self) -> str | None:
        return None

    def compile(self, fn, example_inputs, *, dynamic):
        return Compiled(fn)


def dynamo_compiler(gm, example_inputs):
    """The other way in: a torch.compile compiler function (`--backend torchax_gemm:dynamo_compiler`).
    Dynamo's FX graph runs through jax.jit with torchax; it is lowered and compiled by XLA here,
    inside the compiler call, where the shapes are static tensors; otherwise on first call."""
    from torchax.ops import mappings

    env = torchax.default_env()
    jitted = jax.jit(interop.jax_view(gm))
    run = jitted
    try:
        specs = [jax.ShapeDtypeStruct(tuple(int(s) for s in t.shape), mappings.t2j_dtype(t.dtype))
                 for t in example_inputs]
        run = jitted.lower(*specs).compile()
    except Exception:  # symbolic shapes or non-tensor inputs: traced on the first call instead
        pass

    def call(*args):
        return env.j2t_copy(run(*env.t2j_copy(list(args))))

    return call


class TorchaxJitAOT(TorchaxJit):
    """The same backend, but compile() traces and XLA-compiles on the example inputs (a warm-up
    call on clones), so the harness's first observed call runs the cached XLA executable."""

    name = "torchax-aot"

    def compile(self, fn, example_inputs, *, dynamic):
        compiled = Compiled(fn)
        compiled(*[x.detach().clone() if isinstance(x, torch.Tensor) else x for x in example_inputs])
        return compiled
