"""Compile once (backend/compile_once.py): a process's first launch of a kernel signature holds
the signature's file lock, so that of several processes meeting it together one compiles and the
others load what it wrote to Triton's disk cache; Triton's compilation listener tells a compile
from a load. The processes here are real ones; the compile is a stand-in (a marker file for the
disk cache) or Triton's own compiler cross-compiling for sm90, which works without a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import suite_files

from gemmconf_reference import compile_once
from gemmconf_reference.launcher import TritonLauncher

ROOT = Path(__file__).resolve().parent.parent
PROCESSES = 3

# A child process: imports, says it is ready, waits for the go, then makes the first launch of
# one signature through TritonLauncher.jit and prints what its launcher counted.
CHILD = """
import json, os, sys, time
from pathlib import Path
from types import SimpleNamespace

from gemmconf_reference.launcher import TritonLauncher

ready, go, cache = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
{setup}
ready.touch()
while not go.exists():
    time.sleep(0.01)
launcher = TritonLauncher()
launcher.jit(kernel, launch, sys.argv[4])
print(json.dumps({{"builds": launcher.builds, "loads": launcher.loads,
                  "compiles": launcher.compiles, "built": launcher.built,
                  "loaded": launcher.loaded}}))
"""

# The stand-in compile: a load when the disk cache has the kernel, else a slow compile that
# writes it; Triton's listener hears which, as from triton.compile.
STAND_IN = """
def kernel():
    pass

def launch():
    from triton import knobs
    marker = cache / "kernel.cubin"
    hit = marker.exists()
    if not hit:
        time.sleep(0.5)  # long enough for every other process to arrive meanwhile
        marker.write_text("compiled")
    if knobs.compilation.listener is not None:
        knobs.compilation.listener(src=SimpleNamespace(name="kernel"), metadata={{}},
                                   metadata_group={{}}, times=None, cache_hit=hit)
    return SimpleNamespace(name="compiled kernel")
"""

# Triton's compiler for real: the reference backend's kernel for a bf16 linear, cross-compiled
# for sm90 into TRITON_CACHE_DIR (the request is the parent's, in `request.json`).
CROSS_COMPILE = """
import json
from gemmconf_reference import kernels
from gemmconf_reference.crosscompile import CompileRequest, compile_in_process

request = CompileRequest.from_json(json.loads((cache.parent / "request.json").read_text()))
kernel = kernels.KERNELS[request.kernel]

def launch():
    return compile_in_process(request, 90)
