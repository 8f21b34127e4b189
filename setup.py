"""The one compiled part of flowproof: containment's filesystem receive loop (Linux x86_64).

Everything else is in pyproject.toml. The extension is optional: where it cannot be built (no
compiler, no Python headers, another OS) the install goes on and fsobserve.py's Python loop
runs instead, slower, and `flowproof doctor` says which one this install has.
"""

import platform
import sys

from setuptools import Extension, setup

COMPILED = sys.platform == "linux" and platform.machine() in ("x86_64", "AMD64")

setup(
    ext_modules=[
        Extension(
            "flowproof.containment._fsloop",
            ["flowproof/containment/_fsloop.c"],
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        )
    ]
    if COMPILED
    else [],
)
