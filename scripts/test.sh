#!/usr/bin/env bash
# Set up everything (scripts/setup.sh) and run every test stage, timing each:
#   yamllint, ansible-lint, ansible-test sanity, pytest (unit + integration), molecule scenarios.
# Stops at the first failing stage and exits non-zero. Safe to re-run.
#
# Environment:
#   PDSERVE_STAGES     only these stages (space/comma separated: setup yamllint ansible-lint
#                      sanity pytest molecule); default all
#   PDSERVE_SCENARIOS  only these molecule scenarios (space/comma separated); default all under
#                      extensions/molecule/, `platform` first
#   PDSERVE_KEEP_GOING=1  run the later stages after a failure too (still exits non-zero)
#   PDSERVE_PYTEST_WORKERS  pytest processes (pytest-xdist), default 2; 0 runs pytest in one process
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1

stages_wanted=" ${PDSERVE_STAGES:-setup yamllint ansible-lint sanity pytest molecule} "
stages_wanted=${stages_wanted//,/ }
names=()
results=()
times=()
failed=()
total_start=$SECONDS

summary() {
  printf '\n%-28s %-6s %8s\n' STAGE RESULT SECONDS
  local i
  for i in "${!names[@]}"; do
    printf '%-28s %-6s %8s\n' "${names[$i]}" "${results[$i]}" "${times[$i]}"
  done
  printf '%-28s %-6s %8s\n' total "" "$((SECONDS - total_start))"
}

# run_stage NAME COMMAND...: run, time, record; on failure print the table and exit.
run_stage() {
  local name=$1
  shift
  printf '\n==> %s\n' "$name"
  local start=$SECONDS rc=0
  "$@" || rc=$?
  names+=("$name")
  times+=("$((SECONDS - start))")
  if ((rc == 0)); then
    results+=(ok)
  else
    results+=(FAIL)
    failed+=("$name")
    if [[ ${PDSERVE_KEEP_GOING:-0} == 1 && $name != setup ]]; then
      printf '\ntest.sh: stage "%s" failed (exit %s); going on (PDSERVE_KEEP_GOING=1).\n' "$name" "$rc" >&2
      return 0
    fi
    summary
    printf '\ntest.sh: stage "%s" failed (exit %s); stages after it did not run.\n' "$name" "$rc" >&2
    exit 1
  fi
}

wanted() { [[ $stages_wanted == *" $1 "* ]]; }

# --- stages -------------------------------------------------------------------------------------
stage_yamllint() { yamllint --strict .; }

stage_ansible_lint() { ansible-lint --offline; }

stage_sanity() {
  # ansible-test wants the collection at .../ansible_collections/<namespace>/<name>. Test a copy of
  # exactly the files git would ship (tracked + untracked-not-ignored), with its own `git init`:
  # without one, ansible-test walks up to this repository's .git, where .cache/ is ignored, and
  # finds no files at all ("All targets skipped").
  local dest=.cache/sanity/ansible_collections/pdserve/sglang
  mkdir -p "$dest"
  find "$dest" -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
  git ls-files -z -co --exclude-standard \
    | while IFS= read -r -d '' f; do if [[ -e $f || -L $f ]]; then printf '%s\0' "$f"; fi; done \
    | rsync -a --from0 --files-from=- ./ "$dest/" || return 1
  [[ -d $dest/.git ]] || git -C "$dest" init -q || return 1
  sanity_get_pip || return 1
  # --venv --requirements: each sanity test runs in its own virtualenv with ansible-test's pinned
  # requirements, installed from PyPI once and reused from ~/.ansible/test/venv afterwards.
  # Every sanity test runs; tests/sanity/ignore-2.19.txt holds the few findings that cannot be fixed.
  (cd "$dest" && ansible-test sanity --python 3.11 --venv --requirements --color no)
}

# ansible-test bootstraps pip in its virtualenvs with get-pip.py from ci-files.testing.ansible.com,
# which these machines cannot reach; it takes the script from ~/.ansible/test/cache when present.
# Put a stand-in there that does the same job with the pip that Python's ensurepip bundles
# (packages still come from PyPI).
sanity_get_pip() {
  local version target
  version=$(python -c 'import types
from ansible_test._internal.python_requirements import get_venv_packages
print(get_venv_packages(types.SimpleNamespace(version="3.11"))["pip"])') || return 1
  target=~/.ansible/test/cache/get_pip_${version//./_}.py
  [[ -f $target ]] && return 0 # ours from an earlier run, or a real get-pip.py someone saved
  mkdir -p "$(dirname "$target")"
  cat >"$target" <<'PY'
"""pdserve stand-in for get-pip.py (see scripts/test.sh): pip from ensurepip, then pip install."""
import subprocess
import sys

args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"])
subprocess.check_call([sys.executable, "-m", "pip", "install"] + args)
PY
}

stage_pytest() {
  local rc=0
  # Both cores (pytest-xdist), each test file on one worker: a module's shared stack stays in one process.
  python -m pytest -q -n "${PDSERVE_PYTEST_WORKERS:-2}" --dist loadfile || rc=$?
  if ((rc == 5)); then
    # Exit 5 = nothing collected: acceptable only while there is no test file at all.
    # find -print -quit, not `find | grep -q`: grep's early exit can SIGPIPE find (pipefail: 141).
    if [[ -n $(find tests/unit tests/integration -name 'test_*.py' -print -quit 2>/dev/null) ]]; then
      echo "pytest collected no tests although test files exist" >&2
      return 5
    fi
    echo "pytest: no test files yet under tests/unit or tests/integration"
    return 0
  fi
  return "$rc"
}

stage_molecule() { molecule test -s "$1"; }

scenarios() {
  local all=() s
  for s in extensions/molecule/*/molecule.yml; do
    [[ -e $s ]] || continue
    s=${s#extensions/molecule/}
    all+=("${s%/molecule.yml}")
  done
  if [[ -n ${PDSERVE_SCENARIOS:-} ]]; then
    for s in ${PDSERVE_SCENARIOS//,/ }; do
      [[ -f extensions/molecule/$s/molecule.yml ]] || { echo "no scenario extensions/molecule/$s" >&2; return 1; }
      echo "$s"
    done
    return 0
  fi
  # The platform proof first: when it fails, the other scenarios cannot pass either.
  for s in "${all[@]}"; do [[ $s == platform ]] && echo "$s"; done
  for s in "${all[@]}"; do [[ $s != platform ]] && echo "$s"; done
  return 0
}

# --- run ----------------------------------------------------------------------------------------
if wanted setup; then
  run_stage setup bash scripts/setup.sh
fi
# shellcheck source=scripts/env.sh
source scripts/env.sh

wanted yamllint && run_stage yamllint stage_yamllint
wanted ansible-lint && run_stage ansible-lint stage_ansible_lint
wanted sanity && run_stage "ansible-test sanity" stage_sanity
wanted pytest && run_stage pytest stage_pytest
if wanted molecule; then
  scenario_list=$(scenarios) || exit 1
  for scenario in $scenario_list; do
    run_stage "molecule $scenario" stage_molecule "$scenario"
  done
fi

summary
echo
if ((${#failed[@]})); then
  printf 'test.sh: failed stages: %s\n' "${failed[*]}" >&2
  exit 1
fi
echo "test.sh: all stages passed"
