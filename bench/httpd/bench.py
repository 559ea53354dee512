"""httpd: static files over HTTP/1.1 keep-alive, uaio-httpd (--disk-io
laio, blocking, threads) against nginx (sendfile; aio threads), lighttpd
and h2o, each with one worker, on two generated file sets:

  rice-like      fits in memory;
  berkeley-like  does not: the server runs in a memory cgroup far smaller
                 than the set (cgroup v2 memory.max, or a v1 child of this
                 process's memory cgroup with memory.limit_in_bytes).

File sizes are heavy-tailed (SPECweb99-like classes, mean ~58 KiB);
requests uniform or Zipf(1) over the files, drawn in advance with a fixed
seed (bench/httpd/httpd_sets.py) and replayed in order by wrk through
bench/httpd/paths.lua. Warm cells read the set first (for the set that
does not fit: its most popular files, up to twice the cgroup's limit,
from inside the cgroup, after dropping the caches); cold cells drop the
page cache (`echo 3 > /proc/sys/vm/drop_caches`) just before wrk starts.
The server is pinned to CPU 0 (`taskset -c 0`), wrk (one thread) and the
helper holding idle keep-alive connections (bench/httpd/idle_conns.py) to
CPU 1. Every server is started fresh for every run and checked before and
again after wrk (a few files fetched over one keep-alive connection and
compared byte for byte, and a 404). Per run: req/s, p50/p99 latency (wrk), the server's CPU
µs per request (/proc/<pid>/stat utime + stime around the wrk run), its
VmRSS / VmHWM after it, and the memory of an idle keep-alive connection
((VmRSS with N idle connections - VmRSS before) / N). Servers are
interleaved within each repetition (order rotated); medians, best-of,
ratios to nginx sendfile.

Peers are Debian's nginx, lighttpd, h2o and wrk (scripts/setup.sh bench);
a missing one is a row saying why. Called by bench/run.py as run(ctx).
"""
import os
import re
import select
import shutil
import subprocess
import sys
import time

from common import BenchError, Samples, parse_kv, rotated

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from httpd_report import report  # noqa: E402
from httpd_servers import HZ, MemCgroup, Running, pick_ports, servers  # noqa: E402
from httpd_sets import (SEED, FileSet, RequestList, drop_caches, read_files,  # noqa: E402
                        verify_server, warm_paths)

HERE = os.path.dirname(os.path.abspath(__file__))
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
SETS = ["rice", "berkeley"]
DISTS = ["uniform", "zipf"]
CACHES = ["warm", "cold"]
SERVER_CPU, CLIENT_CPU = 0, 1
# A run whose socket errors (connect, read, write, timeout) exceed this
# share of its requests counts as failed; so does any response wrk counts
# as "Non-2xx or 3xx" (status 400 and above).
MAX_SOCKET_ERRORS = 0.01


def plan(mode, smoke):
    if smoke:
        # Every set, distribution and cache state once, not every pair.
        return dict(reps=1, secs=1, conns=32, idle=100, requests=20000,
                    sets=dict(rice=dict(files=300), berkeley=dict(files=1500, limit=32 * MiB)),
                    cells={("rice", "uniform", "warm"), ("rice", "zipf", "cold"),
                           ("berkeley", "uniform", "cold"), ("berkeley", "zipf", "warm")})
    if mode == "full":
        return dict(reps=5, secs=15, conns=64, idle=5000, requests=1_000_000,
                    sets=dict(rice=dict(files=20000), berkeley=dict(files=100000, limit=GiB)))
    return dict(reps=3, secs=3, conns=64, idle=1000, requests=200_000,
                sets=dict(rice=dict(files=2000), berkeley=dict(files=10000, limit=128 * MiB)))


def ensure_tools(ctx):
    if not shutil.which("wrk"):
        subprocess.run(["scripts/setup.sh", "bench"], cwd=ctx.root, check=False)
    if not shutil.which("wrk"):
        raise BenchError("wrk not installed (scripts/setup.sh bench)")
    if not shutil.which("taskset"):
        raise BenchError("taskset (util-linux) not installed")


def slug(name):
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")


