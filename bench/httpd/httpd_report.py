"""The httpd suite's markdown section and plots (bench/httpd/bench.py), and
the line count of uaio-httpd's source."""
import glob
import re

from common import plot_bars, ratio
from httpd_servers import BASE
from httpd_sets import SIZE_CLASSES, ZIPF_ALPHA, fmt_size

SETS = ["rice", "berkeley"]
DISTS = ["uniform", "zipf"]
CACHES = ["warm", "cold"]
# Reference sizes of two small static servers, not measured here (their
# source is not in this repository): labelled as such in the table.
REFERENCE_LOC = [("thttpd", "~10 000"), ("darkhttpd", "~3 000")]


def count_loc(paths):
    """Non-blank lines of C that are not only comments (/* */ and //;
    string and character literals are respected)."""
    total = 0
    for path in paths:
        with open(path, errors="replace") as f:
            text = f.read()
        # Blank out comments, keeping their newlines; leave literals alone.
        pat = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|//[^\n]*', re.S)

        def blank(m):
            s = m.group(0)
            return s if s[0] in "\"'" else re.sub(r"[^\n]", " ", s)
        for line in pat.sub(blank, text).splitlines():
            if line.strip():
                total += 1
    return total


def loc_table(ctx):
    src = ctx.root / "tools" / "uaio-httpd"
    files = sorted(glob.glob(str(src / "*.c")) + glob.glob(str(src / "*.h")))
    rows = []
    if files:
        n = count_loc(files)
        rows.append(["**uaio-httpd** (tools/uaio-httpd/*.c *.h, counted now)", f"{n:,}".replace(",", " "),
                     f"{len(files)} files"])
    else:
        rows.append(["**uaio-httpd**", "–", "tools/uaio-httpd has no source yet"])
    for name, loc in REFERENCE_LOC:
        rows.append([name, loc, "reference constant, not measured here"])
    return ("### Size of the server\n\nLines of C, not blank and not only comments (bench/httpd/"
            "httpd_report.py count_loc), beside the usual sizes of two small static servers "
            "(**reference constants**, not counted by this suite):\n\n"
            + ctx.table(["server", "lines of C", "notes"], rows))


def cell_label(dist, cache):
    return f"{dist} {cache}"


LAIO, BLOCKING, AIO_THREADS = "uaio-httpd laio", "uaio-httpd blocking", "nginx aio threads"


def targets(cells, med, fmt):
    """Issue 14's req/s and CPU targets, judged from this run's medians:
    in memory (rice) <= 20 us of CPU per request and >= nginx sendfile's
    req/s; on the capped set (berkeley) >= nginx aio threads' req/s and
    laio >= 2x blocking."""
    def verdict(misses, n):
        return ("not measured" if not n else "**met**" if not misses
                else "**missed** at " + "; ".join(misses))

    def judge(name, test, show):
        misses, n = [], 0
        for st, d, c in cells:
            if st != name:
                continue
            n += 1
            ok = test(d, c)		# None: a median is missing
            if not ok:
                misses.append(f"{st} {d} {c} ({'not measured' if ok is None else show(d, c)})")
        return verdict(misses, n)

    def rps(st, d, c, srv):
        return med(st, d, c, srv, "rps")

    def over(a, b, k=1.0):
        return None if a is None or b is None else a >= k * b

    def at_most(a, limit):
        return None if a is None else a <= limit

    cpu = judge("rice", lambda d, c: at_most(med("rice", d, c, LAIO, "cpu_us"), 20),
                lambda d, c: f"{fmt(med('rice', d, c, LAIO, 'cpu_us'))} µs")
    vs_nginx = judge("rice", lambda d, c: over(rps("rice", d, c, LAIO), rps("rice", d, c, BASE)),
                     lambda d, c: f"{fmt(rps('rice', d, c, LAIO))} against "
                                  f"{fmt(rps('rice', d, c, BASE))}")
    vs_aio = judge("berkeley",
                   lambda d, c: over(rps("berkeley", d, c, LAIO), rps("berkeley", d, c, AIO_THREADS)),
                   lambda d, c: f"{fmt(rps('berkeley', d, c, LAIO))} against "
                                f"{fmt(rps('berkeley', d, c, AIO_THREADS))}")
    twice = judge("berkeley",
                  lambda d, c: over(rps("berkeley", d, c, LAIO), rps("berkeley", d, c, BLOCKING), 2),
                  lambda d, c: ratio_text(rps("berkeley", d, c, LAIO), rps("berkeley", d, c, BLOCKING)))
    return ("Targets (issue 14, medians of this run, every cell of the set):\n\n"
            f"- In memory (rice), {LAIO} ≤ 20 µs CPU per request: {cpu}\n"
            f"- In memory (rice), {LAIO} req/s ≥ {BASE}: {vs_nginx}\n"
            f"- Capped set (berkeley), {LAIO} req/s ≥ {AIO_THREADS}: {vs_aio}\n"
            f"- Capped set (berkeley), {LAIO} ≥ 2× {BLOCKING}: {twice}\n")


