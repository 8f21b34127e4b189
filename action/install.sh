#!/usr/bin/env bash
# Step `install`: put the pinned flowproof on PATH for the later steps. A cache hit that holds
# the binary is used as it is; anything else goes through the project's installer, which
# verifies the download and appends its bin directory to $GITHUB_PATH.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

export FLOWPROOF_VERSION FLOWPROOF_INSTALL_DIR
# Inside the cached directory, so a cache hit restores the link on PATH too.
export FLOWPROOF_BIN_DIR="$FLOWPROOF_INSTALL_DIR/bin"

if [ "${CACHE_HIT:-}" = "true" ] && [ -x "$FLOWPROOF_BIN_DIR/flowproof" ]; then
  printf '%s\n' "$FLOWPROOF_BIN_DIR" >>"${GITHUB_PATH:?GITHUB_PATH is not set}"
  echo "flowproof $FLOWPROOF_VERSION restored from the cache: $FLOWPROOF_BIN_DIR/flowproof"
  exit 0
fi
if [ ! -f "$INSTALLER" ]; then
  error "the installer is missing from the action ($INSTALLER)"
  exit 2
fi
sh "$INSTALLER"
