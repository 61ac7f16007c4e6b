#!/usr/bin/env python3
"""The figures behind bench/reliability.md's hostile peers (issue 32), measured against a given
ringside binary, so a build from before a fix and one from after run the same steps.

  python3 bench/reliability.py pipeline BIN ENGINE...   # 4,000 pipelined GETs for 1 MiB, never read
  python3 bench/reliability.py summary BIN              # two clean loads, then the server's summary
  python3 bench/reliability.py python BIN               # load http against python3 -m http.server

Every server is started here on 127.0.0.1 port 0 and stopped with SIGTERM by its pid; each
prints one line per measurement.
"""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

GET = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
PIPELINED = 4000


def serve(binary, engine, *flags):
    """A `ringside serve http` child and its port."""
    child = subprocess.Popen(
        [binary, "serve", "http", "--listen", "127.0.0.1:0", "--engine", engine, *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    line = child.stdout.readline().decode()
    return child, int(line.rsplit(":", 1)[1])


def stop(child):
    """SIGTERM to the child by its pid; its stderr (the stop summary), or what happened when it
    did not stop within 20 s (then SIGKILL, by its pid)."""
    os.kill(child.pid, signal.SIGTERM)
    started = time.monotonic()
    try:
        _, err = child.communicate(timeout=20)
        return err.decode().strip()
    except subprocess.TimeoutExpired:
        os.kill(child.pid, signal.SIGKILL)
        child.communicate(timeout=20)
        return f"did not stop within {time.monotonic() - started:.0f} s of SIGTERM: killed"


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def one_answer_ms(port, timeout=5.0):
    """Milliseconds for a fresh client's GET to come back whole (1 MiB body), or None."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as client:
        client.sendall(GET)
        received = b""
        while True:
            try:
                chunk = client.recv(1 << 20)
            except socket.timeout:
                return None
            if not chunk:
                return None
            received += chunk
            head, sep, body = received.partition(b"\r\n\r\n")
            if sep:
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                if len(body) >= length:
                    return (time.monotonic() - started) * 1000


def pipeline(binary, engines):
    for engine in engines:
        child, port = serve(binary, engine, "--body-size", "1m")
        hostile = socket.create_connection(("127.0.0.1", port))
        hostile.setblocking(False)
        requests = GET * PIPELINED
        sent, deadline = 0, time.monotonic() + 10
        while sent < len(requests) and time.monotonic() < deadline:
            try:
                sent += hostile.send(requests[sent:])
            except BlockingIOError:
                time.sleep(0.01)
        time.sleep(3)  # the server copies (or not) and fills every buffer on the way
        other = one_answer_ms(port) if engine != "blocking" else "n/a (one at a time)"
        rss = peak_rss_mib(child.pid)
        shown = f"{other:.1f} ms" if isinstance(other, float) else other or "none within 5 s"
        print(
            f"{engine}: requests written {sent // len(GET)} of {PIPELINED}, "
            f"server peak RSS {rss:.0f} MiB, another client's 1 MiB answer: {shown}",
            flush=True,
        )
        hostile.close()
        stopped = stop(child)
        if stopped.startswith("did not stop"):
            print(f"{engine}: {stopped}", flush=True)


def load(binary, target, *flags):
    return subprocess.run(
        [binary, "load", "http", "--target", target, *flags],
        capture_output=True,
        env={**os.environ, "RINGSIDE_NO_PERF": "1"},
        timeout=60,
    )


def summary(binary):
    child, port = serve(binary, "epoll")
    for _ in range(2):
        done = load(binary, f"http://127.0.0.1:{port}/", "-c", "50", "-d", "1s", "--warmup", "0s")
        errors = [line for line in done.stdout.decode().splitlines() if "socket errors" in line]
        print(f"load exit {done.returncode}: {errors[0] if errors else '?'}", flush=True)
    print(stop(child), flush=True)


def python(binary):
    with tempfile.TemporaryDirectory() as root:
        with open(os.path.join(root, "index.html"), "w") as index:
            index.write("hello from python\n")
        server = subprocess.Popen(
            [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", root],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        port = server.stdout.readline().decode().split(" port ")[1].split()[0]
        done = load(binary, f"http://127.0.0.1:{port}/", "-c", "4", "-d", "2s", "--warmup", "200ms")
        os.kill(server.pid, signal.SIGTERM)
        server.wait(timeout=10)
    wanted = ("requests/s", "statuses", "socket errors", "reconnects", "NOT VERIFIED", "ringside:")
    for line in (done.stdout + done.stderr).decode().splitlines():
        if line.startswith(wanted) or "NOT VERIFIED" in line:
            print(line, flush=True)
    print(f"exit {done.returncode}", flush=True)


if __name__ == "__main__":
    what, binary, *rest = sys.argv[1:]
    {"pipeline": lambda: pipeline(binary, rest), "summary": lambda: summary(binary),
     "python": lambda: python(binary)}[what]()