def ratio_text(a, b):
    r = ratio(a, b)
    return "–" if r is None else f"{r:.2f}×"


def report(ctx, cfg, S, srvs, sets, skip, cg_what, runs_s):
    fmt, rat = ctx.fmt_num, ctx.fmt_ratio
    reps = cfg["reps"]

    def med(*k):
        return S.med(k)

    md = ["## httpd: static files over HTTP/1.1\n",
          f"Mode **{ctx.mode}**: {reps} repetition{'s' if reps > 1 else ''}; in each, every server "
          "runs every cell one after the other (server order rotated per repetition); medians, "
          "best-of in brackets, ratios of medians to **nginx sendfile**. Every server has **one** "
          "worker (process or thread), listens on its own port on 127.0.0.1, serves the same "
          "directory with no access log, and is started fresh for every run, pinned to CPU 0 "
          f"(`taskset -c 0`); the load is `wrk -t1 -c{cfg['conns']} -d{cfg['secs']}s --latency` "
          "pinned to CPU 1, replaying a pre-drawn request list in order (bench/httpd/paths.lua). "
          f"During every run **{cfg['idle']} idle keep-alive connections** are held open to the "
          "server (bench/httpd/idle_conns.py, CPU 1: one request each, then idle). Before "
          "measuring and again after wrk, each run fetches a few files (the smallest, the largest, six others) over "
          "one keep-alive connection and compares them byte for byte, and checks a 404; a run that "
          "fails that, any response with status 400 or above (wrk's \"Non-2xx or 3xx\"), or more than 1 % socket errors is counted as failed, "
          "never as a number. **Warm**: the set read just before wrk (the set that does not fit: "
          "caches dropped, then its most popular files, twice the cgroup's limit worth, read from "
          "inside the cgroup, least popular first — what reading the whole set would leave); "
          "**cold**: `sync; echo 3 > /proc/sys/vm/drop_caches` just before wrk. **CPU µs/req**: "
          "the server's utime + stime (/proc/<pid>/stat, all its threads, 10 ms ticks) over the "
          "wrk run ÷ requests. **RSS**: VmRSS after the run / VmHWM (its peak since start).\n"]
    if ctx.smoke:
        md.append("**Smoke run: tiny sets, 1 s per run, four of the eight cells — the numbers "
                  "mean nothing.**\n")

    md.append("### File sets\n")
    classes = ", ".join(f"{p * 100:g} % {fmt_size(lo)}–{fmt_size(hi)}" for p, lo, hi in SIZE_CLASSES)
    rows = []
    for name in SETS:
        st = sets.get(name)
        if not st:
            rows.append([name] + ["–"] * 8 + [skip.get((name, None), "not run")])
            continue
        d = st["fs"].describe()
        lim = st.get("limit")
        rows.append([name, d["files"], fmt_size(d["total"]), fmt_size(d["mean"]),
                     fmt_size(d["median"]), fmt_size(d["p90"]), fmt_size(d["p99"]),
                     fmt_size(d["max"]),
                     f"{fmt_size(lim)} ({d['total'] / lim:.1f}× smaller than the set)" if lim
                     else "none (fits)", f"generated in {st['gen']:.0f} s"])
    md.append(ctx.table(["set", "files", "bytes", "mean", "median", "p90", "p99", "max",
                         "server's memory cgroup", "notes"], rows))
    md.append(f"\nSizes: the quantiles of a SPECweb99-like mixture, log-uniform within each class "
              f"({classes}), shuffled with a fixed seed; 100 files per directory. "
              + (f"The set that does not fit: the server runs in a memory cgroup ({cg_what}); "
                 "its page cache and its own memory count against the limit.\n" if cg_what else
                 f"**berkeley skipped: {skip.get(('berkeley', None))}**\n"))
    rows = []
    for name in SETS:
        st = sets.get(name)
        for dist in DISTS if st else []:
            rl = st["lists"][dist]
            rows.append([name, dist, rl.count, rl.distinct, fmt_size(rl.distinct_bytes),
                         fmt_size(rl.mean_bytes), f"{rl.top10 * 100:.0f} %"])
    if rows:
        md.append("\nRequest lists (one per set and distribution; wrk cycles through it; Zipf "
                  f"exponent {ZIPF_ALPHA:g} over a seeded permutation of the files):\n")
        md.append(ctx.table(["set", "distribution", "requests", "distinct files", "their bytes",
                             "mean bytes / request", "requests to the hottest files holding "
                             "10 % of the set's bytes"], rows))

    md.append("\nServers:\n")
    for s in srvs:
        what = (f"{s.version}; " if s.version else "") + (s.config or "")
        md.append(f"- **{s.name}**: " + (f"skipped: {s.why}" if s.why else what))
    md.append("")

    for name in SETS:
        st = sets.get(name)
        if not st:
            md.append(f"### {name}\n\nskipped: {skip.get((name, None), 'not run')}\n")
            continue
        for dist in DISTS:
            for cache in CACHES:
                md.append(f"### {name}, {dist}, {cache}\n")
                if (name, cache) in skip:
                    md.append(f"skipped: {skip[(name, cache)]}\n")
                    continue
                if cfg.get("cells") and (name, dist, cache) not in cfg["cells"]:
                    md.append("not run in the smoke run.\n")
                    continue
                base = med(name, dist, cache, BASE, "rps")
                rows = []
                for s in srvs:
                    k = (name, dist, cache, s.name)
                    n = len(S.values(k + ("rps",)))
                    if s.why:
                        rows.append([s.name] + ["–"] * 7 + [s.why])
                        continue
                    if not n:
                        rows.append([s.name] + ["–"] * 7 + ["no successful run (see Errors)"])
                        continue
                    notes = []
                    if n < reps:
                        notes.append(f"{reps - n} of {reps} runs failed")
                    se = S.values(k + ("sock_err",))
                    if any(se):
                        notes.append(f"socket errors: {int(max(se))} at most")
                    kept = S.values(k + ("idle_kept",))
                    nid = S.values(k + ("idle_n",))
                    if kept and nid and min(kept) < max(nid):
                        notes.append(f"closed idle connections: {int(max(nid) - min(kept))}")
                    killed = sum(S.values(k + ("killed",)))
                    if killed:
                        notes.append(f"{int(killed)} run(s) did not exit within 10 s of SIGTERM "
                                     "(killed)")
                    if nid and max(nid) < cfg["idle"]:
                        notes.append(f"only {int(min(nid))} of {cfg['idle']} idle connections "
                                     "opened")
                    rows.append([f"**{s.name}**" if s.name.startswith("uaio") else s.name,
                                 f"{fmt(S.med(k + ('rps',)))} [{fmt(S.best(k + ('rps',)))}]",
                                 rat(ratio(S.med(k + ("rps",)), base)),
                                 fmt(S.med(k + ("mbps",))),
                                 fmt(S.med(k + ("p50",))),
                                 f"{fmt(S.med(k + ('p99',)))} [{fmt(S.best(k + ('p99',), higher=False))}]",
                                 fmt(S.med(k + ("cpu_us",))),
                                 f"{fmt(S.med(k + ('rss',)))} / {fmt(S.med(k + ('hwm',)))}",
                                 "; ".join(notes)])
                md.append(ctx.table(["server", "req/s [best]", "÷ nginx sendfile", "MiB/s",
                                     "p50 ms", "p99 ms [best]", "CPU µs/req",
                                     "RSS / peak MiB", "notes"], rows))
                md.append("")
        groups = [s.name for s in srvs if not s.why]
        series = {cell_label(d, c): [med(name, d, c, g, "rps") for g in groups]
                  for d in DISTS for c in CACHES}
        series = {k: v for k, v in series.items() if any(x is not None for x in v)}
        png = f"httpd_{name}.png"
        if groups and series and plot_bars(
                ctx.imgdir / png, f"httpd, {name}-like set: req/s (medians, one worker each)",
                "requests / s", groups, series):
            md.append(f"![req/s per server, {name}-like set](img/{png})\n")

    cells = [(name, d, c) for name in SETS if name in sets for d in DISTS for c in CACHES
             if (name, c) not in skip and (not cfg.get("cells") or (name, d, c) in cfg["cells"])]
    if cells:
        md.append("### Summary: req/s ÷ nginx sendfile\n")
        md.append("Ratios of the medians above, every cell; above 1 = more requests per second "
                  "than nginx with sendfile.\n")
        rows = []
        for s in srvs:
            if s.why:
                continue
            rows.append([f"**{s.name}**" if s.name.startswith("uaio") else s.name] +
                        [rat(ratio(med(n, d, c, s.name, "rps"), med(n, d, c, BASE, "rps")))
                         for n, d, c in cells])
        md.append(ctx.table(["server"] + [f"{n} {d} {c}" for n, d, c in cells], rows))
        md.append("")
        md.append(targets(cells, med, fmt))

    md.append("### Idle keep-alive connections\n")
    md.append(f"Each run: the server's memory after the checks, then again with {cfg['idle']} "
              "idle keep-alive connections open (each has had one request answered). **Bytes / "
              "idle connection** = the growth of RssAnon (its private, anonymous memory) ÷ the "
              "connections: what one idle connection costs the server in user space (kernel "
              "socket memory is not in RSS; VmRSS would also count shared-library pages, which "
              "the memory cgroup of the berkeley cells reclaims and faults back at random). "
              "Medians over every run of every cell. nginx allocates its whole connection array "
              "(`worker_connections`) at start, so RSS before already holds that part.\n")
    rows = []
    for s in srvs:
        if s.why:
            rows.append([s.name, "–", "–", "–", "–", s.why])
            continue
        vals = {m: [v for name in SETS for d in DISTS for c in CACHES
                    for v in S.values((name, d, c, s.name, m))]
                for m in ("rss0", "rss_idle", "idle_b", "idle_kept", "idle_n")}
        if not vals["rss0"]:
            rows.append([s.name, "–", "–", "–", "–", "no successful run"])
            continue
        kept = ("all" if min(vals["idle_kept"]) >= max(vals["idle_n"])
                else f"{int(min(vals['idle_kept']))} of {int(max(vals['idle_n']))} at worst")
        rows.append([s.name, fmt(ctx.median(vals["rss0"])), fmt(ctx.median(vals["rss_idle"])),
                     fmt(ctx.median(vals["idle_b"])),
                     f"{fmt(min(vals['idle_b']))}–{fmt(max(vals['idle_b']))}", kept])
    md.append(ctx.table(["server", "RSS before MiB", f"RSS with {cfg['idle']} idle MiB",
                         "bytes / idle connection", "range over runs",
                         "idle connections still open after wrk"], rows))
    md.append("")
    idle = [v for name in SETS for d in DISTS for c in CACHES
            for v in S.values((name, d, c, LAIO, "idle_b"))]
    b = ctx.median(idle)
    md.append("Target (issue 14): ≤ 0.5 KB (500 bytes) per idle keep-alive connection, "
              f"{LAIO}: " + ("not measured" if b is None else
                             f"{'**met**' if b <= 500 else '**missed**'} ({fmt(b)} bytes)") + "\n")
    md.append(loc_table(ctx))
    md.append(f"\nRuns took {runs_s:.0f} s (set generation not included).\n")
    if S.errors:
        md.append("\nErrors:\n\n" + "\n".join(f"- {e}".replace("|", "\\|") for e in S.errors) + "\n")
    return "\n".join(md)

