#!/usr/bin/env bash
# Installs the Debian 12 packages tunecast needs (tools/debian-packages.txt), only if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t packages < <(grep -v '^#' tools/debian-packages.txt | sed '/^$/d')
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
fi
