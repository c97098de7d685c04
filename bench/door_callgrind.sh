#!/bin/bash
# The client's instructions per completion through the door (bench/door.py under callgrind).
#   bash bench/door_callgrind.sh [--sqlite]   (PostgreSQL from STUDIOLO_TEST_DATABASE_URL)
# Prints callgrind's total for 20 completions after 5 warm-up ones; load-independent.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)/door
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out.cg" \
  "${PYTHON:-$here/.venv/bin/python}" "$here/bench/door.py" --n 25 --callgrind "$out" "$@" > "$out.log" 2>&1 &
pid=$!
until [ -e "$out.ready" ]; do sleep 1; done
callgrind_control -i on "$pid" > /dev/null; touch "$out.on"
until [ -e "$out.done" ]; do sleep 1; done
callgrind_control -i off "$pid" > /dev/null; touch "$out.off"
wait "$pid"
echo "instructions for 20 completions: $(callgrind_annotate "$out.cg" | grep -m1 'PROGRAM TOTALS' | cut -d' ' -f1)"
tail -1 "$out.log"
