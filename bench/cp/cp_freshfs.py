"""The cp suite's destination: a fresh ext4 for every timed copy (FreshFS,
and why in bench/cp/bench.py's docstring), its sizing, and the probe of
what copy_file_range and FICLONE do across the two file systems."""
import errno
import fcntl
import os
import subprocess
import time

from common import BenchError

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


def fmt_size(n):
    for div, suf in ((GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB")):
        if n >= div:
            return f"{n / div:.3g} {suf}"
    return f"{n} B"


def fs_of(path):
    """'ext4 on /dev/vda' for the mount holding path."""
    best = ("?", "?", "")
    path = os.path.realpath(path)
    try:
        with open("/proc/mounts") as f:
            for line in f:
                dev, mnt, typ = line.split()[:3]
                if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best[2]):
                    best = (typ, dev, mnt)
    except OSError:
        pass
    return f"{best[0]} on {best[1]}"


# ------------------------------------------------------------ the destination file system

def est_bytes(name, spec):
    """A generous estimate of the bytes a tree of the plan takes (before it
    exists; footprint() is the real one)."""
    if name == "small":
        return spec["files"] * 8 * KiB
    if name == "medium":
        return spec["files"] * 4 * MiB
    if name == "large":
        return sum(spec["big"]) + spec["tens"] * spec["ten"]
    return spec["blobs"] * spec["blob_mib"][1] * MiB + spec["files"] * 16 * KiB


def footprint(sts):
    """(bytes allocated, inodes) of a scanned tree: each inode once."""
    seen = {}
    for st in sts.values():
        seen[st.st_ino] = st.st_blocks * 512
    return sum(seen.values()) + 4 * KiB, len(seen) + 1


def image_size(nbytes, inodes):
    """Bytes of an ext4 (mkfs.ext4 defaults: 4 KiB blocks, a 256-byte inode
    per 16 KiB, 5 % reserved, a journal of at most 128 MiB at these sizes)
    that holds nbytes + 20 % and inodes + 20 %; at least 1 GiB, so that
    mkfs.ext4 picks its "default" layout rather than "small" (1 KiB
    blocks) for the smoke run's tiny trees."""
    data = nbytes * 1.2 / (1 - 0.05 - 256 / 16384) + 128 * MiB
    size = max(data, inodes * 1.2 * 16384, GiB)
    return -(-int(size) // MiB) * MiB


class FreshFS:
    """A fresh ext4 for every timed copy: a sparse image file on a loop
    device (direct I/O, so that its blocks are not cached twice), made anew
    with mkfs.ext4 and mounted before each copy (fresh(), not timed).

    Mounted with noinit_itable: with lazy_itable_init the kernel would
    otherwise zero the inode tables from a background thread
    (ext4lazyinit) while the copy runs. The stale inode tables that leaves
    are harmless: ext4 zeroes a new inode before it writes it."""
    MKFS = ["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard"]
    MOUNT_OPTS = "noinit_itable"

    def __init__(self, scratch, size, log):
        self.img = scratch / "dst.img"
        self.mnt = scratch / "mnt"
        self.size = size
        self.log = log
        self.dev = None
        self.dio = None
        self.mounted = False
        self.mkfs_s = []            # seconds of each mkfs.ext4
        self.mount_s = []           # seconds of each umount + mount
        self.grown = []             # sizes it was grown to

    def _run(self, argv):
        p = subprocess.run([str(a) for a in argv], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=300)
        if p.returncode:
            raise BenchError(f"{' '.join(map(str, argv))}: exit {p.returncode}: "
                             + " | ".join(p.stderr.strip().splitlines()[-2:]))
        return p.stdout.strip()

    def setup(self):
        self.mnt.mkdir(exist_ok=True)
        with open(self.img, "wb") as f:
            f.truncate(self.size)
        try:
            self.dev = self._run(["losetup", "--find", "--show", "--direct-io=on", self.img])
        except BenchError as e:
            self.log(f"losetup --direct-io=on refused ({e}); without direct I/O")
            self.dev = self._run(["losetup", "--find", "--show", self.img])
        try:
            with open(f"/sys/block/{os.path.basename(self.dev)}/loop/dio") as f:
                self.dio = f.read().strip() == "1"
        except OSError:
            self.dio = None
        t0 = time.monotonic()
        self.fresh()
        self.log(f"destination: fresh ext4 on {self.dev} ({fmt_size(self.size)} sparse image "
                 f"{self.img}, direct I/O {'on' if self.dio else 'off'}) before every copy; "
                 f"mkfs.ext4 took {self.mkfs_s[-1]:.3f} s, umount + mkfs + mount "
                 f"{time.monotonic() - t0:.3f} s")

    def grow(self, size):
        """Makes the image at least size bytes (unmounted; the next fresh()
        makes a file system of the new size)."""
        if size <= self.size:
            return
        self.umount()
        os.truncate(self.img, size)
        self._run(["losetup", "--set-capacity", self.dev])
        self.log(f"destination image grown from {fmt_size(self.size)} to {fmt_size(size)}")
        self.size = size
        self.grown.append(size)

    def umount(self):
        if self.mounted:
            self._run(["umount", self.mnt])
            self.mounted = False

    def fresh(self):
        """Unmounts, mkfs, mounts; returns the destination path (not yet
        existing) on the new file system."""
        t0 = time.monotonic()
        self.umount()
        t1 = time.monotonic()
        self._run(self.MKFS + [self.dev])
        t2 = time.monotonic()
        self._run(["mount", "-t", "ext4", "-o", self.MOUNT_OPTS, self.dev, self.mnt])
        self.mounted = True
        self.mkfs_s.append(t2 - t1)
        self.mount_s.append(time.monotonic() - t2 + t1 - t0)
        return str(self.mnt / "dst")

    def close(self):
        """Unmounts and detaches, whatever state it is in; never raises."""
        if self.mounted:
            try:
                self.umount()
            except (BenchError, OSError, subprocess.SubprocessError) as e:
                self.log(f"umount {self.mnt}: {e}; lazy unmount")
                subprocess.run(["umount", "-l", str(self.mnt)], check=False)
                self.mounted = False
        if self.dev:
            try:
                self._run(["losetup", "-d", self.dev])
            except (BenchError, OSError, subprocess.SubprocessError) as e:
                self.log(f"losetup -d {self.dev}: {e}")
            self.dev = None
        try:
            os.unlink(self.img)
        except OSError:
            pass


def probe_xdev(src_dir, dst_dir):
    """What copy_file_range(2) and FICLONE do from a file in src_dir to one
    in dst_dir: {"copy_file_range": "EXDEV" | "copied N bytes" | ...}."""
    FICLONE = 0x40049409
    a, b = os.path.join(src_dir, "xdev-probe"), os.path.join(dst_dir, "xdev-probe")
    out = {}
    with open(a, "wb") as f:
        f.write(os.urandom(64 * KiB))
    try:
        for what in ("copy_file_range", "FICLONE"):
            fi = os.open(a, os.O_RDONLY)
            fo = os.open(b, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                if what == "FICLONE":
                    fcntl.ioctl(fo, FICLONE, fi)
                    out[what] = "cloned"
                else:
                    out[what] = f"copied {os.copy_file_range(fi, fo, 64 * KiB)} bytes"
            except OSError as e:
                out[what] = errno.errorcode.get(e.errno, str(e.errno))
            finally:
                os.close(fi)
                os.close(fo)
    finally:
        for p in (a, b):
            try:
                os.unlink(p)
            except OSError:
                pass
    return out
