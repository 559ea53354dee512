"""reshape: the same measurements from two builds in one run — the commit
before the core reshaping ("before") and ctx.build ("after") — to show
whether the reshaping cost speed. Opt-in: run.py runs it only when named in
--only (`make bench-reshape`).

"before" is exported with `git archive` (the repository and its worktrees
are not touched) to /var/tmp/uaio-bench-old/<commit>/src and built there,
Release with -DUAIO_BUILD_TESTS=OFF, like make bench builds build-rel; a
finished build of that commit is reused. UAIO_RESHAPE_BEFORE=<rev> picks
another "before" commit, UAIO_RESHAPE_DIR another place for it.

Measured, every variant of a point interleaved within each repetition, the
order rotated between repetitions (and which build goes first alternated):
  - pipetest rings at P = 1, 100, 10000, S = 12, T = 1: the uaio reactor
    modes, the uaio proactor and plain epoll;
  - pipetest nop round trips, uaio at batch 1 and 32, raw liburing beside;
  - aiobench, a few cells of the aio suite: the drop-in (each build's
    aiobench under LD_PRELOAD of its own libuaio-posix.so), the native
    uaio_* build, and plain glibc aio_* beside.
The rows that do not depend on uaio (epoll, raw liburing, glibc) run the
same code from both builds when their bench program's sources are the same
in both: their before/after gap is then this run's noise. When those
sources differ (bench_diff), the row is labelled so and left out of the
noise.

Called by bench/run.py as run(ctx); returns the markdown section.
"""
import math
import os
import shutil
import subprocess
from pathlib import Path

from common import BenchError, Samples, make_file, rotated, warm

BEFORE = "94c7e0e"  # the last commit before the core reshaping (76ef3d8 onwards)
OLD_BASE = Path("/var/tmp/uaio-bench-old")
STAMP = ".uaio-reshape-built"

RING_MODES = ["uaio-reactor", "uaio-reactor-et", "uaio-reactor-epoll", "uaio-proactor",
              "uaio-proactor-epoll", "epoll"]
RING_LABEL = {
    "uaio-reactor": "uaio Reactor",
    "uaio-reactor-et": "uaio Reactor, UAIO_EDGE",
    "uaio-reactor-epoll": "uaio Reactor, epoll backend",
    "uaio-proactor": "uaio Proactor (read)",
    "uaio-proactor-epoll": "uaio Proactor (read), epoll backend",
    "epoll": "epoll (LT)",
}
RING_REF = {"epoll"}
NOP_KINDS = ["uaio", "uring"]
NOP_LABEL = {"uaio": "uaio (io_uring)", "uring": "raw liburing"}
NOP_REF = {"uring"}
AIO_VARIANTS = ["dropin", "native", "glibc"]
AIO_LABEL = {"dropin": "uaio drop-in", "native": "uaio native", "glibc": "glibc aio_*"}
AIO_REF = {"glibc"}
BUILDS = ["before", "after"]


def plan(mode, smoke):
    if smoke:
        return dict(reps=2, time=0.02, warmup=0.005, P=[1, 100, 10000], batches=[1, 32],
                    qd_secs=0.05, qd_mb=16, direct_mb=32, lio_mb=4, lio_n=5000)
    if mode == "full":
        return dict(reps=9, time=0.5, warmup=0.1, P=[1, 100, 10000], batches=[1, 32],
                    qd_secs=1.0, qd_mb=256, direct_mb=1024, lio_mb=16, lio_n=5000)
    return dict(reps=5, time=0.25, warmup=0.05, P=[1, 100, 10000], batches=[1, 32],
                qd_secs=0.5, qd_mb=128, direct_mb=256, lio_mb=16, lio_n=5000)


