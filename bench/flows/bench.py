"""Flows: the FlexIO seed's chapter 4 remade. Disk -> disk (same file
system and a second one, warm and cold page cache, sizes, the buffer-size
sweep), disk -> network -> disk between two network namespaces, and
network -> network through a forwarder in a third: uaio-flow in each mode
against a user read/write loop, user mmap + memcpy, GNU cp and plain
copy_file_range. Throughput and CPU seconds per GB of the whole machine
(/proc/stat), medians over interleaved repetitions.

Called by bench/run.py as run(ctx); returns the markdown section.
"""
import filecmp
import os
import shutil
import subprocess
import time

from common import Samples, ratio, rotated

MB = 1 << 20
GB = 1 << 30
EXDEV = os.strerror(18)     # "Invalid cross-device link", as peer.c's die() prints it


def plan(mode, smoke):
    if smoke:
        return dict(reps=1, sizes=[1 * MB, 16 * MB], big=16 * MB, sweep_size=8 * MB,
                    sweep=[4096, 65536, MB], net=16 * MB)
    if mode == "full":
        return dict(reps=5, sizes=[1 * MB, 16 * MB, 256 * MB, GB, 2 * GB], big=GB,
                    sweep_size=256 * MB, sweep=[1024, 4096, 16384, 65536, 262144, MB],
                    net=4 * GB)
    return dict(reps=3, sizes=[1 * MB, 64 * MB, GB], big=GB, sweep_size=256 * MB,
                sweep=[4096, 16384, 65536, 262144, MB], net=GB)


def cpu_ticks():
    """Busy jiffies of the whole machine (all cores): user, nice, system,
    irq, softirq; not steal (the hypervisor running someone else)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]                      # idle + iowait
    return sum(v[:7]) - idle


HZ = os.sysconf("SC_CLK_TCK")


class Meter:
    """Runs a command (or a set of processes) and records MB/s and the
    whole machine's CPU seconds per GB moved."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.S = Samples(ctx.log)
        self.expected = {}      # key -> the expected error it got (not a failed run)

    def measure(self, key, nbytes, fn, check=None, expect=None):
        """Times fn; check (untimed, after) returns None when the result is
        right, else why not: the run then fails and gives no number. expect:
        a text whose presence in fn's error makes that error this cell's
        expected outcome (noted in .expected), not a failed run."""
        c0, t0 = cpu_ticks(), time.monotonic()
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - one failing variant must not end the suite
            if expect and expect in str(e):
                self.ctx.log(f"{' '.join(map(str, key))}: failed as expected: {e}")
                self.expected[key] = str(e)
            else:
                self.S.fail(" ".join(map(str, key)), e)
            return
        secs = time.monotonic() - t0
        cpu = (cpu_ticks() - c0) / HZ
        bad = check() if check else None
        if bad:
            self.S.fail(" ".join(map(str, key)), bad)
            return
        self.S.add(key + ("mbs",), nbytes / secs / 1e6)
        self.S.add(key + ("cpu",), cpu / (nbytes / GB))

    def med(self, key, m):
        return self.S.med(key + (m,))

    def best(self, key, m):
        return self.S.best(key + (m,), m == "mbs")


def same_bytes(src, dst):
    """None when dst holds src's bytes, else what differs."""
    if not os.path.exists(dst):
        return "no copy made"
    if os.path.getsize(dst) != os.path.getsize(src):
        return f"copy has {os.path.getsize(dst)} bytes, source {os.path.getsize(src)}"
    return None if filecmp.cmp(src, dst, shallow=False) else "copy differs from its source"


def make_data(path, size):
    block = os.urandom(MB)
    with open(path, "wb") as f:
        left = size
        i = 0
        while left > 0:
            k = min(left, MB)
            f.write(block[i % 13:] + block[:i % 13] if k == MB else block[:k])
            left -= k
            i += 1
        f.flush()
        os.fsync(f.fileno())


