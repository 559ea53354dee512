"""pipetest: token passes per second around a ring of P pipes (LaHaise, OLS 2002),
for poll(), epoll, raw liburing and uaio, plus nop round trips and memory.

Called by bench/run.py as run(ctx); returns the markdown section.
"""
from common import Samples, ratio, rotated, verdict

MODES = ["poll", "epoll", "epoll-et", "uring-poll", "uring-mpoll", "uring-read",
         "uaio-reactor", "uaio-reactor-et", "uaio-proactor", "uaio-reactor-epoll",
         "uaio-proactor-epoll"]
LABEL = {
    "poll": "poll()",
    "epoll": "epoll (LT)",
    "epoll-et": "epoll (ET)",
    "uring-poll": "liburing poll (one-shot)",
    "uring-mpoll": "liburing poll (multishot)",
    "uring-read": "liburing async read",
    "uaio-reactor": "uaio Reactor",
    "uaio-reactor-et": "uaio Reactor, UAIO_EDGE",
    "uaio-proactor": "uaio Proactor (read)",
    "uaio-reactor-epoll": "uaio Reactor, epoll backend",
    "uaio-proactor-epoll": "uaio Proactor, epoll backend",
}
# Modes for the S and T sweeps (the quick run keeps these short).
SWEEP_MODES = ["poll", "epoll", "uring-mpoll", "uring-read", "uaio-reactor", "uaio-proactor"]

# (name, numerator, denominator, target or None, what the target says)
PEER_RATIOS = [
    ("uaio Reactor / epoll", "uaio-reactor", "epoll", 1.0, "≥ 1.00×"),
    ("uaio Proactor / liburing async read", "uaio-proactor", "uring-read", 0.95, "≥ 0.95×"),
    ("uaio Reactor (edge) / epoll (ET)", "uaio-reactor-et", "epoll-et", None, "—"),
    ("uaio Reactor (edge) / epoll (LT)", "uaio-reactor-et", "epoll", None, "—"),
    ("uaio Reactor / liburing poll (one-shot)", "uaio-reactor", "uring-poll", None, "—"),
    ("uaio Reactor (edge) / liburing poll (multishot)", "uaio-reactor-et", "uring-mpoll", None, "—"),
    ("uaio Reactor (epoll backend) / epoll", "uaio-reactor-epoll", "epoll", None, "—"),
    ("uaio Proactor (epoll backend) / epoll", "uaio-proactor-epoll", "epoll", None, "—"),
    ("liburing multishot poll / epoll", "uring-mpoll", "epoll", None, "—"),
]
FLAT_MODES = ["uaio-reactor", "uaio-reactor-et", "uaio-proactor", "uaio-reactor-epoll", "uaio-proactor-epoll",
              "epoll", "uring-read", "poll"]
FLAT_TARGET = 0.75  # uaio within 25% of its P = 1 figure


def plan(mode):
    if mode == "full":
        return dict(
            reps=5, time=0.5, warmup=0.1,
            P=[1, 10, 100, 1000, 10000],
            S=[12, 32, 64, 128, 256, 512, 1024, 2048, 4096], S_P=100,
            T=[1, 2, 5, 10, 20, 40, 60, 80, 100, 120], T_P=1000,
            sweep_modes=MODES, nop_batches=[1, 32])
    return dict(
        reps=3, time=0.25, warmup=0.05,
        P=[1, 10, 100, 1000, 10000],
        S=[12, 512, 4096], S_P=100,
        T=[1, 10, 120], T_P=1000,
        sweep_modes=SWEEP_MODES, nop_batches=[1, 32])


class Runner(Samples):
    """pipetest's argv; the samples are passes/s (ring) or round trips/s (nop)."""

    def __init__(self, ctx, exe, cfg):
        super().__init__(ctx.log)
        self.exe, self.cfg = exe, cfg

    def one(self, key, argv, metric):
        return self.run(key, [self.exe] + argv, timeout=120, pick=metric,
                        what=" ".join(map(str, argv)))

    def ring(self, mode, P, S, T):
        c = self.cfg
        return self.one(("ring", mode, P, S, T),
                        ["--mode", mode, "-P", P, "-S", S, "-T", T,
                         "--time", c["time"], "--warmup", c["warmup"]], "passes_per_sec")

    def nop(self, kind, batch):
        c = self.cfg
        return self.one(("nop", kind, batch),
                        ["--nop", kind, "--batch", batch, "--time", c["time"],
                         "--warmup", c["warmup"]], "roundtrips_per_sec")


