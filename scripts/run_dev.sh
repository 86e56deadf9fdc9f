#!/usr/bin/env bash
# Starts the web server and a Celery worker (with beat) side by side; Ctrl-C stops both.
set -u
cd "$(dirname "$0")/.."
PY=.venv/bin/python
HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}
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
  exit 0
}
trap stop INT TERM
echo "Web: http://$HOST:$PORT/  (worker pid $worker, web pid $web) — Ctrl-C stops both."
wait -n "$web" "$worker"
stop
