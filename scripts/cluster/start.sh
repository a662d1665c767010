#!/usr/bin/env bash
# Start a local Spark standalone cluster on 127.0.0.1: one master and N workers (default 2,
# one core each), launched with the spark-class launcher that pyspark ships. Idempotent:
# a running cluster is left as it is. State (pids, logs, work dirs) goes to $CLUSTER_DIR.
#
#   scripts/cluster/start.sh [WORKERS] [CORES_PER_WORKER] [MEMORY_PER_WORKER]
#   -> prints the master URL, e.g. spark://127.0.0.1:7077
set -euo pipefail
cd "$(dirname "$0")/../.."
WORKERS=${1:-2}
CORES=${2:-1}
MEMORY=${3:-2g}
CLUSTER_DIR=${CLUSTER_DIR:-$PWD/.cluster}
MASTER_PORT=${MASTER_PORT:-7077}
export SPARK_HOME=$(.venv/bin/python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
export SPARK_LOCAL_IP=127.0.0.1
export PYSPARK_PYTHON=$PWD/.venv/bin/python
export SPARK_LOG_DIR=$CLUSTER_DIR/logs
mkdir -p "$CLUSTER_DIR/logs"
MASTER_URL=spark://127.0.0.1:$MASTER_PORT

running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

wait_port() {  # host port seconds
  for _ in $(seq 1 $(( $3 * 10 ))); do
    (exec 3<>/dev/tcp/$1/$2) 2>/dev/null && return 0
    sleep 0.1
  done
  echo "cluster: nothing listening on $1:$2 after $3 s (see $CLUSTER_DIR/logs)" >&2
  return 1
}

if ! running "$CLUSTER_DIR/master.pid"; then
  nohup "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
      --host 127.0.0.1 --port "$MASTER_PORT" --webui-port 0 \
      > "$CLUSTER_DIR/logs/master.out" 2>&1 &
  echo $! > "$CLUSTER_DIR/master.pid"
fi
wait_port 127.0.0.1 "$MASTER_PORT" 60

for i in $(seq 1 "$WORKERS"); do
  pidfile=$CLUSTER_DIR/worker-$i.pid
  if ! running "$pidfile"; then
    mkdir -p "$CLUSTER_DIR/work-$i"
    nohup "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker "$MASTER_URL" \
        --host 127.0.0.1 --cores "$CORES" --memory "$MEMORY" --webui-port 0 \
        --work-dir "$CLUSTER_DIR/work-$i" > "$CLUSTER_DIR/logs/worker-$i.out" 2>&1 &
    echo $! > "$pidfile"
  fi
done
# Wait until every worker has registered with the master.
for _ in $(seq 1 600); do
  if [ "$(grep -c 'Registering worker' "$CLUSTER_DIR/logs/master.out" 2>/dev/null || true)" -ge "$WORKERS" ]; then
    echo "$MASTER_URL"
    exit 0
  fi
  sleep 0.1
done
echo "cluster: workers did not register within 60 s (see $CLUSTER_DIR/logs)" >&2
exit 1
