"""Writes pdserve_standin.py from the build environment, then packages it."""
import os

from setuptools import setup

ARCH_LIST = os.environ.get("TORCH_CUDA_ARCH_LIST", "")
MAX_JOBS = os.environ.get("MAX_JOBS", "")
with open("pdserve_standin.py", "w") as handle:
    handle.write("ARCH_LIST = %r\nMAX_JOBS = %r\n" % (ARCH_LIST, MAX_JOBS))

setup(py_modules=["pdserve_standin"])
