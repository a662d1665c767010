#!/usr/bin/env bash
# The README's test command: set up (idempotent), then run the whole suite. Every service the
# tests need (the replay web, a standalone Spark cluster) is started by the tests themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export SPARK_LOCAL_IP=${SPARK_LOCAL_IP:-127.0.0.1}
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
exec .venv/bin/python -m pytest -q "$@"
