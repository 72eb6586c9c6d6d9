"""GPU-free stand-in for an SGLang server (``python -m sglang.launch_server``).

See tests/emulator/README.md for what it emulates and where it deliberately differs.
"""
