"""Headless Chromium driven over the DevTools protocol on a pipe: load a page, read its text, click, screenshot.

A Solara page renders its widgets over a websocket after the load event, so
``chromium --dump-dom`` returns before there is anything to see; here the test
polls the live DOM instead. ``--remote-debugging-pipe`` talks on file
descriptors 3 (commands in) and 4 (replies out), NUL-separated JSON, so no
port and no websocket client are needed. The machine has no network: the
flags keep Chromium from trying to reach one.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage", "--remote-debugging-pipe",
         "--window-size=1400,1000"]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    def __init__(self, binary: str):
        self.profile = tempfile.mkdtemp(prefix="catallax-chromium-")
        to_chrome, self._out = os.pipe()  # we write commands into _out; Chromium reads fd 3
        self._in, from_chrome = os.pipe()  # Chromium writes replies to fd 4; we read _in

        def fds():  # in the child: the pipe ends to 3 and 4 (via free high numbers, in case they are 3 or 4)
            os.dup2(to_chrome, 200)
            os.dup2(from_chrome, 201)
            os.dup2(200, 3)
            os.dup2(201, 4)

        self.proc = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=fds,
                                     pass_fds=(3, 4))
        os.close(to_chrome)
        os.close(from_chrome)
        self._buffer, self._id, self.session = b"", 0, None

    def send(self, method: str, timeout: float = 30, **params) -> dict:
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if self.session:
            message["sessionId"] = self.session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._id:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply.get("result", {})
            chunk = os.read(self._in, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buffer += chunk
        raise TimeoutError(method)

    def open(self, url: str) -> None:
        target = self.send("Target.createTarget", url=url)["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]

    def evaluate(self, expression: str):
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    def text(self) -> str:
        return self.evaluate("document.body ? document.body.innerText : ''") or ""

    def wait_for(self, *needles: str, timeout: float = 60) -> str:
        """Poll the page's text until every needle is in it; TimeoutError shows what the page said instead."""
        return self._poll(self.text, lambda text: all(n in text for n in needles), timeout,
                          lambda text: f"page never showed {needles}; it shows:\n{text[:2000]}")

    def wait_until(self, expression: str, timeout: float = 60):
        """Poll a JavaScript expression until it is truthy (a plot's image arrives after the text that names it)."""
        return self._poll(lambda: self.evaluate(expression), bool, timeout,
                          lambda value: f"{expression} stayed {value!r} for {timeout} s")

    @staticmethod
    def _poll(read, done, timeout: float, failure):
        """The first value of ``read()`` that is ``done``; TimeoutError(failure(last value)) past the deadline."""
        deadline = time.monotonic() + timeout
        while True:
            value = read()
            if done(value):
                return value
            if time.monotonic() >= deadline:
                raise TimeoutError(failure(value))
            time.sleep(0.5)

    def click(self, label: str) -> bool:
        """Click the first button whose text is ``label`` (as written, before CSS upper-cases it)."""
        return bool(self.evaluate(
            "(() => { const b = [...document.querySelectorAll('button')]"
            f".find(e => e.textContent.trim() === {json.dumps(label)}); if (b) b.click(); return !!b; }})()"))

    def screenshot(self, path) -> None:
        data = self.send("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.session = None
            self.send("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._in, self._out):
            os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)
