"""The httpd suite's servers (bench/httpd/bench.py): each one's command
line and configuration, starting and stopping them pinned to a CPU and
optionally in a memory cgroup, and reading their CPU time and memory from
/proc.

Every server: one worker process or thread, listening on 127.0.0.1 on its
own port, serving the same directory, no access log, keep-alive
connections kept for at least 120 s idle and for (practically) any number
of requests. A server whose program is missing is listed with the reason
and skipped.
"""
import ctypes
import os
import resource
import shutil
import signal
import socket
import subprocess
import time

from common import BenchError

CGROUP_NAME = "uaio-bench-httpd"
HZ = os.sysconf("SC_CLK_TCK")
MAX_CONNS = 16000            # configured connection limits, above the idle ones + wrk's


class Server:
    """One entry of the server list: name, and argv(root, port, confdir) ->
    argv (writing its configuration into confdir), or why it cannot run."""

    def __init__(self, name, prog, argv, why=None, version=None, config=""):
        self.name, self.prog, self.argv = name, prog, argv
        self.why, self.version, self.config = why, version, config


def version_of(argv):
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=10)
        line = (p.stdout.strip().splitlines() or [""])[0]
        return line.strip()[:80] or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def nginx_conf(nginx, aio_threads):
    def argv(root, port, d):
        os.makedirs(os.path.join(d, "tmp"), exist_ok=True)
        io = "sendfile off;\n    aio threads;" if aio_threads else "sendfile on;"
        conf = f"""daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile {MAX_CONNS + 4000};
error_log {d}/error.log warn;
pid {d}/nginx.pid;
events {{
    worker_connections {MAX_CONNS};
}}
http {{
    access_log off;
    {io}
    keepalive_timeout 120s;
    keepalive_requests 100000000;
    default_type application/octet-stream;
    client_body_temp_path {d}/tmp/body;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        location / {{ }}
    }}
}}
"""
        path = os.path.join(d, "nginx.conf")
        with open(path, "w") as f:
            f.write(conf)
        return [nginx, "-c", path, "-p", d + "/"]
    return argv


def lighttpd_conf(lighttpd, limit):
    """limit: its server.max-fds (lighttpd_fds)."""

    def argv(root, port, d):
        conf = f"""server.document-root = "{root}"
server.bind = "127.0.0.1"
server.port = {port}
server.errorlog = "{d}/error.log"
server.max-worker = 0
server.max-keep-alive-requests = 65535
server.max-keep-alive-idle = 300
server.max-read-idle = 300
server.max-write-idle = 300
server.max-fds = {limit}
server.max-connections = {limit // 2 - 16}
server.event-handler = "linux-sysepoll"
server.network-backend = "sendfile"
"""
        path = os.path.join(d, "lighttpd.conf")
        with open(path, "w") as f:
            f.write(conf)
        return [lighttpd, "-D", "-f", path]
    return argv


def h2o_conf(h2o):
    def argv(root, port, d):
        conf = f"""listen:
  host: 127.0.0.1
  port: {port}
user: root
num-threads: 1
max-connections: {MAX_CONNS}
http1-request-timeout: 300
error-log: {d}/error.log
hosts:
  default:
    paths:
      /:
        file.dir: {root}
"""
        path = os.path.join(d, "h2o.conf")
        with open(path, "w") as f:
            f.write(conf)
        return [h2o, "-m", "worker", "-c", path]
    return argv


def uaio_argv(binary, mode):
    def argv(root, port, d):
        return [binary, root, "--port", str(port), "--addr", "127.0.0.1", "--threads", "1",
                "--disk-io", mode, "--quiet", "--idle-timeout", "300"]
    return argv


BASE = "nginx sendfile"
UAIO_MODES = ["laio", "blocking", "threads"]


def find_uaio(build):
    """<build>/tools/uaio-httpd/uaio-httpd (its own CMakeLists.txt), else
    <build>/tools/uaio-httpd (a plain tools/ program); None if neither."""
    for p in (build / "tools" / "uaio-httpd" / "uaio-httpd", build / "tools" / "uaio-httpd"):
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


