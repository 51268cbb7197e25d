"""The `gemmconf` command: list backends and scenarios, explain or reproduce one item.

Running the suite is pytest's job (`pytest suites --backend NAME`); this command answers the
questions around a run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gemmconf.expectations import compile_pattern
from gemmconf.report import cli as report_cli


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="gemmconf",
        description="GEMM backend conformance suite: helpers around a pytest run "
        "(run the suite itself with `pytest suites --backend NAME`).",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    commands.add_parser("backends", help="list known backends and whether they run here")

    listing = commands.add_parser("list", help="list scenario instance ids")
    listing.add_argument(
        "pattern",
        nargs="?",
        default="*",
        help="id pattern (* and ? wildcards; brackets are literal)",
    )
    listing.add_argument("--suites", default="suites", help="suite directory (default: suites)")

    explain = commands.add_parser(
        "explain",
        help="show one scenario instance: its fields, inputs, and the command that runs it",
    )
    explain.add_argument("id", help="instance id, e.g. 'first/mm[bf16-127x65x33-nt]'")
    explain.add_argument("--suites", default="suites")
    explain.add_argument("--backend", default="reference")
    explain.add_argument("--seed", type=int, default=0)
    explain.add_argument(
        "--run", action="store_true", help="also run it on the backend here and print the verdict"
    )

    bench = commands.add_parser(
        "bench",
        help="time backends against cuBLAS: runs pytest with --benchmark (default: "
        "suites/bench on the reference backend, one item at a time) and prints the table",
    )
    bench.add_argument(
        "paths",
        nargs="*",
        default=["suites/bench"],
        help="suite files or folders (default: suites/bench)",
    )
    bench.add_argument("--backend", default="reference", help="as pytest's --backend")
    bench.add_argument("-k", dest="keyword", default=None, help="as pytest's -k")
    bench.add_argument(
        "--results", default="reports/bench.json", help="results file (default: reports/bench.json)"
    )

    report_cli.add_subcommands(commands)
    args = parser.parse_args(argv)
    if args.command == "report":
        return report_cli.run(args)
    if args.command == "bench":
        return _bench(args)
    if args.command == "backends":
        return _backends()
    if args.command == "list":
        return _list(args.suites, args.pattern)
    return _explain(args)


def _bench(args: argparse.Namespace) -> int:
    import pytest

    command = [
        *args.paths,
        "--backend",
        args.backend,
        "--benchmark",
        "--results",
        args.results,
        "-p",
        "no:xdist",
        "-q",
        "-p",
        "no:cacheprovider",
    ]
    if args.keyword:
        command += ["-k", args.keyword]
    return int(pytest.main(command))


# Template families of inductor-max-autotune listed with their own availability (each needs
# different things: a GPU and Triton, a CUTLASS checkout and nvcc, nothing).
_INDUCTOR_VARIANTS = ("TRITON", "CUTLASS", "ATEN")


def _backends() -> int:
    from gemmconf.backends import known_backends, resolve

    def availability(spec: str) -> str:
        try:
            return resolve(spec).availability() or "available"
        except Exception as exc:
            return f"cannot load: {exc}"

    for info in known_backends():
        print(f"{info.name:<26} {info.origin:<28} {availability(info.name)}")
        if info.name == "inductor-max-autotune":
            for variant in _INDUCTOR_VARIANTS:
                spec = f"{info.name}:{variant}"
                print(f"  {spec:<32} {'':<20} {availability(spec)}")
    print(
        "\nAlso: reference:autotune[,persistent=auto|always|never][,promote=N], "
        "inductor-max-autotune:TRITON|CUTLASS|ATEN[,...], or package.module:attr"
    )
    return 0


def _instances(suites: str):
    from gemmconf.scenario import ScenarioError, discover, load_suite

    root = Path.cwd()
    try:
        for path in discover([suites], root):
            yield from load_suite(path, root=root)
    except ScenarioError as exc:
        print(f"gemmconf: invalid suite file: {exc}", file=sys.stderr)
        raise SystemExit(4) from None


def _list(suites: str, pattern: str) -> int:
    regex = compile_pattern(pattern)
    count = 0
    for instance in _instances(suites):
        if regex.fullmatch(instance.id):
            print(instance.id)
            count += 1
    print(f"{count} instances", file=sys.stderr)
    return 0 if count else 1


def _explain(args: argparse.Namespace) -> int:
    from gemmconf import inputs
    from gemmconf.runner import compile_budget
    from gemmconf.scenario import implied_markers

    match = next((i for i in _instances(args.suites) if i.id == args.id), None)
    if match is None:
        print(
            f"gemmconf: no instance {args.id!r} (try `gemmconf list '*pattern*'`)", file=sys.stderr
        )
        return 2
    i = match
    print(f"{i.id}  ({i.source})")
    if i.doc:
        print(f"  {i.doc}")
    if i.seed_test:
        print(f"  ported from: {i.seed_test}")
    print(f"  op {i.op}, dtype {i.dtype}, axes {dict(i.axes)}")
    for operand in i.operands:
        print(
            f"  operand {operand.name}: shape {list(operand.shape)} {operand.dtype} "
            f"layout {operand.layout}"
        )
    if i.bias:
        print(f"  bias {list(i.bias)} alpha {i.alpha:g} beta {i.beta:g}")
    if i.epilogue:
        print(f"  epilogue {[e.kind if e.arg is None else {e.kind: e.arg} for e in i.epilogue]}")
    if i.scaling:
        print(
            f"  fp8 scaling {i.scaling}, use_fast_accum {i.use_fast_accum}, out_dtype {i.out_dtype}"
        )
    print(
        f"  compile {i.compile.mode} over {len(i.shape_sets)} shape set(s), "
        f"at most {compile_budget(i)} compile(s)"
    )
    for index in range(len(i.shape_sets)):
        built = inputs.build(i, index, args.seed)
        print(f"  shape set {index}: {built.describe()} (seed {built.seed})")
    print(f"  markers: {', '.join(implied_markers(i))}")
    if i.checks.raises:
        print(f"  expects: {i.checks.raises} from eager and the backend")
    for block in i.checks.filecheck:
        print(f"  filecheck {block.artifact} target {block.target or 'any'} ({block.source})")
    node = f"{i.source.rsplit(':', 1)[0]}::{i.id.split('/', 1)[1]}@{args.backend}"
    print(f"  run: pytest '{node}' --backend {args.backend} --seed {args.seed}")
    if args.run:
        return _run_one(i, args)
    return 0


def _run_one(instance, args: argparse.Namespace) -> int:
    from gemmconf.backends import resolve
    from gemmconf.capability import detect, target_class
    from gemmconf.outcome import render
    from gemmconf.runner import run_item

    cap = detect()
    backend = resolve(args.backend)
    reason = backend.availability()
    if reason:
        print(f"  not run: backend {args.backend} unavailable: {reason}")
        return 1
    outcome = run_item(
        instance, backend, seed=args.seed, device=cap.device, target=target_class(cap, None)
    )
    if outcome.passed:
        print("  verdict: PASSED")
        return 0
    verdict = "ERROR" if outcome.harness_error else "FAILED"
    print(f"  verdict: {verdict} ({outcome.kind})")
    print("\n".join("    " + line for line in render(outcome).details.splitlines()))
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
