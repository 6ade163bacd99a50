# Sourced by the bench scripts that run ringleader-sidecar processes on loopback.

# free_port: a TCP port on 127.0.0.1 that was free a moment ago.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# sidecar_env RANK RANKS RENDEZVOUS_PORT WORK_DIR: prints, one NAME=VALUE per line, the env every
# bench sidecar gets (Gloo, preflight mode, a free metrics port, WORK_DIR/token as the token and
# WORK_DIR/rank-RANK as its run directory); callers add the sweep's settings.
sidecar_env() {
  local rank=$1 ranks=$2 rdv=$3 work=$4
  local metrics
  metrics=$(free_port)
  mkdir -p "$work/rank-$rank"
  printf '%s\n' RINGLEADER_JOB_NAME=bench RINGLEADER_JOB_NAMESPACE=default \
    "RINGLEADER_RANK=$rank" "RINGLEADER_REPLICAS=$ranks" RINGLEADER_RENDEZVOUS_ADDR=127.0.0.1 \
    "RINGLEADER_RENDEZVOUS_PORT=$rdv" "RINGLEADER_METRICS_PORT=$metrics" \
    RINGLEADER_METRICS_BIND_ADDRESS=127.0.0.1 RINGLEADER_BACKEND=gloo RINGLEADER_MODE=preflight \
    "RINGLEADER_TOKEN_FILE=$work/token" "RINGLEADER_RUN_DIR=$work/rank-$rank" \
    RINGLEADER_POD_IP=127.0.0.1
}
