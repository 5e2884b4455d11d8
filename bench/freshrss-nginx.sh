#!/usr/bin/env bash
# FreshRSS under nginx + php-fpm, as it is deployed, on 127.0.0.1 only: the comparison server
# of `tidings-bench sync` (issue 29). Not part of tidings.
#
#   bench/freshrss-nginx.sh [options] DIR PORT      set up (idempotent) and start
#   bench/freshrss-nginx.sh --stop DIR PORT         stop nginx and php-fpm
#
# FreshRSS itself is set up by the reference tool's start.sh (--start-script, default
# /work/shared/tools/freshrss/start.sh; it unpacks FreshRSS's source snapshot into DIR/app,
# installs it with SQLite and the API on, creates the user, imports --opml and fetches it once
# with --actualize), without its `php -S`. Then this script writes an nginx and a php-fpm
# configuration under DIR and starts both:
#   - php-fpm (Debian's php8.2-fpm, OPcache on as Debian ships it), one static pool of
#     --children workers on a Unix socket in DIR; the master's pid in DIR/php-fpm.pid;
#   - nginx (Debian's), --nginx-workers worker processes, listening on 127.0.0.1:PORT only,
#     FreshRSS's documented location rules (PATH_INFO for /api/greader.php/...), no access
#     log; the master's pid in DIR/nginx.pid.
# Nothing is downloaded but Debian packages (apt-get install nginx php-fpm, when missing and
# running as root). Every file it writes is under DIR.
#
# Options: --opml FILE, --actualize, -u USER, -p API_PASSWORD (passed to start.sh);
#          --children N [8]; --nginx-workers N [2]; --start-script PATH.
# Load it with: tidings-bench sync --url http://127.0.0.1:PORT/api/greader.php \
#   --login alice:tidings-ref-api --pid "$(cat DIR/php-fpm.pid)" --pid "$(cat DIR/nginx.pid)"
set -euo pipefail

START_SCRIPT=${FRESHRSS_START_SCRIPT:-/work/shared/tools/freshrss/start.sh}
CHILDREN=8; NGINX_WORKERS=2; STOP=0; PASS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --opml|-u|-p) PASS+=("$1" "$2"); shift 2;;
    --actualize) PASS+=("$1"); shift;;
    --children) CHILDREN=$2; shift 2;;
    --nginx-workers) NGINX_WORKERS=$2; shift 2;;
    --start-script) START_SCRIPT=$2; shift 2;;
    --stop) STOP=1; shift;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0;;
    -*) echo "unknown option $1" >&2; exit 2;;
    *) break;;
  esac
