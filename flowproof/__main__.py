import sys

if sys.argv[1:2] == ["__flowproof_contain__"]:  # containment/seccomp.py: TRAMPOLINE
    from flowproof.containment.seccomp import trampoline

    trampoline(sys.argv[2:])

# The MCP stdio stand-in is started once per MCP connection an agent opens, so it skips the CLI
# (click, and everything `run` imports) and starts as a plain stdlib relay.
if sys.argv[1:2] == ["mcp-stand-in"]:
    from flowproof.mcp.standin import main as stand_in

    sys.exit(stand_in(sys.argv[2:]))

from flowproof.cli import main  # noqa: E402

main()
