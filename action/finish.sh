#!/usr/bin/env bash
# The last step: end the job with flowproof's exit code. With fail-on-failure false, failing
# flows (exit 1) do not fail the job; a configuration error (2) or an internal error (3) still do.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ -n "${ARTIFACT_URL:-}" ] && [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  printf '\n[Full flowproof report (HTML and JUnit)](%s)\n' "$ARTIFACT_URL" >>"$GITHUB_STEP_SUMMARY"
fi
case "${CODE:-}" in
  0) exit 0 ;;
  1)
    if [ "$FAIL_ON_FAILURE" = "false" ]; then
      notice "flows failed; the job goes on because fail-on-failure is false"
      exit 0
    fi
    exit 1
    ;;
  '')
    error "flowproof did not run"
    exit 2
    ;;
  *[!0-9]*)
    error "flowproof's exit code is '$CODE'"
    exit 2
    ;;
  *) exit "$CODE" ;;
esac