"""


def sm90_request(tmp_path: Path) -> str:
    """The signature id of the reference backend's sm90 kernel for a bf16 linear, its compile
    request written to tmp_path/request.json."""
    import torch
    import torch.nn.functional as F

    from gemmconf.backends import resolve
    from gemmconf_reference.target import for_artifacts

    device = "cuda" if torch.cuda.is_available() else "cpu"  # where the reference launches
    x, w = (torch.randn(256, 512, dtype=torch.bfloat16, device=device) for _ in range(2))
    compiled = resolve("reference").compile(lambda x, w: F.linear(x, w), [x, w], dynamic=False)
    compiled(x, w)
    compiler = compiled.compiler
    (record,) = compiler.launches()
    request = record.request(
        record.replan(for_artifacts(compiler.target, "sm90"), compiler.options)
    )
    (tmp_path / "request.json").write_text(json.dumps(request.to_json()))
    return request.signature_id()


def first_launches(
    tmp_path: Path, setup: str, *, processes: int = PROCESSES, signature: str = "0123456789ab"
) -> list[dict]:
    """What each of `processes` children counted, launching one signature all at once."""
    cache = tmp_path / "triton-cache"
    cache.mkdir()
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(setup=textwrap.dedent(setup.format())))
    env = {
        **os.environ,
        "TRITON_CACHE_DIR": str(cache),
        "TRITON_INTERPRET": "0",
        "PYTHONPATH": suite_files.python_path(ROOT),
    }
    go = tmp_path / "go"
    children = []
    for i in range(processes):
        ready = tmp_path / f"ready{i}"
        args = [sys.executable, str(script), str(ready), str(go), str(cache), signature]
        children.append((ready, subprocess.Popen(args, env=env, stdout=subprocess.PIPE)))
    deadline = time.monotonic() + 300
    while not all(ready.exists() for ready, _ in children) and time.monotonic() < deadline:
        assert all(child.poll() is None for _, child in children), "a child died starting"
        time.sleep(0.05)
    go.touch()
    counts = []
    for _, child in children:
        out, _ = child.communicate(timeout=300)
        assert child.returncode == 0
        counts.append(json.loads(out.decode().strip().splitlines()[-1]))
    return counts


def test_of_processes_meeting_a_signature_together_one_compiles_and_the_others_load(tmp_path):
    counts = first_launches(tmp_path, STAND_IN)
    assert sum(c["builds"] for c in counts) == 1
    assert sum(c["loads"] for c in counts) == PROCESSES - 1
    assert all(c["compiles"] == 1 for c in counts)  # each process still met the kernel once


def test_triton_compiles_a_reference_kernel_once_and_the_other_processes_load_it(tmp_path):
    pytest.importorskip("triton")
    signature = sm90_request(tmp_path)
    counts = first_launches(tmp_path, CROSS_COMPILE, signature=signature)
    assert sum(c["builds"] for c in counts) == 1
    assert sum(c["loads"] for c in counts) == PROCESSES - 1
    # Triton's own hash of the kernel: one, whichever process compiled or loaded it
    hashes = {h for c in counts for h in c["built"] + c["loaded"]}
    assert len(hashes) == 1 and len(next(iter(hashes))) >= 32


def test_the_lock_is_released_when_the_launch_raises(tmp_path):
    with pytest.raises(RuntimeError), compile_once.signature_lock("sig", tmp_path):
        raise RuntimeError("the compile failed")
    with compile_once.signature_lock("sig", tmp_path, wait_s=0.0) as lock:
        assert lock.held


def test_a_waiter_gives_up_after_its_wait_and_goes_ahead_unlocked(tmp_path):
    with compile_once.signature_lock("sig", tmp_path) as holder:
        with compile_once.signature_lock("sig", tmp_path, wait_s=0.05) as waiter:
            assert holder.held and not waiter.held
        with compile_once.signature_lock("other", tmp_path, wait_s=0.0) as other:
            assert other.held  # one lock per signature


def test_no_lock_where_the_folder_cannot_be_made(tmp_path):
    blocked = tmp_path / "a file"
    blocked.write_text("")
    ran = []
    with compile_once.signature_lock("sig", blocked / "locks") as lock:
        ran.append(lock)
    assert ran == [compile_once.LockWait(0.0, held=False)]
    with compile_once.signature_lock(None, tmp_path) as lock:
        assert not lock.held  # no signature, no lock


def test_locks_live_inside_tritons_cache_folder(tmp_path, monkeypatch):
    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    assert compile_once.locks_dir() == tmp_path / compile_once.LOCKS_FOLDER


def _compile_event(name: str, cache_hit: bool, key: str = "") -> None:
    from triton import knobs

    knobs.compilation.listener(
        src=SimpleNamespace(name=name),
        metadata={"hash": key} if key else {},
        metadata_group={},
        times=None,
        cache_hit=cache_hit,
    )


def test_the_listener_counts_its_kernel_chains_to_the_previous_one_and_restores_it():
    knobs = pytest.importorskip("triton.knobs")
    heard = []

    def previous(**event):
        heard.append((event["src"].name, event["cache_hit"]))

    def gemm_kernel():
        pass

    saved = knobs.compilation.listener
    knobs.compilation.listener = previous
    try:
        with compile_once.counting_builds(gemm_kernel) as count:
            _compile_event("gemm_kernel", cache_hit=False, key="h1")
            _compile_event("gemm_kernel", cache_hit=True, key="h2")
            _compile_event("another_kernel", cache_hit=False, key="h3")  # not ours: not counted
        assert (count.builds, count.loads, count.known) == (1, 1, True)
        assert (count.built, count.loaded) == (["h1"], ["h2"])
        assert heard == [("gemm_kernel", False), ("gemm_kernel", True), ("another_kernel", False)]
        assert knobs.compilation.listener is previous
    finally:
        knobs.compilation.listener = saved


def test_the_triton_launcher_counts_builds_loads_and_locks_a_signature_once(tmp_path, monkeypatch):
    pytest.importorskip("triton.knobs")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(TritonLauncher, "launched", set())

    def gemm_kernel():
        pass

    compiled = [SimpleNamespace(), SimpleNamespace()]  # alive: the launcher counts by id

    def launch(hit):
        def run():
            _compile_event("gemm_kernel", cache_hit=hit)
            return compiled[hit]

        return run

    launcher = TritonLauncher(stream_of=lambda device: 0, device=0)
    launcher.jit(gemm_kernel, launch(False), "sig-a")
    launcher.jit(gemm_kernel, launch(True), "sig-b")
    assert (launcher.builds, launcher.loads, launcher.compiles) == (1, 1, 2)
    assert (tmp_path / compile_once.LOCKS_FOLDER / "sig-a.lock").exists()
    launcher.jit(gemm_kernel, lambda: compiled[0], "sig-a")  # launched here: no lock, no count
    assert (launcher.builds, launcher.loads, launcher.compiles) == (1, 1, 2)


def test_a_launch_that_raises_after_compiling_counts_its_compile_and_frees_the_lock(
    tmp_path, monkeypatch
):
    pytest.importorskip("triton.knobs")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(TritonLauncher, "launched", set())

    def gemm_kernel():
        pass

    def launch():
        _compile_event("gemm_kernel", cache_hit=False)
        raise RuntimeError("out of resources")  # as a launch past the GPU's limits

    launcher = TritonLauncher(stream_of=lambda device: 0, device=0)
    with pytest.raises(RuntimeError):
        launcher.jit(gemm_kernel, launch, "sig-c")
    assert (launcher.builds, launcher.compiles) == (1, 0)
    assert "sig-c" not in TritonLauncher.launched  # the next first launch locks again
    with compile_once.signature_lock(
        "sig-c", tmp_path / compile_once.LOCKS_FOLDER, wait_s=0
    ) as lock:
        assert lock.held


# A process that hashes the kernels in the given order (compiled mode, as on a GPU), then prints
# every kernel's Triton cache key.
HASHED_IN_ORDER = """
import json, sys
from gemmconf_reference import kernels
names = sys.argv[1:]
for name in names:
    kernels.KERNELS[name].cache_key
print(json.dumps({name: kernels.KERNELS[name].cache_key for name in names}))
"""


def test_every_process_keys_the_kernels_alike_whatever_it_hashes_first():
    """Triton 3.6-3.7.1 keys a kernel by what the process hashed before it (its dependency
    hashing merges a helper's globals before hashing the helper): on `nvidia-h200-x2`
    (2026-11-30) two of 32 processes, whose first compile was split-K, keyed `gemm_kernel`
    differently and compiled again what the others had compiled. Importing the kernels settles
    every key in one order (compat.settle_cache_keys)."""
    from gemmconf_reference.kernels import KERNELS

    names = list(KERNELS)
    keys = []
    for order in (names, names[::-1], ["splitk_gemm_kernel", *names]):
        done = subprocess.run(
            [sys.executable, "-c", HASHED_IN_ORDER, *order],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "TRITON_INTERPRET": "0"},
        )
        assert done.returncode == 0, done.stderr[-3000:]
        keys.append(json.loads(done.stdout.splitlines()[-1]))
    assert keys[0] == keys[1] == keys[2]
    assert len(set(keys[0].values())) >= len(names) - 1  # the unaligned copy shares gemm_kernel's
