#!/bin/sh
# shellcheck shell=dash
#
# flowproof installer: downloads the frozen engine for this machine, verifies its SHA-256
# against the release's SHA256SUMS (and refuses to install anything it could not verify),
# unpacks it under ~/.flowproof and links the executable into ~/.flowproof/bin.
#
#   curl --proto '=https' --tlsv1.2 -fsSL https://github.com/flowproof/flowproof/releases/latest/download/install.sh | sh
#
# Settings (environment):
#   FLOWPROOF_VERSION         the version to install (default: the one this script was released with)
#   FLOWPROOF_INSTALL_DIR     where it goes (default: ~/.flowproof)
#   FLOWPROOF_DOWNLOAD_URL    base URL; files are fetched from <base>/v<version>/<file>
#                             (default: the project's GitHub releases)
#   FLOWPROOF_NO_MODIFY_PATH  1: never touch shell rc files
#
# Docs: docs/install.md. Structure after rustup-init.sh and cargo-dist: everything is a
# function; the last line runs main.

set -u

FLOWPROOF_RELEASED_VERSION="0.1.0"
FLOWPROOF_GLIBC_FLOOR="2.31"  # release builds are gated at this floor (installer/glibc_gate.py)
FLOWPROOF_DEFAULT_URL="https://github.com/flowproof/flowproof/releases/download"

say() {
    printf 'flowproof-install: %s\n' "$1" >&2
}

err() {
    say "error: $1"
    exit 1
}

need_cmd() {
    if ! command -v "$1" >/dev/null 2>&1; then
        err "need '$1' (command not found)"
    fi
}

# --- platform -------------------------------------------------------------------------------

detect_os() {
    case "$(uname -s)" in
        Linux) echo linux ;;
        Darwin) echo darwin ;;
        MINGW* | MSYS* | CYGWIN* | Windows_NT)
            err "Windows is not supported yet; run flowproof in WSL (Windows Subsystem for Linux), where this script installs the Linux build" ;;
        *) err "unsupported operating system: $(uname -s)" ;;
    esac
}

detect_arch() {
    _os="$1"
    case "$(uname -m)" in
        x86_64 | amd64) _arch=x64 ;;
        aarch64 | arm64) _arch=arm64 ;;
        *) err "unsupported CPU architecture: $(uname -m) (flowproof ships x64 and arm64)" ;;
    esac
    # An x64 shell on Apple silicon runs under Rosetta; the native arm64 build is the one to use.
    if [ "$_os" = darwin ] && [ "$_arch" = x64 ]; then
        if [ "$(sysctl -n sysctl.proc_translated 2>/dev/null || true)" = 1 ]; then
            _arch=arm64
        fi
    fi
    # A 32-bit userland on a 64-bit kernel cannot run the 64-bit build.
    if [ "$_os" = linux ] && [ "$_arch" = x64 ] && command -v getconf >/dev/null 2>&1; then
        if [ "$(getconf LONG_BIT 2>/dev/null || echo 64)" = 32 ]; then
            err "32-bit userland on a 64-bit kernel: flowproof ships 64-bit builds only"
        fi
    fi
    echo "$_arch"
}

# Prints gnu: glibc at least the floor the release builds are gated at. No musl build is made
# (PyInstaller bundles the build host's C library), so musl stops here with what to do instead.
detect_libc() {
    if ldd --version 2>&1 | grep -qi musl; then
        err "musl-based Linux (Alpine) is not supported: flowproof is built against glibc. Use a glibc-based image (Debian, Ubuntu, e.g. python:3.12-slim or node:24-slim), or install the Python package"
    fi
    _glibc="$(getconf GNU_LIBC_VERSION 2>/dev/null | sed -n 's/^glibc //p')"
    if [ -z "$_glibc" ]; then
        _glibc="$(ldd --version 2>&1 | sed -n '1s/.* \([0-9][0-9]*\.[0-9][0-9]*\)$/\1/p')"
    fi
    if [ -z "$_glibc" ]; then
        err "cannot tell which C library this system uses (neither glibc nor musl found)"
    fi
    if ! version_at_least "$_glibc" "$FLOWPROOF_GLIBC_FLOOR"; then
        err "glibc $_glibc is older than $FLOWPROOF_GLIBC_FLOOR, the oldest the Linux build runs on"
    fi
    echo gnu
}

