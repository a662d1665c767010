"""Where the project's shipped files (conf/, schemas/) live, and how to read them.

They sit at the top of the repository so users can read them; an editable install (what
setup does) finds them next to the package, and $CRAWLKIT_HOME points elsewhere if needed.
When crawlkit runs from the zip spark-submit ships (``--py-files dist/crawlkit.zip``, built by
scripts/cluster/package.sh with conf/ and schemas/ inside), they are read from the zip.
"""
import os
import re
import zipimport
from pathlib import Path


def project_home() -> Path:
    env = os.environ.get("CRAWLKIT_HOME")
    return Path(env) if env else Path(__file__).resolve().parents[1]


def conf_dir() -> Path:
    return project_home() / "conf"


def schemas_dir() -> Path:
    return project_home() / "schemas"


def read_shipped(path: Path) -> bytes:
    """Bytes of a file under project_home(), from the disk or from the shipped zip."""
    loader = globals().get("__loader__")
    if isinstance(loader, zipimport.zipimporter) and not os.environ.get("CRAWLKIT_HOME"):
        return loader.get_data(str(path))
    return path.read_bytes()


def is_shipped(path: Path) -> bool:
    """Whether a file under project_home() exists, on the disk or in the shipped zip."""
    try:
        read_shipped(path)
    except OSError:      # FileNotFoundError on disk; zipimporter's "can't find" is an OSError
        return False
    return True


def scheme_of(uri: str) -> str | None:
    """The URI scheme, lower case (``s3``, ``hdfs``, ``dbfs`` of ``dbfs:/x``), None for a path.

    Here rather than in storage because the configuration needs it before Spark starts."""
    match = re.match(r"([A-Za-z][A-Za-z0-9+.-]+):", uri)
    return match[1].lower() if match else None