def servers(build, fds):
    """The server list, in the order of the tables; uaio-httpd's modes are
    three more entries. fds: the most descriptors a server could want (the
    largest set's files + every connection)."""
    nginx, lighttpd, h2o = (shutil.which(p) or (f"/usr/sbin/{p}" if os.access(f"/usr/sbin/{p}", os.X_OK)
                                               else None) for p in ("nginx", "lighttpd", "h2o"))
    lt_fds = min(server_nofile(), 65535)   # lighttpd's server.max-fds is 16 bits wide
    uaio = find_uaio(build)
    missing = "not installed (scripts/setup.sh bench)"
    out = [
        Server(BASE, nginx, nginx and nginx_conf(nginx, False), None if nginx else missing,
               nginx and version_of([nginx, "-v"]),
               "`master_process off`, `sendfile on`, `keepalive_requests 100000000`, "
               "`keepalive_timeout 120s`, `access_log off`"),
        Server("nginx aio threads", nginx, nginx and nginx_conf(nginx, True),
               None if nginx else missing, nginx and version_of([nginx, "-v"]),
               "as above with `sendfile off; aio threads;` (the default pool: 32 threads)"),
        Server("lighttpd", lighttpd, lighttpd and lighttpd_conf(lighttpd, lt_fds),
               None if lighttpd else missing, lighttpd and version_of([lighttpd, "-v"]),
               "`-D`, `server.max-worker = 0`, `network-backend = \"sendfile\"`, "
               "`max-keep-alive-requests = 65535`, `max-keep-alive-idle = 300`"
               + ("" if fds <= lt_fds else
                  f". It keeps a descriptor open for every file it served in the last "
                  f"seconds (stat cache on or off): the largest set and the connections "
                  f"({fds}) exceed the {lt_fds}-descriptor limit servers "
                  f"get here, so its opens fail (EMFILE), it answers 403 and its cells fail")),
        Server("h2o", h2o, h2o and h2o_conf(h2o), None if h2o else missing,
               h2o and version_of([h2o, "--version"]),
               "`num-threads: 1`, `file.dir`, `http1-request-timeout: 300`, no access log"),
    ]
    shown = os.path.join(build.name, os.path.relpath(uaio, build)) if uaio else "uaio-httpd"
    for m in UAIO_MODES:
        out.append(Server(f"uaio-httpd {m}", uaio, uaio and uaio_argv(uaio, m),
                          None if uaio else f"not built (no {build.name}/tools/uaio-httpd"
                          "/uaio-httpd)",
                          uaio and version_of([uaio, "--version"]),
                          f"`{shown} --threads 1 --disk-io {m} --quiet "
                          "--idle-timeout 300`"))
    return out


# ------------------------------------------------------------ memory cgroup

class MemCgroup:
    """A memory cgroup limited to limit bytes. cgroup v2 (memory in
    /sys/fs/cgroup/cgroup.controllers): /sys/fs/cgroup/<name>, memory.max.
    v1 (a memory hierarchy mounted at /sys/fs/cgroup/memory): a child of
    this process's own memory cgroup, memory.limit_in_bytes. Raises
    BenchError when neither works."""

    def __init__(self, limit, name=CGROUP_NAME):
        self.limit = limit
        self.path = None
        v2 = "/sys/fs/cgroup"
        try:
            with open(f"{v2}/cgroup.controllers") as f:
                has_v2 = "memory" in f.read().split()
        except OSError:
            has_v2 = False
        try:
            if has_v2:
                self.version = 2
                with open(f"{v2}/cgroup.subtree_control", "w") as f:
                    f.write("+memory")
                self.path = f"{v2}/{name}"
                os.makedirs(self.path, exist_ok=True)
                self._write("memory.max", str(limit))
                if os.path.exists(f"{self.path}/memory.swap.max"):
                    self._write("memory.swap.max", "0")
            elif os.path.isdir("/sys/fs/cgroup/memory"):
                self.version = 1
                own = "/"
                with open("/proc/self/cgroup") as f:
                    for line in f:
                        _, ctrls, path = line.rstrip("\n").split(":", 2)
                        if "memory" in ctrls.split(","):
                            own = path
                self.path = os.path.join("/sys/fs/cgroup/memory" + own.rstrip("/"), name)
                os.makedirs(self.path, exist_ok=True)
                self._write("memory.limit_in_bytes", str(limit))
            else:
                raise BenchError("no memory cgroup controller (neither cgroup v2 with memory "
                                 "nor a v1 memory hierarchy)")
        except OSError as e:
            self.close()
            raise BenchError(f"memory cgroup: {e}") from e

    def _write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(value)

    def _read(self, name):
        with open(os.path.join(self.path, name)) as f:
            return f.read()

    def join(self, pid=0):
        """Moves pid (0: the caller) into the cgroup."""
        self._write("cgroup.procs", str(pid or os.getpid()))

    def usage(self):
        return int(self._read("memory.current" if self.version == 2 else "memory.usage_in_bytes"))

    def limit_now(self):
        v = self._read("memory.max" if self.version == 2 else "memory.limit_in_bytes").strip()
        return None if v == "max" else int(v)

    def probe(self):
        """Checks that a child put in the cgroup lands there and that the
        limit holds: returns a description."""
        p = subprocess.run(["cat", "/proc/self/cgroup"], preexec_fn=self.join,
                           stdout=subprocess.PIPE, text=True, check=True)
        name = os.path.basename(self.path)
        if name not in p.stdout:
            raise BenchError(f"a child moved into {self.path} is not there: {p.stdout.strip()}")
        got = self.limit_now()
        if got is None or got > self.limit:
            raise BenchError(f"the limit did not hold: {got}")
        return f"cgroup v{self.version} {self.path}"

    def close(self):
        if not self.path or not os.path.isdir(self.path):
            return
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.1)     # a process in it still exiting


