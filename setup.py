"""The one compiled part of flowproof: containment's filesystem receive loop (Linux x86_64).

Everything else is in pyproject.toml. The extension is optional: where it cannot be built (no
compiler, no Python headers, another OS) the install goes on and fsobserve.py's Python loop
runs instead, slower, and `flowproof doctor` says which one this install has.

It is built against CPython's stable ABI (3.11 and later), so one wheel serves every supported
Python: `cp311-abi3-manylinux_2_31_x86_64`. FLOWPROOF_PURE_PYTHON=1 leaves it out, which gives
the `py3-none-any` wheel macOS and Linux arm64 install (installer/python_dist.py builds both).
"""

import os
import platform
import sys

from setuptools import Extension, setup

COMPILED = (
    sys.platform == "linux"
    and platform.machine() in ("x86_64", "AMD64")
    and os.environ.get("FLOWPROOF_PURE_PYTHON") != "1"
)
STABLE_ABI = "0x030B0000"  # Py_LIMITED_API: the C API of CPython 3.11, kept by every later one

setup(
    ext_modules=[
        Extension(
            "flowproof.containment._fsloop",
            ["flowproof/containment/_fsloop.c"],
            # an undeclared function is an error: under the stable ABI a call to something it
            # lacks would otherwise compile, and crash
            extra_compile_args=[
                "-O2",
                "-Wall",
                "-Wextra",
                "-Wno-unused-parameter",
                "-Werror=implicit-function-declaration",
            ],
            define_macros=[("Py_LIMITED_API", STABLE_ABI)],
            py_limited_api=True,
            optional=True,
        )
    ]
    if COMPILED
    else [],
    options={"bdist_wheel": {"py_limited_api": "cp311"}} if COMPILED else {},
)
