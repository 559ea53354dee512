"""fio's posixaio engine (an unmodified POSIX AIO client) under glibc and
under the uaio drop-in (LD_PRELOAD), interleaved in one run on the same
file, with fio's own io_uring and psync engines beside them as the
practical limits. Plus syscalls per request (strace -c) for one
buffered-write and one cached-read cell.

Called by bench/run.py as run(ctx); returns the markdown section.
"""
import json
import os
import re
import resource
import shutil
import subprocess

from common import BenchError, Samples, make_file, ratio, rotated, warm

VARIANTS = ["glibc", "uaio", "io_uring", "psync"]
LABEL = {
    "glibc": "posixaio, glibc",
    "uaio": "posixaio, uaio drop-in",
    "io_uring": "fio io_uring engine",
    "psync": "fio psync engine",
}
WORKLOADS = [("randread", "4k"), ("randwrite", "4k"), ("read", "128k"), ("write", "128k")]
CACHES = ["cached", "cold", "direct"]
# The syscalls an AIO request can cost; fio's own (timers, pselect,
# wait4, its job bookkeeping) are left out of the per-request count.
AIO_CALLS = {"io_uring_enter", "io_uring_register", "futex", "pread64", "pwrite64",
             "preadv2", "pwritev2", "preadv", "pwritev", "fcntl", "newfstatat", "fstat",
             "read", "write", "clone", "clone3", "rt_sigqueueinfo", "mmap", "munmap",
             "mprotect", "madvise", "rt_sigprocmask", "sched_yield"}


def reading(spread):
    """The "how to read it" notes; spread: this run's repetition spread of
    the noisy cells, as text."""
    return f"""
How to read it. Buffered-write cells at the largest depth and cold 128 KiB
reads run at the pace of writeback or the disk for every variant, and move
from repetition to repetition ({spread}): compare them with care. The
cached-read ceiling is fio itself:
psync (one `pread` per request, no queue) bounds every engine, so where
glibc already comes near psync no library can double it. At depth 1 on
O_DIRECT and cold reads fio's thread, which waits in aio_suspend, issues
each request on an io_uring of its own and reaps it there itself: one
wake-up per request, where glibc's helper thread needs two (the helper's,
then fio's); docs/design.md, POSIX AIO.

The CPU columns say what each request cost the machine, all threads
counted, fio's own start-up and exit included (about 0.15 s per run,
measured by hand outside this run, noted 2026-11-25). That fixed cost is
divided by each variant's own request count, so it weighs more on the
variant that did fewer requests in its time: not alike in both. In the
cached cells at depth 64, glibc's helper thread copies on the second core
while fio's thread queues the next requests: two cores against uaio's one,
since uaio copies cached data in the calling thread and leaves the engine
idle. Handing those requests to the engine instead would cost a pinned
file per request (a registration, so that a close() cannot redirect the
I/O) and a cross-thread hand-off, more than the 4 KiB copy it moves; fio's
own io_uring engine with every request forced to io_uring's workers
(`--force_async=1`) made 0.85–0.9× glibc (measured by hand outside this
run, noted 2026-11-25; not part of this run).
"""


def spread_text(R, keys):
    """'in this run up to X % (max − min over the median), at <key>' over
    the keys with two samples or more."""
    worst = None
    for k in keys:
        v = R.values(k + ("iops",))
        m = R.med(k + ("iops",))
        if len(v) >= 2 and m:
            sp = (max(v) - min(v)) / m
            if worst is None or sp > worst[0]:
                worst = (sp, k)
    if worst is None:
        return "this run has too few repetitions to show by how much"
    rw, bs, depth, cache, v = worst[1]
    return (f"in this run up to {worst[0] * 100:.0f} % of the median, max − min over the "
            f"repetitions, at {rw} {bs} d{depth} {cache}, {LABEL[v]}")


def plan(mode, smoke):
    if smoke:
        return dict(reps=1, secs=0.3, depths=[1, 16], file_mb=32, ios=2000)
    if mode == "full":
        return dict(reps=5, secs=3, depths=[1, 16, 64], file_mb=1024, ios=50000)
    return dict(reps=3, secs=1, depths=[1, 16, 64], file_mb=256, ios=20000)


def fio_argv(fio, path, rw, bs, depth, cache, engine, secs=None, ios=None):
    argv = [fio, "--name=cell", f"--filename={path}", f"--rw={rw}", f"--bs={bs}",
            f"--iodepth={depth}", f"--ioengine={engine}", "--output-format=json",
            "--norandommap", "--randrepeat=1", "--group_reporting"]
    # cached: fio keeps the pages (the file was read first); cold: fio's
    # default, it drops the file's pages before the job; direct: O_DIRECT.
    argv.append("--invalidate=0" if cache == "cached" else "--invalidate=1")
    if cache == "direct":
        argv.append("--direct=1")
    if secs is not None:
        argv += ["--time_based", f"--runtime={secs}s"]
    if ios is not None:
        argv.append(f"--number_ios={ios}")
    return argv


