"""cp: recursive copies of four generated trees (many small files, medium
files, a few large ones, a source-tree-like mix with symlinks and hard
links) by uaio-cp against GNU cp, rsync, tar | tar and the Rust copiers
xcp and fcp, with warm and cold page cache. Copy time, copy + sync time,
CPU seconds and peak RSS of the copier; every copy verified against its
source. Medians over interleaved repetitions (order rotated each one).
Each copier runs under build/bench/cp/cprun (cprun.c), which reports its
wall time, CPU and peak RSS from wait4: forked from this Python process, a
copier would start with the runner's peak RSS as its own. On the small and
mixed trees uaio-cp -a also runs with each of its small-file strategies
(UAIO_CP_SMALL=work, uring, inline; the default, auto, is the plain row).

The destination (as root) is a fresh ext4 for every timed copy: a sparse
image under the scratch dir on a loop device, mkfs'ed and mounted before
each copy, not timed (FreshFS). Copying into a directory tree that was
just removed from the same ext4 measures ext4's inode allocator instead:
it skips inodes freed in the last 5 minutes whose inode-table block is
cached (recently_deleted()), and that scan makes file creation 3-5x
slower as the suite goes on; dropping the caches does not help. The source
stays on the scratch dir's file system, so every copy crosses file systems
(copy_file_range and FICLONE fail with EXDEV; probed each run). Without
root the destination is beside the source, as it used to be.

The peers are installed by bench/cp/install-peers.sh (from scripts/setup.sh
bench): rsync from Debian, xcp and fcp pinned from crates.io into
.venv/cp-peers/bin. A missing one is a row saying "not installed".

Called by bench/run.py as run(ctx); returns the markdown section.
"""
import os
import shutil
import signal
import stat
import subprocess
import time

import sys

from common import BenchError, Samples, parse_kv, plot_bars, ratio, rotated

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cp_freshfs import FreshFS, est_bytes, fmt_size, footprint, fs_of, image_size, probe_xdev  # noqa: E402
from cp_trees import SEED, TREES, describe, generate, scan  # noqa: E402

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
BASE = "cp -r"
CANDIDATE = "uaio-cp -a"
# uaio-cp's small-file strategies besides the default (auto: work when a
# directory's data is cached, else uring; the plain "uaio-cp -a" row), run
# on SMALL_TREES only.
SMALL_VARIANTS = {"uaio-cp -a (small=work)": "work", "uaio-cp -a (small=uring)": "uring",
                  "uaio-cp -a (small=inline)": "inline"}
SMALL_TREES = {"small", "mixed"}
COPIERS = ["uaio-cp -a", *SMALL_VARIANTS, "uaio-cp -r", "cp -r", "cp -a", "rsync -a", "tar | tar",
           "xcp -r", "fcp"]
# The targets. Peak RSS on the small tree has no number yet: set
# RSS_TARGET_MIB to judge it (until then it is reported, not judged).
SMALL_WARM_TARGET = 0.3
RSS_TARGET_MIB = None


def runs_on(copier, tree):
    return copier not in SMALL_VARIANTS or tree in SMALL_TREES


def plan(mode, smoke):
    if smoke:
        return dict(reps=1, timeout=120, cold_trees={"small"}, trees=dict(
            small=dict(files=600),
            medium=dict(files=6),
            large=dict(big=[16 * MiB], tens=3, ten=2 * MiB),
            mixed=dict(files=300, dirs=30, blobs=1, blob_mib=(2, 4))))
    if mode == "full":
        return dict(reps=5, timeout=1800, cold_trees=set(TREES), trees=dict(
            small=dict(files=50000),
            medium=dict(files=500),
            large=dict(big=[GiB] * 3, tens=100, ten=10 * MiB),
            mixed=dict(files=12000, dirs=800, blobs=4, blob_mib=(8, 64))))
    return dict(reps=3, timeout=900, cold_trees=set(TREES), trees=dict(
        small=dict(files=20000),
        medium=dict(files=200),
        large=dict(big=[256 * MiB] * 2, tens=40, ten=10 * MiB),
        mixed=dict(files=5000, dirs=330, blobs=2, blob_mib=(8, 64))))


