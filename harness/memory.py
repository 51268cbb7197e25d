"""Device memory of one item: what it will take (`estimate`), what it took (`PeakWatch`), and
what an out-of-memory error said (`out_of_memory`).

The estimate is made from the scenario alone (shapes, dtypes, layouts, epilogue), before anything
runs, so that xdist workers sharing a GPU can share its memory (`gemmconf.isolation.budget`).
It follows what `runner.run_item` keeps alive at its peak: eager's and the backend's inputs and
outputs of every shape set and of each further draw its first judgment takes (they live until
the oracle is done; `drawing.judgment_draws`), a backend's workspace (an
autotuning backend benchmarks on copies of the inputs), one piece of the chunked fp64 reference
(`gemmconf.chunked`), the fp64 values the oracle holds for an output (the reference, a bound)
and its temporaries for one piece of it (`gemmconf.oracle`). It is an upper bound by
design, with a margin: an under-estimate runs a GPU out of memory, an over-estimate only makes an
item wait. Where the estimate was wrong, the measured peak says so (CUDA: the item's tensors at
their peak, `memory_peak_allocated_bytes`, which is what the estimate models; and what the worker's
allocator held reserved meanwhile, `memory_peak_bytes`, blocks it kept from earlier items
included). Where an earlier run measured an item on the same kind of GPU (--durations-from), it
is admitted by that figure with a margin instead (`measured_peaks`, `admitted`): the estimate
over-states most items several times over, and an item waits for memory it will not use.

The host's memory is ledgered the same way on GPU machines (`Footprint.host_total`): what an item
added to its process's resident set at its peak is measured on every device
(`HostPeakWatch`, `host_memory_peak_bytes`), and an earlier run's figure admits the item to the
host's ledger (`measured_host_peaks`, `admitted`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from gemmconf import chunked, drawing, inputs
from gemmconf.gemm.dtypes import DTYPES, is_fp8
from gemmconf.oracle import PIECE_ELEMENTS
from gemmconf.scenario import Operand, ScenarioInstance, eval_dim

GIB = 1 << 30
FP64 = 8
# fp64 values while judging (measured on an H100: about 9.5 output-sized values when the oracle
# read an output whole): the reference and a rounding or magnitude bound, held for the whole
# output, and the oracle's temporaries, for one piece of it (oracle.PIECE_ELEMENTS)
ORACLE_HELD_FP64 = 2
ORACLE_PIECE_FP64 = 9
MARGIN = 1.15  # allocator rounding and fragmentation
SLACK_BYTES = 256 << 20  # small tensors, scales, compiled kernels' constants
RELEASE_ABOVE_BYTES = 256 << 20  # an item that reserved more gives its cached blocks back

# What each xdist worker on a GPU keeps for itself, outside any item: its isolation worker's CUDA
# context, cuBLAS workspaces, compiled kernels and the allocator's cache between items.
PROCESS_RESERVE_BYTES = 1 << 30
MIN_SHARED_BYTES = 1 << 30


def shared_bytes(budget: int, workers: int) -> int:
    """What the items of one GPU share of its `budget` when `workers` pytest processes use it:
    the budget less each one's own memory, with a floor (a quarter of it, at least 1 GiB)."""
    return max(budget - workers * PROCESS_RESERVE_BYTES, MIN_SHARED_BYTES, budget // 4)


# The simulated budget, in bytes, handed to the isolation worker by its parent: the worker caps
# its own allocations to it, so an item that needs more fails as it would on such a GPU.
BUDGET_ENV = "GEMMCONF_GPU_MEMORY_BUDGET_BYTES"
# What the items of one GPU share (the budget less every worker's own share), handed to the
# worker the same way: an output whose judging would take more than 1/HOST_JUDGE_SHARE of it has
# its fp64 values held on the host (`reference_device`).
SHARED_ENV = "GEMMCONF_GPU_MEMORY_SHARED_BYTES"
HOST_JUDGE_SHARE = 2


@dataclass(frozen=True)
class Footprint:
    """An item's estimated device memory at its peak, in bytes, by what holds it."""

    inputs: int  # eager's and the backend's, every shape set, and an operand crossing to the device
    # eager's and the backend's, every shape set, plus an epilogue's temporary and the integrity
    # checks' (poisoned blocks, the second call's output)
    outputs: int
    backend: int  # the backend's own workspace (autotuning: a copy of inputs and output)
    reference: int  # the largest piece of the chunked fp64 reference
    oracle: int  # fp64 output-sized values while judging
    host: int = 0  # on the CPU: the fp64 reference inputs, drawn sources, outputs judged there

    @property
    def total(self) -> int:
        raw = self.inputs + self.outputs + self.backend + self.reference + self.oracle
        return int(raw * MARGIN) + SLACK_BYTES

    @property
    def host_total(self) -> int:
        return int(self.host * MARGIN) + SLACK_BYTES


def estimate(
    instance: ScenarioInstance,
    *,
    autotunes: bool = False,
    shared: int | None = None,
    chunk_bytes: int = chunked.CHUNK_BYTES,
) -> Footprint:
    """The device memory `run_item` will hold at its peak for this item (an upper bound), when
    the items of its GPU share `shared` bytes (None: no budget; it decides `reference_device`)."""
    inputs = outputs = host = staged = 0
    biggest_set = biggest_out = reference = oracle = drawn = 0
    for index in range(len(instance.shape_sets)):
        sizes = instance.dims(index)
        stored = stored_input_bytes(instance, sizes)
        out = output_bytes(instance, sizes)
        inputs += 2 * stored  # eager's and the backend's copies (inputs.build_copies)
        outputs += 2 * out
        # the first judgment's further draws: eager's inputs and both results of each are held
        # to the end, and the backend's inputs of the one being called (a 1 x 128256 x 4096
        # projection's second draw holds 2.1 GB more)
        draws = drawing.judgment_draws(instance, index, sizes, output_elements(instance, sizes))
        if draws > 1:
            inputs += draws * stored
            outputs += (draws - 1) * 2 * out
        biggest_set = max(biggest_set, stored + out)
        biggest_out = max(biggest_out, out)
        if not instance.spec.exact and instance.checks.numeric != "none":
            reference = max(reference, chunked.plan(instance, sizes, chunk_bytes).piece_bytes)
        if reference_device(instance, sizes, "cuda", shared) == "cuda":
            oracle = max(oracle, oracle_bytes(instance, sizes))
        else:  # the fp64 values held on the host, judged a piece at a time on the device
            oracle = max(oracle, oracle_piece_bytes(instance, sizes))
            host += oracle_held_bytes(instance, sizes)
        host += 2 * reference_input_bytes(instance, sizes)  # two draws' (the copies share one)
        drawn = max(drawn, stored + largest_operand(instance, sizes) * 4)  # fp32 draws, casts
        staged = max(staged, crossing_bytes(instance, sizes))
    backend = biggest_set if autotunes else biggest_out
    # the integrity checks (gemmconf.integrity): blocks of the outputs' sizes poisoned and handed
    # back to the allocator, and the output of the second call on fresh values of shape set 0.
    # InputGuard copies large inputs to the host; the fresh inputs of a large shape set take
    # the place of eager's, released first (checks.fresh_draw.FreshDrawBitwise); a smaller one's are
    # the second draw counted above. A judgment near its bar is decided by further rounds
    # (drawing.decision), one round's draws at a time, each released once judged: not counted
    # (the results the overwritten-result guard keeps are the backend's outputs only).
    checks = 3 * biggest_out
    return Footprint(
        inputs + staged, outputs + biggest_out + checks, backend, reference, oracle, host + drawn
    )


def oracle_bytes(instance: ScenarioInstance, sizes: dict[str, int]) -> int:
    """What judging one shape set's outputs holds on one device: fp64 values."""
    return oracle_held_bytes(instance, sizes) + oracle_piece_bytes(instance, sizes)


def oracle_held_bytes(instance: ScenarioInstance, sizes: dict[str, int]) -> int:
    """The fp64 values held for every output while it is judged (the reference, a bound)."""
    return output_elements(instance, sizes) * FP64 * ORACLE_HELD_FP64


def oracle_piece_bytes(instance: ScenarioInstance, sizes: dict[str, int]) -> int:
    """The oracle's fp64 temporaries for one piece of an output (oracle.PIECE_ELEMENTS)."""
    elements = min(chunked.output_elements(instance, sizes), PIECE_ELEMENTS)
    return elements * FP64 * ORACLE_PIECE_FP64


def reference_device(
    instance: ScenarioInstance, sizes: dict[str, int], device: str, shared: int | None = None
) -> str:
    """Where one shape set's fp64 reference values are held while its outputs are judged (the
    oracle reads them a piece at a time on the item's device): on that device, or on the host
    when judging would take more than 1/HOST_JUDGE_SHARE of what the GPU's items share
    (`shared`, default: the parent's `SHARED_ENV`; none: the device)."""
    if device == "cpu":
        return "cpu"
    if shared is None:
        shared = int(os.environ.get(SHARED_ENV) or 0) or None
    if shared is None or oracle_bytes(instance, sizes) * HOST_JUDGE_SHARE <= shared:
        return device
    return "cpu"


def reference_input_bytes(instance: ScenarioInstance, sizes: dict[str, int]) -> int:
    """Bytes of one shape set's reference inputs, which `inputs.build` keeps on the CPU: fp8
    as stored (`inputs.scaled_operands`; microscaled ones dequantized in fp64), others in their
    own dtype; a stride-0 batch is a view of one batch."""
    if instance.spec.exact:
        return 0  # judged against eager alone: no reference inputs
    scaled = inputs.scaled_operands(instance)
    total = 0
    for name, exprs in chunked.input_dims(instance).items():
        if exprs is None:  # a shape the scenario does not spell: at most an output's size
            exprs = ("M", "N") if "N" in sizes else ()
        shape = [eval_dim(e, sizes) for e in exprs]
        operand = next((o for o in instance.operands if o.name == name), None)
        if operand is not None and operand.layout.startswith("expand") and shape:
            shape[0] = 1
        addend = instance.spec.addend
        if operand is not None and name in scaled:
            itemsize = 1  # stored fp8 values (their scales, one per block, are few)
        elif operand is not None:
            itemsize = FP64 if is_fp8(operand.dtype) else _itemsize(operand.dtype)
        elif addend is not None and name == addend.name:
            itemsize = _itemsize(instance.bias_dtype or instance.gemm_dtype)
        elif name.startswith("other"):
            itemsize = _itemsize(instance.gemm_dtype)
        else:  # a scale, folded into its operand: a 0-dim fp64 one
            itemsize = FP64
        total += _prod(shape) * itemsize
    return total


def largest_operand(instance: ScenarioInstance, sizes: dict[str, int]) -> int:
    """Elements of the largest operand of one shape set."""
    return max((_prod(eval_dim(e, sizes) for e in o.shape) for o in instance.operands), default=0)


def crossing_bytes(instance: ScenarioInstance, sizes: dict[str, int]) -> int:
    """Bytes of the largest operand value `inputs.build` moves to the device before laying out
    its copies there (an expanded operand's value has a batch of one)."""
    return max(
        (
            _prod(_value_shape(operand, sizes)) * _itemsize(operand.dtype)
            for operand in instance.operands
            if operand.layout != "alias"
        ),
        default=0,
    )


def _value_shape(operand: Operand, sizes: dict[str, int]) -> list[int]:
    """The shape of an operand's drawn value: its shape, with a batch of one where the layout
    expands it (a stride-0 batch)."""
    shape = [eval_dim(e, sizes) for e in operand.shape]
    if operand.layout.startswith("expand") and shape:
        shape[0] = 1
    return shape


def stored_input_bytes(instance: ScenarioInstance, sizes: dict[str, int]) -> int:
    """Bytes of one shape set's inputs as `inputs.build` lays them out on the device."""
    total = 0
    for operand in instance.operands:
        if operand.layout == "alias":
            continue  # the same tensor as `a`
        shape = _value_shape(operand, sizes)
        if operand.layout in ("padded", "padded_odd") and shape:
            shape[-1] = (shape[-1] // 16 + 1) * 16 if operand.layout == "padded" else shape[-1] + 1
        elements = _prod(shape) + (1 if operand.layout == "offset" else 0)
        total += elements * _itemsize(operand.dtype)
    result = _itemsize(instance.gemm_dtype)
    if instance.bias is not None:
        bias_dtype = instance.bias_dtype or instance.gemm_dtype
        total += _prod(eval_dim(e, sizes) for e in instance.bias) * _itemsize(bias_dtype)
    for step in instance.epilogue:
        if step.kind == "add_tensor":
            total += _prod(eval_dim(e, sizes) for e in step.arg) * result
    return total


def output_bytes(instance: ScenarioInstance, sizes: dict[str, int]) -> int:
    """Bytes of one shape set's outputs (every `keep` too), at the widest dtype the chain has."""
    widest = max(
        [_itemsize(instance.gemm_dtype)]
        + [_itemsize(step.arg) for step in instance.epilogue if step.kind == "cast"]
    )
    return output_elements(instance, sizes) * widest


def output_elements(instance: ScenarioInstance, sizes: dict[str, int]) -> int:
    """Elements of one shape set's outputs, every `keep` included."""
    return chunked.output_elements(instance, sizes) * chunked.outputs_of(instance)


def _itemsize(dtype: str) -> int:
    return DTYPES[dtype].torch_dtype.itemsize if dtype in DTYPES else FP64


def _prod(values: Any) -> int:
    total = 1
    for value in values:
        total *= max(int(value), 0)
    return total


def gib(nbytes: float) -> str:
    return f"{nbytes / GIB:.1f} GiB"


def size(nbytes: float) -> str:
    """GiB from 1 GiB up, MiB below (where tenths of a GiB would read alike)."""
    return gib(nbytes) if nbytes >= GIB else f"{nbytes / (1 << 20):.0f} MiB"


# --- what an item took ---------------------------------------------------------------------------


class PeakWatch:
    """The device memory one CUDA item reserved at its peak (``metrics["memory_peak_bytes"]``),
    and its cached blocks given back after a large item: memory an idle worker keeps cached is
    memory the other workers' budgets cannot see."""

    def __init__(self, device: str):
        self.device = device
        self.peak: int | None = None  # reserved by the allocator
        self.allocated: int | None = None  # in tensors

    @contextmanager
    def watching(self) -> Iterator[PeakWatch]:
        import torch

        available = getattr(getattr(torch, "cuda", None), "is_available", None)
        if self.device != "cuda" or available is None or not available():
            yield self
            return
        cap_process()
        torch.cuda.reset_peak_memory_stats()
        try:
            yield self
        finally:
            self.peak = int(torch.cuda.max_memory_reserved())
            self.allocated = int(torch.cuda.max_memory_allocated())
            if self.peak > RELEASE_ABOVE_BYTES:
                torch.cuda.empty_cache()

    def metrics(self) -> dict[str, int]:
        """The item's peak, and the worker's largest resident set so far (host memory: it only
        grows, so it is the item's own where the item set a new high)."""
        if self.peak is None:
            return {}
        import resource

        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
        # (HostPeakWatch resets the kernel's mark per item; its own running maximum keeps this
        # figure the process's largest so far)
        rss = max(rss, _host_high_water)
        found = {"memory_peak_bytes": self.peak, "worker_max_rss_bytes": int(rss)}
        if self.allocated is not None:
            found["memory_peak_allocated_bytes"] = self.allocated
        return found


_capped = False


def cap_process() -> None:
    """Under a simulated budget (`BUDGET_ENV`), cap this process's CUDA allocations to it: on an
    80 GB GPU, ``--gpu-memory-budget 24`` then fails an item as a 24 GB GPU would."""
    global _capped
    budget = os.environ.get(BUDGET_ENV)
    if _capped or not budget:
        return
    import torch

    total = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
    torch.cuda.set_per_process_memory_fraction(min(1.0, int(budget) / total))
    _capped = True


class HostPeakWatch:
    """The host memory one item added to its process at its peak
    (``metrics["host_memory_peak_bytes"]``): the process's resident-set high-water mark during the
    item, above its resident set at the item's start. Linux: the mark is reset at the start by
    writing "5" to /proc/self/clear_refs (no privilege needed for one's own process), and read
    from /proc/self/status (VmHWM, VmRSS). Where that fails (not Linux) nothing is measured."""

    def __init__(self) -> None:
        self.added: int | None = None

    @contextmanager
    def watching(self) -> Iterator[HostPeakWatch]:
        start = _reset_high_water()
        try:
            yield self
        finally:
            end = None if start is None else _resident().get("VmHWM")
            if start is not None and end is not None:
                _note_high_water(end)
                self.added = max(0, end - start)

    def metrics(self) -> dict[str, int]:
        return {} if self.added is None else {"host_memory_peak_bytes": self.added}


_STATUS = "/proc/self/status"
_CLEAR_REFS = "/proc/self/clear_refs"
_RESET_HIGH_WATER = "5"  # clear_refs: the peak resident set becomes the current one (Linux 4.0)
_host_high_water = 0  # this process's largest resident set, across the resets


def _resident() -> dict[str, int]:
    """VmHWM and VmRSS of this process, in bytes (empty where /proc cannot say)."""
    found: dict[str, int] = {}
    try:
        with open(_STATUS) as status:
            for line in status:
                name, _, value = line.partition(":")
                if name in ("VmHWM", "VmRSS"):
                    found[name] = int(value.split()[0]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        return {}
    return found


def _note_high_water(nbytes: int) -> None:
    global _host_high_water
    _host_high_water = max(_host_high_water, nbytes)


def _reset_high_water() -> int | None:
    """Reset this process's resident-set high-water mark; the resident set now (None: the mark
    cannot be reset or read here)."""
    before = _resident().get("VmHWM")
    if before is None:
        return None
    _note_high_water(before)
    try:
        with open(_CLEAR_REFS, "w") as clear:
            clear.write(_RESET_HIGH_WATER)
    except OSError:  # not Linux, an old kernel, a process that changed its user id
        return None
    return _resident().get("VmRSS")


# --- what an item took in an earlier run ---------------------------------------------------------

# An item a previous run measured is admitted by what its tensors took there at their peak
# (`memory_peak_allocated_bytes`), times what the allocator reserves around them: blocks rounded
# up and segments it cannot reuse. Over the 25 items of 4 GB or more of the reference suite on
# an H200 (2026-11-29), reserved over allocated was 1.23 at the median and 1.33 at most. Where
# the allocator reserved less than that at the item's peak (`memory_peak_bytes`, blocks kept
# from earlier items included: never less than the item's own), that figure is the need. The
# slack is a few of the allocator's 20 MiB segments, which a small item's figure does not show.
MEASURED_MARGIN = 1.35
MEASURED_SLACK_BYTES = 64 << 20
BY_MEASURE = "measured"
BY_ESTIMATE = "estimate"


def measured_peaks(
    document: Mapping[str, Any], *, device: str, hardware_class: str
) -> dict[str, int]:
    """``<record id>@<backend>`` -> what it needed of its GPU at its peak (`measured_need`), from
    an earlier run's results: only items that passed (a failed item may have stopped before its
    peak) on the same device and hardware class as this run (another class's kernels and
    workspaces differ). A merged file that has an item twice gives its largest figure."""
    return _measured(document, device, hardware_class, measured_need)


def measured_host_peaks(
    document: Mapping[str, Any], *, device: str, hardware_class: str
) -> dict[str, int]:
    """``<record id>@<backend>`` -> what it needed of the host's memory at its peak
    (`measured_host_need`), from the same records as `measured_peaks`."""
    return _measured(document, device, hardware_class, measured_host_need)


def _measured(
    document: Mapping[str, Any],
    device: str,
    hardware_class: str,
    need: Callable[[Mapping[str, Any]], int | None],
) -> dict[str, int]:
    default = document.get("environment") or {}
    found: dict[str, int] = {}
    for record in document.get("records") or []:
        peak = need(record.get("metrics") or {})
        if record.get("outcome") != "passed" or peak is None:
            continue
        environment = record.get("environment") or default
        if (environment.get("device"), environment.get("hardware_class")) != (
            device,
            hardware_class,
        ):
            continue
        key = f"{record.get('id')}@{record.get('backend')}"
        found[key] = max(peak, found.get(key, 0))
    return found


def measured_need(metrics: Mapping[str, Any]) -> int | None:
    """What an item's record says it needed of its GPU at its peak: its tensors' peak times
    MEASURED_MARGIN, or what the allocator reserved meanwhile where that is less (None: not
    measured)."""
    allocated = metrics.get("memory_peak_allocated_bytes")
    if type(allocated) is not int or allocated < 0:
        return None
    need = int(allocated * MEASURED_MARGIN)
    reserved = metrics.get("memory_peak_bytes")
    if type(reserved) is int and allocated <= reserved < need:
        return reserved
    return need


# An item a previous run measured is admitted to the host's ledger by what it added to its
# process's resident set at its peak there (`host_memory_peak_bytes`: pages, the allocator's
# rounding included), times a margin for what differs from run to run: the items that ran before
# it in its worker (freed memory glibc kept, which the item reused without growing the resident
# set), a library or Triton kernel the worker had loaded already. The figure is an admission
# figure only: an item that then takes more of the host is not caught and rerun as on the GPU
# (`parent._measured_retry`): the host's out of memory is the kernel killing a process, not an
# error the item can report. The fifth of the host the ledger leaves out and each process's own
# reserve (`isolating.host_budget`) are what stand between such an item and that. A run that puts an
# item's fp64 reference values on the host where the measuring one held them on its GPU
# (another --gpu-memory-budget or worker count: `reference_device`) admits it by too little too.
HOST_MEASURED_MARGIN = 1.25
HOST_MEASURED_SLACK_BYTES = 128 << 20


def measured_host_need(metrics: Mapping[str, Any]) -> int | None:
    """What an item's record says it needed of the host's memory at its peak: what it added to
    its process's resident set, times HOST_MEASURED_MARGIN (None: not measured)."""
    added = metrics.get("host_memory_peak_bytes")
    if type(added) is not int or added < 0:
        return None
    return int(added * HOST_MEASURED_MARGIN)


def earlier_needs(
    document: Mapping[str, Any], *, device: str, hardware_class: str
) -> dict[str, int]:
    """pytest node id -> what an item held in an earlier run's memory ledger, as this run would
    admit it (`admitted`: its estimate there, or its measured peak on this device and hardware
    class); for dealing the items to xdist's workers (`gemmconf.plugin.scheduling`)."""
    measured = measured_peaks(document, device=device, hardware_class=hardware_class)
    found: dict[str, int] = {}
    for record in document.get("records") or []:
        estimate = (record.get("metrics") or {}).get("memory_estimate_bytes")
        nodeid = record.get("nodeid")
        if type(estimate) is not int or not isinstance(nodeid, str):
            continue
        need, _ = admitted(estimate, measured.get(f"{record.get('id')}@{record.get('backend')}"))
        found[nodeid] = max(need, found.get(nodeid, 0))
    return found


def admitted(
    estimate: int,
    measured: int | None,
    *,
    slack: int = MEASURED_SLACK_BYTES,
    upper_bound: bool = True,
) -> tuple[int, str]:
    """(the bytes an item holds in a memory ledger, by what): its measured need (its GPU's:
    `measured_need`; the host's: `measured_host_need`, with HOST_MEASURED_SLACK_BYTES) and a
    slack where an earlier run measured one; never more than the estimate where that is an
    upper bound (the GPU's). The host's is not one: on an H200 (2026-11-29, aa4d3b1)
    bench/llama3_70b[fp8-gate_up] took 21.0 GB of host memory against its 12.9 GB estimate, so
    there a larger measured need is held as it is."""
    if measured is None:
        return estimate, BY_ESTIMATE
    by_measure = measured + slack
    if upper_bound and by_measure >= estimate:
        return estimate, BY_ESTIMATE
    return by_measure, BY_MEASURE


# --- what an out-of-memory error said ------------------------------------------------------------


@dataclass(frozen=True)
class OutOfMemory:
    """An out-of-memory error, with the numbers: what was asked for, what the device had free
    (when it was asked), its total, the run's budget, and what this process held."""

    error_type: str
    device: str
    requested_bytes: int | None
    free_bytes: int | None
    total_bytes: int | None
    budget_bytes: int | None
    allocated_bytes: int | None
    reserved_bytes: int | None

    def metrics(self) -> dict[str, Any]:
        """For ``metrics["out_of_memory"]`` (the failure kind "out of memory" reads it)."""
        return {k: v for k, v in self.__dict__.items() if v is not None}

    def text(self) -> str:
        parts = [f"out of {self.device} memory"]
        if self.requested_bytes is not None:
            parts.append(f"requested {gib(self.requested_bytes)}")
        if self.free_bytes is not None:
            parts.append(f"{gib(self.free_bytes)} free")
        if self.total_bytes is not None:
            parts.append(f"of {gib(self.total_bytes)}")
        if self.budget_bytes is not None:
            parts.append(f"budget {gib(self.budget_bytes)}")
        return ", ".join(parts)


_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_AMOUNT = r"([0-9.]+) ?(B|KiB|MiB|GiB|TiB)"


def _bytes(pattern: str, text: str) -> int | None:
    match = re.search(pattern, text)
    return None if match is None else int(float(match[1]) * _UNITS[match[2]])


def is_out_of_memory(error: BaseException) -> bool:
    """CUDA's and the CPU allocator's out-of-memory errors (not Triton's shared-memory limit)."""
    if any(cls.__name__ == "OutOfMemoryError" for cls in type(error).__mro__):
        return True
    text = str(error)
    return (
        "CUDA out of memory" in text
        or "CUDA error: out of memory" in text
        or "CUBLAS_STATUS_ALLOC_FAILED" in text
        or "can't allocate memory" in text  # DefaultCPUAllocator
    )


def out_of_memory(error: BaseException) -> OutOfMemory | None:
    """The numbers of an out-of-memory error (None for any other error). The requested size is
    the one torch's message names; free and total are asked of the device now."""
    if not is_out_of_memory(error):
        return None
    text = str(error)
    requested = _bytes(r"[Tt]ried to allocate " + _AMOUNT, text)
    if requested is None:
        match = re.search(r"you tried to allocate (\d+) bytes", text)
        requested = int(match[1]) if match else None
    budget = os.environ.get(BUDGET_ENV)
    device = "cpu" if "can't allocate memory" in text else "cuda"
    free = total = allocated = reserved = None
    if device == "cuda":
        free, total, allocated, reserved = _cuda_numbers()
        if free is None:
            free = _bytes(r"of which " + _AMOUNT + " is free", text)
            total = _bytes(r"total capacity of " + _AMOUNT, text)
    return OutOfMemory(
        type(error).__name__,
        device,
        requested,
        free,
        total,
        int(budget) if budget else None,
        allocated,
        reserved,
    )


def _cuda_numbers() -> tuple[int | None, int | None, int | None, int | None]:
    import sys

    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None, None, None, None
    try:
        free, total = torch.cuda.mem_get_info()
        return (
            int(free),
            int(total),
            int(torch.cuda.memory_allocated()),
            int(torch.cuda.memory_reserved()),
        )
    except Exception:  # the context may be gone with the error
        return None, None, None, None