# version_at_least 2.36 2.31 -> true. Numeric, part by part.
version_at_least() {
    _have_major="${1%%.*}"
    _have_minor="${1#*.}"
    _have_minor="${_have_minor%%.*}"
    _want_major="${2%%.*}"
    _want_minor="${2#*.}"
    _want_minor="${_want_minor%%.*}"
    [ "$_have_major" -gt "$_want_major" ] && return 0
    [ "$_have_major" -eq "$_want_major" ] && [ "$_have_minor" -ge "$_want_minor" ]
}

detect_target() {
    _os="$(detect_os)" || exit 1
    _arch="$(detect_arch "$_os")" || exit 1
    if [ "$_os" = linux ]; then
        _libc="$(detect_libc)" || exit 1
        echo "$_os-$_arch-$_libc"
    else
        echo "$_os-$_arch"
    fi
}

# --- download and verify ----------------------------------------------------------------------

# Plain http only for loopback (a local mirror, the installer's own tests); https otherwise.
check_url() {
    case "$1" in
        https://*) ;;
        http://127.0.0.1[:/]* | http://localhost[:/]* | http://\[::1\][:/]*) ;;
        *) err "refusing to download from $1: the URL must be https:// (plain http only on loopback)" ;;
    esac
}

download() {
    _url="$1"
    _to="$2"
    case "$_url" in
        https://*) _protocols='=https' ;;
        *) _protocols='=http' ;;
    esac
    if command -v curl >/dev/null 2>&1; then
        curl --proto "$_protocols" --proto-redir '=https' --tlsv1.2 --fail --silent --show-error \
            --location --retry 3 --output "$_to" "$_url"
    elif command -v wget >/dev/null 2>&1; then
        case "$_url" in
            https://*) wget --https-only --secure-protocol=TLSv1_2 --quiet --output-document="$_to" "$_url" ;;
            *) wget --quiet --output-document="$_to" "$_url" ;;
        esac
    else
        err "need curl or wget to download flowproof"
    fi
}

sha256_of() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    elif command -v shasum >/dev/null 2>&1; then
        shasum -a 256 "$1" | cut -d' ' -f1
    elif command -v openssl >/dev/null 2>&1; then
        openssl dgst -sha256 -r "$1" | cut -d' ' -f1
    else
        return 1
    fi
}

# The archive's line in SHA256SUMS; none stops the install (this target may not be built for
# this release, or the list is not the release's).
expected_sha256() {
    _expected="$(awk -v name="$1" '$2 == name || $2 == "*" name { print $1; exit }' "$2")"
    if [ -z "$_expected" ]; then
        err "SHA256SUMS has no entry for $1; refusing to install what cannot be verified"
    fi
    echo "$_expected"
}

# Fails closed: no checksum tool or a mismatch stops the install.
verify_checksum() {
    _file="$1"
    _name="$2"
    _expected="$3"
    if ! _actual="$(sha256_of "$_file")" || [ -z "$_actual" ]; then
        err "no SHA-256 tool found (sha256sum, shasum or openssl); refusing to install unverified"
    fi
    if [ "$_actual" != "$_expected" ]; then
        err "checksum mismatch for $_name: expected $_expected, got $_actual; nothing installed"
    fi
    say "verified SHA-256 of $_name"
}

# --- install ----------------------------------------------------------------------------------

# Unpacks into a temporary sibling, checks the engine starts and reports the expected version,
# then moves it into place: an interrupted or broken install leaves the previous one intact.
install_bundle() {
    _archive="$1"
    _version="$2"
    _home="$3"
    mkdir -p "$_home/versions" "$_home/bin" || err "cannot create $_home"
    _staging="$(mktemp -d "$_home/versions/.staging.XXXXXX")" || err "cannot write to $_home"
    if ! tar -xzf "$_archive" -C "$_staging"; then
        rm -rf "$_staging"
        err "cannot unpack the archive"
    fi
    _reported="$("$_staging/flowproof/flowproof" --version 2>&1)" || true
    if [ "$_reported" != "flowproof $_version" ]; then
        rm -rf "$_staging"
        err "the unpacked engine did not start as 'flowproof $_version' (it said: $_reported)"
    fi
    rm -rf "$_home/versions/$_version"
    mv "$_staging" "$_home/versions/$_version" || err "cannot move the engine into place"
    # Symlink, never copy: the executable finds its _internal/ folder through the link.
    rm -f "$_home/bin/.flowproof.new"
    ln -s "../versions/$_version/flowproof/flowproof" "$_home/bin/.flowproof.new" \
        && mv -f "$_home/bin/.flowproof.new" "$_home/bin/flowproof" \
        || err "cannot link $_home/bin/flowproof"
}

