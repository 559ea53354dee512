"""The cp suite's trees: deterministic generators (a fixed seed gives the
same tree in every run of a mode), and scan() / describe() of what they
made. Used by bench/cp/bench.py."""
import math
import os
import random
import stat

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
SEED = 20260601
TREES = ["small", "medium", "large", "mixed"]


class Writer:
    """Deterministic file contents: slices of a seeded random pool."""
    POOL = 16 * MiB

    def __init__(self, seed):
        self.rnd = random.Random(seed)
        self.pool = memoryview(self.rnd.randbytes(self.POOL))

    def file(self, path, size, mode=0o644):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
        try:
            left = size
            while left:
                k = min(left, MiB)
                off = self.rnd.randrange(self.POOL - k + 1)
                buf = self.pool[off:off + k]
                while buf:
                    buf = buf[os.write(fd, buf):]
                left -= k
        finally:
            os.close(fd)


def gen_small(root, w, files):
    """A 3-level tree (k x k x k leaf directories, ~50 files each) of
    1-8 KiB files."""
    k = max(1, math.ceil((files / 50) ** (1 / 3)))
    leaves = [os.path.join(root, f"d{a:02d}", f"d{b:02d}", f"d{c:02d}")
              for a in range(k) for b in range(k) for c in range(k)]
    for d in leaves:
        os.makedirs(d)
    for i in range(files):
        w.file(os.path.join(leaves[i % len(leaves)], f"f{i:06d}.dat"), w.rnd.randint(KiB, 8 * KiB))


def gen_medium(root, w, files):
    dirs = [os.path.join(root, f"m{i}") for i in range(4)]
    for d in dirs:
        os.makedirs(d)
    for i in range(files):
        w.file(os.path.join(dirs[i % 4], f"f{i:04d}.bin"), w.rnd.randint(MiB, 4 * MiB))


def gen_large(root, w, big, tens, ten):
    os.makedirs(os.path.join(root, "big"))
    os.makedirs(os.path.join(root, "ten"))
    for i, sz in enumerate(big):
        w.file(os.path.join(root, "big", f"b{i}.bin"), sz)
    for i in range(tens):
        w.file(os.path.join(root, "ten", f"t{i:03d}.bin"), ten)


DIRNAMES = ["src", "lib", "include", "test", "docs", "core", "util", "net", "fs", "io", "mm",
            "arch", "drivers", "tools", "scripts", "kernel", "crypto", "sound", "block", "ipc"]
EXTS = [".c", ".h", ".c", ".h", ".py", ".md", ".txt", ".json", ".S", ".rs", ".toml", ""]


def gen_mixed(root, w, files, dirs, blobs, blob_mib):
    """Source-tree-like: directories up to 7 deep, log-normal file sizes
    around 3 KiB (some empty, some executable), relative symlinks to files
    and directories (one dangling), hard links, a few large blobs."""
    rnd = w.rnd
    os.makedirs(root)
    dl = [("", 0)]
    for i in range(dirs):
        while True:
            parent, depth = rnd.choice(dl)
            if depth < 7:
                break
        rel = os.path.join(parent, f"{rnd.choice(DIRNAMES)}{i}")
        os.mkdir(os.path.join(root, rel))
        dl.append((rel, depth + 1))
    made = []
    for i in range(files):
        d = rnd.choice(dl)[0]
        rel = os.path.join(d, f"f{i:05d}{rnd.choice(EXTS)}")
        size = 0 if rnd.random() < 0.02 else min(2 * MiB, int(rnd.lognormvariate(math.log(3 * KiB), 1.2)))
        w.file(os.path.join(root, rel), size, 0o755 if rnd.random() < 0.1 else 0o644)
        made.append(rel)
    for i in range(blobs):
        rel = os.path.join(rnd.choice(dl)[0], f"blob{i}.pack")
        w.file(os.path.join(root, rel), rnd.randint(*blob_mib) * MiB)
    for i in range(max(3, files // 200)):
        d = rnd.choice(dl)[0]
        target = rnd.choice(dl[1:])[0] if i % 5 == 4 else rnd.choice(made)
        os.symlink(os.path.relpath(target, d or "."), os.path.join(root, d, f"link{i}"))
    os.symlink(os.path.join("..", "no", "such", "file"), os.path.join(root, dl[-1][0], "dangling"))
    for i in range(max(2, files // 400)):
        os.link(os.path.join(root, rnd.choice(made)),
                os.path.join(root, rnd.choice(dl)[0], f"hard{i}.o"))


def generate(name, root, spec):
    w = Writer(SEED + TREES.index(name))
    if name == "small":
        gen_small(root, w, spec["files"])
    elif name == "medium":
        gen_medium(root, w, spec["files"])
    elif name == "large":
        gen_large(root, w, spec["big"], spec["tens"], spec["ten"])
    else:
        gen_mixed(root, w, spec["files"], spec["dirs"], spec["blobs"], spec["blob_mib"])
    os.sync()


# ------------------------------------------------------------ scan, verify

def scan(root):
    """{relative path: (kind, size, symlink target)} and {path: stat} of a
    tree, without following symlinks."""
    out, sts = {}, {}
    stack = [""]
    while stack:
        rel = stack.pop()
        with os.scandir(os.path.join(root, rel)) as it:
            for e in it:
                r = os.path.join(rel, e.name)
                st = e.stat(follow_symlinks=False)
                sts[r] = st
                if stat.S_ISDIR(st.st_mode):
                    out[r] = ("dir", 0, None)
                    stack.append(r)
                elif stat.S_ISLNK(st.st_mode):
                    out[r] = ("symlink", 0, os.readlink(e.path))
                elif stat.S_ISREG(st.st_mode):
                    out[r] = ("file", st.st_size, None)
                else:
                    out[r] = ("other", 0, None)
    return out, sts


def describe(entries, sts):
    files = [r for r, v in entries.items() if v[0] == "file"]
    inodes = {}
    for r in files:
        inodes.setdefault(sts[r].st_ino, []).append(r)
    return dict(files=len(files), dirs=sum(v[0] == "dir" for v in entries.values()),
                symlinks=sum(v[0] == "symlink" for v in entries.values()),
                hardlinks=sum(len(g) - 1 for g in inodes.values()),
                bytes=sum(sts[r].st_size for r in files),
                depth=max((r.count("/") + 1 for r, v in entries.items() if v[0] == "dir"), default=0))
