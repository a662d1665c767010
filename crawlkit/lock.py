"""The round lock: one writer per crawl directory at a time.

A second round started while one runs is refused with a message naming the holder. The lock
is a file created atomically, with its content, holding the owner's host, pid and start time
(on a local disk ``O_CREAT | O_EXCL``; elsewhere Hadoop's ``create`` without overwrite, which
HDFS's NameNode refuses atomically when the file exists: Hadoop's ``createNewFile`` checks
and then creates, so two rounds starting together could both win on a local disk); a lock
left by a dead process is broken only when asked (``--break-lock``), since on a cluster we
cannot see other machines' pids.
"""
from __future__ import annotations

import json
import os
import socket
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Iterator

from pyspark.sql import SparkSession

from crawlkit import storage

LOCK_FILE = ".crawlkit.lock"


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


def acquire(spark: SparkSession, crawl_dir: str, command: str) -> None:
    owner = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "command": command,
                        "since": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    if not _create_new(spark, lock_path(crawl_dir), owner):
        owner = holder(spark, crawl_dir) or {}
        raise LockedError(
            f"crawl directory {crawl_dir} is locked by {owner.get('command', '?')} "
            f"(host {owner.get('host', '?')}, pid {owner.get('pid', '?')}, since {owner.get('since', '?')}). "
            "Wait for it to finish; if that process is gone, rerun with --break-lock.")


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


def release(spark: SparkSession, crawl_dir: str) -> None:
    fs, path = storage.hadoop_fs(spark, lock_path(crawl_dir))
    fs.delete(path, False)


@contextmanager
def round_lock(spark: SparkSession, crawl_dir: str, command: str, break_lock: bool = False) -> Iterator[None]:
    """Hold the crawl directory's lock for the block (breaking a stale one if asked)."""
    if break_lock:
        release(spark, crawl_dir)
    acquire(spark, crawl_dir, command)
    try:
        yield
    finally:
        release(spark, crawl_dir)
