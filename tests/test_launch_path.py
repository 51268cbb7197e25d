"""The reference backend's call path (backend/launcher.py): plans resolved once per signature,
the direct launch of Triton's compiled kernel, CUDA-graph replay, and the kernel counts the
harness reports. Launches go to stand-ins that record what they were given; where values are
checked the real kernels run: in the interpreter on a CPU, compiled on a GPU."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from gemmconf.backends import resolve
from gemmconf_reference import launcher

ON_GPU = torch.cuda.is_available()


@pytest.fixture
def on_device():
    """The tensors a test makes live where the reference runs its kernels on this machine."""
    with torch.device("cuda" if ON_GPU else "cpu"):
        yield


class RecordingLauncher:
    """Runtime.launcher stand-in: remembers every first launch and every later one."""

    compiles = 0

    def __init__(self) -> None:
        self.first_calls: list[tuple[str, tuple[int, ...]]] = []
        self.launched: list[list[object]] = []

    def first(self, fn, grid, args, config, signature=None):
        self.first_calls.append((getattr(fn, "__name__", str(fn)), grid))
        self.launched.append(list(args))
        return lambda call_args: self.launched.append(list(call_args))


def linear(x, w):
    return F.linear(x, w)


def compiled_with(launch: RecordingLauncher, fn=linear, example=None):
    example = example or [torch.randn(4, 32), torch.randn(8, 32)]
    compiled = resolve("reference").compile(fn, example, dynamic=False)
    compiled.compiler.runtime.launcher = launch
    return compiled


@pytest.mark.usefixtures("on_device")
def test_a_signature_is_planned_once_and_later_calls_refill_only_the_tensors(monkeypatch):
    launch = RecordingLauncher()
    compiled = compiled_with(launch)
    planned = []
    real_plan = launcher.plan_launch
    monkeypatch.setattr(
        launcher, "plan_launch", lambda *a, **k: planned.append(1) or real_plan(*a, **k)
    )
    calls = [(torch.randn(4, 32), torch.randn(8, 32)) for _ in range(4)]
    outputs = [compiled(x, w) for x, w in calls]
    assert len(launch.first_calls) == 1 and len(planned) == 1  # no re-planning, one first launch
    assert len(launch.launched) == 4
    names = [name for name, _ in launcher.KERNEL_SIGNATURES["gemm_kernel"]]
    first, later = launch.launched[0], launch.launched[1:]
    for (x, w), args, out in zip(calls[1:], later, outputs[1:], strict=True):
        assert args[names.index("a_ptr")] is x
        assert args[names.index("b_ptr")].data_ptr() == w.data_ptr()  # W^T, a view of w
        assert args[names.index("c_ptr")] is out  # the kernel writes the returned tensor
        fixed = [i for i, v in enumerate(first) if not isinstance(v, torch.Tensor)]
        assert [args[i] for i in fixed] == [first[i] for i in fixed]  # sizes, strides, flags
    assert len({out.data_ptr() for out in outputs[1:]} | {0}) >= 2  # a fresh output each call
    (gemm,) = compiled.compiler.graphs[0].calls
    assert len(gemm.plans) == 1 and gemm.calls == 4


@pytest.mark.usefixtures("on_device")
def test_what_changes_the_kernel_gets_a_plan_of_its_own():
    launch = RecordingLauncher()
    compiled = compiled_with(launch)
    compiled(torch.randn(4, 32), torch.randn(8, 32))
    compiled(torch.randn(4, 32), torch.randn(8, 32))
    # same shapes, A one element past a 16-byte boundary: no tensor descriptor for A
    shifted = torch.randn(4 * 32 + 1)[1:].view(4, 32)
    compiled(shifted, torch.randn(8, 32))
    (gemm,) = compiled.compiler.graphs[0].calls
    assert len(gemm.plans) == 2 and len(launch.first_calls) == 2
    flags = [dict(r.plan.constexprs)["A_DESC"] for r in gemm.launches.values()]
    assert sorted(flags) == ["mk", "none"]


@pytest.mark.usefixtures("on_device")
def test_repeated_calls_compute_fresh_values():
    def fused(x, w, bias):
        return torch.relu(F.linear(x, w, bias) * 2.0)

    example = [torch.randn(16, 64), torch.randn(96, 64), torch.randn(96)]
    compiled = resolve("reference").compile(fused, example, dynamic=False)
    for _ in range(3):
        x, w, bias = torch.randn(16, 64), torch.randn(96, 64), torch.randn(96)
        torch.testing.assert_close(compiled(x, w, bias), fused(x, w, bias))
    (gemm,) = compiled.compiler.graphs[0].calls
    assert len(gemm.plans) == 1 and gemm.calls == 3


def test_empty_outputs_are_planned_without_a_launch():
    launch = RecordingLauncher()
    compiled = compiled_with(launch, example=[torch.randn(0, 32), torch.randn(8, 32)])
    for _ in range(2):
        assert compiled(torch.randn(0, 32), torch.randn(8, 32)).shape == (0, 8)
    assert launch.launched == []


class StubCompiled:
    function = "function"
    packed_metadata = "packed"

    def __init__(self) -> None:
        self.runs: list[tuple[object, ...]] = []
        self.metadata_asked = 0

    def run(self, *args):
        self.runs.append(args)

    def launch_metadata(self, grid, stream, *args):
        self.metadata_asked += 1
        return "metadata"


def test_direct_launch_passes_what_tritons_jit_passes(monkeypatch):
    from triton import knobs

    compiled = StubCompiled()
    launch = launcher.direct_launch(compiled, (3, 2), stream_of=lambda device: 77, device=0)
    launch([1, "x", None])
    assert compiled.runs == [(3, 2, 1, 77, "function", "packed", None, None, None, 1, "x", None)]
    assert compiled.metadata_asked == 0  # empty hook chains: nothing to build metadata for
    chain = knobs.HookChain()
    chain.add(lambda metadata: None)  # a profiler listening
    monkeypatch.setattr(knobs.runtime, "launch_enter_hook", chain)
    launch([5])
    assert compiled.runs[-1][6:10] == ("metadata", chain, knobs.runtime.launch_exit_hook, 5)
    assert compiled.metadata_asked == 1


def test_the_c_launch_is_called_as_tritons_launcher_calls_it(monkeypatch):
    """`compat.c_launch` calls the C launch behind the installed Triton's CudaLauncher with
    what the launcher's own `__call__` passes it, the scratch given instead of allocated; and
    `direct_launch` takes that way unless a profiler listens."""
    pytest.importorskip("triton.backends.nvidia.driver")
    from triton.backends.nvidia.driver import CudaLauncher
    from triton.runtime import _allocation

    from gemmconf_reference import compat

    assert compat.launch._c_launch_form(CudaLauncher) is not None, "an unknown CudaLauncher form"
    calls = []
    run = object.__new__(CudaLauncher)  # its attributes as __init__ sets them for a kernel
    fields = {
        "launch": lambda *args: calls.append(args),
        "global_scratch_size": 256,
        "global_scratch_align": 128,
        "profile_scratch_size": 0,
        "profile_scratch_align": 1,
        "num_ctas": 1,
        "launch_cooperative_grid": False,
        "launch_pdl": True,
        "arg_annotations": "annotations",
        "kernel_signature": b"signature",
    }
    for name, value in fields.items():
        setattr(run, name, value)
    scratch = object()
    asked = []
    allocator = _allocation._allocator.set(lambda size, *_: asked.append(size) or scratch)
    try:
        run(3, 2, 1, 77, "function", "packed", None, None, None, "x", 5, None)
    finally:
        _allocation._allocator.reset(allocator)
    assert asked == [3 * 2 * 256]
    c_run, per_program = compat.c_launch(run)
    assert per_program == 256
    c_run(3, 2, 1, 77, "function", "packed", scratch, ["x", 5, None])
    through_run, direct = calls
    as_tuples = [tuple(a) if isinstance(a, list) else a for a in direct]
    assert as_tuples == list(through_run)

    made = []
    monkeypatch.setattr(compat, "launch_scratch", lambda size, device, stream: made.append(size))
    compiled = StubCompiled()
    compiled.run = run
    launch = launcher.direct_launch(compiled, (3, 2), stream_of=lambda device: 77, device=0)
    launch(["x", 5, None])
    assert made == [3 * 2 * 256] and len(calls) == 3
    run.profile_scratch_size = 64  # a profiler's scratch: only Triton's launcher knows it
    assert compat.c_launch(run) is None


def test_triton_launcher_counts_only_kernels_this_process_had_not_launched():
    compiled = StubCompiled()

    class JitFunction:
        def __getitem__(self, grid):
            return lambda *args, **options: compiled

    def cpu_launcher():
        return launcher.TritonLauncher(stream_of=lambda device: 0, device=0)

    counting = cpu_launcher()
    config = launcher.configs.TileConfig(64, 64, 32)
    counting.first(JitFunction(), (1,), [], config)([4])
    counting.first(JitFunction(), (2,), [], config)
    assert counting.compiles == 1 and compiled.runs[0][:3] == (1, 1, 1)
    assert cpu_launcher().first(JitFunction(), (1,), [], config) is not None
    assert launcher.TritonLauncher.seen >= {id(compiled)}


class FakeGraphs:
    """CudaGraphs stand-in: a capture runs the launch later, on replay, into the same output."""

    def __init__(self) -> None:
        self.captured = 0
        self.under_way = False

    def capturing(self) -> bool:
        return self.under_way

    def capture(self, launch):
        self.captured += 1
        out = launch()
        return (lambda: out.copy_(launch())), out


def test_graphs_capture_on_the_second_sighting_and_replay_only_a_free_output():
    graphs = launcher.LaunchGraphs(FakeGraphs())
    value = [1.0]
    launches = []

    def launch():
        launches.append(1)
        return torch.full((4,), value[0])

    assert graphs((1, 2), launch).tolist() == [1.0] * 4  # first sighting: a plain launch
    assert graphs.captures == 0
    first = graphs((1, 2), launch)  # second: captured, then replayed
    assert graphs.captures == 1 and graphs.replays == 1
    value[0] = 2.0
    held = graphs((1, 2), launch)  # `first` is still alive: no replay over it
    assert first.tolist() == [1.0] * 4 and held.tolist() == [2.0] * 4
    assert graphs.replays == 1
    del first, held
    view = graphs((1, 2), launch)[1:]  # free again: replayed; a view keeps the output held
    assert graphs.replays == 2 and view.tolist() == [2.0] * 3
    value[0] = 3.0
    assert graphs((1, 2), launch).tolist() == [3.0] * 4 and graphs.replays == 2
    del view
    graphs.api.under_way = True  # inside someone else's capture: never replay or capture
    assert graphs((1, 2), launch).tolist() == [3.0] * 4 and graphs.replays == 2
    assert graphs((9, 9), launch) is not None and graphs((9, 9), launch) is not None
    assert graphs.captures == 1


def test_graphs_keep_at_most_max_graphs_and_stop_capturing_when_callers_rotate_past_them():
    graphs = launcher.LaunchGraphs(FakeGraphs())
    most = launcher.LaunchGraphs.MAX_GRAPHS
    for address in range(most + 3):
        for _ in range(2):
            graphs((address,), lambda: torch.zeros(2))
    assert len(graphs.graphs) == most and graphs.captures == most + 3
    assert (0,) not in graphs.graphs  # least recently used first out
    for address in range(most + 3, 3 * most):
        for _ in range(2):
            graphs((address,), lambda: torch.zeros(2))
    assert graphs.dropped == most and graphs.captures == 2 * most  # then no more captures
    assert graphs((2 * most - 1,), lambda: torch.ones(2)).tolist() == [0.0, 0.0]  # still replays


@pytest.mark.usefixtures("on_device")
def test_cudagraphs_option_replays_on_a_gpu_and_is_ignored_in_the_interpreter():
    backend = resolve("reference:cudagraphs")
    assert backend.options.cudagraphs and backend.name == "reference:cudagraphs"
    compiled = backend.compile(linear, [torch.randn(4, 32), torch.randn(8, 32)], dynamic=False)
    for _ in range(3):  # graphs capture on a plan's second sighting
        x, w = torch.randn(4, 32), torch.randn(8, 32)
        torch.testing.assert_close(compiled(x, w), linear(x, w))
    (gemm,) = compiled.compiler.graphs[0].calls
    replays = ON_GPU and launcher.graphs_supported() is None
    assert all((plan.graphs is not None) == replays for plan in gemm.plans.values())


@pytest.mark.usefixtures("on_device")
def test_kernel_stats_name_the_same_signature_alike_across_compiles():
    def stats():
        compiled = resolve("reference").compile(
            linear, [torch.randn(4, 32), torch.randn(8, 32)], dynamic=False
        )
        compiled(torch.randn(4, 32), torch.randn(8, 32))
        return compiled.kernel_stats()

    first, second = stats(), stats()
    assert first["kernel_signatures"] == second["kernel_signatures"]
    assert len(first["kernel_signatures"]) == 1
    # the interpreter compiles nothing; on a GPU the second compile reuses the first's kernel
    assert second["kernel_compiles"] == 0 and first["kernel_compiles"] <= int(ON_GPU)
    # Triton's listener heard each first launch compile or load the kernel (compile_once.py)
    for stats in (first, second):
        assert stats["kernel_builds"] + stats["kernel_cache_loads"] == stats["kernel_compiles"]


def _aot_compiles() -> int:
    from torch._dynamo.utils import counters

    return counters["aot_autograd"]["total"]


@pytest.mark.usefixtures("on_device")
def test_inference_graphs_skip_aot_autograd_and_run_the_traced_ops():
    # no input requires grad, static shapes, nothing mutated: traced once with make_fx, and the
    # lowered graph's forward is the compiled function (no aot_autograd wrappers per call)
    x, w = torch.randn(5, 32), torch.randn(8, 32)
    compiled = resolve("reference").compile(
        lambda a, b: torch.relu(F.linear(a, b) * 2), [x, w], dynamic=False
    )
    before = _aot_compiles()
    out = compiled(x, w)
    assert _aot_compiles() == before
    torch.testing.assert_close(out, torch.relu(F.linear(x, w) * 2))
    (graph,) = compiled.compiler.graphs
    assert len(graph.calls) == 1 and "relu" in graph.plan_text()  # the epilogue still fused


@pytest.mark.usefixtures("on_device")
def test_grad_mutation_and_dynamic_shapes_go_through_aot_autograd():
    x, w = torch.randn(5, 32), torch.randn(8, 32)

    def in_place(a, b):
        y = F.linear(a, b)
        y.relu_()
        return y

    cases = [
        (in_place, [x, w], False),  # functionalized, so relu_ fuses as relu
        (linear, [x, w.clone().requires_grad_()], False),  # autograd
        (linear, [x, w], True),  # symbolic sizes
    ]
    for fn, example, dynamic in cases:
        compiled = resolve("reference").compile(fn, example, dynamic=dynamic)
        before = _aot_compiles()
        out = compiled(*example)
        assert _aot_compiles() == before + 1, fn
        torch.testing.assert_close(out, fn(*[t.detach() for t in example]))
        assert compiled.compiler.graphs[0].calls, "the GEMM was lowered"
        if fn is in_place:
            assert "EPI0 = relu" in compiled.compiler.graphs[0].plan_text()


def test_descriptor_scratch_is_kept_per_device_and_stream_but_not_in_a_graph(monkeypatch):
    """Triton asks for descriptor scratch on every launch: one buffer per (device, stream) is
    reused and grown; during a CUDA graph capture each launch gets its own (the graph's pool),
    which the legacy default stream never is in."""
    from gemmconf_reference import compat

    made = []

    def empty(size, dtype, device):
        made.append(size)
        return torch.zeros(size, dtype=dtype)  # a CPU stand-in: only identity matters here

    capturing = [False]
    monkeypatch.setattr(compat.launch, "_SCRATCH", {})
    monkeypatch.setattr(torch, "empty", empty)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: capturing[0])
    first = compat.launch._tma_scratch(256, 128, 7)
    assert compat.launch._tma_scratch(128, 128, 7) is first  # smaller: the same buffer
    other_stream = compat.launch._tma_scratch(128, 128, 8)
    assert other_stream is not first
    grown = compat.launch._tma_scratch(1024, 128, 7)
    assert grown is not first and grown.numel() == 1024
    assert compat.launch._tma_scratch(512, 128, 7) is grown
    capturing[0] = True
    in_graph = compat.launch._tma_scratch(64, 128, 7)
    assert in_graph is not grown and compat.launch._SCRATCH[(0, 7)] is grown
    default_stream = compat.launch_scratch(64, 0, 0)  # no capture there, so none is asked
    assert compat.launch_scratch(32, 0, 0) is default_stream
    assert made == [256, 128, 1024, 64, 64]
