#!/usr/bin/env python3
"""Holds N idle keep-alive connections to an HTTP server (bench/httpd).

usage: idle_conns.py HOST PORT N PATH

Opens N connections (at most 64 connecting at once, so that no listen
backlog overflows), sends one `GET PATH` on each and reads its whole
response (Content-Length), so that every connection is an idle keep-alive
connection of the server. Then prints `ready open=<n> failed=<n>
secs=<s>` and holds them until stdin ends or gets a line; then prints
`done open=<n> closed=<n>`: how many the server had closed meanwhile.
"""
import errno
import os
import resource
import select
import socket
import sys
import time

INFLIGHT = 64


def main():
    host, port, n, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 256), hard))
    req = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
    ep = select.epoll()
    state = {}          # fd -> [sock, phase, buf, need]
    ready, failed, started = [], 0, 0
    t0 = time.monotonic()
    deadline = t0 + 30 + n / 100

    def start():
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        err = s.connect_ex((host, port))
        if err not in (0, errno.EINPROGRESS):
            s.close()
            return False
        state[s.fileno()] = [s, "connect", b"", None]
        ep.register(s.fileno(), select.EPOLLOUT)
        return True

    def finish(fd, ok):
        nonlocal failed
        s = state.pop(fd)[0]
        ep.unregister(fd)
        if ok:
            ready.append(s)
        else:
            failed += 1
            s.close()

    while len(ready) + failed < n and time.monotonic() < deadline:
        while started < n and len(state) < INFLIGHT:
            started += 1
            if not start():
                failed += 1
        for fd, ev in ep.poll(1.0):
            st = state[fd]
            s = st[0]
            if st[1] == "connect":
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                    finish(fd, False)
                    continue
                s.send(req)      # small: goes at once on a fresh connection
                st[1] = "read"
                ep.modify(fd, select.EPOLLIN)
                continue
            try:
                data = s.recv(65536)
            except OSError:
                finish(fd, False)
                continue
            if not data:
                finish(fd, False)
                continue
            st[2] += data
            if st[3] is None and b"\r\n\r\n" in st[2]:
                head, _, _ = st[2].partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    k, _, v = line.partition(b":")
                    if k.strip().lower() == b"content-length":
                        length = int(v.strip())
                if not head.startswith(b"HTTP/1.1 200"):
                    finish(fd, False)
                    continue
                st[3] = len(head) + 4 + length
            if st[3] is not None and len(st[2]) >= st[3]:
                st[2] = b""
                finish(fd, True)
    for fd in list(state):
        finish(fd, False)
    print(f"ready open={len(ready)} failed={failed} secs={time.monotonic() - t0:.2f}", flush=True)
    sys.stdin.readline()
    closed = 0
    for s in ready:
        try:
            if s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                closed += 1
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
    print(f"done open={len(ready) - closed} closed={closed}", flush=True)
    for s in ready:
        s.close()
    os._exit(0)


if __name__ == "__main__":
    main()
