# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""GPU-free stand-in for ``python -m sglang.launch_server`` (see README.md here)."""
import logging
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sglemu import cli  # noqa: E402


def main(argv=None):
    args = cli.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper(), logging.INFO),
        format="[%(asctime)s] %(message)s", datefmt="%Y-%m-%d %H:%M:%S")
    import uvicorn

    from sglemu.app import Server, create_app

    server = Server(args)
    app = create_app(server)
    server.start_background()
    logging.getLogger("sglang_emulator").info(
        "SGLang emulator: model=%s served_model_name=%s mode=%s tp=%s port=%s",
        args.model_path, args.served_model_name, args.disaggregation_mode, args.tp_size,
        args.port)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning",
                timeout_keep_alive=5, timeout_graceful_shutdown=1, access_log=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
