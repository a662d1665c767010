"""The Spark session factory: Delta Lake, the GraphX bridge (and GraphFrames if present) on the
classpath from .jars/.

The jars are resolved (and the GraphX bridge compiled) once by scripts/setup.sh, so starting a
session downloads nothing.
On a cluster the same files can be shipped (``spark.jars``/``--jars``) or named as Maven
coordinates (``--packages io.delta:delta-spark_4.1_2.13:4.4.0``); see docs/cluster.md.
"""
from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager

from pyspark.sql import SparkSession

from crawlkit.conf import Conf, ConfError
from crawlkit.paths import project_home

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


def local_jars() -> list[str]:
    """Absolute paths of the jars setup resolved (a list, not a glob: globs fail on executors)."""
    folder = project_home() / ".jars"
    return sorted(str(p) for p in folder.glob("*.jar"))


def _loadable(spark: SparkSession, name: str) -> bool:
    try:
        spark.sparkContext._jvm.java.lang.Class.forName(
            name, True, spark.sparkContext._jvm.Thread.currentThread().getContextClassLoader())
        return True
    except Exception:  # Py4JJavaError: ClassNotFoundException
        return False


def has_graphframes(spark: SparkSession) -> bool:
    """Whether the GraphFrames JVM classes are loadable in this session."""
    return _loadable(spark, "org.graphframes.GraphFrame")


GRAPHX_BRIDGE = "io.crawlkit.graphx.PageRankBridge"


def has_graphx_bridge(spark: SparkSession) -> bool:
    """Whether crawlkit's GraphX bridge (.jars/crawlkit-graphx-bridge.jar, compiled by
    scripts/setup.sh) is loadable; GraphX itself ships with pyspark."""
    return _loadable(spark, GRAPHX_BRIDGE)


def session_settings(conf: Conf) -> dict[str, str]:
    """Spark settings derived from crawlkit's conf (the ``spark.*`` keys)."""
    jars = conf["spark.jars"] or ",".join(local_jars())
    settings = {
        "spark.sql.extensions": DELTA_EXTENSION,
        "spark.sql.catalog.spark_catalog": DELTA_CATALOG,
        "spark.sql.shuffle.partitions": str(conf["spark.shuffle_partitions"]),
        "spark.default.parallelism": str(max(2, os.cpu_count() or 2)),
        "spark.driver.memory": conf["spark.driver_memory"],
        "spark.ui.enabled": str(conf["spark.ui"]).lower(),
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.executorEnv.TZ": "UTC",   # the executors' Python workers (see utc_process)
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.databricks.delta.schema.autoMerge.enabled": "false",
        # Delta lists a table's files with a Spark job over its cached state, in this many
        # tasks (default 50), whenever a query on the table is planned: a round plans ~50.
        # The state is the file list, not the rows: one task holds it for any crawldb here.
        "spark.databricks.delta.snapshotPartitions": str(conf["spark.delta_snapshot_partitions"]),
        # Small crawl tables: no broadcast surprises, adaptive execution on.
        "spark.sql.adaptive.enabled": "true",
        "spark.python.worker.reuse": "true",
    }
    if jars:
        settings["spark.jars"] = jars
    overridden = sorted(set(conf["spark.extra"]) & set(REQUIRED))
    if overridden:
        raise ConfError(f"{conf.origin_of('spark.extra')}: spark.extra sets {', '.join(overridden)}, "
                        "which crawlkit sets itself (its times are UTC, its tables Delta)")
    settings.update(conf["spark.extra"])
    return settings


# Settings crawlkit's correctness rests on, whatever spark-submit says: times are UTC
# (utc_process), and the Delta catalog serves the tables' ALTER TABLE.
REQUIRED = ("spark.sql.session.timeZone", "spark.executorEnv.TZ", "spark.sql.catalog.spark_catalog")
# The Spark settings each crawlkit key sets (``spark.extra`` sets the ones it names).
FROM_CONF = {"spark.shuffle_partitions": "spark.sql.shuffle.partitions",
             "spark.delta_snapshot_partitions": "spark.databricks.delta.snapshotPartitions",
             "spark.driver_memory": "spark.driver.memory", "spark.ui": "spark.ui.enabled",
             "spark.jars": "spark.jars"}


def explicit_settings(conf: Conf) -> set[str]:
    """The Spark settings the operator set through crawlkit's own conf (not its defaults)."""
    return {FROM_CONF[k] for k in conf.explicit() if k in FROM_CONF} | set(conf["spark.extra"])


