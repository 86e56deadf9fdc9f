#!/usr/bin/env bash
# Starts the web server and a Celery worker (with beat) side by side; Ctrl-C stops both.
#   HOST  address the web server listens on (default 127.0.0.1; 0.0.0.0 for every address)
#   PORT  its port (default 8000)
#   CELERY_CONCURRENCY  worker processes (default 2)
# "ready" is printed only once the web server answers.
set -u
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}
case "$HOST" in
  0.0.0.0 | :: | "[::]") BROWSE_HOST=127.0.0.1 ;;
  *:*) BROWSE_HOST="[${HOST#[}"; BROWSE_HOST="${BROWSE_HOST%]}]" ;;
  *) BROWSE_HOST=$HOST ;;
esac
URL="http://$BROWSE_HOST:$PORT/"
mkdir -p var/broker/queue var/broker/processed var/log

$PY -m celery -A agentclash worker -B --loglevel=INFO --concurrency="${CELERY_CONCURRENCY:-2}" \
  --schedule=var/celerybeat-schedule &
worker=$!
$PY manage.py runserver "$HOST:$PORT" &
web=$!

stop() {
  trap - INT TERM
  echo; echo "Stopping web server and worker…"
  kill -TERM "$web" "$worker" 2>/dev/null
  wait "$web" "$worker" 2>/dev/null
  exit "${1:-0}"
}
trap stop INT TERM

echo "Starting: web server on $HOST:$PORT, worker pid $worker…"
ready=0
for _ in $(seq 1 240); do  # up to 60 s
  if ! kill -0 "$web" 2>/dev/null; then
    echo "The web server stopped before it answered (is port $PORT free? PORT=8001 make run uses another)." >&2
    stop 1
  fi
  if $PY -c 'import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1] + "healthz", timeout=1)
except urllib.error.HTTPError:
    pass  # it answered
except Exception:
    sys.exit(1)' "$URL" 2>/dev/null; then
    echo "AgentClash is ready: $URL  (web pid $web, worker pid $worker) — Ctrl-C stops both."
    ready=1
    break
  fi
  sleep 0.25
done
[ "$ready" = 1 ] || echo "The web server has not answered $URL within 60 s; it may still be starting." >&2
wait -n "$web" "$worker"
stop
