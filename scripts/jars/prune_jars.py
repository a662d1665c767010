"""Drop resolved jars that pyspark already ships, so each library is on the classpath once.

Maven resolves Delta's full runtime tree (Hadoop, Jackson, Parquet, Scala...), most of which
Spark bundles in a possibly different version; two copies of a library on one classpath fail
in confusing ways, so Spark's copy wins and only the extension's own jars are kept.
"""
import re
import sys
from pathlib import Path

import pyspark

VERSIONED = re.compile(r"^(?P<name>.+?)-\d[\w.\-]*\.jar$")


def artifact_name(jar: Path) -> str:
    match = VERSIONED.match(jar.name)
    return match.group("name") if match else jar.stem


def main(folder: str) -> None:
    spark_jars = Path(pyspark.__file__).parent / "jars"
    shipped = {artifact_name(j) for j in spark_jars.glob("*.jar")}
    for jar in sorted(Path(folder).glob("*.jar")):
        if artifact_name(jar) in shipped:
            jar.unlink()
    kept = sorted(j.name for j in Path(folder).glob("*.jar"))
    print("[setup] kept jars: " + ", ".join(kept))


if __name__ == "__main__":
    main(sys.argv[1])
