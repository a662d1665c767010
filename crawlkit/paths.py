"""Where the project's shipped files (conf/, schemas/) live.

They sit at the top of the repository so users can read them; an editable install (what
setup does) finds them next to the package, and $CRAWLKIT_HOME points elsewhere if needed.
"""
import os
from pathlib import Path


def project_home() -> Path:
    env = os.environ.get("CRAWLKIT_HOME")
    return Path(env) if env else Path(__file__).resolve().parents[1]


def conf_dir() -> Path:
    return project_home() / "conf"


def schemas_dir() -> Path:
    return project_home() / "schemas"
