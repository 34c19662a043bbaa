# Sourced by the live checks: stop icy-sniff processes with SIGINT and tell a hang from a slow stop.
#   stop_on_sigint PID...
# Sends SIGINT to each, then waits up to ICY_STOP_SECONDS (default 60) for all of them to exit.
# On a loaded machine (a CI run with every test at once) the end of a capture - flushing its
# connections, fsync of the files it completes - has taken more than 10 s, so the limit is for a
# hang, not for speed; how long each took is printed when it was over 2 s. A process still there
# at the limit is a failure: its state, the kernel function it waits in and its kernel stack are
# printed (a hang is then diagnosable from the log alone), then it is killed. Returns 1 then.
stop_on_sigint() {
  local limit=${ICY_STOP_SECONDS:-60} p start now alive
  start=$(date +%s.%N)
  for p in "$@"; do kill -INT "$p" 2>/dev/null || true; done
  local -A took=()
  while :; do
    alive=0; now=$(date +%s.%N)
    for p in "$@"; do
      if kill -0 "$p" 2>/dev/null; then alive=1
      elif [ -z "${took[$p]:-}" ]; then took[$p]=$(awk -v a="$start" -v b="$now" 'BEGIN { printf "%.1f", b - a }'); fi
    done
    [ $alive = 0 ] && break
    awk -v a="$start" -v b="$now" -v l="$limit" 'BEGIN { exit !(b - a >= l) }' && break
    sleep 0.1
  done
  for p in "$@"; do
    if [ -n "${took[$p]:-}" ]; then
      awk -v t="${took[$p]}" 'BEGIN { exit !(t > 2) }' && echo "icy-sniff (pid $p) took ${took[$p]} s to stop after SIGINT" >&2
      continue
    fi
    echo "icy-sniff (pid $p) did not stop on SIGINT within $limit s" >&2
    echo "  state: $(awk '/^State:/ { print $2, $3 }' "/proc/$p/status" 2>/dev/null); waits in: $(cat "/proc/$p/wchan" 2>/dev/null)" >&2
    sed 's/^/  kernel stack: /' "/proc/$p/stack" >&2 2>/dev/null || true
    for t in /proc/"$p"/task/*; do
      echo "  thread ${t##*/}: $(awk '/^State:/ { print $2, $3 }' "$t/status" 2>/dev/null) in $(cat "$t/wchan" 2>/dev/null)" >&2
    done
    kill -9 "$p" 2>/dev/null
    alive=2
  done
  [ "$alive" != 2 ]
}
