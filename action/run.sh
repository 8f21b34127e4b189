#!/usr/bin/env bash
# Step `run`: `flowproof run` with the JUnit, HTML and markdown reports in $REPORT_DIR. Never
# fails itself: the exit code and the counts go to $GITHUB_OUTPUT, and the last step of the
# action exits with the code, after the report is uploaded and the comment posted.
# The job summary and the ::error annotations are written by flowproof itself.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

# lines TEXT: the non-empty lines of TEXT, trimmed, into the array `found`.
lines() {
  found=()
  local line
  while IFS= read -r line || [ -n "$line" ]; do
    line="${line#"${line%%[![:space:]]*}"}"
    line="${line%"${line##*[![:space:]]}"}"
    [ -n "$line" ] && found+=("$line")
  done <<<"$1"
}

junit="$REPORT_DIR/junit.xml"
html="$REPORT_DIR/report.html"
markdown="$REPORT_DIR/comment.md"
argv=(run)
lines "${SPECS:-}"
[ "${#found[@]}" -gt 0 ] && argv+=("${found[@]}")
argv+=(--junit "$junit" --html "$html" --markdown "$markdown")
lines "${ARGS:-}"
[ "${#found[@]}" -gt 0 ] && argv+=("${found[@]}")
[ -n "${SHARD:-}" ] && argv+=(--shard "$SHARD")

bin=$(flowproof_bin)
output report-dir "$REPORT_DIR"
if ! command -v "$bin" >/dev/null 2>&1; then
  error "cannot find flowproof ('$bin' is not on PATH and not a file); the install step did not run or failed"
  output exit-code 2
  exit 0
fi

"$bin" "${argv[@]}"
code=$?

# The trace gate: what must never be committed (keys, tokens, home paths) fails the job like a
# failed flow (exit 1), unless flowproof already exited with something worse.
if [ "${TRACE_LINT:-true}" = "true" ]; then
  lint=(trace lint)
  lines "${SPECS:-}"
  [ "${#found[@]}" -gt 0 ] && lint+=("${found[@]}")
  "$bin" "${lint[@]}"
  linted=$?
  output trace-lint "$linted"
  [ "$linted" -gt "$code" ] && code=$linted
fi
output exit-code "$code"

# attribute NAME: an attribute of the JUnit file's root element (flowproof's own template
# writes <testsuites name= tests= failures= errors= ...> on one line).
attribute() {
  sed -n "s/.*<testsuites [^>]*$1=\"\([0-9]*\)\".*/\1/p" "$junit" | head -n 1
}

if [ -f "$junit" ]; then
  tests=$(attribute tests)
  failures=$(attribute failures)
  errors=$(attribute errors)
  output passed "$((tests - failures - errors))"
  output failed "$failures"
  output errors "$errors"
  output junit "$junit"
  [ -f "$html" ] && output html "$html"
  [ -f "$markdown" ] && output markdown "$markdown"
else
  # flowproof stopped before it had a run to report (a usage error, no specs, a crash).
  message="flowproof exited with code $code before writing its report; its messages are in the log of this step"
  error "$message"
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    printf '### flowproof\n\n%s.\n' "$message" >>"$GITHUB_STEP_SUMMARY"
  fi
fi
exit 0
