#!/usr/bin/env bash
# The README's first command: set up (idempotent), then crawl a generated web through the
# local replay web in local Spark mode and print a summary. Extra arguments go to the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export SPARK_LOCAL_IP=${SPARK_LOCAL_IP:-127.0.0.1}
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
exec .venv/bin/python -m crawlkit.demo "$@"
