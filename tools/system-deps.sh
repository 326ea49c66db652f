#!/usr/bin/env bash
# Installs the Debian packages the test suite and the demo need, when missing.
# As root it runs apt-get; otherwise it prints the one command to run and fails.
set -euo pipefail

# command on PATH -> Debian package that provides it
declare -A PROVIDES=(
  [bwrap]=bubblewrap
  [chromium]=chromium
  [chromedriver]=chromium-driver
  [ip]=iproute2
  [unshare]=util-linux
  [setpriv]=util-linux
  [prlimit]=util-linux
  [dockerd]=docker.io
  [debootstrap]=debootstrap
)

missing=()
for cmd in "${!PROVIDES[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${PROVIDES[$cmd]}")
done
# shared libraries (no command to look for) -> Debian package
ldconfig -p 2>/dev/null | grep -c 'libseccomp\.so\.2 ' >/dev/null || missing+=(libseccomp2)
[ "${#missing[@]}" -eq 0 ] && exit 0
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)

if [ "$(id -u)" != 0 ]; then
  echo "system-deps: missing Debian packages; run: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "system-deps: installing ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
