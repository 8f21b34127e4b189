import sys

if sys.argv[1:2] == ["__flowproof_contain__"]:  # containment/seccomp.py: TRAMPOLINE
    from flowproof.containment.seccomp import trampoline

    trampoline(sys.argv[2:])

from flowproof.cli import main  # noqa: E402

main()
