"""Shared helpers for the bench suites (bench/<name>/bench.py).

Every suite gets a ctx from bench/run.py with these functions attached;
they are plain module functions so a suite may also import them directly.

The runner every suite shares: Samples (run a command, keep its numbers
by key, note failures without ending the suite; med/best), and rotated,
make_file, warm. A suite keeps only its own argv construction.
"""
import collections
import datetime
import math
import os
import platform
import statistics
import subprocess
import sys


class BenchError(RuntimeError):
    pass


def smoke():
    """UAIO_BENCH_SMOKE=1: suites shrink to a few seconds to prove they work;
    the numbers are meaningless."""
    return os.environ.get("UAIO_BENCH_SMOKE", "") not in ("", "0")


def run_cmd(argv, env=None, timeout=600, cwd=None):
    """Runs argv, returns its stdout; raises BenchError on failure.

    The command runs in a session of its own: on a timeout its whole
    process group goes (fio's job processes, aiobench's children), not
    only the direct child. A library that LD_PRELOAD names but ld.so
    could not load makes the run a failure: the program would otherwise
    run on glibc and its numbers count as the library's."""
    full_env = None
    if env:
        full_env = dict(os.environ)
        full_env.update({k: str(v) for k, v in env.items()})
    cmd = ' '.join(map(str, argv))
    p = subprocess.Popen([str(a) for a in argv], env=full_env, cwd=cwd,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except BaseException as e:  # a timeout, or ^C: the session of its own hears none
        try:
            os.killpg(p.pid, 9)
        except ProcessLookupError:
            pass
        p.communicate()
        if isinstance(e, subprocess.TimeoutExpired):
            raise BenchError(f"timeout after {timeout}s: {cmd}") from e
        raise
    if "cannot be preloaded" in (err or ""):
        raise BenchError(f"LD_PRELOAD not loaded: {cmd}: "
                         + (err or "").strip().splitlines()[0])
    if p.returncode != 0:
        tail = (err or "").strip().splitlines()[-5:]
        raise BenchError(f"exit {p.returncode}: {cmd}: " + " | ".join(tail))
    return out


def parse_kv(line):
    """'mode=epoll P=10 rate=1.5' -> {'mode': 'epoll', 'P': 10, 'rate': 1.5}."""
    out = {}
    for tok in line.split():
        if "=" not in tok:
            continue
        k, v = tok.split("=", 1)
        for conv in (int, float):
            try:
                v = conv(v)
                break
            except ValueError:
                pass
        out[k] = v
    return out


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def best(xs, higher_is_better=True):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return max(xs) if higher_is_better else min(xs)


def fmt_num(x, digits=3):
    """Human number: 1234567 -> '1.23 M', None -> '–'. A value that rounds
    to 1000 of its unit takes the next one (999.6 k -> '1 M', not '1e+03 k')."""
    if x is None:
        return "–"
    units = ((1e9, " G"), (1e6, " M"), (1e3, " k"), (1, ""))
    for i, (div, suf) in enumerate(units):
        if abs(x) >= div or div == 1:
            y = float(f"{x / div:.{digits}g}")
            if abs(y) >= 1000:
                if i == 0:
                    return f"{x / div:.0f}{suf}"
                div, suf = units[i - 1]
            return f"{x / div:.{digits}g}{suf}"


def fmt_ratio(x, target=None):
    """'1.23×'; with a target, three decimals when x is within 1 % of it,
    so that a miss (0.995× against 1.00×) does not read as a tie."""
    if x is None:
        return "–"
    if target and abs(x - target) <= 0.01 * abs(target):
        # a miss: as many decimals as it takes to tell it from the target
        for d in range(3, 7):
            if x >= target or f"{x:.{d}f}" != f"{target:.{d}f}" or d == 6:
                return f"{x:.{d}f}×"
    return f"{x:.2f}×"


def table(headers, rows):
    """Markdown table; cells are converted with str()."""
    headers = [str(h) for h in headers]
    rows = [["–" if c is None else str(c) for c in r] for r in rows]
    out = ["| " + " | ".join(headers) + " |",
           "|" + "|".join("---" for _ in headers) + "|"]
    for r in rows:
        out.append("| " + " | ".join(r) + " |")
    return "\n".join(out) + "\n"


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def machine_info():
    """One markdown paragraph: date, kernel, CPU, cores, memory."""
    cpu = "unknown CPU"
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = "?"
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            mem = f"{int(line.split()[1]) / 1048576:.1f} GiB"
            break
    distro = ""
    for line in _read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            distro = line.split("=", 1)[1].strip('"')
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (f"{now}; Linux {platform.release()} ({distro}); {cpu}; "
            f"{os.cpu_count()} cores; {mem} RAM; Python {platform.python_version()}")


def log(msg):
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def plot_lines(path, title, xlabel, ylabel, series, logx=False, logy=False,
               styles=None):
    """series: {label: [(x, y), ...]}; styles: {label: plot kwargs}, e.g.
    {"epoll": {"linestyle": "--"}}. Writes a PNG; returns True, or False
    when matplotlib is missing (plots are optional, tables are not)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib not available: skipping " + str(path))
        return False
    fig, ax = plt.subplots(figsize=(8, 5), dpi=110)
    markers = "os^vD<>pP*Xhd"
    for i, (label, pts) in enumerate(series.items()):
        pts = [(x, y) for x, y in pts if y is not None]
        if not pts:
            continue
        xs, ys = zip(*sorted(pts))
        kw = {"marker": markers[i % len(markers)]}
        kw.update((styles or {}).get(label, {}))
        ax.plot(xs, ys, label=label, **kw)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def plot_bars(path, title, ylabel, groups, series, logy=False, hline=None):
    """Grouped bar chart. groups: the x labels; series: {label: [y or None
    per group]} (None leaves a gap); hline: a y to mark (e.g. the 1.0 of a
    ratio). Writes a PNG; returns True, or False when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib not available: skipping " + str(path))
        return False
    fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(groups) + 2), 5), dpi=110)
    n = max(1, len(series))
    width = 0.8 / n
    for i, (label, ys) in enumerate(series.items()):
        xs = [g + (i - (n - 1) / 2) * width for g in range(len(groups))]
        pts = [(x, y) for x, y in zip(xs, ys) if y is not None]
        if pts:
            ax.bar([x for x, _ in pts], [y for _, y in pts], width, label=label)
    if hline is not None:
        ax.axhline(hline, color="black", linewidth=0.8, linestyle="--")
    if logy:
        ax.set_yscale("log")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=20, ha="right")
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def ratio(a, b):
    """a / b, or None when either is missing."""
    return a / b if a is not None and b else None