def fio_iops(out):
    """IOPS and requests done (reads + writes) from fio's JSON output."""
    data = json.loads(out[out.index("{"):])
    job = data["jobs"][0]
    return {"iops": job["read"]["iops"] + job["write"]["iops"],
            "ios": job["read"]["total_ios"] + job["write"]["total_ios"]}


def children_cpu():
    """CPU seconds of every waited-for descendant so far: fio's job
    process and all its threads (glibc's helpers, uaio's engine), which
    fio's own usr_cpu/sys_cpu, counting the job thread alone, leave out."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def strace_calls(ctx, argv, env, ios):
    """AIO-path syscalls per request, all threads and processes."""
    out_file = ctx.scratch / "strace.txt"
    full = ["strace", "-f", "-c", "-o", str(out_file)]
    if env:
        full += ["-E", f"LD_PRELOAD={env['LD_PRELOAD']}"]
    ctx.run_cmd(full + argv, timeout=300)
    counts = {}
    for line in out_file.read_text().splitlines():
        m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:(\d+)\s+)?(\w+)$", line)
        if m and m.group(3) in AIO_CALLS:
            counts[m.group(3)] = int(m.group(1))
    total = sum(counts.values())
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:4]
    return total / ios, ", ".join(f"{k} {v / ios:.2f}" for k, v in top)


def ensure_tools(ctx):
    missing = [t for t in ("fio", "strace") if not shutil.which(t)]
    if missing:
        subprocess.run(["scripts/setup.sh", "fio"], cwd=ctx.root, check=False)
    missing = [t for t in ("fio", "strace") if not shutil.which(t)]
    if missing:
        raise BenchError("not installed: " + ", ".join(missing))


def run(ctx):
    ensure_tools(ctx)
    p = plan(ctx.mode, ctx.smoke)
    lib = ctx.build / "src" / "aio" / "libuaio-posix.so"
    if not lib.exists():   # else every "uaio" run would be glibc's
        raise BenchError(f"not built: {lib}")
    env = {"glibc": None, "uaio": {"LD_PRELOAD": str(lib)}, "io_uring": None, "psync": None}
    engine = {"glibc": "posixaio", "uaio": "posixaio", "io_uring": "io_uring", "psync": "psync"}
    path = ctx.scratch / "fio.dat"
    make_file(path, p["file_mb"])
    R = Samples(ctx.log)
    # The data first: what the drop-in writes must read back right (fio's
    # crc32c verify), or its numbers mean nothing. Untimed.
    vpath = ctx.scratch / "fio-verify.dat"
    checked = {}
    for v in ("glibc", "uaio"):
        for rw, depth in (("randwrite", 1), ("randwrite", 16), ("write", 16)):
            argv = ["fio", "--name=verify", f"--filename={vpath}", f"--rw={rw}", "--bs=4k",
                    f"--iodepth={depth}", "--ioengine=posixaio", "--size=16m",
                    "--verify=crc32c", "--do_verify=1", "--verify_fatal=1", "--randrepeat=1",
                    "--verify_state_save=0"]   # else fio leaves local-verify-*.state here
            ok = R.run(("verify", v, rw, depth), argv, env=env[v], timeout=300,
                       what=f"{v} verify {rw} d{depth}") is not None
            checked[v] = checked.get(v, True) and ok
    if vpath.exists():
        vpath.unlink()
    cells = [(rw, bs, d, c) for c in CACHES for rw, bs in WORKLOADS for d in p["depths"]]
    for rep in range(p["reps"]):
        ctx.log(f"fio: repetition {rep + 1}/{p['reps']}, {len(cells)} cells")
        for i, (rw, bs, depth, cache) in enumerate(cells):
            if cache == "cached":
                warm(path)
            # Rotate the order per cell and repetition: drifts hit all alike.
            for v in rotated(VARIANTS, i + rep):
                if v == "psync" and depth != p["depths"][0]:
                    continue	# psync has no queue: depth 1 only
                argv = fio_argv("fio", path, rw, bs, depth, cache, engine[v], secs=p["secs"])
                key = (rw, bs, depth, cache, v)
                # Each write run starts with no dirty pages (untimed; the
                # page cache stays): else the one after another writer
                # pays for that writer's writeback.
                if "write" in rw:
                    os.sync()
                cpu0 = children_cpu()
                rec = R.run(key, argv, env=env[v], timeout=300, pick=fio_iops,
                            what=f"{v} {rw} {bs} d{depth} {cache}")
                if rec and rec["ios"]:
                    R.add(key + ("cpu",), (children_cpu() - cpu0) * 1e6 / rec["ios"])

    def med(key):
        return R.med(key + ("iops",))

    def cpu(key):
        us = R.med(key + ("cpu",))
        return "–" if us is None else f"{us:.1f}"

    rows, below, cached_read, direct_all = [], [], [], []
    for rw, bs, depth, cache in cells:
        g, u = med((rw, bs, depth, cache, "glibc")), med((rw, bs, depth, cache, "uaio"))
        r = ratio(u, g)
        label = f"{rw} {bs} d{depth} {cache}"
        if r is None:
            below.append(f"{label} (not measured)")
        elif r < 1.0:
            below.append(f"{label} ({ctx.fmt_ratio(r, 1.0)})")
        if depth >= 16 and cache == "cached" and "read" in rw:
            cached_read.append((label, r))
        if depth >= 16 and cache == "direct":
            direct_all.append((label, r))
        rows.append([rw, bs, depth, cache, ctx.fmt_num(g), ctx.fmt_num(u), ctx.fmt_ratio(r),
                     ctx.fmt_num(med((rw, bs, depth, cache, "io_uring"))),
                     ctx.fmt_num(med((rw, bs, p["depths"][0], cache, "psync"))),
                     cpu((rw, bs, depth, cache, "glibc")), cpu((rw, bs, depth, cache, "uaio"))])
    md = [f"fio {ctx.run_cmd(['fio', '--version']).strip()}; file {p['file_mb']} MiB on "
          f"{ctx.scratch}; {p['secs']} s per cell, {p['reps']} repetitions, variants "
          "interleaved (order rotated per cell); medians of IOPS. uaio = the same fio "
          "binary with `LD_PRELOAD=libuaio-posix.so`. cached: `--invalidate=0` after "
          "reading the file; cold: fio's default `--invalidate=1`; direct: `--direct=1`. "
          "psync is depth 1 only. Every write run starts with no dirty pages (`sync` before "
          "it, untimed). CPU µs/request: user + system time of the whole fio "
          "run (job process, all its threads) over the requests it did, median. "
          "Data check before the cells (untimed): posixaio random and sequential 4 KiB writes, "
          "depth 1 and 16, read back with `--verify=crc32c`: glibc "
          f"{'passed' if checked.get('glibc') else '**FAILED**'}, uaio drop-in "
          f"{'passed' if checked.get('uaio') else '**FAILED**'}.\n",
          ctx.table(["rw", "bs", "depth", "cache", LABEL["glibc"], LABEL["uaio"],
                     "uaio ÷ glibc", LABEL["io_uring"], LABEL["psync"],
                     "CPU µs/req, glibc", "CPU µs/req, uaio"], rows)]

    def floor(pairs, target):
        miss = [f"{lbl} ({ctx.fmt_ratio(r, target)})" if r is not None else f"{lbl} (not measured)"
                for lbl, r in pairs if r is None or r < target]
        return "**met**" if not miss else "**missed** at " + "; ".join(miss)

    # A drop-in that lost or tore data has no speed worth a verdict.
    void = None if checked.get("uaio") else \
        "**missed**: the drop-in failed the data check, so its numbers do not count"

    top = max(p["depths"])
    noisy = [c + (v,) for c in cells for v in VARIANTS
             if (c[3] != "direct" and "write" in c[0] and c[2] == top)
             or (c[3] == "cold" and c[0] == "read" and c[1] == "128k")]
    md.append(reading(spread_text(R, noisy)))
    md.append("\nTargets (issue 10):\n")
    md.append(f"- ≥ 1.0× glibc in every cell: "
              f"{void or ('**met**' if not below else '**missed** at ' + '; '.join(below))}\n")
    md.append(f"- ≥ 2× glibc at depth ≥ 16, cached reads: {void or floor(cached_read, 2.0)}\n")
    md.append(f"- ≥ 2× glibc at depth ≥ 16, O_DIRECT: {void or floor(direct_all, 2.0)}\n")

    # Syscalls per request, fixed request count, both libraries.
    srows, per_write = [], {}
    for rw, cache in (("randwrite", "cached"), ("randread", "cached")):
        warm(path)
        for v in ("glibc", "uaio"):
            argv = fio_argv("fio", path, rw, "4k", 16, cache, "posixaio", ios=p["ios"])
            try:	# a failed count loses its row, not the cells above
                per, top = strace_calls(ctx, argv, env[v], p["ios"])
            except BenchError as e:
                R.fail(f"{v} strace {rw}", e)
                srows.append([f"{rw} 4k d16 {cache}", LABEL[v], "failed", "–"])
                continue
            srows.append([f"{rw} 4k d16 {cache}", LABEL[v], f"{per:.2f}", top])
            if rw == "randwrite":
                per_write[v] = per
    md.append(f"\nSyscalls per request (`strace -f -c`, {p['ios']} requests, all "
              "threads; fio's own timer and reaping calls left out):\n\n")
    md.append(ctx.table(["cell", "variant", "syscalls / request", "largest"], srows))
    g, u = per_write.get("glibc"), per_write.get("uaio")
    md.append("\nTarget (issue 10): per buffered write at depth 16, no more syscalls than glibc: " +
              (void if void else "not measured" if g is None or u is None else
               f"{'**met**' if u <= g else '**missed**'} ({u:.2f} against {g:.2f})") + "\n")
    if R.errors:
        md.append("\nErrors:\n\n" + "\n".join(f"- `{e}`" for e in R.errors) + "\n")
    return "".join(md)
