#!/usr/bin/env bash
# A real kernel build with sglang_install's builds entry point on the GPU machine (run there, as root, from the
# repository root):
#   OUT=/some/dir bash tests/device/kernel_build.sh [extra ansible-playbook arguments]
# It finds the Python that holds torch (KERNEL_BUILD_PYTHON, default python3) and uses its prefix as the role's
# venv, the CUDA toolkit from nvcc and the GPU's architecture from torch; then runs
# kernel_build.yml: the builds entry point builds tests/device/kernel_ext (one CUDA kernel) for that architecture
# as the build user, root installs the wheel, the kernel runs on the GPU; a second run must skip the build.
# Needs ansible-playbook on PATH and this collection importable (ANSIBLE_COLLECTIONS_PATH, default
# <repo>/.cache/collections). When that Python has no pip, pip is installed into it from the wheel in
# KERNEL_BUILD_PIP_WHEEL (default: <repo>/.whl/pip/pip-*.whl) first: the role installs the built wheel with pip.
# Writes $OUT/kernel-build/{probe,first,second}.json, build.log (the first run's compile) and ansible.log.
# KERNEL_BUILD_BECOME: sudo or su (default), how the play becomes the build and service users.
# KERNEL_BUILD_DRY=1: no CUDA or torch needed (the package without its extension), to try the Ansible side;
# KERNEL_BUILD_ROOT, KERNEL_BUILD_USER, KERNEL_BUILD_BUILD_USER: where and as whom (default /opt/sglang,
# sglang, sglang-build).
set -uo pipefail
# What root installs must be readable by the service user (the role's preflight refuses a umask that hides it).
umask 022
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${OUT:?set OUT to the directory the results go to}"
export ANSIBLE_COLLECTIONS_PATH=${ANSIBLE_COLLECTIONS_PATH:-$ROOT/.cache/collections}
export LC_ALL=${LC_ALL:-C.UTF-8}
export ANSIBLE_NOCOLOR=1 ANSIBLE_LOCALHOST_WARNING=0 ANSIBLE_INVENTORY_UNPARSED_WARNING=0 OUT
dry=${KERNEL_BUILD_DRY:-0}
res=$OUT/kernel-build
mkdir -p "$res"
cd "$ROOT" || exit 1
log=$res/ansible.log
: >"$log"

py=$(command -v "${KERNEL_BUILD_PYTHON:-python3}") || { echo "no ${KERNEL_BUILD_PYTHON:-python3} on PATH" >&2; exit 2; }
prefix=$("$py" -c 'import sys; print(sys.prefix)')
if [[ ! -x $prefix/bin/python ]]; then
  echo "$prefix/bin/python does not exist: the role runs <venv>/bin/python" >&2
  exit 2