on_path() {
    case ":${PATH:-}:" in
        *":$1:"*) return 0 ;;
        *) return 1 ;;
    esac
}

interactive() {
    [ -t 1 ] && [ -z "${CI:-}" ]
}

# One idempotent line per rc file, sourcing an env script that puts bin/ first on PATH.
modify_rc_files() {
    _home="$1"
    _env="$_home/env"
    cat >"$_env" <<EOF
# flowproof (installer/install.sh): put its bin folder on PATH
case ":\${PATH}:" in
    *":$_home/bin:"*) ;;
    *) export PATH="$_home/bin:\$PATH" ;;
esac
EOF
    _line=". \"$_env\""
    for _rc in "$HOME/.profile" "$HOME/.bashrc" "$HOME/.zshrc"; do
        case "$_rc" in
            */.profile) ;;
            *) [ -f "$_rc" ] || continue ;;
        esac
        if ! grep -qsF "$_line" "$_rc"; then
            printf '\n%s\n' "$_line" >>"$_rc"
            say "added $_home/bin to PATH in $_rc"
        fi
    done
    if [ -d "$HOME/.config/fish" ]; then
        mkdir -p "$HOME/.config/fish/conf.d"
        printf 'fish_add_path -g "%s"\n' "$_home/bin" >"$HOME/.config/fish/conf.d/flowproof.fish"
    fi
}

setup_path() {
    _home="$1"
    _bin="$_home/bin"
    if [ -n "${GITHUB_PATH:-}" ]; then
        printf '%s\n' "$_bin" >>"$GITHUB_PATH"
        say "added $_bin to \$GITHUB_PATH"
        return
    fi
    if on_path "$_bin"; then
        return
    fi
    if [ "${FLOWPROOF_NO_MODIFY_PATH:-0}" != 1 ] && interactive; then
        modify_rc_files "$_home"
        say "open a new shell (or run: . \"$_home/env\") to use flowproof"
    else
        say "add flowproof to your PATH: export PATH=\"$_bin:\$PATH\""
    fi
}

main() {
    need_cmd uname
    need_cmd tar
    need_cmd mktemp
    need_cmd awk
    _version="${FLOWPROOF_VERSION:-$FLOWPROOF_RELEASED_VERSION}"
    _version="${_version#v}"
    _home="${FLOWPROOF_INSTALL_DIR:-$HOME/.flowproof}"
    _base="${FLOWPROOF_DOWNLOAD_URL:-$FLOWPROOF_DEFAULT_URL}"
    _base="${_base%/}"
    check_url "$_base"
    _target="$(detect_target)" || exit 1
    _name="flowproof-$_version-$_target.tar.gz"
    say "installing flowproof $_version ($_target) into $_home"

    _tmp="$(mktemp -d)" || err "cannot create a temporary folder"
    trap 'rm -rf "$_tmp"' EXIT
    download "$_base/v$_version/SHA256SUMS" "$_tmp/SHA256SUMS" \
        || err "cannot download $_base/v$_version/SHA256SUMS; refusing to install unverified"
    _sha256="$(expected_sha256 "$_name" "$_tmp/SHA256SUMS")" || exit 1
    download "$_base/v$_version/$_name" "$_tmp/$_name" \
        || err "cannot download $_base/v$_version/$_name"
    verify_checksum "$_tmp/$_name" "$_name" "$_sha256"

    install_bundle "$_tmp/$_name" "$_version" "$_home"
    setup_path "$_home"
    say "installed $_home/bin/flowproof -> $_home/versions/$_version/flowproof/flowproof"
    say "uninstall: rm -rf \"$_home\""
}

main "$@" || exit 1
