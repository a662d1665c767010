#!/usr/bin/env bash
# Stop the local standalone cluster started by scripts/cluster/start.sh (workers, then master).
set -uo pipefail
cd "$(dirname "$0")/../.."
CLUSTER_DIR=${CLUSTER_DIR:-$PWD/.cluster}
for pidfile in "$CLUSTER_DIR"/worker-*.pid "$CLUSTER_DIR"/master.pid; do
  [ -f "$pidfile" ] || continue
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
done
echo "cluster stopped"
