#!/usr/bin/env bash
# Step `comment`: keep ONE sticky comment on the pull request, as the `comment` input says:
#   always      every run
#   on-failure  only when flowproof did not exit 0
#   auto        when flowproof did not exit 0, and, after a pass, only to turn an earlier
#               comment green (a pull request that always passed gets no comment)
#   never       no comment
# `flowproof github comment` itself finds the comment, edits it in place, and turns a 403 (a
# fork's read-only token) into a notice.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ "$MODE" = "never" ]; then
  exit 0
fi
if [ -z "${MARKDOWN:-}" ] || [ ! -f "$MARKDOWN" ]; then
  notice "no comment: flowproof wrote no report (exit code ${CODE:-unknown})"
  exit 0
fi
extra=()
if [ "$CODE" = "0" ]; then
  case "$MODE" in
    on-failure) exit 0 ;;
    auto) extra=(--update-only) ;;
  esac
fi

body=$MARKDOWN
if [ -n "${ARTIFACT_URL:-}" ]; then
  body="$MARKDOWN.posted"
  { cat "$MARKDOWN"; printf '\n[Full report (HTML and JUnit)](%s)\n' "$ARTIFACT_URL"; } >"$body"
fi
args=(github comment --markdown "$body" --marker "$MARKER")
[ "${#extra[@]}" -gt 0 ] && args+=("${extra[@]}")
"$(flowproof_bin)" "${args[@]}"
