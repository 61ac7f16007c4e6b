#!/usr/bin/env python3
"""Sums a `perf report --sort sym --stdio` of a server process into its cost centres (bench/ladder.sh
set 9): the file references fixed files remove, io_uring, ringside's own code, the TCP/IP loopback
path, syscall entry, and the rest of the kernel. One line per report."""
import re, sys
rules = [
    ("file refs (fget/fput)", r"^(__)?f(get|put)|fdget|__fget|fd_install"),
    ("io_uring", r"^(__)?io_|^io_uring|^__io_uring|^tctx_|^io_"),
    ("ringside (user)", r"^ringside|^core::|^alloc::|^std::|^slab::|^<"),
    ("TCP/IP, skb, loopback", r"tcp|^(__)?ip_|^ip|skb|sock|^(__)?inet|net_rx|netif|loopback|dev_queue|bbr|process_backlog|raw_local|_copy_(to|from)_iter|datagram|^__sk|^sk_|rfree|^dst_|^nf_|^validate_xmit|^eth_|^__napi|napi"),
    ("syscall entry/exit", r"entry_SYSCALL|syscall|^x64_sys|do_syscall|__x64|fpregs|srso|retbleed|^__x86_return|entry_"),
]
share = {name: 0.0 for name, _ in rules}
share["other kernel (locks, timers, sched, slab, rcu)"] = 0.0
for line in open(sys.argv[1]):
    m = re.match(r"\s+([\d.]+)%\s+\[([k.])\]\s+(\S+)", line)
    if not m:
        continue
    pct, space, sym = float(m.group(1)), m.group(2), m.group(3)
    for name, pattern in rules:
        if re.search(pattern, sym):
            share[name] += pct
            break
    else:
        if space == ".":
            share["ringside (user)"] += pct
        else:
            share["other kernel (locks, timers, sched, slab, rcu)"] += pct
print(sys.argv[1].rsplit("/", 1)[-1], "|", " | ".join(f"{name} {pct:.1f}%" for name, pct in share.items()))
