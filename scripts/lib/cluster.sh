# Helpers shared by the scripts that drive a cluster (scripts/stack, scripts/kind, scripts/airflow),
# sourced once `repo` is set; the functions use `run_dir`, `nodes`, `say` and `kubectl_admin` of the
# sourcing script.
# shellcheck shell=bash disable=SC2154 # run_dir and nodes belong to the sourcing script

now_ms() { date +%s%3N; }

# Key=value state of one run dir, DIR/state or the file `state_file` names (the last value of a key
# wins).
state_set() { echo "$1=$2" >>"${state_file:-$run_dir/state}"; }
state_get() { sed -n "s/^$1=//p" "${state_file:-$run_dir/state}" 2>/dev/null | tail -1; }

# Start time of a process (clock ticks since boot): with the pid it names the process uniquely,
# so `down` never signals a recycled pid that belongs to someone else. Nothing for a zombie (a
# killed process waits there until init reaps it): it is not running.
proc_start() { awk '$3 != "Z" {print $22}' "/proc/$1/stat" 2>/dev/null || true; }

# Prints the pid recorded in $run_dir/pids/NAME ("pid starttime") if that process still runs.
own_pid() { # name
  local file=$run_dir/pids/$1 pid start
  [[ -f $file ]] || return 1
  read -r pid start <"$file"
  [[ -n $pid && $(proc_start "$pid") == "$start" ]] || return 1
  echo "$pid"
}

# Runs PROBE... until it succeeds, EVERY seconds apart, for at most WITHIN seconds; with --while
# NAME, only while the process recorded as DIR/pids/NAME runs (own_pid). Returns 0 once the probe
# succeeded, 1 when the time was up, 2 when the process had exited. The scripts' one way to wait.
poll_until() { # [--while name] within every probe...
  local running=""
  if [[ $1 == --while ]]; then
    running=$2
    shift 2
  fi
  local deadline=$((SECONDS + $1)) every=$2
  shift 2
  until "$@"; do
    [[ -z $running ]] || own_pid "$running" >/dev/null || return 2
    ((SECONDS < deadline)) || return 1
    sleep "$every"
  done
}

# True once the process with this pid is gone (or a zombie).
process_gone() { [[ -z $(proc_start "$1") ]]; }

# A TCP port on 127.0.0.1 that is free now.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The KWOK nodes kwok-node-0..COUNT-1, 32 CPUs, 256Gi and 110 pods each, as one manifest: the
# node of scripts/stack.d/kwok-node.yaml, which the harness creates its nodes from too.
# shellcheck disable=SC2016 # the placeholders are literal text
kwok_nodes_manifest() { # count
  local i template
  template=$(<"$repo/scripts/stack.d/kwok-node.yaml")
  template=${template//'${CAPACITY}'/'{cpu: "32", memory: 256Gi, pods: "110"}'}
  for ((i = 0; i < $1; i++)); do
    printf -- '---\n%s\n' "${template//'${NAME}'/kwok-node-$i}"
  done
}

# True once `nodes` KWOK nodes (label type=kwok) report Ready.
nodes_ready() {
  local ready
  ready=$(kubectl_admin get nodes -l type=kwok -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c True)
  ((ready >= nodes))
}

# Runs a start-up step and says how long it took.
phase() { # description function [args...]
  local t
  t=$(now_ms)
  "${@:2}"
  say "$1 ready ($(($(now_ms) - t)) ms)"
}