# ------------------------------------------------------------ a running server

NOFILE = 65536


def raise_nofile():
    """Every server gets the same descriptor limit: NOFILE (root may raise
    the hard limit), else the hard limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        if hard < NOFILE:
            resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))
            return
    except (ValueError, OSError):
        pass
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def server_nofile():
    """The descriptor limit a server runs with (raise_nofile, in a child)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            raise_nofile()
            os.write(w, str(resource.getrlimit(resource.RLIMIT_NOFILE)[0]).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        got = f.read()
    os.waitpid(pid, 0)
    return int(got)


def die_with_parent():
    """PR_SET_PDEATHSIG(SIGKILL): a server outlives no killed runner (it
    runs in its own session, so it would not get the terminal's signals)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def port_free(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def pick_ports(n, base=18080):
    out, p = [], base
    while len(out) < n:
        if port_free(p):
            out.append(p)
        p += 1
        if p > base + 1000:
            raise BenchError("no free ports")
    return out


class Running:
    """A server started pinned to cpu (and in cgroup): pid, stop()."""

    def __init__(self, srv, root, port, confdir, cpu, cgroup=None, timeout=15):
        self.srv, self.port = srv, port
        os.makedirs(confdir, exist_ok=True)
        self.logpath = os.path.join(confdir, "server.out")
        argv = ["taskset", "-c", str(cpu)] + srv.argv(str(root), port, confdir)

        def pre():
            die_with_parent()
            raise_nofile()
            if cgroup:
                cgroup.join()
        with open(self.logpath, "wb") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True,
                                         preexec_fn=pre, cwd=confdir)
        self.pid = self.proc.pid
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise BenchError(f"{srv.name} exited ({self.proc.returncode}) at start: "
                                 + self.log_tail())
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise BenchError(f"{srv.name}: port {port} not accepting after {timeout} s: "
                                     + self.log_tail()) from None
                time.sleep(0.05)

    def log_tail(self, n=3):
        try:
            with open(self.logpath, errors="replace") as f:
                lines = f.read().strip().splitlines()
            d = os.path.dirname(self.logpath)
            if os.path.exists(os.path.join(d, "error.log")):
                with open(os.path.join(d, "error.log"), errors="replace") as f:
                    lines += f.read().strip().splitlines()
            return " | ".join(lines[-n:]) or "(no output)"
        except OSError:
            return "(no output)"

    def alive(self):
        return self.proc.poll() is None

    def cpu_ticks(self):
        """utime + stime of the whole process (all its threads)."""
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    def mem(self):
        """{'rss': VmRSS, 'hwm': VmHWM, 'anon': RssAnon}, bytes."""
        keys = {"VmRSS:": "rss", "VmHWM:": "hwm", "RssAnon:": "anon"}
        out = {}
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                k = line.split(None, 1)[0]
                if k in keys:
                    out[keys[k]] = int(line.split()[1]) * 1024
        return out

    def stop(self, timeout=10):
        """SIGTERM, then after timeout s SIGKILL (self.killed), to the
        server's own process group."""
        self.killed = False
        if self.proc.poll() is None:
            try:
                os.killpg(self.pid, signal.SIGTERM)
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.killed = True
                os.killpg(self.pid, signal.SIGKILL)
                self.proc.wait()
            except ProcessLookupError:
                pass
        return self.proc.returncode
