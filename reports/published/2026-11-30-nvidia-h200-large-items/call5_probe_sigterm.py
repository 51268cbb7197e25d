"""Probe (not committed): test_interrupt's SIGTERM-during-write case, printed whole."""
import json, shutil, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, "tests")
import test_interrupt as t
import suite_files
root = Path(tempfile.mkdtemp())
suite_files.lay_out(root)
(root / "conftest.py").write_text(
    "import os, signal, time\n\n"
    "def pytest_gemmconf_results_fields(records, config):\n"
    "    os.kill(os.getpid(), signal.SIGTERM)\n"
    "    time.sleep(0.5)\n"
    "    return {}\n"
)
start = time.time()
result, output = t.run_the_tiny_suite_on_eager(root)
print(f"{sys.argv[1:]}: {time.time() - start:.1f} s, returncode {result.returncode}")
print(output[-2500:])
doc = json.loads((root / "reports" / "results.json").read_text())
print("complete", doc["complete"], "exit_status", doc["exit_status"], doc.get("counts"))
for r in doc["records"]:
    if r["outcome"] not in ("passed", "skipped"):
        print(r["id"], r["outcome"], (r.get("details") or "")[:600])
