#!/usr/bin/env bash
# Step `setup`: check the inputs, decide the version, the install and report directories.
# Fails (exit 2) on an input that is not one of its allowed values, before anything is installed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

check() { # check INPUT VALUE ALLOWED...
  local name=$1 value=$2
  shift 2
  local allowed
  for allowed in "$@"; do
    [ "$value" = "$allowed" ] && return 0
  done
  error "input $name is '$value'; use one of: $*"
  exit 2
}

check comment "$IN_COMMENT" auto always on-failure never
check fail-on-failure "$IN_FAIL_ON_FAILURE" true false
check upload-report "$IN_UPLOAD_REPORT" true false

version=${IN_VERSION:-}
if [ -z "$version" ]; then
  # This action release's own flowproof: the version its installer was released with (the
  # installer ships in the action's tree, here and in the published flowproof/action).
  version=$(sed -n 's/^FLOWPROOF_RELEASED_VERSION="\(.*\)"$/\1/p' "$ACTION_PATH/installer/install.sh")
fi
version=${version#v}
case "$version" in
  '' | *[!0-9A-Za-z.+-]*)
    error "input version is '${IN_VERSION:-}'; give a flowproof version such as 0.1.0"
    exit 2
    ;;
esac

report_dir=$(mktemp -d "${RUNNER_TEMP:?RUNNER_TEMP is not set}/flowproof-report-XXXXXX")
output version "$version"
output install-dir "${RUNNER_TOOL_CACHE:-$RUNNER_TEMP}/flowproof/$version"
output report-dir "$report_dir"
if [ -n "${FP_BIN:-}" ]; then
  output install "false"
else
  output install "true"
fi
