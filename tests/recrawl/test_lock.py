"""The round lock: a concurrent round is refused with a clear message; --break-lock recovers."""
from __future__ import annotations

import json
import os

import pytest

from crawlkit import cli, lock, storage
from crawlkit.conf import make_conf
from crawlkit.crawl import run_round

from recrawlhelpers import NOW

def test_a_second_round_is_refused_while_one_holds_the_lock(spark, tmp_path):
    crawl_dir = str(tmp_path / "crawl")
    conf = make_conf(crawl__dir=crawl_dir)
    ran = []
    with lock.round_lock(spark, crawl_dir, "round"):
        with pytest.raises(lock.LockedError) as refused:
            with lock.round_lock(spark, crawl_dir, "round"):
                ran.append(run_round(spark, conf, NOW, log=lambda _m: None))   # never reached
        message = str(refused.value)
        assert not ran
        assert crawl_dir in message and "is locked by" in message and "--break-lock" in message
        assert lock.holder(spark, crawl_dir) is not None       # the holder's lock survives
    assert lock.holder(spark, crawl_dir) is None               # released at the end of the block


def test_the_refusal_names_the_holder(spark, tmp_path):
    crawl_dir = str(tmp_path / "crawl")
    with lock.round_lock(spark, crawl_dir, "round"):
        assert lock.holder(spark, crawl_dir)["command"] == "round"
        with pytest.raises(lock.LockedError, match="locked by round"):
            lock.acquire(spark, crawl_dir, "round")


def held_elsewhere(spark, crawl_dir, command="crawl", **facts):
    """A lock file as a round on another machine leaves it (its pid cannot be checked here)."""
    owner = {"host": "elsewhere", "pid": 4242, "command": command, "token": "t0",
             "since": "2026-03-01T00:00:00+00:00", **facts}
    storage.write_text(spark, lock.lock_path(crawl_dir), json.dumps(owner))


