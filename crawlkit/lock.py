"""The round lock: one writer per crawl directory at a time.

A second round started while one runs is refused with a message naming the holder. The lock
is a file created atomically (Hadoop FileSystem.createNewFile: atomic on HDFS and local
disks) holding the owner's host, pid and start time; a lock left by a dead process is broken
only when asked (``--break-lock``), since on a cluster we cannot see other machines' pids.
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
    fs, path = storage.hadoop_fs(spark, lock_path(crawl_dir))
    fs.mkdirs(path.getParent())
    if not fs.createNewFile(path):
        owner = holder(spark, crawl_dir) or {}
        raise LockedError(
            f"crawl directory {crawl_dir} is locked by {owner.get('command', '?')} "
            f"(host {owner.get('host', '?')}, pid {owner.get('pid', '?')}, since {owner.get('since', '?')}). "
            "Wait for it to finish; if that process is gone, rerun with --break-lock.")
    storage.write_text(spark, lock_path(crawl_dir), json.dumps({
        "host": socket.gethostname(), "pid": os.getpid(), "command": command,
        "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}))


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
