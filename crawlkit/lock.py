"""The round lock: one writer per crawl directory at a time.

A second round started while one runs is refused with a message naming the holder. The lock
is a file created atomically, with its content, holding the owner's host, pid, start time and
a random token (on a local disk ``O_CREAT | O_EXCL``; elsewhere Hadoop's ``create`` without
overwrite, which HDFS's NameNode refuses atomically when the file exists: Hadoop's
``createNewFile`` checks and then creates, so two rounds starting together could both win on
a local disk).

A lock left by a process that is gone is broken on sight when that can be known: the holder
ran on this machine (same host, boot and pid namespace) and its pid is no longer that process
(a round killed by SIGKILL, or under ``spark-submit`` by a SIGTERM that took the JVM first,
leaves its lock; cron's next round takes it over instead of failing until someone
intervenes). On a cluster we cannot see other machines' pids: such a lock is broken only when
asked (``--break-lock``), which refuses a holder seen alive here, or when its lease ran out:
the holder renews the lock's modification time every ``crawl.lock_heartbeat`` seconds, and a
lock from another machine not renewed for ``crawl.lock_expiry`` is taken over with a warning
(a driver lost with its node, a YARN attempt or a Kubernetes driver pod started elsewhere).
The lease compares the filesystem's modification time with this machine's clock: keep the
expiry well above the clocks' skew. Where a file's modification time cannot be renewed (S3,
GCS: it is the upload's), a lock is written without a lease and never lapses. A process
releases the lock only while it holds its own token, so one whose lock was broken cannot
remove its successor's.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Iterator

from pyspark.sql import SparkSession

from crawlkit import storage

LOCK_FILE = ".crawlkit.lock"
log = logging.getLogger(__name__)


class LockedError(RuntimeError):
    """The crawl directory is locked by another round."""


def lock_path(crawl_dir: str) -> str:
    return storage.join(crawl_dir, LOCK_FILE)


def holder(spark: SparkSession, crawl_dir: str) -> dict | None:
    text = storage.read_text(spark, lock_path(crawl_dir))
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return {"raw": text}


def acquire(spark: SparkSession, crawl_dir: str, command: str, *, lease: float | None = None,
            expiry: float | None = None) -> str:
    """Take the lock (breaking it if its holder is known to be gone, or, given ``expiry``,
    its lease ran out); returns our token. ``lease``: how often we will renew it (seconds)."""
    token = uuid.uuid4().hex
    facts = {**_identity(), "command": command, "token": token, "lease": lease,
             "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    if _take(spark, crawl_dir, facts):
        return token
    held = holder(spark, crawl_dir) or {}
    running, unrenewed = _running(held), _unrenewed_for(spark, crawl_dir, held)
    # the holder's own lease counts too: one renewing every 20 min is alive at 16 min
    lapse = None if expiry is None else max(expiry, 3 * float(held.get("lease") or 0))
    gone = running is False or (running is None and lapse is not None and unrenewed > lapse)
    if gone:
        log.warning("breaking the lock of %s (host %s, pid %s, since %s): %s",
                    held.get("command"), held.get("host"), held.get("pid"), held.get("since"),
                    "that process is gone" if running is False
                    else f"not renewed for {unrenewed:.0f} s (crawl.lock_expiry: {lapse:g} s)")
        _remove(spark, crawl_dir, held)
        if _take(spark, crawl_dir, facts):
            return token
        held = holder(spark, crawl_dir) or {}
    raise LockedError(
        f"crawl directory {crawl_dir} is locked by {held.get('command', '?')} "
        f"(host {held.get('host', '?')}, pid {held.get('pid', '?')}, since {held.get('since', '?')}). "
        "Wait for it to finish; if that process is gone, rerun with --break-lock "
        "(a lock from another machine is also taken over once not renewed for crawl.lock_expiry).")


def break_held_lock(spark: SparkSession, crawl_dir: str) -> None:
    """Remove the lock, unless its holder is seen running on this machine."""
    held = holder(spark, crawl_dir)
    if held is None:
        return
    if _running(held):
        raise LockedError(f"crawl directory {crawl_dir} is locked by {held.get('command', '?')}, which is "
                          f"still running (pid {held.get('pid')} on this machine): --break-lock refused")
    _remove(spark, crawl_dir, held)


def _identity() -> dict:
    """This process, as a later process can tell whether it is still there: host and pid,
    and on Linux the boot (a reboot ends every process), the pid namespace (a container's
    pids are its own) and the process's start time (a pid is reused)."""
    pid = os.getpid()
    ident = {"host": socket.gethostname(), "pid": pid}
    boot, namespace, started = _linux_facts(pid)
    if boot and namespace and started:
        ident.update(boot=boot, pidns=namespace, started=started)
    return ident


def _linux_facts(pid: int) -> tuple[str | None, str | None, str | None]:
    """(boot id, pid namespace, start time of ``pid`` in clock ticks since boot); None where
    this system does not say (not Linux, no /proc, the pid does not exist)."""
    def read(how, path):
        try:
            return how(path)
        except OSError:
            return None
    boot = read(lambda p: open(p).read().strip(), "/proc/sys/kernel/random/boot_id")
    namespace = read(os.readlink, "/proc/self/ns/pid")
    stat = read(lambda p: open(p).read(), f"/proc/{pid}/stat")
    # the fields after the command (which may hold spaces and parentheses); starttime is 22nd
    started = stat.rsplit(")", 1)[1].split()[19] if stat else None
    return boot, namespace, started