def run(ctx):
    cfg = plan(ctx.mode)
    if getattr(ctx, "smoke", False):
        cfg.update(reps=1, time=0.02, warmup=0.005)
    exe = ctx.build / "bench" / "pipetest" / "pipetest"
    if not exe.exists():
        raise RuntimeError(f"{exe} not built")
    have = set(ctx.run_cmd([exe, "--list"]).split())
    modes = [m for m in MODES if m in have]
    sweep_modes = [m for m in cfg["sweep_modes"] if m in have]
    R = Runner(ctx, exe, cfg)
    fn, fr, t = ctx.fmt_num, ctx.fmt_ratio, ctx.table

    # ---- measurements: every repetition runs all variants of a point back
    # to back, in an order rotated per repetition.
    S0, T0 = 12, 1
    for rep in range(cfg["reps"]):
        ctx.log(f"repetition {rep + 1}/{cfg['reps']}")
        rot = lambda xs: rotated(xs, rep)  # noqa: E731
        for P in cfg["P"]:
            for m in rot(modes):
                R.ring(m, P, S0, T0)
        for S in cfg["S"]:
            if S == S0 and cfg["S_P"] in cfg["P"]:
                continue  # already measured in the P sweep
            for m in rot(sweep_modes):
                R.ring(m, cfg["S_P"], S, T0)
        for T in cfg["T"]:
            if T == T0 and cfg["T_P"] in cfg["P"]:
                continue
            for m in rot(sweep_modes):
                R.ring(m, cfg["T_P"], S0, T)
        for b in cfg["nop_batches"]:
            for kind in rot(["uring", "uaio", "uaio-epoll"]):
                if kind == "uring" or "uaio-reactor" in have:
                    R.nop(kind, b)
        ctx.log(f"repetition {rep + 1} done")

    mem = []
    if "uaio-reactor" in have:
        try:
            out = ctx.run_cmd([exe, "--memory", "--count", 100000], timeout=300)
            mem = [ctx.parse_kv(line) for line in out.splitlines() if line.startswith("mem ")]
        except Exception as e:  # noqa: BLE001
            R.fail("--memory", e)

    md = []
    md.append("## pipetest: token passing around a ring of pipes\n\n")
    md.append(
        f"P pipes in a ring, T tokens of S bytes; each hop reads a token from pipe i and "
        f"writes it to pipe i+1; the figure is token passes per second (higher is better), "
        f"single thread. Mode **{ctx.mode}**: {cfg['reps']} repetitions, "
        f"{cfg['time']} s measured per point after a warm-up of {cfg['warmup']} s and at "
        f"least one lap of the ring; variants interleaved within each repetition. "
        f"Binary: `{exe.relative_to(ctx.root) if exe.is_relative_to(ctx.root) else exe}` "
        f"(`pipetest --help`).\n\n")
    # Actual P and the flags the peers and uaio used.
    clamp = sorted({(k[2], v["P"], v.get("nofile_limit")) for k, v in R.info.items()
                    if k[0] == "ring" and v.get("P") != k[2]})
    for req, got, lim in clamp:
        md.append(f"- P = {req} ran as **P = {got}**: RLIMIT_NOFILE hard limit is {lim} "
                  f"here and could not be raised (2 fds per pipe).\n")
    rf = {v.get("ring_flags") for k, v in R.info.items() if k[0] in ("ring", "nop")
          and str(k[1]).startswith("uring")}
    rf.discard(None)
    md.append(f"- Raw liburing peers: setup flags {', '.join(sorted(rf)) or '?'}, registered "
              f"ring fd, one `io_uring_submit_and_wait()` per loop that also flushes the "
              f"re-arms, all ready CQEs reaped per loop; readiness modes drain a pipe with "
              f"one read and forward each token with its own write().\n")
    ub = sorted({f"{v.get('backend')} ({v.get('uaio_feat')})" for k, v in R.info.items()
                 if str(k[1]).startswith("uaio")})
    if ub:
        md.append(f"- uaio loops: {'; '.join(ub)}.\n")
    md.append("\n")

    # ---- P sweep
    Ps = cfg["P"]
    pkey = lambda m, P: ("ring", m, P, S0, T0)  # noqa: E731
    md.append(f"### Passes/s vs number of pipes P (S = {S0}, T = {T0})\n\nMedian:\n\n")
    md.append(t(["mode"] + [f"P={P}" for P in Ps],
                [[LABEL[m]] + [fn(R.med(pkey(m, P))) for P in Ps] for m in modes]))
    md.append("\nBest of:\n\n")
    md.append(t(["mode"] + [f"P={P}" for P in Ps],
                [[LABEL[m]] + [fn(R.best(pkey(m, P))) for P in Ps] for m in modes]))

    md.append("\n### Ratios (medians) and targets\n\n")
    rows, verdicts = [], []
    reps = cfg["reps"]
    for name, a, b, target, tgt_txt in PEER_RATIOS:
        if a not in have or b not in have:
            # A mode this pipetest lacks: the row says so rather than vanish.
            gone = ", ".join(x for x in (a, b) if x not in have)
            rows.append([name] + ["–"] * len(Ps) +
                        [tgt_txt, f"**not measured** (mode {gone} not in this pipetest)" if target else
                         f"not measured (mode {gone} not in this pipetest)"])
            continue
        rs = [ratio(R.med(pkey(a, P)), R.med(pkey(b, P))) for P in Ps]
        v = verdict([(f"P={P}", r, R.n(pkey(a, P), pkey(b, P))) for P, r in zip(Ps, rs)],
                    target, reps) if target else ""
        rows.append([name] + [fr(r, target) for r in rs] + [tgt_txt, v])
    for m in FLAT_MODES:
        is_uaio = m.startswith("uaio")
        tgt_txt = "≥ 0.75×" if is_uaio else ("falls with P" if m == "poll" else "—")
        if m not in have:
            rows.append([f"{LABEL[m]} at P / at P={Ps[0]}"] + ["–"] * len(Ps) +
                        [tgt_txt, f"{'**not measured**' if is_uaio else 'not measured'} "
                                  "(mode not in this pipetest)"])
            continue
        base = R.med(pkey(m, Ps[0]))
        rs = [ratio(R.med(pkey(m, P)), base) for P in Ps]
        v = verdict([(f"P={P}", r, R.n(pkey(m, P), pkey(m, Ps[0]))) for P, r in zip(Ps, rs)],
                    FLAT_TARGET, reps) if is_uaio else ""
        rows.append([f"{LABEL[m]} at P / at P={Ps[0]}"] + [fr(r, FLAT_TARGET if is_uaio else None) for r in rs] +
                    [tgt_txt, v])
    md.append(t(["ratio"] + [f"P={P}" for P in Ps] + ["target", "verdict"], rows))

    # ---- S and T sweeps
    def sweep(title, axis, values, fixed):
        keyf = {"S": lambda m, x: ("ring", m, fixed["P"], x, T0),
                "T": lambda m, x: ("ring", m, fixed["P"], S0, x)}[axis]
        out = [f"\n### {title}\n\n"]
        out.append(t(["mode"] + [f"{axis}={x}" for x in values],
                     [[LABEL[m]] + [fn(R.med(keyf(m, x))) for x in values]
                      for m in sweep_modes]))
        pairs = [("uaio Reactor / epoll", "uaio-reactor", "epoll"),
                 ("uaio Proactor / liburing read", "uaio-proactor", "uring-read")]
        prow = [[n] + [fr(ratio(R.med(keyf(a, x)), R.med(keyf(b, x)))) for x in values]
                for n, a, b in pairs if a in sweep_modes and b in sweep_modes]
        if prow:
            out.append("\n" + t(["ratio (medians)"] + [f"{axis}={x}" for x in values], prow))
        return out, keyf

    s_md, s_key = sweep(f"Passes/s vs message size S (P = {cfg['S_P']}, T = {T0}), median",
                        "S", cfg["S"], {"P": cfg["S_P"]})
    md += s_md
    t_md, t_key = sweep(f"Passes/s vs tokens in flight T (P = {cfg['T_P']}, S = {S0}), median",
                        "T", cfg["T"], {"P": cfg["T_P"]})
    md += t_md

    # ---- nop round trips
    md.append("\n### Loop overhead: nop round trips/s\n\n"
              "Each of `batch` nops is re-submitted from its own completion; raw liburing "
              "reaps with the same one-syscall loop as above.\n\n")
    rows = []
    nop_ratios = []
    for b in cfg["nop_batches"]:
        raw = R.med(("nop", "uring", b))
        for kind in ["uring", "uaio", "uaio-epoll"]:
            k = ("nop", kind, b)
            if not R.values(k):
                continue
            r = ratio(R.med(k), raw) if kind != "uring" else None
            if kind == "uaio":
                nop_ratios.append((f"batch {b}", r, R.n(k, ("nop", "uring", b))))
            rows.append([{"uring": "raw liburing", "uaio": "uaio (io_uring)",
                          "uaio-epoll": "uaio (epoll backend)¹"}[kind], b,
                         fn(R.med(k)), fn(R.best(k)), fr(r) if kind != "uring" else "1.00× (peer)"])
    md.append(t(["variant", "batch", "median", "best", "÷ raw liburing"], rows))
    md.append("\n¹ the epoll backend completes a nop in user space without a system call, "
              "so it is not a peer of the io_uring figures.\n")
    nop_v = verdict(nop_ratios, 0.85, reps) if nop_ratios else \
        "**not measured** (no uaio nop run" + \
        ("" if "uaio-reactor" in have else ": uaio modes not in this pipetest") + ")"
    md.append(f"\nTarget uaio ≥ 0.85× raw liburing: {nop_v}.\n")

    # ---- memory
    if mem:
        md.append("\n### Memory\n\n")
        sizes = next((m for m in mem if "sizeof_uaio_op" in m), {})
        md.append(f"- Caller-owned structs: sizeof(uaio_op) = {sizes.get('sizeof_uaio_op')} B, "
                  f"sizeof(uaio_watch) = {sizes.get('sizeof_uaio_watch')} B, "
                  f"sizeof(uaio_timer) = {sizes.get('sizeof_uaio_timer')} B.\n"
                  f"- Loop state per fd: the core's fd-indexed table, "
                  f"{sizes.get('fd_table_bytes_per_slot')} B per slot (declared by the core).\n"
                  "- Measured: growth of the process RSS (user space only; kernel memory for "
                  "epoll items, polls and rings is not included) when watching every end of "
                  "as many pipes as RLIMIT_NOFILE allows, and when 100 000 one-hour timeouts "
                  "are in flight; the callers' structs were allocated and touched before the "
                  "first snapshot, so they are excluded.\n\n")
        rows, mem_ok = [], []
        for m in mem:
            if "kind" not in m:
                continue
            n = m.get("watched", m.get("submitted"))
            per = m.get("bytes_per_item")
            rows.append([m["kind"], m.get("backend"), n, m.get("inflight", "–"),
                         fn(m.get("rss_delta_bytes")), f"{per:.1f}" if per is not None else "–",
                         fn(m.get("rss_per_100k_bytes"))])
            mem_ok.append((f"{m['kind']}/{m.get('backend')}", per))
        md.append(t(["kind", "backend", "items", "in flight", "RSS growth (B)",
                     "B per item", "B per 100 000"], rows))
        over = [(lbl, v) for lbl, v in mem_ok if v is not None and v > 64]
        got = [lbl for lbl, v in mem_ok if v is not None]
        lost = [lbl for lbl, v in mem_ok if v is None]
        some = f" ({len(got)} of {len(mem_ok)} rows measured; not: {', '.join(lost)})" if lost else ""
        md.append("\nTarget ≤ 64 B of loop state per watched fd and per in-flight op: " +
                  ("**not measured** (no item gave bytes per item)." if not got else
                   f"**met** (measured RSS growth per item ≤ 64 B where measured){some}." if not over else
                   "**missed**: " + ", ".join(f"{lbl} {v:.0f} B" for lbl, v in over) + f"{some}.") +
                  "\n")

    else:
        md.append("\n### Memory\n\nTarget ≤ 64 B of loop state per watched fd and per in-flight op: "
                  "**not measured** (" + ("`pipetest --memory` failed, see Errors" if "uaio-reactor" in have
                                          else "uaio modes not in this pipetest") + ").\n")

    # ---- plots: uaio solid, peers dashed
    sty = {LABEL[m]: {"linestyle": "-" if m.startswith("uaio") else "--"} for m in MODES}
    imgs = []
    if ctx.plot_lines(ctx.imgdir / "pipetest_P.png",
                      f"pipetest: passes/s vs pipes (S={S0}, T={T0})", "pipes P (log)",
                      "token passes / s (log)",
                      {LABEL[m]: [(P, R.med(pkey(m, P))) for P in Ps] for m in modes},
                      logx=True, logy=True, styles=sty):
        imgs.append(("passes/s vs P", "img/pipetest_P.png"))
    if ctx.plot_lines(ctx.imgdir / "pipetest_S.png",
                      f"pipetest: passes/s vs message size (P={cfg['S_P']}, T={T0})",
                      "message size S (bytes, log)", "token passes / s",
                      {LABEL[m]: [(x, R.med(s_key(m, x))) for x in cfg["S"]] for m in sweep_modes},
                      logx=True, styles=sty):
        imgs.append(("passes/s vs S", "img/pipetest_S.png"))
    if ctx.plot_lines(ctx.imgdir / "pipetest_T.png",
                      f"pipetest: passes/s vs tokens in flight (P={cfg['T_P']}, S={S0})",
                      "tokens in flight T", "token passes / s",
                      {LABEL[m]: [(x, R.med(t_key(m, x))) for x in cfg["T"]] for m in sweep_modes}, styles=sty):
        imgs.append(("passes/s vs T", "img/pipetest_T.png"))
    if imgs:
        md.append("\n### Plots\n\n" + "\n".join(f"![{a}]({p})" for a, p in imgs) + "\n")

    if R.errors:
        md.append("\n### Errors\n\n" + "\n".join(f"- `{e}`" for e in R.errors) + "\n")
    return "".join(md)