class IdleConns:
    """bench/httpd/idle_conns.py holding n idle keep-alive connections."""

    def __init__(self, port, n, path, timeout=180):
        self.proc = subprocess.Popen(
            ["taskset", "-c", str(CLIENT_CPU), sys.executable, os.path.join(HERE, "idle_conns.py"),
             "127.0.0.1", str(port), str(n), path],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.ready = self._line("ready", timeout)

    def _line(self, word, timeout):
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if r else ""
        if not line.startswith(word):
            self.proc.kill()
            self.proc.wait()
            raise BenchError(f"idle_conns.py: no '{word}' line: {line.strip()!r} "
                             f"{(self.proc.stderr.read() or '').strip()[-200:]}")
        return parse_kv(line)

    def close(self):
        if self.proc.poll() is not None:
            return {}
        try:
            self.proc.stdin.write("done\n")
            self.proc.stdin.flush()
            out = self._line("done", 60)
        finally:
            self.proc.wait(timeout=60)
        return out


def run_wrk(port, rl, cfg, timeout):
    argv = ["taskset", "-c", str(CLIENT_CPU), "wrk", "-t1", f"-c{cfg['conns']}",
            f"-d{cfg['secs']}s", "--timeout", "10s", "--latency",
            "-s", os.path.join(HERE, "paths.lua"), f"http://127.0.0.1:{port}", "--", rl.path]
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    if p.returncode:
        raise BenchError(f"wrk exit {p.returncode}: {p.stderr.strip()[-300:]}")
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("wrk requests="):
            return parse_kv(line)
    raise BenchError(f"no result line from wrk: {p.stdout.strip()[-300:]}")


def prepare_cache(ctx, st, rl, cache, cg, limit):
    """warm: the set read (a set that does not fit: its most popular files
    up to twice the limit, read from inside the cgroup after dropping the
    caches); cold: the page cache dropped."""
    if cache == "cold":
        drop_caches()
        return
    fs = st["fs"]
    if cg is None:
        read_files(warm_paths(fs, rl.hot, None), ctx.scratch / "warm.list")
        return
    drop_caches()
    read_files(warm_paths(fs, rl.hot, 2 * limit), ctx.scratch / "warm.list", preexec_fn=cg.join)


def one_run(ctx, cfg, S, srv, port, st, rl, cache, cg):
    """One server, one cell: start it, check it, hold idle connections,
    prepare the cache, run wrk; records the samples. Raises on failure."""
    fs = st["fs"]
    key = (st["name"], rl.dist, cache, srv.name)
    confdir = ctx.scratch / "srv" / slug(srv.name)
    shutil.rmtree(confdir, ignore_errors=True)
    run = Running(srv, fs.root, port, str(confdir), SERVER_CPU, cgroup=cg)
    idle = None
    try:
        verify_server(port, fs)
        time.sleep(0.1)
        m0 = run.mem()
        idle = IdleConns(port, cfg["idle"], "/" + fs.names[fs.smallest()])
        n_idle = int(idle.ready.get("open", 0))
        if n_idle < cfg["idle"]:
            raise BenchError(f"only {n_idle} of {cfg['idle']} idle keep-alive connections "
                             f"opened ({idle.ready.get('failed', '?')} refused or failed)")
        time.sleep(0.2)
        m1 = run.mem()
        prepare_cache(ctx, st, rl, cache, cg, st.get("limit"))
        if not run.alive():
            raise BenchError(f"the server died before wrk: {run.log_tail()}")
        c0 = run.cpu_ticks()
        w = run_wrk(port, rl, cfg, timeout=cfg["secs"] * 4 + 120)
        if not run.alive():
            raise BenchError(f"the server died during the run (exit {run.proc.returncode}; "
                             f"OOM-killed in its cgroup?): {run.log_tail()}")
        c1 = run.cpu_ticks()
        m2 = run.mem()
        held = idle.close()
        idle = None
        # The same content check again after the load: a server that
        # answered wrk with 2xx but wrong bytes must not give a number.
        try:
            verify_server(port, fs)
        except BenchError as e:
            raise BenchError(f"after wrk: {e}") from e
    finally:
        if idle:
            idle.close()
        run.stop()
        if run.killed:
            ctx.log(f"{srv.name} did not exit within 10 s of SIGTERM: killed")
    S.add(key + ("killed",), 1 if run.killed else 0)
    reqs = w["requests"]
    socket_errs = w["err_connect"] + w["err_read"] + w["err_write"] + w["err_timeout"]
    if reqs <= 0:
        raise BenchError("wrk completed no request")
    if w["err_status"]:
        raise BenchError(f"{w['err_status']} of {reqs} responses not 2xx/3xx")
    if socket_errs > MAX_SOCKET_ERRORS * reqs:
        raise BenchError(f"{socket_errs} socket errors in {reqs} requests: {w}")
    secs = w["duration_us"] / 1e6
    vals = dict(rps=reqs / secs, mbps=w["bytes"] / secs / MiB, p50=w["p50_us"] / 1e3,
                p99=w["p99_us"] / 1e3, cpu_us=(c1 - c0) / HZ * 1e6 / reqs,
                rss=m2["rss"] / MiB, hwm=m2["hwm"] / MiB, sock_err=socket_errs,
                idle_n=n_idle, idle_kept=int(held.get("open", 0)), rss0=m0["rss"] / MiB,
                rss_idle=m1["rss"] / MiB)
    if n_idle:
        vals["idle_b"] = (m1["anon"] - m0["anon"]) / n_idle
    for k, v in vals.items():
        S.add(key + (k,), v)
    return vals


def run(ctx):
    ensure_tools(ctx)
    cfg = plan(ctx.mode, ctx.smoke)
    if (os.cpu_count() or 1) < 2:
        raise BenchError("needs 2 CPUs (the server on one, wrk on the other)")
    S = Samples(ctx.log)
    srvs = servers(ctx.build, max(v["files"] for v in cfg["sets"].values())
                   + cfg["idle"] + cfg["conns"] + 64)
    for s in srvs:
        if s.why:
            ctx.log(f"{s.name}: skipped: {s.why}")
    live = [s for s in srvs if not s.why]
    ports = dict(zip((s.name for s in live), pick_ports(len(live))))
    root_ok = os.geteuid() == 0 and os.access("/proc/sys/vm/drop_caches", os.W_OK)
    skip = {}                       # (set, cache or None) -> reason
    if not root_ok:
        for name in SETS:
            skip[(name, "cold")] = "dropping the page cache needs root"
    cg, cg_what = None, None
    try:
        try:
            cg = MemCgroup(cfg["sets"]["berkeley"]["limit"])
            cg_what = cg.probe()
            ctx.log(f"berkeley: memory cgroup {cg_what}, limit {cg.limit >> 20} MiB")
        except BenchError as e:
            if cg:
                cg.close()
            cg = None
            skip[("berkeley", None)] = f"no memory cgroup for the server: {e}"
            ctx.log(f"berkeley: skipped: {e}")
        if not root_ok and cg:
            skip[("berkeley", None)] = "warming it inside the cgroup needs root (drop_caches)"
        sets = make_sets(ctx, cfg, skip)
        t0 = time.monotonic()
        for rep in range(cfg["reps"]):
            for name in SETS:
                st = sets.get(name)
                if not st:
                    continue
                for dist in DISTS:
                    rl = st["lists"][dist]
                    for cache in CACHES:
                        if (name, cache) in skip or (cfg.get("cells") and
                                                     (name, dist, cache) not in cfg["cells"]):
                            continue
                        for srv in rotated(live, rep):
                            what = f"{srv.name} ({name}, {dist}, {cache}, repetition {rep + 1})"
                            t1 = time.monotonic()
                            try:
                                v = one_run(ctx, cfg, S, srv, ports[srv.name], st, rl, cache,
                                            cg if name == "berkeley" else None)
                                ctx.log(f"{name} {dist} {cache} rep {rep + 1}/{cfg['reps']}: "
                                        f"{srv.name}: {v['rps']:.0f} req/s, p99 {v['p99']:.2f} ms, "
                                        f"{v['cpu_us']:.1f} µs CPU/req ({time.monotonic() - t1:.1f} s)")
                            except (BenchError, OSError, subprocess.SubprocessError) as e:
                                S.fail(what, e)
        runs_s = time.monotonic() - t0
    finally:
        if cg:
            cg.close()
    return report(ctx, cfg, S, srvs, sets, skip, cg_what, runs_s)


def make_sets(ctx, cfg, skip):
    sets = {}
    for i, name in enumerate(SETS):
        if (name, None) in skip:
            continue
        spec = cfg["sets"][name]
        t0 = time.monotonic()
        fs = FileSet(name, ctx.scratch / name, spec["files"], SEED + i)
        fs.generate()
        lists = {d: RequestList(fs, d, cfg["requests"], ctx.scratch / f"{name}-{d}.txt")
                 for d in DISTS}
        st = dict(name=name, fs=fs, lists=lists, limit=spec.get("limit"),
                  gen=time.monotonic() - t0)
        ctx.log(f"{name}: {len(fs.names)} files, {fs.total / MiB:.0f} MiB, generated in "
                f"{st['gen']:.1f} s")
        sets[name] = st
    return sets
