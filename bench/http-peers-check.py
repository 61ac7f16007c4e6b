#!/usr/bin/env python3
"""Quick HTTP correctness probe for a fixed-response server: pipelined pair, garbage,
Connection: close. Prints one JSON line. Usage: http-peers-check.py NAME PORT"""
import json, socket, sys, time

def exchange(port, payload, wait=0.5):
    try:
        return _exchange(port, payload, wait)
    except OSError as e:
        return {"error": repr(e)}

def _exchange(port, payload, wait):
    s = socket.create_connection(("127.0.0.1", port), timeout=2)
    s.sendall(payload)
    s.settimeout(wait)
    data, closed = b"", False
    deadline = time.time() + wait
    while time.time() < deadline:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            closed = True
            break
        if not chunk:
            closed = True
            break
        data += chunk
    s.close()
    lines = [l.split(b"\r\n")[0].decode("latin1") for l in data.split(b"HTTP/1.")[1:]]
    return {"responses": len(lines), "status_lines": ["HTTP/1." + l for l in lines], "closed_by_server": closed}

name, port = sys.argv[1], int(sys.argv[2])
req = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
out = {"server": name,
       "single": exchange(port, req),
       "pipelined_pair_one_packet": exchange(port, req + req),
       "garbage": exchange(port, b"this is not http\r\n\r\n"),
       "connection_close": exchange(port, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", wait=1.0)}
print(json.dumps(out))
