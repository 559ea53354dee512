"""POSIX AIO: the UAIO thesis experiments (ch. 5) and a queue-depth sweep,
each run five ways in one run on the same files: glibc, uaio through the
drop-in (LD_PRELOAD=libuaio-posix.so on the very same binary), uaio's
native uaio_* API, raw liburing (the practical limit) and plain
pread/pwrite. In (b) the liburing peer does one io_uring write per request
while uaio merges adjacent list entries into one pwritev, so the target
"≥ 0.9× liburing at N = 50000" compares unlike kernel work (said beside it).

Called by bench/run.py as run(ctx); returns the markdown section.
"""

from common import BenchError, Samples, fmt_pct, fmt_ratio, make_file, ratio, rotated, verdict, warm

VARIANTS = ["glibc", "dropin", "native", "liburing", "sync"]


def one_verdict(r, t, n=None, reps=None):
    """A single ratio against a floor target; n, the fewest samples behind
    it, is shown when below reps."""
    if r is None:
        return "**not measured**"
    few = f", n={n} of {reps}" if n is not None and reps and n < reps else ""
    if r >= t:
        return f"**met** ({fmt_ratio(r, t)}{few})"
    return f"**missed** ({fmt_ratio(r, t)}, {fmt_pct((t - r) / t)} short{few})"
LABEL = {
    "glibc": "glibc aio_*",
    "dropin": "uaio drop-in (LD_PRELOAD)",
    "native": "uaio native uaio_*",
    "liburing": "raw liburing",
    "sync": "plain pread/pwrite",
}


def plan(mode, smoke):
    if smoke:
        return dict(reps=1, reps_a=1, write_mb=[8], lio_mb=8, lio_n=[50, 5000], procs_k=[2],
                    procs_file_mb=16, qd_depth=[1, 16], qd_secs=0.1, qd_file_mb=32,
                    direct_file_mb=64, ov_chunks=8, ov_kb=256, mem_n=4096)
    if mode == "full":
        return dict(reps=5, reps_a=7, write_mb=[50, 100, 200, 500], lio_mb=64,
                    lio_n=[50, 500, 5000, 20000, 50000], procs_k=[10, 20, 30, 40, 50, 60],
                    procs_file_mb=512, qd_depth=[1, 16, 256, 4096], qd_secs=2.0,
                    qd_file_mb=256, direct_file_mb=2048, ov_chunks=64, ov_kb=1024, mem_n=65536)
    return dict(reps=3, reps_a=5, write_mb=[50, 200], lio_mb=64,
                lio_n=[50, 500, 5000, 20000, 50000], procs_k=[10, 30, 60],
                procs_file_mb=256, qd_depth=[1, 16, 256, 4096], qd_secs=0.5,
                qd_file_mb=128, direct_file_mb=1024, ov_chunks=48, ov_kb=1024, mem_n=65536)


class Runner(Samples):
    """aiobench's five variants; samples under key + (variant, metric)."""

    def __init__(self, ctx):
        super().__init__(ctx.log)
        d = ctx.build / "bench" / "aio"
        lib = ctx.build / "src" / "aio" / "libuaio-posix.so"
        if not lib.exists():   # else every "drop-in" run would be glibc's
            raise BenchError(f"not built: {lib}")
        self.cmd = {
            "glibc": ([str(d / "aiobench")], None),
            "dropin": ([str(d / "aiobench")], {"LD_PRELOAD": str(lib)}),
            "native": ([str(d / "aiobench_native")], None),
            "liburing": ([str(d / "aiobench_uring")], None),
            "sync": ([str(d / "aiobench")], None),
        }

    def one(self, variant, exp, args, key, metric, timeout=600):
        argv, env = self.cmd[variant]
        argv = argv + [exp] + [str(a) for a in args]
        if variant == "sync":
            argv += ["--api", "sync"]
        metrics = list(metric) if isinstance(metric, (list, tuple)) else [metric]
        return self.run(key + (variant,), argv, env=env, timeout=timeout, pick=metrics,
                        what=f"{variant} {exp} {' '.join(map(str, args))}")

    def med(self, key, variant, m):
        return super().med(key + (variant, m))

    def best(self, key, variant, m, higher=True):
        return super().best(key + (variant, m), higher)

    def pair(self, label, key, a, b, m, key_b=None):
        """(label, a ÷ b of the medians, the fewer samples of the two) for
        verdict(); b's key is key_b when given."""
        kb = key if key_b is None else key_b
        return (label, ratio(self.med(key, a, m), self.med(kb, b, m)),
                self.n(key + (a, m), kb + (b, m)))


