#!/usr/bin/env python3
"""bench/ladder.md, "The accept pause and SQPOLL's idle": starts a uring-sqpoll echo server
under an fd limit (default 16), connects the limit plus 8 clients (so 8 or more wait in the listen
queue), and prints each of the server's threads' CPU share over 2 s (/proc/PID/task/*/stat);
the server's own last line counts the accepts the limit refused.

    flock -x /tmp/ringside-bench.lock bench/ladder-sqpoll-paused.py RINGSIDE_BIN [FD_LIMIT]
"""
import os, socket, subprocess, sys, time, glob
binary = sys.argv[1]
limit = int(sys.argv[2]) if len(sys.argv) > 2 else 16
p = subprocess.Popen(["prlimit", f"--nofile={limit}", binary, "serve", "echo", "--engine", "uring-sqpoll",
                      "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
line = p.stdout.readline()
addr = line.split()[2]; host, port = addr.rsplit(":", 1)
conns = []
for i in range(limit + 8):
    s = socket.create_connection((host, int(port))); conns.append(s)
time.sleep(0.5)
def ticks():
    out = {}
    for t in glob.glob(f"/proc/{p.pid}/task/*/stat"):
        st = open(t).read(); name = st[st.index("(")+1:st.rindex(")")]
        f = st[st.rindex(")")+2:].split()
        out[t] = (name, int(f[11]) + int(f[12]))
    return out
a = ticks(); time.sleep(2); b = ticks()
for t in b:
    if t in a: print(b[t][0], (b[t][1] - a[t][1]) / os.sysconf("SC_CLK_TCK") / 2 * 100, "% CPU")
p.terminate()
p.wait()
for s in conns:
    s.close()
