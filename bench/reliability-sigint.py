#!/usr/bin/env python3
"""Time from SIGINT to exit of a ringside process waiting in the kernel on a peer that never
answers (issue 32: "Ctrl-C ends a kernel wait within a bounded time"), against a given binary, so
a build from before a fix and one from after run the same steps.

  python3 bench/reliability-sigint.py serve BIN PROTO ENGINE...   # idle, half-sent and never-reading clients
  python3 bench/reliability-sigint.py load BIN                    # load against servers that never answer

Every process is started here on 127.0.0.1 and signalled by its pid; one line per measurement:
what, the exit code, milliseconds from the signal to the exit (`inf` when it had not exited 15 s
later: then SIGKILL, by its pid).
"""

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

GIVE_UP_S = 15


def interrupt(child):
    """SIGINT to `child` by its pid; its exit code and the milliseconds until it exited."""
    signalled = time.monotonic()
    os.kill(child.pid, signal.SIGINT)
    try:
        child.wait(timeout=GIVE_UP_S)
        return child.returncode, (time.monotonic() - signalled) * 1000
    except subprocess.TimeoutExpired:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        return "killed", float("inf")


def silent_clients(port, proto):
    """One client that sends until the server's sends block and never reads, three idle ones,
    the second with half a message."""
    flood = socket.create_connection(("127.0.0.1", port))
    flood.setblocking(False)
    chunk = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 2000 if proto == "http" else b"x" * 65536
    blocked_since = time.monotonic()
    while time.monotonic() - blocked_since < 0.3:
        try:
            flood.send(chunk)
            blocked_since = time.monotonic()
        except BlockingIOError:
            time.sleep(0.01)
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
    idle[1].sendall(b"GET / HT" if proto == "http" else b"abc")
    return [flood, *idle]


def serve(binary, proto, engines):
    for engine in engines:
        child = subprocess.Popen(
            [binary, "serve", proto, "--quiet", "--listen", "127.0.0.1:0", "--engine", engine],
            stdout=subprocess.PIPE,
        )
        port = int(re.search(r":(\d+)$", child.stdout.readline().decode().strip()).group(1))
        clients = silent_clients(port, proto)
        time.sleep(0.2)
        code, ms = interrupt(child)
        print(f"serve {proto} {engine}\t{code}\t{ms:.0f}", flush=True)
        for client in clients:
            client.close()


def never_answering(accepting):
    """A listener that accepts and holds every connection without reading, or one whose
    one-entry listen queue is full so that further connects wait for a SYN-ACK."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128 if accepting else 0)
    held = []

    def accept():
        while True:
            held.append(listener.accept()[0])

    if accepting:
        threading.Thread(target=accept, daemon=True).start()
    return listener


def load(binary):
    for accepting in (True, False):
        listener = never_answering(accepting)
        port = listener.getsockname()[1]
        for proto, target, extra in (
            ("echo", f"127.0.0.1:{port}", []),
            ("http", f"http://127.0.0.1:{port}/", ["--rate", "100"]),
        ):
            child = subprocess.Popen(
                [binary, "load", proto, "--target", target, "-c", "8", "--timeout", "20s",
                 "--warmup", "0s", "-d", "30s", *extra],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(1.5)
            code, ms = interrupt(child)
            what = "accepts, never answers" if accepting else "listen queue full"
            print(f"load {proto} {' '.join(extra)} ({what})\t{code}\t{ms:.0f}", flush=True)


def main():
    what, binary, *rest = sys.argv[1:]
    if what == "serve":
        serve(binary, rest[0], rest[1:])
    elif what == "load":
        load(binary)
    else:
        sys.exit(f"unknown measurement {what}")


if __name__ == "__main__":
    main()