def drop_cache(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def warm(path):
    with open(path, "rb") as f:
        while f.read(4 * MB):
            pass


def second_fs(ctx, size):
    """A loop-mounted ext4 image when root allows it, else /dev/shm."""
    if os.geteuid() == 0 and shutil.which("mkfs.ext4"):
        img = ctx.scratch / "second.img"
        mnt = ctx.scratch / "second"
        mnt.mkdir()
        try:
            with open(img, "wb") as f:
                f.truncate(2 * size + 256 * MB)
            subprocess.run(["mkfs.ext4", "-q", "-F", str(img)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            subprocess.run(["mount", "-o", "loop", str(img), str(mnt)], check=True)
            return mnt, "a loop-mounted ext4 image", lambda: subprocess.run(["umount", str(mnt)])
        except (subprocess.CalledProcessError, OSError) as e:
            ctx.log(f"no loop mount ({e}); second file system: /dev/shm")
    d = "/dev/shm/uaio-bench-flows"
    os.makedirs(d, exist_ok=True)
    return d, "tmpfs (/dev/shm)", lambda: shutil.rmtree(d, ignore_errors=True)


def disk_variants(flow, peer):
    v = {}
    for m in ("auto", "kbuf", "pagecache", "mmap"):
        v[f"uaio {m}"] = lambda s, d, m=m: [flow, "copy", "--mode", m, s, d]
    v["read/write 1 MiB"] = lambda s, d: [peer, "copy", "rw", s, d, "--buf", str(MB)]
    v["mmap + memcpy"] = lambda s, d: [peer, "copy", "mmap", s, d]
    v["copy_file_range"] = lambda s, d: [peer, "copy", "cfr", s, d]
    v["GNU cp"] = lambda s, d: ["cp", s, d]
    return v


def run_disk(ctx, cfg, M, flow, peer):
    S = ctx.scratch
    V = disk_variants(flow, peer)
    names = list(V)
    fs2, fs2_name, fs2_cleanup = second_fs(ctx, cfg["big"])
    cells = [("same", sz, "warm") for sz in cfg["sizes"]]
    cells += [("same", cfg["big"], "cold"), ("second", cfg["big"], "warm"),
              ("second", cfg["big"], "cold")]
    srcs = {}
    for sz in sorted({c[1] for c in cells} | {cfg["sweep_size"]}):
        srcs[sz] = str(S / f"src.{sz}")
        make_data(srcs[sz], sz)
    try:
        for rep in range(cfg["reps"]):
            for cell in cells:
                where, sz, cache = cell
                for name in rotated(names, rep):
                    dst = os.path.join(str(fs2) if where == "second" else str(S), "dst")
                    if os.path.exists(dst):
                        os.unlink(dst)
                    os.sync()
                    (drop_cache if cache == "cold" else warm)(srcs[sz])
                    argv = V[name](srcs[sz], dst)
                    # Every copy is compared with its source (untimed); a
                    # wrong one is a failure.
                    # copy_file_range across file systems is expected to
                    # fail with EXDEV: that cell's EXDEV is its result.
                    M.measure(("disk",) + cell + (name,), sz,
                              lambda: ctx.run_cmd([str(a) for a in argv], timeout=900),
                              check=lambda: same_bytes(srcs[sz], dst),
                              expect=EXDEV if (where, name) == ("second", "copy_file_range") else None)
            # The seed's buffer-size sweep: kbuf chunks against the loop's buffer.
            for bs in cfg["sweep"]:
                for name in rotated(["uaio kbuf", "read/write"], rep):
                    dst = str(S / "dst")
                    if os.path.exists(dst):
                        os.unlink(dst)
                    os.sync()
                    warm(srcs[cfg["sweep_size"]])
                    argv = ([flow, "copy", "--mode", "kbuf", "--chunk", str(bs)]
                            if name == "uaio kbuf" else [peer, "copy", "rw"]) + \
                        [srcs[cfg["sweep_size"]], dst] + ([] if name == "uaio kbuf" else ["--buf", str(bs)])
                    M.measure(("sweep", bs, name), cfg["sweep_size"],
                              lambda: ctx.run_cmd([str(a) for a in argv], timeout=900),
                              check=lambda: same_bytes(srcs[cfg["sweep_size"]], dst))
    finally:
        dst = os.path.join(str(fs2), "dst")
        if os.path.exists(dst):
            os.unlink(dst)
        fs2_cleanup()
    return cells, names, fs2_name


def fmt_size(n):
    return f"{n // GB} GiB" if n >= GB else f"{n // MB} MiB"


# ------------------------------------------------------------- network

def netns_setup():
    """Three namespaces a - b - c over veth; False when not allowed."""
    if os.geteuid() != 0 or not shutil.which("ip"):
        return False
    cmds = [
        "ip netns add ubfa", "ip netns add ubfb", "ip netns add ubfc",
        "ip link add ubfa0 netns ubfa type veth peer name ubfb0 netns ubfb",
        "ip link add ubfb1 netns ubfb type veth peer name ubfc0 netns ubfc",
        "ip -n ubfa addr add 10.78.1.1/24 dev ubfa0", "ip -n ubfb addr add 10.78.1.2/24 dev ubfb0",
        "ip -n ubfb addr add 10.78.2.1/24 dev ubfb1", "ip -n ubfc addr add 10.78.2.2/24 dev ubfc0",
    ] + [f"ip -n {n} link set lo up" for n in ("ubfa", "ubfb", "ubfc")] + [
        "ip -n ubfa link set ubfa0 up", "ip -n ubfb link set ubfb0 up",
        "ip -n ubfb link set ubfb1 up", "ip -n ubfc link set ubfc0 up"]
    netns_cleanup()
    for c in cmds:
        if subprocess.run(c.split(), stderr=subprocess.DEVNULL).returncode:
            netns_cleanup()
            return False
    return True


def netns_cleanup():
    for n in ("ubfa", "ubfb", "ubfc"):
        subprocess.run(["ip", "netns", "del", n], stderr=subprocess.DEVNULL)


def wait_listen(ns, port):
    for _ in range(200):
        out = subprocess.run((["ip", "netns", "exec", ns] if ns else []) + ["ss", "-ltn"],
                             capture_output=True, text=True).stdout
        if f":{port} " in out:
            return
        time.sleep(0.02)
    raise RuntimeError(f"nothing listening on {port}")


def run_chain(procs, ns_ok):
    """procs: [(ns, argv, listen_port or None)], receivers first; the last
    one is the sender, run to completion; then all must exit 0. Returns
    the first receiver's stdout."""
    started = []
    try:
        for ns, argv, port in procs[:-1]:
            pre = ["ip", "netns", "exec", ns] if ns_ok else []
            started.append(subprocess.Popen(pre + [str(a) for a in argv],
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE))
            wait_listen(ns if ns_ok else None, port)
        ns, argv, _ = procs[-1]
        pre = ["ip", "netns", "exec", ns] if ns_ok else []
        subprocess.run(pre + [str(a) for a in argv], check=True, stdout=subprocess.DEVNULL,
                       timeout=900)
        outs = []
        for p in started:
            out, err = p.communicate(timeout=120)
            if p.returncode:
                raise RuntimeError(err.decode()[-300:])
            outs.append(out.decode())
        return outs[0] if outs else ""
    finally:
        for p in started:
            if p.poll() is None:
                p.kill()


def run_net(ctx, cfg, M, flow, peer):
    S = ctx.scratch
    src = str(S / "net.src")
    make_data(src, cfg["net"])
    ns_ok = netns_setup()
    ip_b, ip_c_from_b, ip_b_from_a = ("10.78.1.2", "10.78.2.2", "10.78.1.2") if ns_ok else \
        ("127.0.0.1", "127.0.0.1", "127.0.0.1")
    port = [31000]

    def nextport():
        port[0] += 1
        return port[0]

    two = {
        "uaio auto": lambda p, d: [("ubfb", [flow, "recv", p, d], p),
                                   ("ubfa", [flow, "send", src, f"{ip_b}:{p}"], None)],
        "uaio kbuf": lambda p, d: [("ubfb", [flow, "recv", "--mode", "kbuf", p, d], p),
                                   ("ubfa", [flow, "send", "--mode", "kbuf", src, f"{ip_b}:{p}"], None)],
        "read/write 1 MiB": lambda p, d: [("ubfb", [peer, "recv", p, d], p),
                                          ("ubfa", [peer, "send", src, ip_b, p], None)],
    }
    fwd = {
        "uaio forward (auto)": lambda p, q: ("ubfb", [flow, "forward", q, f"{ip_c_from_b}:{p}"], q),
        "uaio forward (kbuf)": lambda p, q: ("ubfb", [flow, "forward", "--mode", "kbuf", q,
                                                     f"{ip_c_from_b}:{p}"], q),
        "read/write relay 1 MiB": lambda p, q: ("ubfb", [peer, "forward", q, ip_c_from_b, p], q),
    }
    try:
        for rep in range(cfg["reps"]):
            for name in rotated(list(two), rep):
                dst = str(S / "net.dst")
                warm(src)
                p = nextport()
                if os.path.exists(dst):
                    os.unlink(dst)
                M.measure(("net2", name), cfg["net"], lambda: run_chain(two[name](p, dst), ns_ok),
                          check=lambda: same_bytes(src, dst))
            for name in rotated(list(fwd), rep):
                warm(src)
                p, q = nextport(), nextport()
                # Both ends the same plain programs: only the relay differs.
                # The receiver writes a file, compared with the source as
                # every other copy is.
                dst = str(S / "net.dst")
                if os.path.exists(dst):
                    os.unlink(dst)
                chain = [("ubfc", [peer, "recv", p, dst], p), fwd[name](p, q),
                         ("ubfa", [peer, "send", src, ip_b_from_a, q], None)]
                M.measure(("net3", name), cfg["net"], lambda: run_chain(chain, ns_ok),
                          check=lambda: same_bytes(src, dst))
    finally:
        if ns_ok:
            netns_cleanup()
    return list(two), list(fwd), ns_ok


def run(ctx):
    cfg = plan(ctx.mode, ctx.smoke)
    flow = str(ctx.build / "tools" / "uaio-flow")
    peer = str(ctx.build / "bench" / "flows" / "peer")
    M = Meter(ctx)
    fmt, rat = ctx.fmt_num, ctx.fmt_ratio
    cells, names, fs2_name = run_disk(ctx, cfg, M, flow, peer)
    two, fwd, ns_ok = run_net(ctx, cfg, M, flow, peer)

    md = ["## Flows: data moved inside the kernel (the FlexIO seed, chapter 4)\n",
          f"Mode **{ctx.mode}**: {cfg['reps']} repetitions, variants interleaved (order rotated) "
          "in each; medians, best-of in brackets. MB/s = 10^6 bytes/s; CPU = busy seconds of the "
          "whole machine (all cores, /proc/stat) per GiB moved. Destination files are new each "
          "time; dirty pages are synced before (not during) each run. Every copy is compared with "
          "its source afterwards, untimed (through the forwarder too: the receiver writes a file), "
          "and a wrong one is a failed run, not a number. Cold = the source dropped "
          "from the page cache (POSIX_FADV_DONTNEED) first. This VM hands freed memory back to its "
          "host: a 1 GiB copy whose page cache lands on just-returned memory takes longer (by hand, "
          "outside this run, noted 2026-11-23: the same uaio-flow command 0.27 s and 2.7 s, all "
          "of it system time), so the 1 GiB cells carry that noise; read best-of beside the median. "
          "Second file system: "
          f"{fs2_name}.\n"]
    md.append("### Disk to disk\n")
    rows = []
    for cell in cells:
        where, sz, cache = cell
        base = M.med(("disk",) + cell + ("read/write 1 MiB",), "mbs")
        best_single = max((M.med(("disk",) + cell + (n,), "mbs") or 0)
                          for n in names if n != "uaio auto")
        for n in names:
            k = ("disk",) + cell + (n,)
            mbs, cpu = M.med(k, "mbs"), M.med(k, "cpu")
            if mbs is None and k in M.expected:
                rows.append([f"second fs, {fmt_size(sz)}, {cache}", n,
                             "fails: EXDEV (no copy across file systems)", "–", "–"])
                continue
            rows.append([f"{'same fs' if where == 'same' else 'second fs'}, {fmt_size(sz)}, {cache}",
                         n, f"{fmt(mbs)} [{fmt(M.best(k, 'mbs'))}]", rat(ratio(mbs, base)),
                         fmt(cpu)])
        a = M.med(("disk",) + cell + ("uaio auto",), "mbs")
        rows.append(["", "**auto ÷ best other variant** (uaio's own fixed modes included)", "", rat(ratio(a, best_single)), ""])
    md.append(ctx.table(["cell", "variant", "MB/s [best]", "÷ read/write", "CPU s/GiB"], rows))
    md.append("\n### Buffer-size sweep (seed figure), "
              f"{fmt_size(cfg['sweep_size'])} warm, same file system\n")
    rows = []
    series = {"uaio kbuf": [], "read/write": []}
    for bs in cfg["sweep"]:
        k1, k2 = ("sweep", bs, "uaio kbuf"), ("sweep", bs, "read/write")
        a, b = M.med(k1, "mbs"), M.med(k2, "mbs")
        rows.append([f"{bs // 1024} KiB", fmt(a), fmt(M.med(k1, "cpu")), fmt(b),
                     fmt(M.med(k2, "cpu")), rat(ratio(a, b))])
        if a:
            series["uaio kbuf"].append((bs / 1024, a))
        if b:
            series["read/write"].append((bs / 1024, b))
    md.append(ctx.table(["chunk / buffer", "kbuf MB/s", "kbuf CPU s/GiB", "read/write MB/s",
                         "read/write CPU s/GiB", "kbuf ÷ read/write"], rows))
    if ctx.plot_lines(ctx.imgdir / "flows_sweep.png", "Chunk size sweep (warm)",
                      "chunk / buffer (KiB)", "MB/s", series, logx=True):
        md.append("\n![buffer sweep](img/flows_sweep.png)\n")
    where = "between network namespaces over veth" if ns_ok else \
        "over loopback (network namespaces unavailable: not root or no ip)"
    md.append(f"\n### Disk to network to disk, 2 hosts {where}, {fmt_size(cfg['net'])}\n")
    rows = []
    base = M.med(("net2", "read/write 1 MiB"), "mbs")
    for n in two:
        k = ("net2", n)
        rows.append([n, f"{fmt(M.med(k, 'mbs'))} [{fmt(M.best(k, 'mbs'))}]",
                     rat(ratio(M.med(k, "mbs"), base)), fmt(M.med(k, "cpu"))])
    md.append(ctx.table(["sender and receiver", "MB/s [best]", "÷ read/write", "CPU s/GiB (machine)"],
                        rows))
    md.append(f"\n### Network to network through a forwarder, 3 hosts {where}, "
              f"{fmt_size(cfg['net'])}\n")
    md.append("The sender and receiver are the same read/write programs in every row; only the "
              "relay in the middle changes.\n")
    rows = []
    base = M.med(("net3", "read/write relay 1 MiB"), "mbs")
    for n in fwd:
        k = ("net3", n)
        rows.append([n, f"{fmt(M.med(k, 'mbs'))} [{fmt(M.best(k, 'mbs'))}]",
                     rat(ratio(M.med(k, "mbs"), base)), fmt(M.med(k, "cpu"))])
    md.append(ctx.table(["relay", "MB/s [best]", "÷ read/write", "CPU s/GiB (machine)"], rows))
    if M.S.errors:
        md.append("\nErrors:\n\n" + "\n".join(f"- {e}" for e in M.S.errors) + "\n")
    return "\n".join(md)
