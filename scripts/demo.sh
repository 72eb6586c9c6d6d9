#!/usr/bin/env bash
# Set up everything (scripts/setup.sh), then run the main job on this machine without a GPU:
# an emulated SGLang prefill and decode server behind the real sglang-router, one chat request
# through the router, the parsed answer printed (scripts/demo_emulated.py).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
bash scripts/setup.sh
# shellcheck source=scripts/env.sh
source scripts/env.sh
exec python scripts/demo_emulated.py "$@"