fi
pybin=$prefix/bin/python
pyver=$("$pybin" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

# pip: the role builds the wheel with `<venv>/bin/python -m pip wheel` and installs it with pip install.
pip_was=$("$pybin" -m pip --version 2>/dev/null | cut -d' ' -f2)
pip_bootstrapped=false
if [[ -z $pip_was ]]; then
  wheel=${KERNEL_BUILD_PIP_WHEEL:-}
  for found in "$ROOT"/.whl/pip/pip-*.whl; do
    [[ -z $wheel && -e $found ]] && wheel=$found
  done
  [[ -n $wheel ]] || { echo "$pybin has no pip and no pip wheel was carried" >&2; exit 2; }
  "$pybin" "$wheel/pip" install --no-index --no-deps --no-cache-dir "$wheel" >>"$log" 2>&1 || { echo "pip bootstrap failed" >&2; tail "$log"; exit 2; }
  pip_bootstrapped=true
fi

# The interpreter the role would make a venv from: the prefix's own, or its base, when it has the venv module.
base_python="" skip_reasons=()
for cand in "$pybin" "$("$pybin" -c 'import sys; print(getattr(sys, "_base_executable", ""))')" /usr/bin/python3; do
  [[ -n $cand && -x $cand ]] || continue
  if "$cand" -c 'import ensurepip, venv, sys; sys.exit(0 if "%d.%d" % sys.version_info[:2] == "'"$pyver"'" else 1)' 2>/dev/null; then
    base_python=$cand
    break
  fi
done
# The preflight refuses what only a venv the role makes needs, or what a venv it made has: this prefix exists
# already. Then its judgement is skipped (--skip-tags preflight skips the judgement only, never a decision), and
# probe.json says why.
if [[ -z $base_python ]]; then
  base_python=$pybin
  skip_reasons+=("no Python $pyver here has the venv module (sglang_install_python must have it)")
fi
owner=$(stat -c %U "$prefix/lib")
if [[ $owner != root ]]; then
  skip_reasons+=("$prefix/lib belongs to $owner, not root (sglang_install_venv must be root's)")
fi
preflight_args=()
((${#skip_reasons[@]})) && preflight_args=(--skip-tags preflight)

if nvcc_path=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null); then
  cuda_home=$(dirname "$(dirname "$(readlink -f "$nvcc_path")")")
else
  cuda_home=/usr/local/cuda
fi
if [[ $dry == 1 ]]; then
  arch=${KERNEL_BUILD_ARCH_LIST:-9.0}
else
  arch=${KERNEL_BUILD_ARCH_LIST:-$("$pybin" -c 'import torch; print("%d.%d" % torch.cuda.get_device_capability(0))')} || exit 2
fi
# su is on every Linux, and root needs no password for it (sudo: KERNEL_BUILD_BECOME=sudo).
become=${KERNEL_BUILD_BECOME:-su}

"$pybin" - "$res/probe.json" <<PY
import json, platform, subprocess, sys, importlib.metadata as m
def version(name):
    try:
        return m.version(name)
    except m.PackageNotFoundError:
        return None
def run(*argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, check=False).stdout.strip()
    except OSError as e:
        return "not runnable: %s" % e
json.dump({"host": platform.node(), "kernel": platform.release(), "python": "$pybin", "python_version": platform.python_version(),
           "prefix": "$prefix", "base_python": "$base_python", "preflight_args": "${preflight_args[*]:-}",
           "preflight_skipped_because": [r for r in """$(printf '%s\n' "${skip_reasons[@]}")""".splitlines() if r],
           "pip_before": "$pip_was" or None, "pip_bootstrapped": $([[ $pip_bootstrapped == true ]] && echo True || echo False),
           "packages": {n: version(n) for n in ("torch", "setuptools", "wheel", "pip", "ninja")},
           "cuda_home": "$cuda_home", "nvcc": run("$cuda_home/bin/nvcc", "--version").splitlines()[-2:] if $([[ $dry == 1 ]] && echo False || echo True) else None,
           "arch_list": "$arch", "become": "$become", "dry": $([[ $dry == 1 ]] && echo True || echo False),
           "gpu": run("nvidia-smi", "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader") if $([[ $dry == 1 ]] && echo False || echo True) else None},
          open(sys.argv[1], "w"), indent=2, sort_keys=True)
PY
cat "$res/probe.json"

vars=$(mktemp)
cat >"$vars" <<JSON
{"kernel_build_prefix": "$prefix", "kernel_build_base_python": "$base_python", "kernel_build_cuda_home": "$cuda_home",
 "kernel_build_arch_list": "$arch", "kernel_build_become_method": "$become", "kernel_build_dry": $([[ $dry == 1 ]] && echo true || echo false),
 "kernel_build_root": "${KERNEL_BUILD_ROOT:-/opt/sglang}", "kernel_build_user": "${KERNEL_BUILD_USER:-sglang}",
 "kernel_build_build_user": "${KERNEL_BUILD_BUILD_USER:-sglang-build}"}
JSON
{
  echo "host: $(uname -n) $(uname -r); $(ansible-playbook --version | head -n 1)"
  ansible-playbook -i localhost, -c local tests/device/kernel_build.yml -e "@$vars" "${preflight_args[@]}" "$@"
} >>"$log" 2>&1
rc=$?
rm -f "$vars"
tail -n 30 "$log"
for run in first second; do
  [[ -e $res/$run.json ]] && "$pybin" -c 'import json, sys; r = json.load(open(sys.argv[1])); k = r["kernel"]; print(sys.argv[2], "decision:", r["inputs"]["message"], "| build job:", r["build_seconds"], "s | run:", r["wall_seconds"], "s | kernel ok:", k.get("ok"), "| fatbinary:", k.get("fatbinary"), "| runs:", k.get("kernel"))' "$res/$run.json" "$run"
done
exit "$rc"
