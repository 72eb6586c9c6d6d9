#!/usr/bin/env bash
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
#
# Run one long job for sglang_install (a kernel build, a model download), started asynchronously
# by Ansible.
# Usage: sglang_install_run.sh WORKDIR LOG COPY_FROM COMMAND
#   COPY_FROM  a source directory to copy into WORKDIR first (fresh copy; the original stays
#              untouched), or "" to build in WORKDIR as it is (a git checkout)
#   COMMAND    run with bash -c in WORKDIR; all output goes to LOG
# Writes the exit status to LOG.rc when done, which the role's progress loop waits for.
set -u
workdir=$1 log=$2 copy_from=$3 command=$4
status=$log.rc
rm -f "$status"
start=$(date +%s)
{
  echo "pdserve build: start $(date -Is) in $workdir"
  echo "pdserve build: $command"
} >"$log"
if [[ -n $copy_from ]]; then
  if ! { rm -rf "$workdir" && cp -r "$copy_from" "$workdir"; }; then
    echo "pdserve build: cannot copy $copy_from" >>"$log"; echo 126 >"$status"; exit 126
  fi
fi
cd "$workdir" || { echo "pdserve build: no directory $workdir" >>"$log"; echo 127 >"$status"; exit 127; }
bash -c "$command" >>"$log" 2>&1 </dev/null
rc=$?
echo "pdserve build: exit $rc after $(($(date +%s) - start)) s" >>"$log"
echo "$rc" >"$status"
exit "$rc"
