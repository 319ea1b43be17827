"""A slow disk for one real process: a FUSE passthrough file system whose writes and fsyncs
wait a delay the test sets at run time.

    python -m tests.support.slow_fs SOURCE MOUNTPOINT CONTROL

serves the directory ``SOURCE`` at ``MOUNTPOINT`` (in the foreground, until unmounted or
SIGTERM). ``CONTROL`` holds a number of milliseconds (``0``: full speed); every ``write``
and ``fsync``/``fdatasync`` sleeps that long before it reaches ``SOURCE``, so a broker whose
log directory is the mount point sees a slow device: appends, segment rolls, checkpoint
writes and flushes all stall, in the kernel, exactly where a slow disk would stall them.
Errors of the source (ENOSPC of a full tmpfs beneath) come back unchanged.

Why FUSE: the test machine runs as root with ``/dev/fuse`` but without device-mapper (no
``dm-delay``), and cgroup-v1 blkio throttling does not see buffered writes (the page cache's
writeback is not charged to the writer), so it would slow O_DIRECT only. A FUSE passthrough
slows every write and fsync of the broker, buffered or not. It uses mfusepy (ctypes
bindings of libfuse 3: no compiler, ``make`` installs it and Debian's libfuse3).
"""
from __future__ import annotations

import errno
import fcntl
import os
import signal
import sys
import threading
import time

from mfusepy import FUSE, FuseOSError, Operations  # an OSError's errno reaches the caller


class SlowPassthrough(Operations):
    use_ns = True                     # utimens gets nanoseconds

    def __init__(self, source: str, control: str):
        self.source = os.path.realpath(source)
        self.control = control
        self._delay = 0.0
        self._seen = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ the delay
    def delay(self) -> float:
        try:
            st = os.stat(self.control)
            key = (st.st_mtime_ns, st.st_size)
            if key != self._seen:
                with open(self.control) as f:
                    self._delay = max(0.0, float(f.read().strip() or 0)) / 1000
                self._seen = key
        except (OSError, ValueError):
            pass
        return self._delay

    def _slow(self) -> None:
        d = self.delay()
        if d:
            time.sleep(d)

    def _p(self, path: str) -> str:
        return os.path.join(self.source, path.lstrip("/"))

    # ------------------------------------------------------------------ metadata
    def access(self, path, amode):
        if not os.access(self._p(path), amode):
            raise FuseOSError(errno.EACCES)
        return 0

    def getattr(self, path, fh=None):
        st = os.fstat(fh) if fh is not None else os.lstat(self._p(path))
        return {k: getattr(st, k) for k in ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size",
                                            "st_atime", "st_mtime", "st_ctime", "st_blocks")}

    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self._p(path))

    def statfs(self, path):
        sv = os.statvfs(self._p(path))
        return {k: getattr(sv, k) for k in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail",
                                            "f_ffree", "f_files", "f_flag", "f_frsize", "f_namemax")}

    def chmod(self, path, mode):
        return os.chmod(self._p(path), mode)

    def chown(self, path, uid, gid):
        return os.chown(self._p(path), uid, gid)

    def utimens(self, path, times=None):
        return os.utime(self._p(path), ns=times) if times else os.utime(self._p(path))

    def mkdir(self, path, mode):
        return os.mkdir(self._p(path), mode)

    def rmdir(self, path):
        return os.rmdir(self._p(path))

    def unlink(self, path):
        return os.unlink(self._p(path))

    def rename(self, old, new):
        return os.rename(self._p(old), self._p(new))

    def readlink(self, path):
        return os.readlink(self._p(path))

    def symlink(self, target, source):
        return os.symlink(source, self._p(target))

    # ------------------------------------------------------------------ data
    def open(self, path, flags):
        return os.open(self._p(path), flags)

    def create(self, path, mode, fi=None):
        # readable too: a broker reads the segment it creates through the same descriptor
        return os.open(self._p(path), os.O_RDWR | os.O_CREAT, mode)

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def write(self, path, data, offset, fh):
        self._slow()
        return os.pwrite(fh, data, offset)

    def truncate(self, path, length, fh=None):
        if fh is not None:
            os.ftruncate(fh, length)
        else:
            os.truncate(self._p(path), length)
        return 0

    def flush(self, path, fh):
        return 0

    def fsync(self, path, datasync, fh):
        self._slow()
        (os.fdatasync if datasync else os.fsync)(fh)
        return 0

    def fsyncdir(self, path, datasync, fh):
        self._slow()
        return 0

    def release(self, path, fh):
        os.close(fh)
        return 0

    def flock(self, path, fh, op):
        fcntl.flock(fh, op)
        return 0


class SlowDisk:
    """The file system above, served by a child process for a test:

        disk = SlowDisk(backing_dir, mountpoint, control_file).start()
        disk.set_delay(100)    # every write and fsync waits 100 ms
        disk.set_delay(0)
        disk.stop()            # unmounts
    """

    def __init__(self, source, mountpoint, control):
        self.source, self.mountpoint, self.control = str(source), str(mountpoint), str(control)
        self.proc = None

    def set_delay(self, ms: float) -> None:
        tmp = self.control + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{ms}\n")
        os.replace(tmp, self.control)

    def start(self, timeout: float = 20.0) -> "SlowDisk":
        import subprocess
        self.set_delay(0)
        os.makedirs(self.source, exist_ok=True)
        os.makedirs(self.mountpoint, exist_ok=True)
        self.proc = subprocess.Popen([sys.executable, "-W", "ignore", "-m", "tests.support.slow_fs",
                                      self.source, self.mountpoint, self.control],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        end = time.monotonic() + timeout
        while not os.path.ismount(self.mountpoint):
            if self.proc.poll() is not None or time.monotonic() > end:
                err = self.proc.stderr.read().decode() if self.proc.poll() is not None else ""
                self.stop()
                raise RuntimeError(f"slow file system not mounted at {self.mountpoint}: {err}")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        import subprocess
        subprocess.run(["umount", "-l", self.mountpoint], capture_output=True)
        if self.proc is not None:
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


def main(argv: list[str]) -> None:
    source, mountpoint, control = argv
    os.makedirs(mountpoint, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: os.system(f"umount -l {mountpoint}"))
    FUSE(SlowPassthrough(source, control), mountpoint, foreground=True, nothreads=False)


if __name__ == "__main__":
    main(sys.argv[1:])