def _running(held: dict) -> bool | None:
    """Whether the lock's holder is running: True or False when it ran on this machine (same
    host, pid namespace and boot: another boot means it ended), None when that cannot be
    told (another machine or container, an older lock without these facts)."""
    here = _identity()
    if not all(held.get(k) for k in ("boot", "pidns", "started")) or "boot" not in here:
        return None
    if held.get("host") != here["host"] or held["pidns"] != here["pidns"]:
        return None
    if held["boot"] != here["boot"]:
        return False
    _, _, started = _linux_facts(int(held["pid"]))
    return started == held["started"]


def _take(spark: SparkSession, crawl_dir: str, facts: dict) -> bool:
    """Create the lock holding ``facts`` unless one exists. On S3 or GCS a file's modification
    time is its upload's: a lease there could not be renewed and would lapse under a running
    round, so the lock is rewritten without one (it has just been made: nobody else holds it)."""
    if not _create_new(spark, lock_path(crawl_dir), json.dumps(facts)):
        return False
    if facts["lease"] and not _renewable(spark, crawl_dir):
        storage.write_text(spark, lock_path(crawl_dir), json.dumps({**facts, "lease": None}))
    return True


def _renewable(spark: SparkSession, crawl_dir: str) -> bool:
    """Whether the filesystem lets the holder renew the lock's modification time (HDFS and
    local disks do; Hadoop's default ``setTimes``, as on S3 and GCS, does nothing)."""
    fs, path = storage.hadoop_fs(spark, lock_path(crawl_dir))
    created = fs.getFileStatus(path).getModificationTime()
    fs.setTimes(path, created + 1000, -1)
    return fs.getFileStatus(path).getModificationTime() != created


def _unrenewed_for(spark: SparkSession, crawl_dir: str, held: dict) -> float:
    """Seconds since a leased lock was last renewed (0 for a lock without a lease: one
    written by an older crawlkit, or a holder that does not renew, never runs out)."""
    if not held.get("lease"):
        return 0.0
    fs, path = storage.hadoop_fs(spark, lock_path(crawl_dir))
    try:
        renewed = fs.getFileStatus(path).getModificationTime() / 1000
    except Exception:  # noqa: BLE001 - released meanwhile (FileNotFoundException through Py4J)
        return 0.0
    return max(0.0, time.time() - renewed)


class _Heartbeat:
    """Renews a held lock's lease (its modification time) every ``interval`` seconds, from a
    daemon thread, while the lock is still ours."""

    def __init__(self, spark: SparkSession, crawl_dir: str, token: str, interval: float):
        self.spark, self.crawl_dir, self.token, self.interval = spark, crawl_dir, token, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="crawlkit-lock-heartbeat", daemon=True)

    def beat(self) -> None:
        held = holder(self.spark, self.crawl_dir)
        if held is not None and held.get("token") == self.token:
            fs, path = storage.hadoop_fs(self.spark, lock_path(self.crawl_dir))
            fs.setTimes(path, int(time.time() * 1000), -1)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.beat()
            except Exception:  # noqa: BLE001 - a missed beat is not the round's failure
                log.warning("could not renew the lock of %s", self.crawl_dir, exc_info=True)

    def __enter__(self) -> "_Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval)   # a beat stuck in a filesystem call is left behind


def _remove(spark: SparkSession, crawl_dir: str, held: dict) -> None:
    """Delete the lock if it is still the one ``held`` describes (not a successor's)."""
    if holder(spark, crawl_dir) == held:
        fs, path = storage.hadoop_fs(spark, lock_path(crawl_dir))
        fs.delete(path, False)


def _create_new(spark: SparkSession, where: str, text: str) -> bool:
    """Create ``where`` holding ``text`` unless it exists, in one step; False if it existed."""
    from py4j.protocol import Py4JJavaError
    fs, path = storage.hadoop_fs(spark, where)
    fs.mkdirs(path.getParent())
    if fs.getScheme() == "file":
        try:
            fd = os.open(path.toUri().getPath(), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        return True
    try:
        storage.write_text(spark, where, text, overwrite=False)
    except Py4JJavaError as exc:
        if "FileAlreadyExistsException" in exc.java_exception.getClass().getName():
            return False
        raise
    return True


def release(spark: SparkSession, crawl_dir: str, token: str) -> None:
    """Remove the lock if it is ours (``token``): a lock broken and taken by another process
    is left to it."""
    held = holder(spark, crawl_dir)
    if held is not None and held.get("token") == token:
        _remove(spark, crawl_dir, held)
    elif held is not None:
        log.warning("the lock of %s is no longer ours (taken by %s, pid %s): left in place",
                    crawl_dir, held.get("command"), held.get("pid"))


@contextmanager
def round_lock(spark: SparkSession, crawl_dir: str, command: str, break_lock: bool = False, *,
               heartbeat: float | None = None, expiry: float | None = None) -> Iterator[None]:
    """Hold the crawl directory's lock for the block (breaking a stale one if asked), renewing
    its lease every ``heartbeat`` seconds when given (``crawl.lock_heartbeat``), and taking
    over another machine's lock not renewed for ``expiry`` (``crawl.lock_expiry``)."""
    if break_lock:
        break_held_lock(spark, crawl_dir)
    token = acquire(spark, crawl_dir, command, lease=heartbeat, expiry=expiry)
    try:
        if heartbeat and (holder(spark, crawl_dir) or {}).get("lease"):   # (none where it cannot renew)
            with _Heartbeat(spark, crawl_dir, token, heartbeat):
                yield
        else:
            yield
    finally:
        release(spark, crawl_dir, token)