def verdict(values, target, reps=None):
    """'met' or 'missed at .. by ..%' for a list of (label, ratio) against a
    floor target; cells without a ratio (a failed run) are named, and a
    target is never called met over cells that were not measured. An entry
    may be (label, ratio, n), n the fewest samples behind the ratio: with
    reps given, the cells whose n is below it are named with their n."""
    values = [tuple(v) + (None,) * (3 - len(v)) for v in values]
    got = [(lbl, r) for lbl, r, _ in values if r is not None]
    lost = [lbl for lbl, r, _ in values if r is None]
    if not got:
        return "not measured"
    note = f"; **not measured**: {', '.join(lost)}" if lost else ""
    few = [f"{lbl} n={n}" for lbl, r, n in values
           if r is not None and reps and n is not None and n < reps]
    if few:
        note += f"; from fewer samples than the {reps} repetitions: {', '.join(few)}"
    missed = [(lbl, r) for lbl, r in got if r < target]
    low = min(r for _, r in got)
    if not missed:
        return (f"**met** where measured (min {fmt_ratio(low, target)}){note}" if lost
                else f"**met** (min {fmt_ratio(low, target)}){note}")
    worst = min(missed, key=lambda x: x[1])
    return (f"**missed** at {', '.join(lbl for lbl, _ in missed)}; worst {worst[0]}: "
            f"{fmt_ratio(worst[1], target)} ({fmt_pct((target - worst[1]) / target)} short){note}")


def fmt_pct(x):
    """0.123 -> '12%', 0.004 -> '0.4%', 0.0004 -> '0.04%' (a miss under 1 %
    must not read as 0 %)."""
    return f"{x * 100:.1g}%" if abs(x) < 0.01 else f"{x * 100:.0f}%"


# Every Samples made since the last take_failed(): bench/run.py counts the
# failed runs of each suite through it.
_RUNNERS = []


def take_failed():
    """The number of runs noted as failed by the Samples made since the
    last call (one suite's, when run.py calls it around each suite);
    forgets those Samples."""
    n = sum(s.n_failed for s in _RUNNERS)
    _RUNNERS.clear()
    return n