def aio_cells(cfg, S):
    """(cell id, label, experiment, args, metric): small, quick cells of
    the aio suite's (b) and (d)."""
    qd, direct = S / "qd.bin", S / "direct.bin"
    secs = ["--secs", cfg["qd_secs"]]
    return [
        ("qd-c1", "random 4 KiB aio_read, cached, M=1 (reads/s)", "qd",
         ["--file", qd, "--depth", 1] + secs, "rps"),
        ("qd-c16", "random 4 KiB aio_read, cached, M=16 (reads/s)", "qd",
         ["--file", qd, "--depth", 16] + secs, "rps"),
        ("qd-d16", "random 4 KiB aio_read, O_DIRECT, M=16 (reads/s)", "qd",
         ["--file", direct, "--depth", 16, "--direct"] + secs, "rps"),
        ("lio", f"{cfg['lio_mb']} MB by lio_listio(LIO_WAIT) as N={cfg['lio_n']} (MB/s)", "lio",
         ["--file", S / "out.bin", "--mb", cfg["lio_mb"], "--n", cfg["lio_n"], "--overwrite"], "mbps"),
    ]


def git(ctx, *args):
    return ctx.run_cmd(["git", "-C", ctx.root] + list(args)).strip()


def build_before(ctx, rev):
    """The before commit exported and built Release; returns its build dir."""
    full = git(ctx, "rev-parse", "--verify", f"{rev}^{{commit}}")
    base = Path(os.environ.get("UAIO_RESHAPE_DIR", OLD_BASE)) / full[:12]
    src, bld = base / "src", base / "build-rel"
    stamp = bld / STAMP
    if stamp.exists() and stamp.read_text().strip() == full:
        ctx.log(f"before: reusing {bld} ({full[:12]})")
        return bld
    ctx.log(f"before: exporting {full[:12]} to {src}")
    shutil.rmtree(base, ignore_errors=True)
    src.mkdir(parents=True)
    arch = subprocess.Popen(["git", "-C", str(ctx.root), "archive", "--format=tar", full],
                            stdout=subprocess.PIPE)
    untar = subprocess.run(["tar", "-x", "-C", str(src)], stdin=arch.stdout)
    arch.stdout.close()
    if arch.wait() != 0 or untar.returncode != 0:
        raise BenchError(f"git archive {full[:12]} | tar -x failed")
    ctx.log(f"before: building {bld} (Release, no tests)")
    ctx.run_cmd(["cmake", "-S", src, "-B", bld, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                 "-DUAIO_BUILD_TESTS=OFF"], timeout=600)
    ctx.run_cmd(["ninja", "-C", bld], timeout=3600)
    stamp.write_text(full + "\n")
    return bld


def build_type(build):
    try:
        for line in (build / "CMakeCache.txt").read_text().splitlines():
            if line.startswith("CMAKE_BUILD_TYPE:"):
                return line.split("=", 1)[1]
    except OSError:
        pass
    return "?"


class Build:
    """One build's binaries and what its pipetest accepts."""

    def __init__(self, ctx, name, path):
        self.name, self.path = name, path
        self.pipetest = path / "bench" / "pipetest" / "pipetest"
        self.aiobench = path / "bench" / "aio" / "aiobench"
        self.native = path / "bench" / "aio" / "aiobench_native"
        self.lib = path / "src" / "aio" / "libuaio-posix.so"
        for f in (self.pipetest, self.aiobench, self.native, self.lib):
            if not f.exists():
                raise BenchError(f"{name}: {f} not built")
        self.modes = set(ctx.run_cmd([self.pipetest, "--list"]).split())
        try:
            usage = ctx.run_cmd([self.pipetest, "--help"])
        except BenchError as e:  # usage may go to stderr with a non-zero exit
            usage = str(e)
        self.has_warmup = "--warmup" in usage
        self.has_nop = "--nop" in usage


