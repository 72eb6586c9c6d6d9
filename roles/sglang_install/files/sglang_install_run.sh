#!/usr/bin/env bash
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
#
# Long jobs of sglang_install (a kernel build, the model download), started asynchronously by Ansible
# (tasks/job.yml), and the report on one while it runs.
#
# Usage: sglang_install_run.sh WORKDIR LOG COPY_FROM COMMAND
#   COPY_FROM  a directory to copy into WORKDIR first (a fresh copy; the original stays untouched),
#              or "" to run in WORKDIR as it is (a git checkout, the model directory)
#   COMMAND    run with bash -c in WORKDIR; all output goes to LOG
#   Writes the start time (epoch seconds) to LOG.start and, when done, the exit status to LOG.rc.
#
# Usage: sglang_install_run.sh --wait LOG SECONDS LINES
#   Waits at most SECONDS for LOG.rc, then prints "running N s" or "exit RC after N s" and the last
#   LINES lines of LOG. Only a report: right after the start it may still see the status of the
#   previous run, so whether the job ended is asked of Ansible (async_status).
set -u

if [[ ${1-} == --wait ]]; then
  log=$2 seconds=$3 lines=$4
  for ((i = 0; i < seconds; i++)); do
    [[ -e $log.rc ]] && break
    sleep 1
  done
  start=$(cat "$log.start" 2>/dev/null || date +%s)
  elapsed=$(($(date +%s) - start))
  if [[ -e $log.rc ]]; then
    echo "exit $(cat "$log.rc") after $elapsed s"
  else
    echo "running $elapsed s"
  fi
  if [[ -e $log ]]; then
    tail -n "$lines" "$log"
  fi
  exit 0
fi

workdir=$1 log=$2 copy_from=$3 command=$4
status=$log.rc
mkdir -p "$(dirname "$log")" || exit 125
rm -f "$status"
start=$(date +%s)
echo "$start" >"$log.start"
{
  echo "pdserve job: start $(date -Is) in $workdir"
  echo "pdserve job: $command"
} >"$log"
if [[ -n $copy_from ]]; then
  if ! { rm -rf "$workdir" && cp -r "$copy_from" "$workdir"; }; then
    echo "pdserve job: cannot copy $copy_from" >>"$log"; echo 126 >"$status"; exit 126
  fi
fi
cd "$workdir" || { echo "pdserve job: no directory $workdir" >>"$log"; echo 127 >"$status"; exit 127; }
bash -c "$command" >>"$log" 2>&1 </dev/null
rc=$?
echo "pdserve job: exit $rc after $(($(date +%s) - start)) s" >>"$log"
echo "$rc" >"$status"
exit "$rc"
