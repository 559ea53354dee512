"""The httpd suite's file sets and request lists (bench/httpd/bench.py).

A set is a directory of files whose sizes follow a heavy-tailed,
SPECweb99-like mixture (most files a few KiB, some hundreds of KiB, rare
MiB; mean ~58 KiB), made deterministic: the sizes are the mixture's
quantiles at (i + 0.5) / n, shuffled with a fixed seed, so the same n
always gives the same files (and the mean does not depend on which few
large files a random draw happened to pick). Contents are slices of a
seeded random pool.

A request list is one URL path per line, drawn in advance with a fixed
seed, uniformly or Zipf(1)-distributed over the set (the Zipf ranks over a
seeded permutation of the files, so popularity does not follow size or
name); bench/httpd/paths.lua makes wrk cycle through it.
"""
import bisect
import collections
import http.client
import itertools
import os
import random
import subprocess
import sys

from common import BenchError

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
SEED = 20260701
# (probability, smallest, largest): log-uniform within each class.
SIZE_CLASSES = [(0.35, 256, 4 * KiB), (0.44, 4 * KiB, 32 * KiB), (0.17, 32 * KiB, 256 * KiB),
                (0.035, 256 * KiB, MiB), (0.005, MiB, 6 * MiB)]
ZIPF_ALPHA = 1.0
PER_DIR = 100