class Samples:
    """The one bench runner: runs commands, keeps their numbers by key.

    A run that fails (non-zero exit, timeout, no result in its output) is
    logged as 'FAILED <what>: <error>', counted in .n_failed and noted in
    .errors (the first max_errors of them, then one line "... and N more");
    it never ends the suite, its key simply gets no sample, and bench/run.py
    exits non-zero at the end. Keys are tuples the suite chooses.
    """

    def __init__(self, log=log, max_errors=20):
        self.log = log
        self.max_errors = max_errors
        self.vals = collections.defaultdict(list)   # key -> [float]
        self.info = {}                              # key -> last record picked
        self.errors = []
        self.n_failed = 0
        _RUNNERS.append(self)

    def run(self, key, argv, env=None, timeout=600, pick=None, what=None):
        """Runs argv (env added to the environment) and records its result.

        pick says what the result is:
          "name"            the field of the last key=value line of stdout
                            that carries it; samples under key
          ["a", "b", ...]   those fields of the last line carrying the
                            first; samples under key + ("a",), key + ("b",) ...
          callable(stdout)  returns a number (samples under key), a dict
                            {name: number} (under key + (name,)) or None
                            (no result: a failure)
          None              nothing recorded; the run just has to succeed
        Returns the record (the parsed line, or what the callable returned),
        or None when the run failed. what names the run in FAILED lines and
        .errors (default: argv joined by spaces).
        """
        argv = [str(a) for a in argv]
        what = " ".join(argv) if what is None else what
        try:
            out = run_cmd(argv, env=env, timeout=timeout)
            rec, got = _pick(out, pick, key)
        except Exception as e:  # noqa: BLE001 - one failing run must not end the suite
            self.fail(what, e)
            return None
        for k, v in got:
            self.vals[k].append(v)
        if pick is not None:
            self.info[key] = rec
        return rec

    def fail(self, what, err):
        """Notes a failure that happened outside run()."""
        self.log(f"FAILED {what}: {err}")
        self.n_failed += 1
        more = self.n_failed - self.max_errors
        if more <= 0:
            self.errors.append(f"{what}: {err}")
        else:   # the list ends with one line counting the rest
            if more > 1:
                self.errors.pop()
            self.errors.append(f"... and {more} more failed run{'s' if more > 1 else ''} "
                               "(see the log)")

    def add(self, key, value):
        self.vals[key].append(float(value))

    def values(self, key):
        return self.vals.get(key, [])

    def n(self, *keys):
        """The fewest samples any of keys has (for verdict's n)."""
        return min(len(self.vals.get(k, [])) for k in keys)

    def med(self, key):
        return median(self.vals.get(key, []))

    def best(self, key, higher=True):
        return best(self.vals.get(key, []), higher)


def _pick(out, pick, key):
    """(record, [(sample key, value)]) from a command's stdout; see Samples.run."""
    if pick is None:
        return out, []
    if callable(pick):
        rec = pick(out)
        if rec is None:
            raise BenchError("no result in its output")
        if isinstance(rec, dict):
            return rec, [(key + (n,), float(v)) for n, v in rec.items()]
        return rec, [(key, float(rec))]
    names = [pick] if isinstance(pick, str) else list(pick)
    for line in reversed(out.splitlines()):
        kv = parse_kv(line)
        if names[0] in kv:
            break
    else:
        raise BenchError(f"no {names[0]}= in its output")
    missing = [n for n in names if n not in kv]
    if missing:
        raise BenchError(f"no {', '.join(missing)} in: {line.strip()}")
    if isinstance(pick, str):
        return kv, [(key, float(kv[pick]))]
    return kv, [(key + (n,), float(kv[n])) for n in names]


def rotated(seq, rep):
    """seq in a different order each repetition: whichever variant runs
    first after a large free pays this VM's fresh-memory cost, and slow
    drifts of the machine must not always hit the same one. The rotation
    steps by ~0.618 of the list, so that whatever the number of
    repetitions the first places spread over the whole list (a step of
    one gave them to the first three variants, uaio's, in 3 repetitions)."""
    seq = list(seq)
    n = len(seq)
    if not n:
        return seq
    # the step nearest 0.618 n that shares no factor with n: every
    # variant comes first once in n repetitions
    step = min((s for s in range(1, n + 1) if math.gcd(s, n) == 1),
               key=lambda s: abs(s - 0.6180339887 * n))
    k = rep * step % n
    return seq[k:] + seq[:k]


def make_file(path, mb):
    """A file of mb MiB of pseudo-random bytes, fsync'ed."""
    block = os.urandom(1 << 20)
    with open(path, "wb") as f:
        for i in range(mb):
            f.write(block[i % 7:] + block[:i % 7])
        f.flush()
        os.fsync(f.fileno())


def warm(path):
    """Reads path whole, so that its pages are in the page cache."""
    with open(path, "rb") as f:
        while f.read(1 << 22):
            pass
