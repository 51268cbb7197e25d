"""Exploration on the GPU: what each piece of the reference's launch path costs on the host."""
import inspect, statistics, sys, time
import torch
import torch.nn.functional as F
from gemmconf_reference import launcher, compat, BackendOptions, ReferenceCompiler

def host_us(call, calls=2000):
    for _ in range(50):
        call()
    torch.cuda.synchronize()
    times = []
    for _ in range(calls):
        s = time.perf_counter(); call(); times.append(time.perf_counter() - s)
    torch.cuda.synchronize()
    return statistics.median(times) * 1e6

recorded = []
orig = launcher.direct_launch
def spy(compiled, grid, **kw):
    recorded.append((compiled, grid))
    return orig(compiled, grid, **kw)
launcher.direct_launch = spy

def linear(x, w):
    return F.linear(x, w)

x = torch.randn(16, 4096, dtype=torch.bfloat16, device="cuda")
w = torch.randn(6144, 4096, dtype=torch.bfloat16, device="cuda")
comp = ReferenceCompiler(BackendOptions())
f = torch.compile(linear, backend=comp, dynamic=False)
out = f(x, w); f(x, w); torch.cuda.synchronize()
ref = (x.float() @ w.float().T)
print("rel err", float((out.float() - ref).norm() / ref.norm()))
(gemm,) = comp.graphs[0].calls
plan = next(iter(gemm.plans.values()))
compiled, grid = recorded[-1]
run = compiled.run
print("triton", __import__("triton").__version__, "run type", type(run).__name__)
print("grid", grid, "tma", plan.tma, "args", len(plan.args))
print({k: getattr(run, k, "<none>") for k in ("global_scratch_size", "global_scratch_align", "profile_scratch_size", "num_ctas", "launch_cooperative_grid", "launch_pdl")})
try:
    print(inspect.getsource(type(run).__call__))
except Exception as e:
    print("no source", e)
from triton.runtime.driver import driver
print("launch is utils.launch:", getattr(run, "launch", None) is getattr(driver.active.utils, "launch", None))
wt = w.t()
outbuf = torch.empty(16, 6144, dtype=torch.bfloat16, device="cuda")
args = list(plan.args)
args[plan.a_slot], args[plan.b_slot], args[plan.c_slot] = x, wt, outbuf
g0, g1, g2 = (*grid, 1, 1)[:3]
print("arg kinds", [type(a).__name__ for a in args])
get_stream = driver.active.get_current_stream
dev = torch.cuda.current_device()
function, packed = compiled.function, compiled.packed_metadata
size = g0 * g1 * g2 * run.num_ctas * run.global_scratch_size
scratch = torch.empty(max(size, 1), dtype=torch.int8, device="cuda") if size else None
raw = getattr(run, "launch", None)

def v_c_tensors():
    stream = get_stream(dev)
    raw(g0, g1, g2, stream, function, run.launch_cooperative_grid, run.launch_pdl, packed, None, None, None, scratch, None, run.arg_annotations, run.kernel_signature, args)

iargs = list(args)
slots = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
def v_c_ints():
    stream = get_stream(dev)
    for i in slots:
        iargs[i] = args[i].data_ptr()
    raw(g0, g1, g2, stream, function, run.launch_cooperative_grid, run.launch_pdl, packed, None, None, None, scratch.data_ptr() if scratch is not None else None, None, run.arg_annotations, run.kernel_signature, iargs)

def v36_t():
    stream = get_stream(dev)
    raw(g0, g1, g2, stream, function, run.launch_cooperative_grid, run.launch_pdl, scratch, None, packed, None, None, None, *args)

def v36_i():
    stream = get_stream(dev)
    for i in slots:
        iargs[i] = args[i].data_ptr()
    raw(g0, g1, g2, stream, function, run.launch_cooperative_grid, run.launch_pdl, scratch.data_ptr(), None, packed, None, None, None, *iargs)

def v36_t_scratchfn():
    stream = get_stream(dev)
    s = compat._tma_scratch(size, 128, stream)
    raw(g0, g1, g2, stream, function, run.launch_cooperative_grid, run.launch_pdl, s, None, packed, None, None, None, *args)

floor = torch.compile(linear, backend=lambda gm, _: gm.forward, dynamic=False)
floor(x, w)
paths = {
    "eager F.linear": lambda: linear(x, w),
    "floor (graph as is)": lambda: floor(x, w),
    "reference torch.compile": lambda: f(x, w),
    "lowered gm.forward": lambda: comp.graphs[0].gm.forward(x, w),
    "GemmCall": lambda: gemm(x, wt, None, None, [], []),
    "plan.launch(args)": lambda: plan.launch(args),
    "run(...) (CudaLauncher)": lambda: run(g0, g1, g2, get_stream(dev), function, packed, None, None, None, *args),
    "C launch, tensors": v_c_tensors,
    "C launch, int pointers": v_c_ints,
    "3.6 C launch, tensors": v36_t,
    "3.6 C launch, int pointers": v36_i,
    "3.6 C launch, tensors, _tma_scratch": v36_t_scratchfn,
    "torch.empty cuda": lambda: torch.empty((16, 6144), dtype=torch.bfloat16, device=x.device),
    "x.new_empty": lambda: x.new_empty((16, 6144)),
    "is_current_stream_capturing": torch.cuda.is_current_stream_capturing,
    "get_current_stream": lambda: get_stream(dev),
    "compat.set_tma_allocator": compat.set_tma_allocator,
    "t.device": lambda: x.device,
    "t.get_device()": lambda: x.get_device(),
    "t.is_cuda": lambda: x.is_cuda,
    "t.shape": lambda: x.shape,
    "t.stride()": lambda: x.stride(),
    "t.data_ptr()": lambda: x.data_ptr(),
    "signature_key": lambda: launcher.signature_key(x, wt, None, None, [], []),
    "w.t()": lambda: w.t(),
}
for name in ("C launch, tensors", "C launch, int pointers", "3.6 C launch, tensors", "3.6 C launch, int pointers", "3.6 C launch, tensors, _tma_scratch"):
    try:
        paths[name](); torch.cuda.synchronize()
    except Exception as e:
        print(name, "failed:", repr(e)); paths.pop(name)
# check the C launch computes the same
for name in ("C launch, tensors", "3.6 C launch, tensors", "3.6 C launch, int pointers"):
    if name in paths:
        outbuf.zero_(); paths[name](); torch.cuda.synchronize()
        print(name, "result rel err", float((outbuf.float() - ref).norm() / ref.norm()))
res = {k: [] for k in paths}
for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 5):
    for k, p in paths.items():
        res[k].append(host_us(p))
for k, v in res.items():
    print(f"{k:<32} min {min(v):6.2f}  med {statistics.median(v):6.2f}  max {max(v):6.2f}")