def ratio_stats(R, key_b, key_a):
    """(median ratio, best ratio, own noise) of after over before; own
    noise is the larger half relative range of the two sides' samples."""
    vb, va = R.values(key_b), R.values(key_a)
    if not vb or not va:
        return None, None, None
    mb, ma = R.med(key_b), R.med(key_a)
    rm = ma / mb if mb else None
    bb, ba = R.best(key_b), R.best(key_a)
    rb = ba / bb if bb else None
    own = max((max(v) - min(v)) / (2 * R.med(k)) if R.med(k) else 0.0
              for v, k in ((vb, key_b), (va, key_a)))
    return rm, rb, own


def run(ctx):
    cfg = plan(ctx.mode, ctx.smoke)
    fn, fr = ctx.fmt_num, ctx.fmt_ratio
    rev = os.environ.get("UAIO_RESHAPE_BEFORE", BEFORE)
    before_sha = git(ctx, "rev-parse", "--short", f"{rev}^{{commit}}")
    after_sha = git(ctx, "rev-parse", "--short", "HEAD")
    # What in the working tree could make build-rel differ from HEAD.
    dirty = git(ctx, "status", "--porcelain", "--untracked-files=no", "--", "src", "include",
                "cmake", "CMakeLists.txt", ":(glob)bench/**/*.c", ":(glob)bench/**/*.h",
                ":(glob)bench/**/CMakeLists.txt").splitlines()
    # The bench programs' sources: before vs the working tree.
    bench_diff = git(ctx, "diff", "--name-only", before_sha, "--", ":(glob)bench/**/*.c",
                     ":(glob)bench/**/*.h", ":(glob)bench/**/CMakeLists.txt").split()
    between = git(ctx, "log", "--reverse", "--format=%h %s", f"{before_sha}..HEAD",
                  "--", "src", "include").splitlines()

    B = {"before": Build(ctx, "before", build_before(ctx, rev)),
         "after": Build(ctx, "after", ctx.build)}
    # Was a source file changed after the after binaries were linked?
    # (ninja -n cannot tell: the globbed source lists make it re-run cmake.)
    built = min(f.stat().st_mtime for f in (B["after"].pipetest, B["after"].native, B["after"].lib))
    stale = [str(f.relative_to(ctx.root)) for d in ("src", "include") for f in (ctx.root / d).rglob("*")
             if f.is_file() and f.stat().st_mtime > built]
    modes = [m for m in RING_MODES if all(m in b.modes for b in B.values())]
    missing = [m for m in RING_MODES if m not in modes]
    nop_ok = all(b.has_nop for b in B.values())
    # --warmup for both builds or for neither: both sides measured alike.
    warmup_ok = all(b.has_warmup for b in B.values())

    R = Samples(ctx.log)
    S = ctx.scratch
    cells = aio_cells(cfg, S)
    ctx.log("generating data files")
    make_file(S / "qd.bin", cfg["qd_mb"])
    make_file(S / "direct.bin", cfg["direct_mb"])

    def pt(b, argv):
        if warmup_ok:
            argv = argv + ["--warmup", cfg["warmup"]]
        return [B[b].pipetest] + argv + ["--time", cfg["time"]]

    def aio(b, v, exp, args):
        exe = B[b].native if v == "native" else B[b].aiobench
        env = {"LD_PRELOAD": str(B[b].lib)} if v == "dropin" else None
        return [exe, exp] + [str(a) for a in args], env

    for rep in range(cfg["reps"]):
        ctx.log(f"repetition {rep + 1}/{cfg['reps']}")
        order_b = rotated(BUILDS, rep)
        for P in cfg["P"]:
            for m in rotated(modes, rep):
                for b in order_b:
                    R.run(("ring", P, m, b), pt(b, ["--mode", m, "-P", P, "-S", 12, "-T", 1]),
                          timeout=120, pick="passes_per_sec", what=f"{b} ring {m} P={P}")
        if nop_ok:
            for batch in cfg["batches"]:
                for k in rotated(NOP_KINDS, rep):
                    for b in order_b:
                        R.run(("nop", batch, k, b), pt(b, ["--nop", k, "--batch", batch]),
                              timeout=120, pick="roundtrips_per_sec",
                              what=f"{b} nop {k} batch {batch}")
        warm(S / "qd.bin")
        for cid, _, exp, args, metric in cells:
            for v in rotated(AIO_VARIANTS, rep):
                for b in order_b:
                    argv, env = aio(b, v, exp, args)
                    R.run(("aio", cid, v, b), argv, env=env, timeout=600, pick=metric,
                          what=f"{b} aio {v} {exp} {' '.join(map(str, args))}")
                    if exp == "lio":
                        (S / "out.bin").unlink(missing_ok=True)

    # ---- tables: one per part; reference rows give the part's noise.
    parts = []
    ring_rows = [(f"{RING_LABEL[m]}, P={P}", ("ring", P, m), m in RING_REF)
                 for P in cfg["P"] for m in modes]
    parts.append(("pipetest: token passes/s around a ring of P pipes (S = 12, T = 1)",
                  "pipetest rings", ring_rows, "bench/pipetest/"))
    if nop_ok:
        nop_rows = [(f"{NOP_LABEL[k]}, batch {batch}", ("nop", batch, k), k in NOP_REF)
                    for batch in cfg["batches"] for k in NOP_KINDS]
        parts.append(("pipetest --nop: nop round trips/s", "nop round trips", nop_rows,
                      "bench/pipetest/"))
    aio_rows = [(f"{lbl}: {AIO_LABEL[v]}", ("aio", cid, v), v in AIO_REF)
                for cid, lbl, *_ in cells for v in AIO_VARIANTS]
    parts.append(("aiobench: cells of the aio suite", "aio", aio_rows, "bench/aio/"))

    ap = B["after"].path
    ap = ap.relative_to(ctx.root) if ap.is_relative_to(ctx.root) else ap
    after_notes = []
    if dirty:
        after_notes.append(f"the working tree has uncommitted changes to {len(dirty)} file(s) "
                           "under src/, include/ or the build files")
    if stale:
        after_notes.append(f"**{len(stale)} file(s) under src/ or include/ changed after it was "
                           f"built**, e.g. `{stale[0]}`")
    bt = {build_type(b.path) for b in B.values()}
    md = ["## Before and after the core reshaping\n\n",
          f"**before** = `{before_sha}`, exported with `git archive` and built in "
          f"`{B['before'].path}`; **after** = `{after_sha}`, the build in `{ap}`"
          + (f" ({'; '.join(after_notes)})" if after_notes else "") + ". "
          + (f"Both are {bt.pop()} builds. " if len(bt) == 1 else
             f"Build types differ: {build_type(B['before'].path)} before, "
             f"{build_type(B['after'].path)} after. ") +
          ("The bench programs are built from the same sources in both. " if not bench_diff else
           f"The bench programs' sources differ between the two in: "
           f"{', '.join(f'`{f}`' for f in bench_diff)}. ") +
          f"Mode **{ctx.mode}**: {cfg['reps']} repetitions; within each, every variant of a "
          "point runs from both builds back to back, the order of the variants rotated and the "
          "build that goes first alternated between repetitions. Higher is better everywhere.\n\n",
          f"Commits to src/ and include/ in between ({len(between)}): " +
          (", ".join(f"`{c.split()[0]}`" for c in between) or "none") + ".\n\n",
          "How to read it: *after ÷ before* is the ratio of the medians (best-of beside it). "
          "The reference rows (epoll, raw liburing, glibc aio_*) run code that does not "
          "depend on uaio; where their bench program's sources are identical in both builds "
          "their gap is this run's noise (a reference row whose sources differ is labelled so "
          "and not used as noise). A uaio "
          "row counts as slower (or faster) than before only when its median ratio is below "
          "1 − noise (above 1 + noise), noise being the larger of the part's largest reference "
          "gap |1 − ratio| and the row's own half relative range (max − min) / 2·median of "
          "either build's samples.\n"]
    if missing:
        md.append(f"\npipetest modes not in both builds, left out: {', '.join(missing)}.\n")
    if not nop_ok:
        md.append("\npipetest --nop not in both builds: nop round trips left out.\n")
    if not warmup_ok:
        md.append("\npipetest --warmup not in both builds: neither build's runs use it.\n")

    summary = []
    for title, short, rows, bench_dir in parts:
        # The reference rows' bench program: its sources may differ between
        # the builds, and then its gap is not noise alone.
        changed = [f for f in bench_diff if f.startswith(bench_dir)]
        ref_gaps = []
        for _, key, ref in rows:
            rm, _, _ = ratio_stats(R, key + ("before",), key + ("after",))
            if ref and not changed and rm is not None:
                ref_gaps.append(abs(1 - rm))
        aa = max(ref_gaps) if ref_gaps else None
        trows, slower, faster, logs, noises = [], [], [], [], []
        for label, key, ref in rows:
            kb, ka = key + ("before",), key + ("after",)
            rm, rb, own = ratio_stats(R, kb, ka)
            if ref:
                verdict = ("reference (same code in both)" if not changed else
                           f"reference, not used as noise: {bench_dir} sources differ")
            elif rm is None:
                verdict = "not measured"
            else:
                noise = max(aa or 0.0, own)
                noises.append(noise)
                logs.append(math.log(rm))
                if rm < 1 - noise:
                    verdict = f"**slower** (noise ±{noise * 100:.0f}%)"
                    slower.append(f"{label} ({rm:.2f}×, noise ±{noise * 100:.0f}%)")
                elif rm > 1 + noise:
                    verdict = f"faster (noise ±{noise * 100:.0f}%)"
                    faster.append(label)
                else:
                    verdict = f"within noise (±{noise * 100:.0f}%)"
            trows.append([label, fn(R.med(kb)), fn(R.med(ka)), fr(rm),
                          fn(R.best(kb)), fn(R.best(ka)), fr(rb), verdict])
        md.append(f"\n### {title}\n\n")
        md.append(ctx.table(["cell", "before (median)", "after (median)", "after ÷ before",
                             "before (best)", "after (best)", "after ÷ before (best)",
                             "verdict"], trows))
        gm = math.exp(sum(logs) / len(logs)) if logs else None
        md.append(f"\nNoise from the reference rows: "
                  f"{'±' + format(aa * 100, '.0f') + '%' if aa is not None else 'not measured'}"
                  + (f" (their bench sources differ between the builds: "
                     f"{', '.join(f'`{f}`' for f in changed)}; only each row's own range counts)"
                     if changed else "") + "; "
                  f"uaio rows: geometric mean after ÷ before {fr(gm)}, "
                  f"{len(slower)} slower, {len(faster)} faster, "
                  f"{len(logs) - len(slower) - len(faster)} within noise.\n")
        summary.append((short, slower, len(logs), noises))

    measured = sum(n for _, _, n, _ in summary)
    bad = [(short, s) for short, s, _, _ in summary if s]
    # The noise bands the verdict used, per part (each uaio row's own).
    bands = "; ".join(
        f"{short} ±" + "–".join(dict.fromkeys(f"{x * 100:.0f}%" for x in (min(ns), max(ns))))
        for short, _, _, ns in summary if ns)
    if not measured:
        verdict = "**not measured**"
    elif not bad:
        verdict = "**yes**"
    else:
        verdict = "**no**: " + "; ".join(f"{short}: {', '.join(s)}" for short, s in bad)
    if R.errors:
        verdict += f" ({R.n_failed} run(s) failed, listed below; their rows have fewer samples or none)"
    if bands:
        verdict += f" (noise bands used: {bands})"
    md.append(f"\n**No suite slower than before by more than noise:** {verdict}\n")
    if ctx.smoke:
        md.append("\n(Smoke run: too few, too short samples for the verdict to mean anything.)\n")
    if R.errors:
        md.append("\n### Errors\n\n" + "\n".join(f"- `{e}`" for e in R.errors) + "\n")
    return "".join(md)
