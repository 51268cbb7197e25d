# Minimal standalone: zero-size GEMMs through turbine_cpu; each case in a child process,
# since IREE kills the process with SIGFPE.
import subprocess, sys
CASES = {
    "mm m0": "torch.mm(torch.randn(0, 8), torch.randn(8, 5))",
    "mm n0": "torch.mm(torch.randn(4, 8), torch.randn(8, 0))",
    "mm k0": "torch.mm(torch.randn(4, 0), torch.randn(0, 5))",
    "bmm b0": "torch.bmm(torch.randn(0, 4, 8), torch.randn(0, 8, 5))",
}
for name, expr in CASES.items():
    a = expr.split("torch.", 1)[1]
    code = (
        "import torch, iree.turbine\n"
        f"args = [t for t in [{expr.split('(', 1)[1][:-1]}]]\n"
        f"fn = torch.{expr.split('(')[0].split('.')[1]}\n"
        "ref = fn(*args)\n"
        "out = torch.compile(lambda *a: fn(*a), backend=sys.argv[1])(*args)\n"
        "print('OK', tuple(out.shape), torch.equal(out, ref))\n"
    )
    for backend in ["aot_eager", "turbine_cpu"]:
        p = subprocess.run([sys.executable, "-c", "import sys\n" + code, backend],
                           capture_output=True, text=True)
        last = (p.stdout.strip() or p.stderr.strip().splitlines()[-1] if (p.stdout or p.stderr) else "")
        print(f"{name:7s} {backend:12s} rc={p.returncode:4d} {last[:120]}")