def fmt_size(n):
    for div, suf in ((GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB")):
        if n >= div:
            return f"{n / div:.3g} {suf}"
    return f"{n:.0f} B"


def size_quantile(q):
    """The size at quantile q (0 < q < 1) of SIZE_CLASSES."""
    acc = 0.0
    for p, lo, hi in SIZE_CLASSES:
        if q < acc + p or (p, lo, hi) == SIZE_CLASSES[-1]:
            f = min(max((q - acc) / p, 0.0), 1.0)
            return int(lo * (hi / lo) ** f)
        acc += p
    raise AssertionError


def sizes(n, seed):
    out = [size_quantile((i + 0.5) / n) for i in range(n)]
    random.Random(seed).shuffle(out)
    return out


def rel_path(i):
    return f"d{i // PER_DIR:04d}/f{i:06d}.dat"


class FileSet:
    """A generated set: root, names (relative paths), sizes."""

    def __init__(self, name, root, n, seed):
        self.name, self.root, self.seed = name, str(root), seed
        self.names = [rel_path(i) for i in range(n)]
        self.sizes = sizes(n, seed)
        self.total = sum(self.sizes)

    def path(self, i):
        return os.path.join(self.root, self.names[i])

    def generate(self):
        rnd = random.Random(self.seed ^ 0x5eed)
        pool = memoryview(rnd.randbytes(4 * MiB))
        for d in range((len(self.names) + PER_DIR - 1) // PER_DIR):
            os.makedirs(os.path.join(self.root, f"d{d:04d}"), exist_ok=True)
        for i, size in enumerate(self.sizes):
            fd = os.open(self.path(i), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                left = size
                while left:
                    k = min(left, len(pool))
                    off = rnd.randrange(len(pool) - k + 1)
                    buf = pool[off:off + k]
                    while buf:
                        buf = buf[os.write(fd, buf):]
                    left -= k
            finally:
                os.close(fd)
        os.sync()

    def describe(self):
        s = sorted(self.sizes)
        n = len(s)
        return dict(files=n, total=self.total, mean=self.total / n, median=s[n // 2],
                    p90=s[int(n * 0.9)], p99=s[min(n - 1, int(n * 0.99))], max=s[-1])

    def smallest(self):
        return min(range(len(self.sizes)), key=self.sizes.__getitem__)

    def largest(self):
        return max(range(len(self.sizes)), key=self.sizes.__getitem__)


class RequestList:
    """count request paths drawn from fs, uniform or zipf; written to path.
    hot: the file indexes from the least to the most popular (Zipf rank
    order reversed; for uniform, the same seeded order), for warming a set
    that does not fit (bench.py)."""

    def __init__(self, fs, dist, count, path):
        self.fs, self.dist, self.count, self.path = fs, dist, count, str(path)
        n = len(fs.names)
        rnd = random.Random(fs.seed * 31 + (1 if dist == "uniform" else 2))
        perm = list(range(n))
        random.Random(fs.seed + 7).shuffle(perm)
        if dist == "uniform":
            draws = [rnd.randrange(n) for _ in range(count)]
        elif dist == "zipf":
            cum = list(itertools.accumulate(1.0 / (r + 1) ** ZIPF_ALPHA for r in range(n)))
            top = cum[-1]
            draws = [perm[min(n - 1, bisect.bisect_left(cum, rnd.random() * top))]
                     for _ in range(count)]
        else:
            raise ValueError(dist)
        self.hot = perm[::-1]
        with open(self.path, "w") as f:
            f.write("".join(f"/{fs.names[i]}\n" for i in draws))
        distinct = set(draws)
        self.mean_bytes = sum(fs.sizes[i] for i in draws) / count
        self.distinct = len(distinct)
        self.distinct_bytes = sum(fs.sizes[i] for i in distinct)
        # The share of requests going to the most popular files that fit in
        # 10 % of the set's bytes (the cache a set that does not fit keeps).
        hits = collections.Counter(draws)
        budget, acc, got = fs.total * 0.1, 0, 0
        for i, c in sorted(hits.items(), key=lambda kv: -kv[1]):
            if acc + fs.sizes[i] > budget:
                break
            acc += fs.sizes[i]
            got += c
        self.top10 = got / count


# ------------------------------------------------------------ the page cache

def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


READER = """import sys
for line in open(sys.argv[1]):
    with open(line.rstrip("\\n"), "rb") as f:
        while f.read(1 << 22):
            pass
"""


def read_files(paths, listfile, preexec_fn=None, timeout=1800):
    """Reads the files named in paths (in that order) in a child process,
    which preexec_fn may put into a memory cgroup: what it reads is charged
    there, and is the page cache the server in that cgroup finds."""
    with open(listfile, "w") as f:
        f.write("".join(p + "\n" for p in paths))
    p = subprocess.run([sys.executable, "-c", READER, str(listfile)], preexec_fn=preexec_fn,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=timeout)
    if p.returncode:
        raise BenchError(f"reading the set failed: {p.stderr.strip()[-300:]}")


def warm_paths(fs, order, budget):
    """The paths to read to warm fs: all of them (budget None), else the
    files at the end of order (the most popular last) up to budget bytes,
    least popular of those first, so that the page cache ends holding the
    most popular ones. Reading the rest first would only be evicted again."""
    if budget is None:
        return [fs.path(i) for i in range(len(fs.names))]
    pick, acc = [], 0
    for i in reversed(order):
        if acc >= budget:
            break
        pick.append(i)
        acc += fs.sizes[i]
    return [fs.path(i) for i in reversed(pick)]


# ------------------------------------------------------------ verification

def verify_server(port, fs, extra=6):
    """Fetches the smallest and the largest file and a few others over one
    keep-alive connection, compares them with the files, and checks that
    a missing path gets a 404. Raises BenchError."""
    rnd = random.Random(fs.seed + 99)
    pick = [fs.smallest(), fs.largest()] + [rnd.randrange(len(fs.names)) for _ in range(extra)]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        for i in pick:
            conn.request("GET", "/" + fs.names[i])
            r = conn.getresponse()
            body = r.read()
            if r.status != 200:
                raise BenchError(f"GET /{fs.names[i]}: status {r.status}")
            with open(fs.path(i), "rb") as f:
                want = f.read()
            if body != want:
                raise BenchError(f"GET /{fs.names[i]}: {len(body)} bytes differ from the "
                                 f"file's {len(want)}")
            if r.will_close:
                raise BenchError(f"GET /{fs.names[i]}: the server closes the connection "
                                 "(no keep-alive)")
        conn.request("GET", "/no/such/file.dat")
        r = conn.getresponse()
        r.read()
        if r.status != 404:
            raise BenchError(f"GET of a missing path: status {r.status}, not 404")
    except (OSError, http.client.HTTPException) as e:
        raise BenchError(f"verification: {type(e).__name__}: {e}") from e
    finally:
        conn.close()
    return len(pick)

