"""A small DevTools-protocol client for the system's headless Chromium (Debian's `chromium`).

The browser tests need three things a page cannot hide: every console message and uncaught
exception, every network request the page makes, and the DOM and pixels after load. Chromium's
`--remote-debugging-pipe` gives all three without a port or a downloaded browser: commands are
NUL-terminated JSON written to the browser's fd 3, replies and events are read from its fd 4.
One page is opened in a flat session (`Target.attachToTarget(flatten=True)`), with the Runtime,
Log, Network and Page domains enabled before navigation so nothing logged during load is missed.
"""
from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def chromium_binary() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class PageResult:
    """What loading one page produced."""

    console: list[dict[str, Any]] = field(default_factory=list)   # {"level", "text", "source"}
    requests: list[str] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)          # expression name -> value
    screenshot: bytes = b""
    height: int = 0

    def errors(self) -> list[dict[str, Any]]:
        return [m for m in self.console if m["level"] in ("error", "assert", "exception")]


class Chromium:
    """One headless browser process driven over the DevTools pipe."""

    def __init__(self, binary: str, *, timeout: float = 60.0, width: int = 1280, height: int = 900) -> None:
        self.timeout = timeout
        self.width = width
        self._profile = tempfile.mkdtemp(prefix="conformance-chromium-")
        cmd_r, self._cmd_w = os.pipe()
        self._evt_r, evt_w = os.pipe()

        def wire_fds() -> None:  # runs in the child: the pipe ends become fds 3 and 4
            a, b = os.dup(cmd_r), os.dup(evt_w)
            os.dup2(a, 3)
            os.dup2(b, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        args = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-sync",
                "--disable-background-networking", "--disable-component-update", "--hide-scrollbars",
                "--mute-audio", f"--user-data-dir={self._profile}", f"--window-size={width},{height}",
                "--remote-debugging-pipe", "about:blank"]
        self._stderr = tempfile.TemporaryFile()  # a file, not a pipe: a chatty browser must never block
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self._stderr, preexec_fn=wire_fds, close_fds=False)
        os.close(cmd_r)
        os.close(evt_w)
        self._buf = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []

    # ------------------------------------------------------------------ protocol
    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium: no reply on the DevTools pipe in time")
            ready, _, _ = select.select([self._evt_r], [], [], left)
            if ready:
                chunk = os.read(self._evt_r, 1 << 20)
                if not chunk:
                    self._stderr.seek(0)
                    err = self._stderr.read().decode(errors="replace")[-2000:]
                    raise RuntimeError(f"chromium closed the DevTools pipe (exit {self.proc.poll()}): {err}")
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        """Send one command and wait for its reply; events read meanwhile are kept for `wait_event`."""
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"chromium: {method} failed: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self._events.append(reply)

    def wait_event(self, method: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            for i, ev in enumerate(self._events):
                if ev["method"] == method:
                    return self._events.pop(i)
            self._events.append(self._read_message(deadline))

    # ------------------------------------------------------------------ one page
    def load(self, path: Path, expressions: dict[str, str] | None = None, *, screenshot: bool = True,
             settle_s: float = 0.3) -> PageResult:
        """Open a file, wait for load, evaluate `expressions`, take a full-page screenshot."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=session)
        self._events.clear()
        self.send("Page.navigate", {"url": path.resolve().as_uri()}, session=session)
        self.wait_event("Page.loadEventFired")
        end = time.monotonic() + settle_s  # late console messages (e.g. CSP reports) arrive after load
        while time.monotonic() < end:
            try:
                self._events.append(self._read_message(end))
            except TimeoutError:
                break
        result = PageResult()
        for name, expr in (expressions or {}).items():
            reply = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session=session)
            if "exceptionDetails" in reply:
                raise RuntimeError(f"evaluating {name}: {reply['exceptionDetails']}")
            result.values[name] = reply["result"].get("value")
        if screenshot:
            metrics = self.send("Page.getLayoutMetrics", session=session)
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            result.height = int(size["height"])
            self.send("Emulation.setDeviceMetricsOverride", {"width": self.width, "height": result.height,
                                                             "deviceScaleFactor": 1, "mobile": False}, session=session)
            shot = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True},
                             session=session)
            result.screenshot = base64.b64decode(shot["data"])
        self._collect(result, session)
        self.send("Target.closeTarget", {"targetId": target})
        return result

    def _collect(self, result: PageResult, session: str) -> None:
        for ev in self._events:
            if ev.get("sessionId") != session:
                continue
            p = ev.get("params", {})
            if ev["method"] == "Runtime.consoleAPICalled":
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
                result.console.append({"level": p.get("type"), "text": text, "source": "console"})
            elif ev["method"] == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                result.console.append({"level": "exception", "source": "javascript",
                                       "text": d.get("exception", {}).get("description") or d.get("text", "")})
            elif ev["method"] == "Log.entryAdded":
                e = p.get("entry", {})
                result.console.append({"level": e.get("level"), "text": e.get("text", ""), "source": e.get("source")})
            elif ev["method"] == "Network.requestWillBeSent":
                result.requests.append(p.get("request", {}).get("url", ""))
        self._events.clear()

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except Exception:  # noqa: BLE001 - the process is ended below either way
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        os.close(self._cmd_w)
        os.close(self._evt_r)
        self._stderr.close()
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> "Chromium":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def main(argv: list[str]) -> int:
    """`python tests/support/chromium.py PAGE.html OUT.png [HEIGHT]`: a screenshot (cut to HEIGHT px) for the docs."""
    import io

    from PIL import Image

    page, out = Path(argv[0]), Path(argv[1])
    binary = chromium_binary()
    if binary is None:
        print("chromium is not installed: run `make browser`", file=sys.stderr)
        return 2
    with Chromium(binary) as browser:
        result = browser.load(page)
    if result.errors():
        print(f"console errors: {result.errors()}", file=sys.stderr)
        return 1
    image = Image.open(io.BytesIO(result.screenshot))
    if len(argv) > 2:
        image = image.crop((0, 0, image.width, min(image.height, int(argv[2]))))
    image.save(out, optimize=True)
    print(f"{out}: {image.width}×{image.height}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
