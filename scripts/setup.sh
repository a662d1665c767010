#!/usr/bin/env bash
# One idempotent set-up for a fresh machine: the virtual environment, the package, and the
# Spark extension jars (Delta Lake) resolved from Maven Central into .jars/, plus the GraphX
# bridge compiled with javac.
# A second run checks each step and does nothing new. Nothing is downloaded at job run time.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3

say() { printf '[setup] %s\n' "$*"; }

# 1. virtual environment + package (re-installed only when pyproject.toml changed)
if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  "$PY" -m venv .venv
fi
stamp=.venv/.crawlkit-installed
if [ ! -f "$stamp" ] || ! cmp -s pyproject.toml "$stamp"; then
  say "installing crawlkit and its dependencies into .venv"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[test]"
  cp pyproject.toml "$stamp"
else
  say "python environment up to date"
fi

# 2. Spark extension jars. Maven (which honours a mirror in settings.xml, unlike Spark's Ivy)
# resolves scripts/jars/pom.xml; jars that pyspark already ships are left out so the
# classpath holds one copy of each library.
jar_stamp=.jars/.resolved
if [ ! -f "$jar_stamp" ] || ! cmp -s scripts/jars/pom.xml "$jar_stamp"; then
  command -v mvn >/dev/null 2>&1 || { echo "setup: Maven (mvn) is needed to resolve the Spark jars" >&2; exit 1; }
  say "resolving Spark extension jars with Maven"
  rm -rf .jars.tmp && mkdir -p .jars.tmp
  mvn -B -q -f scripts/jars/pom.xml dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$ROOT/.jars.tmp"
  .venv/bin/python scripts/jars/prune_jars.py .jars.tmp
  rm -rf .jars && mv .jars.tmp .jars
  cp scripts/jars/pom.xml "$jar_stamp"
else
  say "Spark jars up to date ($(ls .jars/*.jar | wc -l) jars in .jars/)"
fi

# 2b. Test-only jars: Lucene + Jackson for the export's end-to-end test (tests/export), in
# .jars/lucene/, not on Spark's classpath. After step 2, which replaces .jars/.
lucene_stamp=.jars/lucene/.resolved
if [ ! -f "$lucene_stamp" ] || ! cmp -s tests/export/lucene/pom.xml "$lucene_stamp"; then
  say "resolving the Lucene test jars with Maven"
  rm -rf .jars/lucene && mkdir -p .jars/lucene
  mvn -B -q -f tests/export/lucene/pom.xml dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$ROOT/.jars/lucene"
  cp tests/export/lucene/pom.xml "$lucene_stamp"
else
  say "Lucene test jars up to date"
fi

# 2c. The GraphX bridge (scripts/jars/graphx-bridge): one Java class, compiled with javac
# against the jars pyspark ships (GraphX included) into .jars/crawlkit-graphx-bridge.jar, so
# the session loads it with the other jars (scoring.engine=graphx). After step 2, which
# replaces .jars/. Rebuilt when the source or the pyspark version changes.
bridge_src=scripts/jars/graphx-bridge/src/main/java/io/crawlkit/graphx/PageRankBridge.java
bridge_jar=.jars/crawlkit-graphx-bridge.jar
bridge_stamp=.jars/.graphx-bridge
spark_jars=$(.venv/bin/python -c "import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), 'jars'))")
bridge_key="$(sha256sum "$bridge_src" | cut -d' ' -f1) $(ls "$spark_jars" | grep '^spark-graphx_')"
if [ -f "$bridge_jar" ] && [ -f "$bridge_stamp" ] && [ "$(cat "$bridge_stamp")" = "$bridge_key" ]; then
  say "GraphX bridge up to date"
elif ! command -v javac >/dev/null 2>&1; then
  say "javac not found: skipping the GraphX bridge (scoring.engine=graphx will be unavailable)"
else
  say "compiling the GraphX bridge"
  rm -rf .jars/.graphx-bridge.build && mkdir -p .jars/.graphx-bridge.build
  javac --release 17 -nowarn -cp "$spark_jars/*" -d .jars/.graphx-bridge.build "$bridge_src"
  jar cf "$bridge_jar.tmp" -C .jars/.graphx-bridge.build .
  mv "$bridge_jar.tmp" "$bridge_jar"
  rm -rf .jars/.graphx-bridge.build
  printf '%s' "$bridge_key" > "$bridge_stamp"
fi

# 3. Chromium for the HTML report test (Debian package), only when asked or in CI.
if [ "${CRAWLKIT_SETUP_BROWSER:-${CI:-false}}" = "true" ] && ! command -v chromium >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    say "installing chromium (report rendering test)"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || say "chromium could not be installed; the report screenshot test will be skipped"
  fi
fi
say "done"
