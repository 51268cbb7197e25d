"""The conformance page in a real browser: headless Chromium driven over the DevTools protocol.

Chromium is started with `--remote-debugging-pipe`: it reads protocol commands from fd 3 and
writes replies to fd 4, NUL-separated JSON, so no websocket or driver package is needed. The
test renders a page from records it builds, then checks what a user would: the matrix shows, a
filter hides rows, an item's detail panel opens with its repro command; any JavaScript error
fails it. It leaves screenshots in reports/conformance.png and conformance-detail.png.

Both tests share one Chromium (one `xdist_group`, a module-scoped fixture): its first start on
a fresh machine reads a 250 MB binary from a cold disk, 12 s on an idle dev CPU and past a
minute on CI's loaded 2-core runner (cd8f5ec's CI run: no reply to the first command in 60 s).
The start therefore has its own deadline, apart from the one each command gets, and a start
that misses it names what Chromium printed and whether it is still running.

It skips only when no Chromium is installed (`apt-get install -y chromium`); with
GEMMCONF_REQUIRE_BROWSER=1 (CI) a missing browser is a failure instead.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from test_report_page import sample_document

from gemmconf.report import page

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOT = ROOT / "reports" / "conformance.png"
DETAIL_SCREENSHOT = ROOT / "reports" / "conformance-detail.png"
CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")
READY = "document.documentElement?.getAttribute('data-ready') === 'true'"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--mute-audio",
    "--remote-debugging-pipe",
)


def find_chromium() -> str | None:
    for candidate in CANDIDATES:
        found = candidate if os.access(candidate, os.X_OK) else shutil.which(candidate)
        if found:
            return found
    return None


class BrowserError(RuntimeError):
    pass


class Chromium:
    """A headless Chromium and a minimal DevTools-protocol client over its pipe."""

    # 60 s a command: a page's scripts on a 2-core box loaded by other work
    def __init__(self, binary: str, profile: Path, timeout: float = 60.0):
        self.timeout = timeout
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        self.buffer = b""
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        # keep our ends clear of 3 and 4, which the child's ends must become
        child_in = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD_CLOEXEC, 10)
        child_out = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD_CLOEXEC, 10)
        for fd in (to_browser_r, from_browser_w):
            os.close(fd)

        def wire_fds() -> None:
            os.dup2(child_in, 3)
            os.dup2(child_out, 4)

        self.log_path = profile.with_name("chromium.log")
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                preexec_fn=wire_fds,
                close_fds=False,
            )
        os.close(child_in)
        os.close(child_out)
        self.write_fd, self.read_fd = to_browser_w, from_browser_r
        self.session: str | None = None

    def wait_until_started(self, timeout: float) -> float:
        """Wait for the first reply, up to `timeout` seconds; return how long it took."""
        started = time.monotonic()
        try:
            self.send("Browser.getVersion", session=False, timeout=timeout)
        except BrowserError as error:
            alive = self.process.poll() is None
            state = "still running" if alive else f"exited with {self.process.returncode}"
            raise BrowserError(
                f"Chromium did not start: {error} (pid {self.process.pid}, {state}); "
                f"it printed:\n{self.output()}"
            ) from error
        return time.monotonic() - started

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: bool = True,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self.write_fd, json.dumps(message).encode() + b"\0")
        wait = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        while True:
            reply = self._read(deadline, wait)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def _read(self, deadline: float, wait: float) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"no reply from Chromium in {wait:.0f} s")
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if ready:
                chunk = os.read(self.read_fd, 1 << 20)
                if not chunk:
                    raise BrowserError(f"Chromium exited:\n{self.output()}")
                self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def open(self, url: str, width: int = 1400, height: int = 1000) -> None:
        """A new tab showing `url`; what earlier tabs logged is forgotten."""
        self.events = []
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.send(
            "Target.attachToTarget",
            {"targetId": target["targetId"], "flatten": True},
            session=False,
        )
        self.session = attached["sessionId"]
        self.send("Runtime.enable")
        self.send("Log.enable")
        self.send("Page.enable")
        self.send("Network.enable")
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        self.send("Page.navigate", {"url": url})

    def evaluate(self, expression: str) -> Any:
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression!r} raised: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 15.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.05)
        raise BrowserError(f"timed out waiting for {expression!r}; page errors: {self.errors()}")

    def errors(self) -> list[str]:
        found = []
        for event in self.events:
            if event.get("method") == "Runtime.exceptionThrown":
                details = event["params"]["exceptionDetails"]
                found.append(
                    str(details.get("exception", {}).get("description") or details.get("text"))
                )
            elif (
                event.get("method") == "Log.entryAdded"
                and event["params"]["entry"].get("level") == "error"
            ):
                found.append(event["params"]["entry"].get("text", ""))
            elif (
                event.get("method") == "Runtime.consoleAPICalled"
                and event["params"].get("type") == "error"
            ):
                found.append(
                    " ".join(
                        str(a.get("value", a.get("description")))
                        for a in event["params"].get("args", [])
                    )
                )
        return found

    def requests(self) -> list[str]:
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e.get("method") == "Network.requestWillBeSent"
        ]

    def screenshot(self, path: Path) -> None:
        shot = self.send("Page.captureScreenshot", {"format": "png"})
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:]

    def close(self) -> None:
        with contextlib.suppress(BrowserError, OSError):
            self.send("Browser.close", session=False)
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self.write_fd, self.read_fd):
            os.close(fd)


# Seconds for Chromium's first reply (see the module's docstring).
START_TIMEOUT = 300.0

pytestmark = pytest.mark.xdist_group("browser")


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory):
    binary = find_chromium()
    if binary is None:
        message = (
            "Chromium is not installed (apt-get install -y chromium); the page was not "
            "checked in a browser"
        )
        if os.environ.get("GEMMCONF_REQUIRE_BROWSER") == "1":
            pytest.fail(message + " and GEMMCONF_REQUIRE_BROWSER=1 asks for it")
        pytest.skip(message)
    chromium = Chromium(binary, tmp_path_factory.mktemp("chromium") / "profile")
    try:
        chromium.wait_until_started(START_TIMEOUT)
        yield chromium
    finally:
        chromium.close()


def test_page_works_in_chromium(browser: Chromium, tmp_path: Path) -> None:
    document = sample_document()
    # planted's addmm pass was computed by PyTorch (a graph with no GEMM handed to it)
    (handed_back,) = [
        r for r in document["records"] if (r["backend"], r["op"]) == ("planted", "addmm")
    ]
    handed_back["computed_by"] = "pytorch"
    html = tmp_path / "conformance.html"
    html.write_text(page.render(document, name="sample.json"))
    browser.open(html.as_uri())
    browser.wait_for(READY)
    assert browser.errors() == []
    # self-contained: the page itself is the only thing the browser loads
    assert browser.requests() == [html.as_uri()]

    # the matrix: a row per scenario, a column per backend, coloured cells with counts
    headers = browser.evaluate(
        "Array.from(document.querySelectorAll('#matrix thead th')).map(th => th.textContent)"
    )
    assert headers[2:] == ["eager", "planted"], headers
    rows = browser.evaluate("document.querySelectorAll('#matrix tbody tr.group-row').length")
    assert rows == 4
    failing_cell = browser.evaluate(
        'document.querySelector(\'#matrix tr[data-key="dense \u203a mm"] '
        'td[data-column="planted"]\').className'
    )
    assert "worst-failing" in failing_cell
    # a pass PyTorch computed is counted apart in its cell, and only there
    cell = (
        'document.querySelector(\'#matrix tr[data-key="dense \u203a addmm"] td[data-column="%s"]\')'
    )
    counts = ".querySelectorAll('.counts .c')).map(c => c.textContent)"
    assert browser.evaluate("Array.from(" + cell % "planted" + counts) == [
        "1 pass",
        "(1 by PyTorch)",
    ]
    assert browser.evaluate(cell % "planted" + ".title") == "1 passed (1 computed by PyTorch)"
    assert browser.evaluate("Array.from(" + cell % "eager" + counts) == ["1 pass"]
    assert browser.evaluate("document.querySelectorAll('#plot-k svg .pt').length") > 0
    assert "no benchmark data" not in browser.evaluate(
        "document.querySelector('#plot-perf').textContent"
    )

    # a filter hides rows: only failing items leave only the scenario that has them
    browser.evaluate("""(() => { const s = document.getElementById('f-outcome');
        s.value = 'failing'; s.dispatchEvent(new Event('change')); })()""")
    keys = browser.evaluate(
        "Array.from(document.querySelectorAll('#matrix tbody tr.group-row'))"
        ".map(tr => tr.dataset.key)"
    )
    assert keys == ["dense \u203a mm"], keys
    assert "showing 3 of" in browser.evaluate("document.getElementById('f-status').textContent")

    # open the row, then an item's detail panel
    browser.evaluate("document.querySelector('#matrix tr.group-row').click()")
    browser.wait_for("document.querySelectorAll('#matrix tr.items-row button.chip').length > 0")
    assert browser.evaluate("document.getElementById('detail').hidden") is True
    browser.evaluate("document.querySelector('#matrix tr.items-row button.chip.o-failed').click()")
    browser.wait_for("!document.getElementById('detail').hidden")
    panel = browser.evaluate("document.getElementById('detail').innerText")
    assert "err_ratio" in panel and "generated code" in panel
    repro = browser.evaluate("document.querySelector('#detail .repro-command').textContent")
    assert repro.startswith("pytest 'suites/dense/mm.yaml::mm[")
    assert repro.endswith("@planted]' --backend planted_backends:planted --seed 7")
    assert browser.errors() == []
    browser.screenshot(DETAIL_SCREENSHOT)

    # Escape closes the panel; reset brings every row back, all closed
    browser.evaluate("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape'}))")
    assert browser.evaluate("document.getElementById('detail').hidden") is True
    browser.evaluate("document.getElementById('f-reset').click()")
    assert browser.evaluate("document.querySelectorAll('#matrix tbody tr.group-row').length") == 4
    assert browser.evaluate("document.querySelectorAll('#matrix tr.items-row').length") == 0

    # another grouping: one row per dtype
    browser.evaluate("""(() => { const s = document.getElementById('f-group');
        s.value = 'dtype'; s.dispatchEvent(new Event('change')); })()""")
    keys = browser.evaluate(
        "Array.from(document.querySelectorAll('#matrix tbody tr.group-row'))"
        ".map(tr => tr.dataset.key)"
    )
    assert keys == ["bf16", "e4m3fn", "fp16", "fp32"], keys
    browser.evaluate("document.getElementById('f-reset').click()")
    browser.evaluate(
        "document.querySelector('#matrix tr.group-row[data-key=\"dense \u203a mm\"]').click()"
    )
    assert browser.errors() == []
    browser.screenshot(SCREENSHOT)
    assert SCREENSHOT.stat().st_size > 10_000 and DETAIL_SCREENSHOT.stat().st_size > 10_000


def test_large_page_stays_usable(browser: Chromium, tmp_path: Path) -> None:
    from test_report_page import large_document

    html = tmp_path / "large.html"
    html.write_text(page.render(large_document(8000)))
    browser.open(html.as_uri())
    browser.wait_for(READY)
    assert browser.evaluate("window.gemmconf.records.length") == 8000
    assert browser.evaluate("document.querySelectorAll('#matrix tbody tr').length") < 1000
    browser.evaluate("""(() => { const s = document.getElementById('f-backend');
        s.value = s.options[1].value; s.dispatchEvent(new Event('change')); })()""")
    assert "showing 4000 of 8000" in browser.evaluate(
        "document.getElementById('f-status').textContent"
    )
    assert browser.errors() == []