done
[ $# -eq 2 ] || { echo "usage: $0 [options] DIR PORT   (--help)" >&2; exit 2; }
DIR=$(mkdir -p "$1" && cd "$1" && pwd); PORT=$2
say() { echo "freshrss-nginx: $*" >&2; }
stop_pidfile() {
  # read first: php-fpm removes its pid file as it stops
  local pid; pid=$(cat "$1" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid"; say "stopped $2 (pid $pid)"
  fi
  rm -f "$1"
}

if [ $STOP = 1 ]; then
  stop_pidfile "$DIR/nginx.pid" nginx
  stop_pidfile "$DIR/php-fpm.pid" php-fpm
  exit 0
fi

# 1. Debian's nginx and php-fpm.
FPM=$(ls /usr/sbin/php-fpm* 2>/dev/null | head -n 1 || true)
if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ] || [ -z "$FPM" ]; then
  [ "$(id -u)" = 0 ] || { say "install nginx and php-fpm: apt-get install nginx php-fpm"; exit 1; }
  [ -n "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -print -quit 2>/dev/null)" ] || apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nginx php-fpm >&2
  FPM=$(ls /usr/sbin/php-fpm* | head -n 1)
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

# 2. FreshRSS itself, without php -S.
[ -x "$START_SCRIPT" ] || { say "no FreshRSS start script at $START_SCRIPT (--start-script)"; exit 1; }
"$START_SCRIPT" --no-start "${PASS[@]}" "$DIR" "$PORT"
# php-fpm and nginx run their workers as www-data: FreshRSS writes under data/.
RUN_AS=$(id -un)
if [ "$(id -u)" = 0 ] && id www-data >/dev/null 2>&1; then
  RUN_AS=www-data
  chown -R www-data: "$DIR/app/data"
fi

# 3. php-fpm: one static pool, so that no worker is forked during a measurement.
cat > "$DIR/php-fpm.conf" <<EOF
[global]
pid = $DIR/php-fpm.pid
error_log = $DIR/php-fpm.log
daemonize = yes

[freshrss]
user = $RUN_AS
group = $RUN_AS
listen = $DIR/php-fpm.sock
listen.owner = $RUN_AS
listen.group = $RUN_AS
listen.mode = 0660
pm = static
pm.max_children = $CHILDREN
php_admin_value[memory_limit] = 512M
EOF

# 4. nginx: FreshRSS's documented server block, on 127.0.0.1 only.
mkdir -p "$DIR/nginx-temp"
cat > "$DIR/nginx.conf" <<EOF
worker_processes $NGINX_WORKERS;
pid $DIR/nginx.pid;
error_log $DIR/nginx-error.log warn;
$( [ "$(id -u)" = 0 ] && echo "user $RUN_AS;" )
events { worker_connections 1024; }
http {
  include /etc/nginx/mime.types;
  access_log off;
  client_body_temp_path $DIR/nginx-temp/body;
  fastcgi_temp_path $DIR/nginx-temp/fastcgi;
  proxy_temp_path $DIR/nginx-temp/proxy;
  uwsgi_temp_path $DIR/nginx-temp/uwsgi;
  scgi_temp_path $DIR/nginx-temp/scgi;
  keepalive_requests 100000;
  server {
    listen 127.0.0.1:$PORT;
    root $DIR/app/p;
    index index.php index.html;
    location ~ ^.+?\.php(/.*)?\$ {
      fastcgi_pass unix:$DIR/php-fpm.sock;
      fastcgi_split_path_info ^(.+\.php)(/.*)\$;
      set \$path_info \$fastcgi_path_info;
      fastcgi_param PATH_INFO \$path_info;
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME \$document_root\$fastcgi_script_name;
    }
    location / { try_files \$uri \$uri/ index.php; }
  }
}
EOF
chown -R "$RUN_AS": "$DIR/nginx-temp"

# 5. Start what is not running.
if [ -f "$DIR/php-fpm.pid" ] && kill -0 "$(cat "$DIR/php-fpm.pid")" 2>/dev/null; then
  say "php-fpm already running (pid $(cat "$DIR/php-fpm.pid"))"
else
  "$FPM" --fpm-config "$DIR/php-fpm.conf" --prefix "$DIR"
fi
if [ -f "$DIR/nginx.pid" ] && kill -0 "$(cat "$DIR/nginx.pid")" 2>/dev/null; then
  "$NGINX" -c "$DIR/nginx.conf" -p "$DIR" -s reload
else
  "$NGINX" -c "$DIR/nginx.conf" -p "$DIR"
fi
for _ in $(seq 1 50); do
  curl -fsS -o /dev/null "http://127.0.0.1:$PORT/api/greader.php" 2>/dev/null && break
  sleep 0.2
done
curl -fsS -o /dev/null "http://127.0.0.1:$PORT/api/greader.php" \
  || { say "FreshRSS does not answer; see $DIR/nginx-error.log and $DIR/php-fpm.log"; exit 1; }
say "FreshRSS under nginx (pid $(cat "$DIR/nginx.pid")) + php-fpm (pid $(cat "$DIR/php-fpm.pid"), $CHILDREN workers)"
echo "Google Reader: http://127.0.0.1:$PORT/api/greader.php"