def run(ctx):
    cfg = plan(ctx.mode, ctx.smoke)
    R = Runner(ctx)
    S = ctx.scratch
    fmt, rat = ctx.fmt_num, ctx.fmt_ratio
    md = ["## POSIX AIO: glibc vs uaio (drop-in and native) vs raw liburing\n",
          "One set of POSIX-only programs (`bench/aio/aiobench.c`) run as plain glibc, "
          "as the same binary under `LD_PRELOAD=libuaio-posix.so`, and rebuilt on the "
          "`uaio_*` names; beside them the raw liburing peer (`aiobench_uring.c`, "
          "SINGLE_ISSUER + DEFER_TASKRUN, batched submission and reaping) and plain "
          "pread/pwrite. "
          f"Mode **{ctx.mode}**: {cfg['reps']} repetitions, the five variants interleaved "
          "within each repetition; tables give medians (best-of in brackets where shown). "
          "Files live on the machine's disk-backed /var/tmp.\n"]
    ctx.log("generating data files")
    data = S / "data.bin"
    make_file(data, cfg["procs_file_mb"])
    direct = S / "direct.bin"
    make_file(direct, cfg["direct_file_mb"])
    qdfile = S / "qd.bin"
    make_file(qdfile, cfg["qd_file_mb"])
    out = S / "out.bin"

    # (a) one big write ------------------------------------------------
    for rep in range(cfg["reps_a"]):
        for mb in cfg["write_mb"]:
            for v in rotated(VARIANTS, rep):
                R.one(v, "write1", ["--file", out, "--mb", mb, "--overwrite"], ("a", mb), "mbps")
                out.unlink(missing_ok=True)   # a failed run may have made none
    rows = []
    for mb in cfg["write_mb"]:
        g = R.med(("a", mb), "glibc", "mbps")
        rows.append([f"{mb} MiB"] + [f"{fmt(R.med(('a', mb), v, 'mbps'))} ({fmt(R.best(('a', mb), v, 'mbps'))})"
                                    for v in VARIANTS] +
                    [rat(ratio(R.med(("a", mb), "dropin", "mbps"), g)),
                     rat(ratio(R.med(("a", mb), "native", "mbps"), g))])
    md.append("### (a) One aio_write of N MiB (thesis 5.2.1), MiB/s: median (best)\n")
    md.append("This VM hands freed memory back to its host, so the first write into fresh page-cache "
              "memory costs more, charged to whichever variant runs after a large free (up to ~0.7 CPU "
              "s/GB more, measured by hand outside this run, noted 2026-11-22). Each run therefore "
              "first writes its file whole, untimed, and the timed write lands on page-cache pages "
              "that exist already (`--overwrite`): the same copy into the page cache for every "
              f"variant. The order of the variants rotates between the {cfg['reps_a']} repetitions; best-of in brackets.\n")
    md.append(ctx.table(["size"] + [LABEL[v] for v in VARIANTS] +
                        ["drop-in ÷ glibc", "native ÷ glibc"], rows))
    a_pairs = [R.pair(f"{mb} MiB", ("a", mb), "dropin", "glibc", "mbps") for mb in cfg["write_mb"]]
    a_best = [(f"{mb} MiB", ratio(R.best(("a", mb), "dropin", "mbps"),
                                 R.best(("a", mb), "glibc", "mbps"))) for mb in cfg["write_mb"]]
    md.append(f"\nTarget drop-in ≥ 0.95× glibc (medians): {verdict(a_pairs, 0.95, cfg['reps_a'])}; (best-of): "
              f"{verdict(a_best, 0.95)}\n")

    # (b) lio_listio of N requests ---------------------------------------
    for rep in range(cfg["reps_a"]):
        for n in cfg["lio_n"]:
            for v in rotated(VARIANTS, rep):
                R.one(v, "lio", ["--file", out, "--mb", cfg["lio_mb"], "--n", n, "--overwrite"],
                      ("b", n), "mbps")
                out.unlink(missing_ok=True)   # a failed run may have made none
    rows = []
    for n in cfg["lio_n"]:
        g = R.med(("b", n), "glibc", "mbps")
        u = R.med(("b", n), "liburing", "mbps")
        d = R.med(("b", n), "dropin", "mbps")
        nat = R.med(("b", n), "native", "mbps")
        rows.append([n] + [f"{fmt(R.med(('b', n), v, 'mbps'))} ({fmt(R.best(('b', n), v, 'mbps'))})"
                           for v in VARIANTS] +
                    [rat(ratio(d, g)), rat(ratio(d, u)), rat(ratio(nat, u))])
    md.append(f"\n### (b) {cfg['lio_mb']} MiB written with lio_listio(LIO_WAIT) as N requests "
              "(thesis 5.2.2), MiB/s: median (best)\n")
    md.append("uaio sends adjacent entries of one list as a single `pwritev` (each request still gets "
              "its own result), so at large N it moves the same bytes in far fewer kernel operations "
              "than a program issuing one io_uring write per request, which is what the raw liburing "
              "peer does. Files and repetitions as in (a).\n")
    md.append(ctx.table(["N"] + [LABEL[v] for v in VARIANTS] +
                        ["drop-in ÷ glibc", "drop-in ÷ liburing", "native ÷ liburing"], rows))
    top = max(cfg["lio_n"])
    pairs_g = [R.pair(f"N={top}", ("b", top), "dropin", "glibc", "mbps")]
    pairs_u = [R.pair(f"N={top}", ("b", top), "dropin", "liburing", "mbps")]
    never = [R.pair(f"N={n}", ("b", n), "dropin", "glibc", "mbps") for n in cfg["lio_n"]]
    never_best = [(f"N={n}", ratio(R.best(("b", n), "dropin", "mbps"), R.best(("b", n), "glibc", "mbps")))
                  for n in cfg["lio_n"]]
    ra = cfg["reps_a"]
    md.append(f"\nTargets at N = {top}: drop-in ≥ 25× glibc: {verdict(pairs_g, 25, ra)}; "
              f"≥ 0.9× liburing: {verdict(pairs_u, 0.9, ra)} (unlike work: the liburing peer does one "
              "write per request, uaio merges adjacent entries into one pwritev). Never below glibc "
              f"(medians): {verdict(never, 1.0, ra)}; (best-of): {verdict(never_best, 1.0)}\n")
    if ctx.plot_lines(ctx.imgdir / "aio_lio.png", f"{cfg['lio_mb']} MiB via lio_listio as N requests",
                      "N requests (log)", "MiB/s (log)",
                      {LABEL[v]: [(n, R.med(("b", n), v, "mbps")) for n in cfg["lio_n"]] for v in VARIANTS},
                      logx=True, logy=True):
        md.append("\n![lio_listio MiB/s vs N](img/aio_lio.png)\n")

    # (c) K processes, each a list of reads --------------------------------
    for rep in range(cfg["reps"]):
        for cold in (0, 1):
            for k in cfg["procs_k"]:
                for v in rotated(VARIANTS, rep):
                    args = ["--file", data, "--k", k, "--reads", 200] + (["--cold"] if cold else [])
                    if not cold:
                        warm(data)
                    R.one(v, "procs", args, ("c", cold, k), "rps")
    rows = []
    c_pairs, c_cold = [], []
    for cold in (0, 1):
        for k in cfg["procs_k"]:
            key = ("c", cold, k)
            g = R.med(key, "glibc", "rps")
            d = R.med(key, "dropin", "rps")
            rows.append([("cold" if cold else "warm"), k] +
                        [fmt(R.med(key, v, "rps")) for v in VARIANTS] +
                        [rat(ratio(d, g)), rat(ratio(R.med(key, "native", "rps"), g))])
            c_pairs.append(R.pair(f"{'cold' if cold else 'warm'} K={k}", key, "dropin", "glibc", "rps"))
            if cold and k == min(cfg["procs_k"]):
                c_cold.append(R.pair(f"cold K={k}", key, "dropin", "glibc", "rps"))
    md.append("\n### (c) K processes, each lio_listio(LIO_WAIT) of 200 random 4 KiB reads "
              f"(thesis 5.2.3), reads/s over all processes ({cfg['procs_file_mb']} MiB file; "
              "cold = its pages dropped before each run)\n")
    md.append(ctx.table(["cache", "K"] + [LABEL[v] for v in VARIANTS] +
                        ["drop-in ÷ glibc", "native ÷ glibc"], rows))
    md.append(f"\nTargets: drop-in ≥ 0.95× glibc everywhere: {verdict(c_pairs, 0.95, cfg['reps'])}; "
              f"≥ 1.2× glibc cold at the smallest K: {verdict(c_cold, 1.2, cfg['reps'])}\n")

    # (d) queue depth ---------------------------------------------------
    warm(qdfile)
    for rep in range(cfg["reps"]):
        for direct_ in (0, 1):
            f = direct if direct_ else qdfile
            for m in cfg["qd_depth"]:
                for v in rotated(VARIANTS, rep):
                    if v == "sync" and m != 1:
                        continue
                    args = ["--file", f, "--depth", m, "--secs", cfg["qd_secs"]] + \
                        (["--direct"] if direct_ else [])
                    R.one(v, "qd", args, ("d", direct_, m), ["rps", "p50_us", "p99_us"])
    d_targets = []
    for direct_ in (0, 1):
        rows = []
        for m in cfg["qd_depth"]:
            key = ("d", direct_, m)
            cells = [m]
            for v in VARIANTS:
                r = R.med(key, v, "rps")
                cells.append("–" if r is None else
                             f"{fmt(r)} ({R.med(key, v, 'p50_us'):.0f} / {R.med(key, v, 'p99_us'):.0f} µs)")
            g, d = R.med(key, "glibc", "rps"), R.med(key, "dropin", "rps")
            u, p = R.med(key, "liburing", "rps"), R.med(("d", direct_, 1), "sync", "rps")
            cells += [rat(ratio(d, g)), rat(ratio(d, u)), rat(ratio(d, p))]
            rows.append(cells)
        what = "O_DIRECT" if direct_ else "buffered, file in the page cache"
        md.append(f"\n### (d) Random 4 KiB aio_read, M in flight, {what}: reads/s (p50 / p99 latency)\n")
        md.append(ctx.table(["M"] + [LABEL[v] for v in VARIANTS] +
                            ["drop-in ÷ glibc", "drop-in ÷ liburing", "drop-in ÷ pread at M=1"], rows))
        md.append("\nplain pread/pwrite runs at M = 1 only (it has no queue): *drop-in ÷ pread at "
                  "M=1* divides every row by that one figure.\n")
        if ctx.plot_lines(ctx.imgdir / f"aio_qd_{'direct' if direct_ else 'cached'}.png",
                          f"random 4 KiB reads, {what}", "requests in flight (log)", "reads/s (log)",
                          {LABEL[v]: [(m, R.med(("d", direct_, m), v, "rps")) for m in cfg["qd_depth"]]
                           for v in VARIANTS if v != "sync"}, logx=True, logy=True):
            md.append(f"\n![queue depth, {what}](img/aio_qd_{'direct' if direct_ else 'cached'}.png)\n")
    k1, kd = ("d", 0, 1), ("d", 1, max(cfg["qd_depth"]))
    d_targets.append(("cached M=1 vs glibc ≥ 7×",) + R.pair("", k1, "dropin", "glibc", "rps")[1:] + (7,))
    d_targets.append(("cached M=1 vs pread ≥ 0.65×",) + R.pair("", k1, "dropin", "sync", "rps")[1:] + (0.65,))
    d_targets.append((f"O_DIRECT M={kd[2]} vs glibc ≥ 100×",) + R.pair("", kd, "dropin", "glibc", "rps")[1:] + (100,))
    d_targets.append((f"O_DIRECT M={kd[2]} vs liburing ≥ 0.9×",) + R.pair("", kd, "dropin", "liburing", "rps")[1:] + (0.9,))
    md.append("\nTargets (drop-in): " + "; ".join(
        f"{name}: {one_verdict(r, t, n, cfg['reps'])}" for name, r, n, t in d_targets) + "\n")

    # (e) overlap -------------------------------------------------------
    ov = S / "overlap.bin"
    make_file(ov, cfg["ov_chunks"] * cfg["ov_kb"] // 1024 + 1)
    base = ["--file", ov, "--chunks", cfg["ov_chunks"], "--chunk-kb", cfg["ov_kb"], "--cold"]
    # Computation per chunk = the time a cold chunk takes to read here, so
    # that perfect overlap would halve the plain pread time.
    for rep in range(cfg["reps"]):
        R.one("sync", "overlap", base + ["--work-us", 0], ("e0",), "secs")
    io_s = R.med(("e0",), "sync", "secs")
    if io_s is None:
        md.append(f"\n### (e) Reading a cold file in {cfg['ov_chunks']} chunks of {cfg['ov_kb']} KiB "
                  "while computing on each (thesis 5.2.4)\n")
        md.append("\n**Not measured**: the plain-pread calibration run (no computation), which sets "
                  "the computation per chunk, failed in every repetition (see Errors); the experiment "
                  "was skipped.\n")
    else:
        work = max(100, int(io_s / cfg["ov_chunks"] * 1e6))
        for rep in range(cfg["reps"]):
            for v in rotated(VARIANTS, rep):
                R.one(v, "overlap", base + ["--work-us", work], ("e",), "secs")
        compute_s = cfg["ov_chunks"] * work / 1e6
        rows = [[LABEL[v], f"{R.med(('e',), v, 'secs') * 1e3:.0f}" if R.med(('e',), v, 'secs') else "–",
                 f"{R.best(('e',), v, 'secs', False) * 1e3:.0f}" if R.best(('e',), v, 'secs', False) else "–",
                 rat(ratio(R.med(("e",), "sync", "secs"), R.med(("e",), v, "secs")))]
                for v in VARIANTS]
        md.append(f"\n### (e) Reading a cold file in {cfg['ov_chunks']} chunks of {cfg['ov_kb']} KiB, in a "
                  f"shuffled order with readahead off, while computing {work} µs on each (thesis 5.2.4): "
                  "total ms (lower is better)\n")
        md.append(ctx.table(["variant", "median ms", "best ms", "speed-up over pread"], rows))
        md.append(f"\nReading alone takes {io_s * 1e3:.0f} ms here (median of plain pread with no "
                  f"computation, {len(R.values(('e0', 'sync', 'secs')))} of {cfg['reps']} calibration "
                  f"runs) and computing alone {compute_s * 1e3:.0f} ms, so the plain-pread row pays "
                  f"about {(io_s + compute_s) * 1e3:.0f} ms and a perfect overlap "
                  f"{max(io_s, compute_s) * 1e3:.0f} ms; each AIO variant reads chunk i+1 while it computes "
                  "on chunk i.\n")

    # memory --------------------------------------------------------------
    for rep in range(cfg["reps"]):
        for v in rotated(["glibc", "dropin", "native"], rep):
            R.one(v, "mem", ["--file", S / "unused", "--n", cfg["mem_n"]], ("m",), "bytes_per_req")
    md.append(f"\n### Memory per request in flight\n\n{cfg['mem_n']} one-byte reads waiting on 64 empty "
              "pipes; growth of the process RSS per request (the program's aiocbs and buffers were touched "
              "before), so user-space library state only.\n")
    md.append(ctx.table(["variant", "bytes per request"],
                        [[LABEL[v], f"{R.med(('m',), v, 'bytes_per_req'):.0f}"
                          if R.med(('m',), v, 'bytes_per_req') is not None else "–"]
                         for v in ("glibc", "dropin", "native")]))
    mb = R.med(("m",), "dropin", "bytes_per_req")
    md.append("\nTarget ≤ 128 B of library state per request beyond the aiocb: " +
              ("not measured" if mb is None else
               f"**{'met' if mb <= 128 else 'missed'}** ({mb:.0f} B; most of it is the request "
               "record, `struct aio_req` in src/aio/engine.h, the rest allocator and per-file "
               "bookkeeping)") + ".")
    mg = R.med(("m",), "glibc", "bytes_per_req")
    if mb is not None and mg is not None:
        md.append(f" Here glibc keeps {mg:.0f} B per request and the drop-in {mb:.0f} B" +
                  (": glibc keeps less, as it chains the caller's aiocbs through their own private "
                   "fields and parks the work in its helper threads.\n" if mg < mb else
                   ": the drop-in keeps no more than glibc.\n"))
    else:
        md.append("\n")

    if R.errors:
        md.append("\nErrors:\n\n" + "\n".join(f"- `{e}`" for e in R.errors) + "\n")
    return "\n".join(md)
