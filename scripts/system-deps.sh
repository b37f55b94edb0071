#!/usr/bin/env bash
# System packages the tests need: bubblewrap (the code sandbox), g++ (C++ tasks), chromium (browser tests),
# espeak-ng (the light text-to-speech fallback), postgresql and nginx (the cohort
# deployment's tests start a database and a proxy). Installs only what is missing; needs root or sudo.
set -euo pipefail
need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v g++ >/dev/null || need+=(g++)
command -v chromium >/dev/null || need+=(chromium)
command -v espeak-ng >/dev/null || need+=(espeak-ng)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null || need+=(nginx)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null; then SUDO="sudo"; else
  echo "missing system packages: ${need[*]} (install them as root; the tests that need them will fail)" >&2
  exit 0
fi
echo "installing system packages: ${need[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
