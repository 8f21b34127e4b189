# Shared by the action's step scripts (sourced, never run). bash 3.2 compatible: macOS runners.

# output NAME VALUE: a step output, in the runner's file format (the value is one line).
output() {
  printf '%s=%s\n' "$1" "$2" >>"${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set: run inside GitHub Actions}"
}

# escape TEXT: the data of a workflow command (%, CR and LF escaped).
escape() {
  local text=$1
  text=${text//'%'/'%25'}
  text=${text//$'\r'/'%0D'}
  text=${text//$'\n'/'%0A'}
  printf '%s' "$text"
}

error() { printf '::error title=flowproof::%s\n' "$(escape "$1")"; }
notice() { printf '::notice title=flowproof::%s\n' "$(escape "$1")"; }

# flowproof_bin: the flowproof to run, the flowproof-bin input or the one on PATH.
flowproof_bin() {
  if [ -n "${FP_BIN:-}" ]; then
    printf '%s' "$FP_BIN"
  else
    printf 'flowproof'
  fi
}
