#!/bin/bash
# install_packages.sh LABEL [--arch ARCH] PACKAGE...: installs the Debian
# packages of the list that are missing (with sudo unless root), and says
# which; with --arch, first adds that architecture (Debian multiarch, for
# PACKAGE:ARCH names). make setup, setup-arm64 and setup-book call it.
set -euo pipefail
label=$1; shift
arch=""
if [ "${1:-}" = --arch ]; then arch=$2; shift 2; fi
missing=""
for p in "$@"; do
  dpkg-query -W -f='${Status}\n' "$p" 2> /dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then echo "$label: all packages present ($*)"; exit 0; fi
echo "$label: installing$missing"
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
[ -z "$arch" ] || $SUDO dpkg --add-architecture "$arch"
$SUDO apt-get update -qq
# shellcheck disable=SC2086 # one word per package
$SUDO apt-get install -y -qq --no-remove $missing