# ------------------------------------------------------------ the trees


def same_bytes(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x = fa.read(MiB)
            if x != fb.read(MiB):
                return False
            if not x:
                return True


def verify(src, dst, ref, full):
    """Raises BenchError unless dst has the same paths, types, sizes and
    symlink targets as src (ref = scan(src)[0]) and, when full, the same
    file contents. Returns dst's scan."""
    got, sts = scan(dst)
    if got != ref:
        missing = sorted(set(ref) - set(got))
        extra = sorted(set(got) - set(ref))
        differ = sorted(r for r in set(ref) & set(got) if ref[r] != got[r])
        parts = []
        for what, lst in (("missing", missing), ("extra", extra), ("differ", differ)):
            if lst:
                parts.append(f"{len(lst)} {what} (e.g. {lst[0]}"
                             + (f": {ref[lst[0]]} vs {got[lst[0]]}" if what == "differ" else "") + ")")
        raise BenchError("verification failed: " + "; ".join(parts))
    if full:
        for r, (kind, _, _) in ref.items():
            if kind == "file" and not same_bytes(os.path.join(src, r), os.path.join(dst, r)):
                raise BenchError(f"verification failed: contents of {r} differ")
    return got, sts


def preserved(src_sts, dst_sts):
    """What the copy kept: hard links, modes, mtimes (ns or s)."""
    regs = [r for r, st in src_sts.items() if stat.S_ISREG(st.st_mode)]
    groups = {}
    for r in regs:
        groups.setdefault(src_sts[r].st_ino, []).append(r)
    links = [g for g in groups.values() if len(g) > 1]
    hard = all(len({dst_sts[r].st_ino for r in g}) == 1 for g in links) if links else None
    modes = all(stat.S_IMODE(src_sts[r].st_mode) == stat.S_IMODE(dst_sts[r].st_mode)
                for r, st in src_sts.items() if not stat.S_ISLNK(st.st_mode))
    ns = all(src_sts[r].st_mtime_ns == dst_sts[r].st_mtime_ns for r in regs)
    secs = all(src_sts[r].st_mtime_ns // 10 ** 9 == dst_sts[r].st_mtime_ns // 10 ** 9 for r in regs)
    yn = {True: "yes", False: "no", None: "–"}
    return dict(hard=yn[hard], modes=yn[modes], mtimes="yes" if ns else "seconds" if secs else "no")


def warm_tree(root, entries):
    """Reads every file of the tree (and stats every entry), so that its
    pages, inodes and dentries are cached."""
    for r, (kind, _, _) in entries.items():
        if kind == "file":
            with open(os.path.join(root, r), "rb") as f:
                while f.read(4 * MiB):
                    pass


def warm_up(src, fs, beside):
    """An untimed `cp -r` of the tree before the timed ones: the first copy
    after the tree is read pays this VM's cost of fetching fresh memory
    back from its host (1.5-10x on the large tree, whoever runs first), and
    rotation alone leaves that on a third of the copiers' medians at 3
    repetitions."""
    dst = fs.fresh() if fs else beside
    if not fs:
        rm(beside)
    subprocess.run(["cp", "-r", src, dst], check=True)
    if not fs:
        rm(beside)


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def rm(path):
    if os.path.lexists(path):
        subprocess.run(["rm", "-rf", "--", str(path)], check=True)


# ------------------------------------------------------------ the copiers

def find_peer(ctx, name):
    p = ctx.root / ".venv" / "cp-peers" / "bin" / name
    return str(p) if os.access(p, os.X_OK) else shutil.which(name)


def copiers(ctx):
    """{name: (argv(src, dst) or None, why not, version, environment)}.
    The environment is the runner's without UAIO_CP_SMALL, plus the
    copier's own (uaio-cp's small-file strategy)."""
    ucp = ctx.build / "tools" / "uaio-cp"
    ucp = str(ucp) if os.access(ucp, os.X_OK) else None
    tar, rsync = shutil.which("tar"), shutil.which("rsync")
    xcp, fcp = find_peer(ctx, "xcp"), find_peer(ctx, "fcp")
    tarpipe = 'mkdir -- "$2" && tar -C "$1" -cf - . | tar -C "$2" -xf -'
    argv = {
        "uaio-cp -a": ucp and (lambda s, d: [ucp, "-a", s, d]),
        **{v: ucp and (lambda s, d: [ucp, "-a", s, d]) for v in SMALL_VARIANTS},
        "uaio-cp -r": ucp and (lambda s, d: [ucp, "-r", s, d]),
        "cp -r": lambda s, d: ["cp", "-r", s, d],
        "cp -a": lambda s, d: ["cp", "-a", s, d],
        "rsync -a": rsync and (lambda s, d: [rsync, "-a", s + "/", d + "/"]),
        "tar | tar": tar and (lambda s, d: ["bash", "-o", "pipefail", "-c", tarpipe, "tar", s, d]),
        "xcp -r": xcp and (lambda s, d: [xcp, "-r", s, d]),
        "fcp": fcp and (lambda s, d: [fcp, s, d]),
    }
    prog = {"uaio-cp -a": ucp, **{v: ucp for v in SMALL_VARIANTS}, "uaio-cp -r": ucp,
            "cp -r": "cp", "cp -a": "cp", "rsync -a": rsync, "tar | tar": tar, "xcp -r": xcp,
            "fcp": fcp}
    base_env = {k: v for k, v in os.environ.items() if k != "UAIO_CP_SMALL"}
    out = {}
    for n in COPIERS:
        why = None
        if not argv[n]:
            why = (f"not built ({ctx.build.name}/tools/uaio-cp missing)" if n.startswith("uaio")
                   else "not installed (bench/cp/install-peers.sh)")
        env = dict(base_env)
        if n in SMALL_VARIANTS:
            env["UAIO_CP_SMALL"] = SMALL_VARIANTS[n]
        out[n] = (argv[n] or None, why, version(prog[n]) if prog[n] else None, env)
    return out


def version(prog):
    try:
        p = subprocess.run([prog, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=10)
        line = (p.stdout.strip().splitlines() or [""])[0]
        return line[:80] or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def timed_copy(cprun, argv, sync_path, errfile, timeout, env=None):
    """Runs one copy under cprun (env: its whole environment): (copy s,
    copy + `sync -f sync_path` s, CPU s (user + sys of the copier and the
    children it waited for), peak RSS MiB)."""
    with open(errfile, "wb") as ef:
        p = subprocess.Popen([cprun] + argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=ef, start_new_session=True, env=env)
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            raise BenchError(f"timeout after {timeout}s") from None
    if p.returncode:
        with open(errfile, errors="replace") as f:
            tail = " | ".join(f.read().strip().splitlines()[-3:])
        raise BenchError(f"exit {p.returncode}: {tail}")
    kv = parse_kv(out.decode().strip())
    if "wall" not in kv:
        raise BenchError(f"no wall= from cprun: {out!r}")
    t0 = time.monotonic()
    subprocess.run(["sync", "-f", sync_path], check=True)
    t_sync = time.monotonic() - t0
    return kv["wall"], kv["wall"] + t_sync, kv["cpu"], kv["rss_kib"] / 1024



# ------------------------------------------------------------ run

def cell(text):
    """text made safe for a markdown table cell."""
    return text.replace("|", "\\|")


def run(ctx):
    cfg = plan(ctx.mode, ctx.smoke)
    cprun = ctx.build / "bench" / "cp" / "cprun"
    if not os.access(cprun, os.X_OK):
        raise BenchError(f"{cprun} not built (ninja -C {ctx.build})")
    C = copiers(ctx)
    names = [n for n in COPIERS if C[n][0]]
    for n in COPIERS:
        if C[n][1]:
            ctx.log(f"{n}: {C[n][1]}")
    root_ok = os.geteuid() == 0 and os.access("/proc/sys/vm/drop_caches", os.W_OK)
    # The destination: a fresh ext4 per copy (root), else beside the source.
    dest = dict(fs=None, why=None, xdev=None)
    if os.geteuid() != 0:
        dest["why"] = "not root (a loop device, mkfs and mount need it)"
    else:
        need = max(image_size(est_bytes(t, cfg["trees"][t]), 0) for t in TREES)
        fs = FreshFS(ctx.scratch, need, ctx.log)
        try:
            fs.setup()
            dest["fs"] = fs
            dest["xdev"] = probe_xdev(ctx.scratch, fs.mnt)
            ctx.log(f"from {fs_of(ctx.scratch)} to the fresh ext4: "
                    + ", ".join(f"{k}: {v}" for k, v in dest["xdev"].items()))
        except (BenchError, OSError, subprocess.SubprocessError) as e:
            fs.close()
            dest["why"] = f"the fresh file system could not be set up: {e}"
    if dest["why"]:
        ctx.log(f"destination beside the source: {dest['why']}")
    try:
        return run_trees(ctx, cfg, cprun, C, names, root_ok, dest)
    finally:
        if dest["fs"]:
            dest["fs"].close()


def run_trees(ctx, cfg, cprun, C, names, root_ok, dest):
    S = Samples(ctx.log)
    fails = {}                      # (tree, cache, copier) -> [error]
    kept = {}                       # copier -> what it preserved (mixed tree)
    stats = {}                      # tree -> describe() + generation time
    errfile = ctx.scratch / "copier.err"
    fs = dest["fs"]
    beside = str(ctx.scratch / "dst")

    for tree in TREES:
        src = str(ctx.scratch / f"src-{tree}")
        t0 = time.monotonic()
        generate(tree, src, cfg["trees"][tree])
        ref, src_sts = scan(src)
        stats[tree] = describe(ref, src_sts)
        stats[tree]["gen"] = time.monotonic() - t0
        t0 = time.monotonic()
        ctx.log(f"{tree}: generated {stats[tree]} in {stats[tree]['gen']:.1f} s")
        if fs:
            fs.grow(image_size(*footprint(src_sts)))
        caches = ["warm"] + (["cold"] if root_ok and tree in cfg["cold_trees"] else [])
        tree_names = [n for n in names if runs_on(n, tree)]
        for rep in range(cfg["reps"]):
            ctx.log(f"{tree}: repetition {rep + 1}/{cfg['reps']}")
            for cache in caches:
                if cache == "warm":
                    warm_tree(src, ref)
                    warm_up(src, fs, beside)
                for n in rotated(tree_names, rep):
                    key = (tree, cache, n)
                    try:
                        # Not timed: a new destination (a fresh file system,
                        # or the previous copy removed), everything synced,
                        # and for cold copies the caches dropped.
                        if fs:
                            dst, sync_path = fs.fresh(), str(fs.mnt)
                        else:
                            rm(beside)
                            dst = sync_path = beside
                        os.sync()
                        if cache == "cold":
                            drop_caches()
                        t_copy, t_sync, cpu, rss = timed_copy(
                            str(cprun), C[n][0](src, dst), sync_path, errfile, cfg["timeout"],
                            env=C[n][3])
                        # Names, types, sizes, link targets and contents.
                        _, dst_sts = verify(src, dst, ref, full=True)
                    except (BenchError, OSError, subprocess.SubprocessError) as e:
                        S.fail(f"{n} ({tree}, {cache}, repetition {rep + 1})", e)
                        fails.setdefault(key, []).append(str(e))
                        continue
                    for m, v in (("copy", t_copy), ("sync", t_sync), ("cpu", cpu), ("rss", rss)):
                        S.add(key + (m,), v)
                    if tree == "mixed" and n not in kept:
                        kept[n] = preserved(src_sts, dst_sts)
        if fs:
            fs.umount()
        else:
            rm(beside)
        rm(src)
        os.sync()
        stats[tree]["runs"] = time.monotonic() - t0
    return report(ctx, cfg, C, S, fails, kept, stats, root_ok, dest)


# ------------------------------------------------------------ report

def dest_text(ctx, dest):
    """The intro's sentences on where the copies go."""
    fs = dest["fs"]
    if not fs:
        return ("Source and destination on the same file system "
                f"({fs_of(ctx.scratch)}, under {ctx.scratch.parent.parent}). The destination is new "
                "each time (the previous one removed with `rm -rf` and everything synced, not "
                f"timed) — **not a fresh file system per copy: {dest['why']}**; ext4's allocator "
                "slows down as the suite removes and recreates trees (see the bench/cp/bench.py "
                "docstring), so later cells are penalised. ")
    med_mkfs = sorted(fs.mkfs_s)[len(fs.mkfs_s) // 2]
    xdev = dest["xdev"] or {}
    cfr, clone = xdev.get("copy_file_range", "?"), xdev.get("FICLONE", "?")
    if cfr == "EXDEV" and clone == "EXDEV":
        xd = ("both fail with EXDEV there (probed at the start of this run), so no copier "
              "uses them in these cells (how each falls back was read by hand outside this run, "
              "noted 2026-11-23: GNU cp, uaio-cp and xcp try them and fall back to reading "
              "and writing, fcp falls back to sendfile(2), rsync and tar never try them)")
    else:
        xd = (f"probed at the start of this run: copy_file_range → {cfr}, FICLONE → {clone}; "
              "**a copier may have used them in these cells**")
    return ("The source tree is on the scratch dir's file system "
            f"({fs_of(ctx.scratch)}, under {ctx.scratch.parent.parent}); the **destination is a "
            "fresh ext4 for every copy**: a sparse image "
            f"({fmt_size(fs.size)}{', grown during the run' if fs.grown else ''}) on a loop device "
            f"(direct I/O {'on' if fs.dio else 'off'}), `mkfs.ext4 -E lazy_itable_init=1,"
            "lazy_journal_init=1,nodiscard` (defaults otherwise) and mounted with `noinit_itable` "
            f"before each copy, not timed (mkfs {med_mkfs * 1e3:.0f} ms, median of {len(fs.mkfs_s)}). "
            "Copying into a tree just removed from the same ext4 would measure ext4's inode "
            "allocator instead: it skips inodes freed in the last 5 minutes whose inode-table "
            "block is cached (`recently_deleted()`), which made creating files 3–5× slower as "
            "the suite ran (measured outside this run, noted 2026-11-23), and dropping the caches "
            "did not help. Every copy therefore crosses "
            f"file systems: copy_file_range and reflinks (FICLONE) are not available — {xd}. ")


def report(ctx, cfg, C, S, fails, kept, stats, root_ok, dest):
    fmt, rat = ctx.fmt_num, ctx.fmt_ratio
    reps = cfg["reps"]
    cells = [(t, c) for t in TREES for c in ("warm", "cold")]

    def med(t, c, n, m):
        return S.med((t, c, n, m))

    def bst(t, c, n, m):
        return S.best((t, c, n, m), higher=False)

    def measured(t, c):
        return S.values((t, c, BASE, "copy")) or any(S.values((t, c, n, "copy")) for n in COPIERS)

    md = ["## cp: recursive copies of file trees\n",
          f"Mode **{ctx.mode}**: {reps} repetition{'s' if reps > 1 else ''}; in each, every copier "
          "copies the same tree one after the other (order rotated per repetition); medians, "
          "best-of in brackets, ratios of medians. " + dest_text(ctx, dest) +
          "**copy** = wall time of the copier; **+ sync** = copy and then `sync -f` of the "
          "destination's file system (" + ("its mount point" if dest["fs"] else "the whole file system "
          "holding it") + ": writeback of what the copy left dirty); **CPU** = "
          "user + system seconds of the copier and the children it waited for (wait4; io_uring's "
          "worker threads are threads of the copier and count, the kernel's writeback threads "
          "count for no one); **RSS** = the largest peak resident set of those processes (each copier "
          "is started by a small runner, bench/cp/cprun.c, so the floor is its ~1.5 MiB, not "
          "Python's). "
          "**Warm**: the tree read whole, then copied once untimed by `cp -r` (the first copy after that read pays this VM's cost of getting fresh memory back from its host, whoever runs it), before the repetition's runs; **cold**: `sync; echo 3 > "
          "/proc/sys/vm/drop_caches` before each copy"
          + ("" if root_ok else " — **cold cells skipped: not root**") + ". Every copy is checked "
          "against its source: same paths, types, sizes, symlink targets and file contents; a copy that fails or differs is counted as a failed "
          "run, never timed. Hard links need not be kept (`cp -r` does not); what each copier kept "
          "is in the last table. On the small and mixed trees `uaio-cp -a` also runs with each of "
          "its small-file strategies, set by `UAIO_CP_SMALL` in its environment: `auto` (the default, "
          "the plain row: `work` in a directory whose first small file is cached, else `uring`), "
          "`work` (whole files on a worker thread), `uring` (io_uring reads and writes through a "
          "registered buffer) and `inline` (whole files on the loop's thread).\n"]
    if ctx.smoke:
        md.append("Smoke run: tiny trees, cold cells for the small tree only.\n")
    md.append("### Trees\n")
    rows = []
    what = {"small": "3-level tree, files of 1–8 KiB",
            "medium": "files of 1–4 MiB in 4 directories",
            "large": " + ".join(f"{fmt_size(b)}" for b in cfg["trees"]["large"]["big"])
            + f" + {cfg['trees']['large']['tens']} × {fmt_size(cfg['trees']['large']['ten'])}",
            "mixed": "source-tree-like: log-normal sizes around 3 KiB (2 % empty, 10 % "
            f"executable), {cfg['trees']['mixed']['blobs']} blob(s) of "
            f"{cfg['trees']['mixed']['blob_mib'][0]}–{cfg['trees']['mixed']['blob_mib'][1]} MiB, "
            "relative symlinks to files and directories, one dangling"}
    for t in TREES:
        s = stats.get(t)
        if not s:
            continue
        rows.append([t, what[t], s["files"], s["dirs"], s["depth"], s["symlinks"], s["hardlinks"],
                     fmt_size(s["bytes"]), f"{s['gen']:.0f}", f"{s.get('runs', 0):.0f}"])
    md.append(ctx.table(["tree", "what", "files", "dirs", "depth", "symlinks", "hard links",
                         "bytes", "generated in s", "its runs took s"], rows))
    md.append(f"\nFixed seed ({SEED}): the same trees in every run of this mode.\n")
    vers = []
    for n in COPIERS:
        prog, ver = n.split()[0], " ".join((C[n][2] or "").split())
        if ver and prog != "uaio-cp":
            vers.append(ver if ver.lower().startswith(prog) else f"{prog} {ver}")
    md.append("Peers: " + (", ".join(dict.fromkeys(vers)) or "none") + ". uaio-cp: " +
              (f"`{ctx.build.name}/tools/uaio-cp` (default options besides the flag)"
               if not C[CANDIDATE][1] else "not built") + ".\n")

    for t, c in cells:
        md.append(f"### {t} tree, {c}\n")
        if c == "cold" and not root_ok:
            md.append("skipped: dropping the page cache needs root.\n")
            continue
        if c == "cold" and t not in cfg["cold_trees"]:
            md.append("not run in this mode.\n")
            continue
        base, base_s = med(t, c, BASE, "copy"), med(t, c, BASE, "sync")
        rows = []
        for n in COPIERS:
            if not runs_on(n, t):
                continue
            k = (t, c, n)
            nok = len(S.values(k + ("copy",)))
            if C[n][1]:
                rows.append([cell(n)] + ["–"] * 6 + [C[n][1]])
                continue
            note = ""
            if fails.get(k):
                note = cell(f"{len(fails[k])} of {reps} runs failed: {fails[k][0][:120]}")
            if not nok:
                rows.append([cell(n)] + ["–"] * 6 + [cell(note) or "no run"])
                continue
            rows.append([f"**{n}**" if n == CANDIDATE else cell(n),
                         f"{fmt(med(t, c, n, 'copy'))} [{fmt(bst(t, c, n, 'copy'))}]",
                         rat(ratio(med(t, c, n, "copy"), base)),
                         f"{fmt(med(t, c, n, 'sync'))} [{fmt(bst(t, c, n, 'sync'))}]",
                         rat(ratio(med(t, c, n, "sync"), base_s)),
                         fmt(med(t, c, n, "cpu")), fmt(med(t, c, n, "rss")), note])
        md.append(ctx.table(["copier", "copy s [best]", "÷ cp -r", "+ sync s [best]",
                             "÷ cp -r (+ sync)", "CPU s", "peak RSS MiB", "notes"], rows))
        md.append("")

    # Summary: the candidate against the fastest peer of each cell.
    md.append("### uaio-cp against the fastest peer\n")
    md.append(f"Candidate `{CANDIDATE}`; peers: every copier not named uaio-cp, whatever its flags "
              "(`cp -r` does less than `-a`). Ratios below 1 mean uaio-cp is faster.\n")
    rows = []
    beat = []
    all_peers = [n for n in COPIERS if not n.startswith("uaio-cp")]
    uninstalled = [n for n in all_peers if C[n][1]]
    unmeasured = {}                 # peer -> cells it has no median in (installed ones)
    for t, c in cells:
        if not measured(t, c):
            continue
        for n in all_peers:
            if not C[n][1] and med(t, c, n, "copy") is None:
                unmeasured.setdefault(n, []).append(f"{t} {c}")
        peers = [(med(t, c, n, "copy"), n) for n in COPIERS
                 if not n.startswith("uaio-cp") and med(t, c, n, "copy") is not None]
        peers_s = [(med(t, c, n, "sync"), n) for n in COPIERS
                   if not n.startswith("uaio-cp") and med(t, c, n, "sync") is not None]
        fp = min(peers) if peers else (None, "–")
        fps = min(peers_s) if peers_s else (None, "–")
        a, a_s = med(t, c, CANDIDATE, "copy"), med(t, c, CANDIDATE, "sync")
        r = ratio(a, fp[0])
        beat.append((f"{t} {c}", r))
        rows.append([f"{t}, {c}", fmt(a), f"{cell(fp[1])} ({fmt(fp[0])})", rat(r),
                     rat(ratio(med(t, c, "uaio-cp -r", "copy"), fp[0])),
                     f"{cell(fps[1])} ({fmt(fps[0])})", rat(ratio(a_s, fps[0]))])
    md.append(ctx.table(["cell", f"{CANDIDATE} s", "fastest peer (s)", f"{CANDIDATE} ÷ it",
                         "uaio-cp -r ÷ it", "fastest peer, + sync (s)", f"{CANDIDATE} ÷ it (+ sync)"],
                        rows))

    md.append("\nTargets (medians of this run):\n")
    got = [(cell, r) for cell, r in beat if r is not None]
    if not got:
        v = "not measured"
    else:
        missed = [(cell, r) for cell, r in got if r >= 1]
        v = ("**met** (worst " + max(got, key=lambda x: x[1])[0] +
             f": {rat(max(r for _, r in got), 1.0)})"
             if not missed else "**missed** in " + ", ".join(f"{cell} ({rat(r, 1.0)})" for cell, r in missed))
        if len(got) < len(beat):
            v += f"; {len(beat) - len(got)} cell(s) not measured"
        if uninstalled or unmeasured:
            v += ("; **judged among the peers measured only** — not measured: " +
                  ", ".join([f"{n} (not installed)" for n in uninstalled] +
                            [f"{n} (in {', '.join(cs)})" for n, cs in unmeasured.items()]))
    md.append(f"- Faster than the fastest peer in every cell (copy time): {v}.")
    r = ratio(med("small", "warm", CANDIDATE, "copy"), med("small", "warm", BASE, "copy"))
    md.append(f"- Small tree, warm, ≤ {SMALL_WARM_TARGET}× `cp -r`: " +
              ("not measured" if r is None else
               f"{r:.2f}× — " + ("**met**" if r <= SMALL_WARM_TARGET else "**missed**")) + ".")
    parts = []
    for c in ("warm", "cold"):
        a, b = med("large", c, CANDIDATE, "cpu"), med("large", c, BASE, "cpu")
        if a is not None and b is not None:
            parts.append((c, a, b))
    md.append("- CPU ≤ `cp -r` on the large tree: " + (
        "not measured" if not parts else
        ("**met**" if all(a <= b for _, a, b in parts) else "**missed**") + " (" +
        ", ".join(f"{c} {fmt(a)} s vs {fmt(b)} s" for c, a, b in parts) + ")") + ".")
    a, b = med("small", "warm", CANDIDATE, "rss"), med("small", "warm", BASE, "rss")
    if a is None:
        rss = "not measured"
    else:
        rss = f"{fmt(a)} MiB (`cp -r`: {fmt(b)} MiB)"
        rss += (" — no threshold set (RSS_TARGET_MIB in bench/cp/bench.py)" if RSS_TARGET_MIB is None
                else f" against ≤ {RSS_TARGET_MIB} MiB — " +
                ("**met**" if a <= RSS_TARGET_MIB else "**missed**"))
    md.append(f"- Peak RSS on the small tree (warm): {rss}.\n")

    md.append("### uaio-cp's small-file strategies\n")
    md.append("`uaio-cp -a` with `UAIO_CP_SMALL` = auto (the default), work, uring and inline, on "
              "the small and mixed trees: copy s and copy + sync s (medians), ratios to `auto`.\n")
    strat = [("auto", CANDIDATE)] + [(v, n) for n, v in SMALL_VARIANTS.items()]
    rows = []
    for t, c in cells:
        if t not in SMALL_TREES or not measured(t, c):
            continue
        w, w_s = med(t, c, CANDIDATE, "copy"), med(t, c, CANDIDATE, "sync")
        row = [f"{t}, {c}"]
        for v, n in strat:
            a, a_s = med(t, c, n, "copy"), med(t, c, n, "sync")
            row.append(f"{fmt(a)} / {fmt(a_s)}" if n == CANDIDATE else
                       f"{fmt(a)} / {fmt(a_s)} ({rat(ratio(a, w))} / {rat(ratio(a_s, w_s))})")
        rows.append(row)
    md.append(ctx.table(["cell"] + [f"{v}: copy / + sync s" + ("" if n == CANDIDATE else " (÷ auto)")
                                    for v, n in strat], rows) if rows else "not measured.\n")

    groups, series = [], {n: [] for n in COPIERS if n != BASE}
    for t, c in cells:
        if not measured(t, c):
            continue
        groups.append(f"{t} {c}")
        for n in series:
            series[n].append(ratio(med(t, c, n, "copy"), med(t, c, BASE, "copy")))
    series = {n: ys for n, ys in series.items() if any(y is not None for y in ys)}
    if groups and series and plot_bars(ctx.imgdir / "cp_ratio.png",
                                       "Copy time ÷ cp -r (medians; below 1 = faster)",
                                       "÷ cp -r", groups, series, logy=True, hline=1.0):
        md.append("![copy time ÷ cp -r per cell](img/cp_ratio.png)\n")

    if kept:
        md.append("### What each copier kept (mixed tree, its first good run)\n")
        md.append(ctx.table(["copier", "hard links", "modes", "mtimes"],
                            [[cell(n), kept[n]["hard"], kept[n]["modes"], kept[n]["mtimes"]]
                             for n in COPIERS if n in kept]))
    if S.errors:
        md.append("\nErrors:\n\n" + "\n".join(f"- {e}" for e in S.errors) + "\n")
    return "\n".join(md)