def under_submit(ours: dict[str, str], submitted: dict[str, str], explicit: set[str] = frozenset()) -> dict[str, str]:
    """crawlkit's session settings under spark-submit. What the operator (or the cluster's
    spark-defaults.conf) gave spark-submit wins over crawlkit's defaults (``--conf
    spark.ui.enabled=true``, ``spark.sql.shuffle.partitions``, ...), but not over what was set
    through crawlkit's own conf (``explicit``) nor over the settings crawlkit needs
    (``REQUIRED``); the jars and the SQL extensions are merged, theirs first (``--jars
    hadoop-aws.jar`` next to crawlkit's Delta jars; a cluster's Iceberg extension next to
    Delta's, which crawlkit needs), a jar of the same file name once."""
    keep = set(REQUIRED) | set(explicit)
    settings = {k: v for k, v in ours.items() if k not in submitted or k in keep}
    for key, same in (("spark.jars", os.path.basename), ("spark.sql.extensions", str.strip)):
        if key in ours and submitted.get(key):    # lists: a cluster's extensions keep Delta's
            theirs = [item for item in submitted[key].split(",") if item]
            known = {same(item) for item in theirs}
            settings[key] = ",".join(theirs + [i for i in ours[key].split(",") if same(i) not in known])
    return settings


def _submitted_settings() -> dict[str, str]:
    """The settings spark-submit passed to this driver (its system properties)."""
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()
    return dict(SparkConf().getAll())


def python_for_workers(environ) -> None:
    """When crawlkit starts the JVM (local mode, or a cluster whose workers share this venv),
    its Python workers run this interpreter. Under spark-submit (``PYSPARK_GATEWAY_PORT``)
    the executors' Python is the operator's (``spark.pyspark.python``, ``PYSPARK_PYTHON``):
    this driver's path, a venv on the submitting machine, need not exist on the nodes."""
    if not environ.get("PYSPARK_GATEWAY_PORT"):
        environ.setdefault("PYSPARK_PYTHON", sys.executable)
        environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def utc_process() -> None:
    """Run this process (and the Python workers it starts) on UTC.

    crawlkit's times are naive datetimes in UTC (``--now``, fetch times, commit times), but
    PySpark converts a naive datetime with the *process's* time zone when it passes one to
    the JVM and when it collects one back: on a machine set to New York, ``now`` reached Spark
    five hours late and ``stats`` counted pages due five hours early. The session time zone
    (``spark.sql.session.timeZone``) alone does not cover those conversions."""
    if os.environ.get("TZ") != "UTC":
        os.environ["TZ"] = "UTC"
        time.tzset()


def get_spark(conf: Conf, master: str | None = None, *, checkpoints: bool = True) -> SparkSession:
    """Return the active session or build one from conf (master: argument > conf).
    ``checkpoints``: set the checkpoint directory (``spark.checkpoint_dir``, default
    ``<crawl>/_checkpoints``), which Spark creates at once; a read-only command passes False
    so that looking at a crawl (or at a mistyped path) leaves nothing behind."""
    python_for_workers(os.environ)
    utc_process()
    builder = SparkSession.builder.appName(conf["spark.app_name"])
    # Under spark-submit the JVM already exists (PYSPARK_GATEWAY_PORT) with the submitted
    # master; only an explicit argument overrides it there.
    if master or not os.environ.get("PYSPARK_GATEWAY_PORT"):
        builder = builder.master(master or conf["spark.master"])
    settings = session_settings(conf)
    if os.environ.get("PYSPARK_GATEWAY_PORT"):
        settings = under_submit(settings, _submitted_settings(), explicit_settings(conf))
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(conf["spark.log_level"])
    quiet_known_warnings(spark, conf["spark.log_level"])
    if checkpoints:
        checkpoint = conf["spark.checkpoint_dir"] or conf["crawl.dir"].rstrip("/") + "/_checkpoints"
        spark.sparkContext.setCheckpointDir(checkpoint)
    return spark


# Spark warnings that crawlkit triggers on purpose, with why each is safe. At ``WARN`` they
# are raised to ``ERROR``; at ``INFO`` and below they are logged as usual.
KNOWN_WARNINGS = {
    # "No Partition Defined for Window operation": interleave ranks each metric's list, at most
    # topN rows, in one task (crawlkit/stages/interleave.py); Spark warns on every generate.
    "org.apache.spark.sql.execution.window.WindowExec",
}


def quiet_known_warnings(spark: SparkSession, level: str) -> None:
    """Raise the loggers of ``KNOWN_WARNINGS`` to ERROR when Spark logs at ``level`` WARN,
    so an operator's console shows the warnings that need a look; any other level applies to
    them as to every logger."""
    jvm = spark.sparkContext._jvm
    target = jvm.org.apache.logging.log4j.Level.toLevel("ERROR" if level.upper() == "WARN" else level)
    for logger in KNOWN_WARNINGS:
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(logger, target)


@contextmanager
def job_group(spark: SparkSession, stage: str, segment: str | None = None):
    """Tag every Spark job a stage starts, Delta's own included, with the job group
    ``crawlkit-<stage>`` and the description "crawlkit <stage> <segment>": the Spark UI, the
    event log and the status tracker then say which stage of which round a job serves.
    The thread's previous group is restored afterwards."""
    sc = spark.sparkContext
    keys = ("spark.jobGroup.id", "spark.job.description")
    previous = [sc.getLocalProperty(k) for k in keys]
    sc.setJobGroup(f"crawlkit-{stage}", " ".join(p for p in ("crawlkit", stage, segment) if p))
    try:
        yield
    finally:
        for key, value in zip(keys, previous):
            sc.setLocalProperty(key, value)