def test_cli_round_exits_3_when_locked_and_break_lock_proceeds(spark, tmp_path, capsys):
    crawl_dir = str(tmp_path / "crawl")
    held_elsewhere(spark, crawl_dir)             # a round that died without releasing its lock
    args = ["round", "--crawl-dir", crawl_dir, "--now", NOW.isoformat(), "--quiet"]
    assert cli.main(args) == 3
    err = capsys.readouterr().err
    assert "crawlkit: crawl directory" in err and "is locked by" in err and "--break-lock" in err
    assert lock.holder(spark, crawl_dir) is not None           # refusing leaves the lock alone

    assert cli.main(args + ["--break-lock"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["segment"] is None                  # empty crawldb: nothing due, but the round ran
    assert lock.holder(spark, crawl_dir) is None    # and released the lock


def test_of_two_rounds_starting_together_exactly_one_gets_the_lock(spark, tmp_path):
    import threading
    for trial in range(30):
        crawl_dir = str(tmp_path / f"crawl{trial}")
        start, outcomes = threading.Barrier(2), []

        def contender(name):
            start.wait()
            try:
                lock.acquire(spark, crawl_dir, name)
                outcomes.append("won")
            except lock.LockedError:
                outcomes.append("refused")
        threads = [threading.Thread(target=contender, args=(f"round{i}",)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes) == ["refused", "won"], trial
        assert lock.holder(spark, crawl_dir)["command"] in ("round0", "round1")


def test_a_round_terminated_by_sigterm_releases_its_lock(spark, tmp_path, monkeypatch):
    import os
    import signal
    crawl_dir = str(tmp_path / "crawl")

    def terminated(*_args):   # cron's timeout stops the round in the middle of a stage
        assert lock.holder(spark, crawl_dir)["command"] == "generate"
        os.kill(os.getpid(), signal.SIGTERM)
        pytest.fail("SIGTERM did not end the command")
    monkeypatch.setattr(cli, "_dispatch", terminated)
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as ended:
        cli.main(["generate", "--crawl-dir", crawl_dir, "--now", NOW.isoformat(), "--quiet"])
    assert ended.value.code == 128 + signal.SIGTERM
    assert lock.holder(spark, crawl_dir) is None           # the next round is not refused
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_lock_whose_process_is_gone_from_this_machine_is_taken_over(spark, tmp_path):
    """A round killed by SIGKILL (or under spark-submit, by a SIGTERM the JVM took first)
    leaves its lock: the next round on this machine sees its process is gone and goes on."""
    import subprocess
    import sys
    crawl_dir = str(tmp_path / "crawl")
    here = lock._identity()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    pid = int(dead.stdout)
    held_elsewhere(spark, crawl_dir, host=here["host"], pid=pid, boot=here["boot"], pidns=here["pidns"],
                   started="1")
    token = lock.acquire(spark, crawl_dir, "round")
    assert lock.holder(spark, crawl_dir)["token"] == token
    lock.release(spark, crawl_dir, token)
    # after a reboot every earlier process is gone, whatever its pid is now
    held_elsewhere(spark, crawl_dir, host=here["host"], pid=os.getpid(), boot="another-boot",
                   pidns=here["pidns"], started=here["started"])
    lock.release(spark, crawl_dir, lock.acquire(spark, crawl_dir, "round"))
    assert lock.holder(spark, crawl_dir) is None


def test_break_lock_refuses_a_holder_running_here_and_release_spares_a_successor(spark, tmp_path):
    crawl_dir = str(tmp_path / "crawl")
    first = lock.acquire(spark, crawl_dir, "round")            # this process: running
    with pytest.raises(lock.LockedError, match="still running"):
        lock.break_held_lock(spark, crawl_dir)
    assert lock.holder(spark, crawl_dir)["token"] == first
    # the lock broken by hand (an operator sure the round is gone) and taken by another round:
    # the first round's release must leave the successor's lock
    storage.hadoop_fs(spark, lock.lock_path(crawl_dir))[0].delete(
        storage.hadoop_fs(spark, lock.lock_path(crawl_dir))[1], False)
    held_elsewhere(spark, crawl_dir, command="successor")
    lock.release(spark, crawl_dir, first)
    assert lock.holder(spark, crawl_dir)["command"] == "successor"
    with pytest.raises(lock.LockedError, match="locked by successor"):
        lock.acquire(spark, crawl_dir, "round")                # elsewhere: not broken unasked


def test_a_lock_from_another_machine_is_taken_over_once_its_lease_runs_out(spark, tmp_path):
    """A driver lost with its node (or a YARN attempt, a driver pod started elsewhere) leaves
    a lock no pid check can clear: it lapses when its holder stops renewing it."""
    import time

    crawl_dir = str(tmp_path / "crawl")
    held_elsewhere(spark, crawl_dir, lease=60.0)
    fs, path = storage.hadoop_fs(spark, lock.lock_path(crawl_dir))
    renewed = lambda seconds_ago: fs.setTimes(path, int((time.time() - seconds_ago) * 1000), -1)  # noqa: E731
    renewed(100)                                    # renewed 100 s ago: the holder may be running
    with pytest.raises(lock.LockedError, match="not renewed for crawl.lock_expiry"):
        lock.acquire(spark, crawl_dir, "round", lease=60.0, expiry=900.0)
    renewed(1000)                                   # beyond the expiry: the holder is gone
    with pytest.raises(lock.LockedError):
        lock.acquire(spark, crawl_dir, "round", lease=60.0)      # (no expiry given: never)
    token = lock.acquire(spark, crawl_dir, "round", lease=60.0, expiry=900.0)
    assert lock.holder(spark, crawl_dir)["token"] == token

    # a lock written without a lease (an older crawlkit) never lapses
    lock.release(spark, crawl_dir, token)
    held_elsewhere(spark, crawl_dir)
    renewed(10_000)
    with pytest.raises(lock.LockedError):
        lock.acquire(spark, crawl_dir, "round", lease=60.0, expiry=900.0)


def test_the_holder_renews_its_lease_and_only_while_the_lock_is_its_own(spark, tmp_path):
    import time

    crawl_dir = str(tmp_path / "crawl")
    token = lock.acquire(spark, crawl_dir, "round", lease=60.0, expiry=900.0)
    fs, path = storage.hadoop_fs(spark, lock.lock_path(crawl_dir))
    fs.setTimes(path, int((time.time() - 500) * 1000), -1)
    beat = lock._Heartbeat(spark, crawl_dir, token, 60.0)
    beat.beat()
    assert time.time() - fs.getFileStatus(path).getModificationTime() / 1000 < 60
    fs.setTimes(path, int((time.time() - 500) * 1000), -1)
    lock._Heartbeat(spark, crawl_dir, "another-token", 60.0).beat()   # a broken holder's thread
    assert time.time() - fs.getFileStatus(path).getModificationTime() / 1000 > 400
    lock.release(spark, crawl_dir, token)


def test_a_lease_no_filesystem_renews_is_not_taken_and_a_slow_holder_s_own_counts(spark, tmp_path, monkeypatch):
    import time

    crawl_dir = str(tmp_path / "crawl")
    # S3 and GCS keep a file's upload time: the lock is written without a lease, never lapses
    monkeypatch.setattr(lock, "_renewable", lambda _spark, _dir: False)
    token = lock.acquire(spark, crawl_dir, "round", lease=60.0, expiry=900.0)
    assert lock.holder(spark, crawl_dir)["lease"] is None
    lock.release(spark, crawl_dir, token)
    monkeypatch.undo()
    token = lock.acquire(spark, crawl_dir, "round", lease=60.0, expiry=900.0)
    assert lock.holder(spark, crawl_dir)["lease"] == 60.0                       # local disk renews
    lock.release(spark, crawl_dir, token)

    held_elsewhere(spark, crawl_dir, lease=1200.0)   # renews every 20 min: alive at 16 min
    fs, path = storage.hadoop_fs(spark, lock.lock_path(crawl_dir))
    fs.setTimes(path, int((time.time() - 1000) * 1000), -1)
    with pytest.raises(lock.LockedError):
        lock.acquire(spark, crawl_dir, "round", lease=60.0, expiry=900.0)
    fs.setTimes(path, int((time.time() - 3700) * 1000), -1)        # three of its leases
    lock.acquire(spark, crawl_dir, "round", lease=60.0, expiry=900.0)
