#!/usr/bin/env bash
# Run by `npm test` (pretest): makes sure what the suite talks to is there, installing or starting
# only what is missing, so the README's test command works on a fresh machine and in CI alike.
#   - Redis on 127.0.0.1:6379 and PostgreSQL on 127.0.0.1:5432 (database `test`): persistence tests
#   - Debian's Chromium at /usr/bin/chromium: the browser end-to-end test (never a downloaded build)
#   - tmux: the terminal client's end-to-end test drives it in a real terminal
#   - Debian's bubblewrap at /usr/bin/bwrap: the shell sandbox (its tests say so and skip where the
#     kernel refuses the namespaces it needs; the gateway then refuses to offer `shell`)
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
apt_install () {
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@"
}

redis_up () { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }
if ! redis_up; then
  command -v redis-server >/dev/null 2>&1 || apt_install redis-server
  $SUDO mkdir -p /var/lib/redis /var/log/redis
  $SUDO redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log
  for _ in $(seq 1 50); do redis_up && break; sleep 0.2; done
  redis_up || { echo "test-prereqs: Redis did not start on 127.0.0.1:6379" >&2; exit 1; }
fi

pg_up () { pg_isready -h 127.0.0.1 -p 5432 -q; }
if ! pg_up; then
  if ! command -v pg_ctlcluster >/dev/null 2>&1 || [ -z "$(ls /etc/postgresql 2>/dev/null)" ]; then
    echo "test-prereqs: PostgreSQL is not installed (expected a Debian cluster with trust auth on 127.0.0.1:5432)" >&2
    exit 1
  fi
  $SUDO pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start
  for _ in $(seq 1 100); do pg_up && break; sleep 0.2; done
  pg_up || { echo "test-prereqs: PostgreSQL did not start on 127.0.0.1:5432" >&2; exit 1; }
fi
if ! psql -h 127.0.0.1 -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1; then
  createdb -h 127.0.0.1 -U postgres test
fi

if [ ! -x /usr/bin/chromium ]; then
  apt_install chromium
fi

if [ ! -x /usr/bin/bwrap ]; then
  apt_install bubblewrap
fi

if [ ! -x /usr/bin/tmux ]; then
  apt_install tmux
fi
