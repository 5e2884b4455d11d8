#!/bin/bash
# Peak memory (VmHWM) of `tidings refresh --all`, `tidings worker` and `tidings serve`, each
# fetching 10,000 uniform feeds of `tidings-bench farm` twice (the second time all 304).
# Usage: crates/worker/mem10k.sh sqlite|postgres [path/to/tidings]
# FEEDS=100000 serves that many feeds instead; MODES="worker" runs only the paths named
# (of cli, worker and serve).
# (cargo build --release -p tidings -p tidings-bench first)
# PostgreSQL: a database `tidings_fetchbench` on 127.0.0.1 (createdb -h 127.0.0.1 -U postgres
# tidings_fetchbench); the script works in schemas fb_* of it.
set -u
B=${2:-target/release/tidings}
# The farm is a bench command, in the tidings-bench binary built beside tidings.
BENCH=$(dirname "$B")/tidings-bench
ENGINE=$1
FEEDS=${FEEDS:-10000}
MODES=${MODES:-"cli worker serve"}
D=$(mktemp -d)/$ENGINE; mkdir -p $D
export TIDINGS_ALLOW_PRIVATE_NETWORKS=true TIDINGS_FETCH_PER_HOST_RATE=1000 TIDINGS_FETCH_PER_HOST_CONCURRENCY=100 TIDINGS_FETCH_PER_HOST_SLOW=100 TIDINGS_WORKER_POLL_SECONDS=5 TIDINGS_LOG_LEVEL=info
dburl() {
  if [ $ENGINE = sqlite ]; then echo "sqlite://$D/$1.db"; else
    psql -q -h 127.0.0.1 -U postgres -d tidings_fetchbench -c "DROP SCHEMA IF EXISTS fb_$1 CASCADE; CREATE SCHEMA fb_$1" >/dev/null
    echo "postgres://postgres@127.0.0.1:5432/tidings_fetchbench?options=-c%20search_path%3Dfb_$1"; fi
}
reset_due() {
  if [ $ENGINE = sqlite ]; then sqlite3 $D/$1.db "PRAGMA busy_timeout=10000; UPDATE feed_fetch_state SET next_check_at = 0"; else
    psql -q -h 127.0.0.1 -U postgres -d tidings_fetchbench -c "UPDATE fb_$1.feed_fetch_state SET next_check_at = 0"; fi
}
farm() { # name port
  local url; url=$(dburl $1)
  $BENCH farm --feeds $FEEDS --port $2 --database-url "$url" > $D/farm-$1.log 2>&1 &
  echo $! > $D/farm-$1.pid
  until grep -q serving $D/farm-$1.log 2>/dev/null; do sleep 2; if ! kill -0 $(cat $D/farm-$1.pid) 2>/dev/null; then cat $D/farm-$1.log; exit 1; fi; done
  echo "$url" > $D/url-$1
}
hwm() { grep VmHWM /proc/$1/status | awk '{printf "%.1f MB", $2/1024}'; }
cycles() { grep -c "fetch cycle" $1 2>/dev/null; }

for mode in $MODES; do
  if [ $mode != cli ]; then continue; fi
  echo "== refresh --all ($ENGINE)"
  farm cli 8911
  for round in 1 2; do
    start=$(date +%s.%N)
    /usr/bin/time -v $B refresh --all --database-url "$(cat $D/url-cli)" > $D/refresh$round.out 2> $D/refresh$round.time
    end=$(date +%s.%N)
    echo "round $round: $(echo "$end - $start" | bc) s, $(grep -c . $D/refresh$round.out) lines, $(grep -c 'not modified' $D/refresh$round.out) not modified, max RSS $(grep 'Maximum resident' $D/refresh$round.time | awk '{printf "%.1f MB", $6/1024}')"
  done
  kill -INT $(cat $D/farm-cli.pid)
done

for mode in $MODES; do
  if [ $mode = cli ]; then continue; fi
  echo "== $mode ($ENGINE)"
  port=8912; [ $mode = serve ] && port=8913
  farm $mode $port
  if [ $mode = worker ]; then
    $B worker --database-url "$(cat $D/url-$mode)" > $D/$mode.log 2>&1 &
  else
    $B serve --listen 127.0.0.1:8922 --database-url "$(cat $D/url-$mode)" > $D/$mode.log 2>&1 &
  fi
  pid=$!
  start=$(date +%s)
  until [ "$(cycles $D/$mode.log)" -ge 1 ]; do sleep 1; done
  echo "first cycle: $(grep 'fetch cycle' $D/$mode.log | tail -1 | sed 's/.*fetch cycle/fetch cycle/'); VmHWM $(hwm $pid)"
  reset_due $mode
  until [ "$(cycles $D/$mode.log)" -ge 2 ]; do sleep 1; done
  echo "second cycle: $(grep 'fetch cycle' $D/$mode.log | tail -1 | sed 's/.*fetch cycle/fetch cycle/'); VmHWM $(hwm $pid)"
  kill -INT $pid; wait $pid 2>/dev/null
  kill -INT $(cat $D/farm-$mode.pid)
done
