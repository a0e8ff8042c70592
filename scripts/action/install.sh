#!/usr/bin/env bash
# The install step of loopdbg's GitHub Action (action.yml) on Linux and
# macOS: the release's own shell installer (cargo-dist's, which picks the
# archive for this runner and checks it), into a folder of the runner's
# own, added to the job's PATH. A loopdbg already on PATH at the asked
# version is kept.
#
#   LOOPDBG_VERSION        0.1.0, v0.1.0 or latest (default)
#   LOOPDBG_INSTALL_ROOT   where it goes (default $RUNNER_TOOL_CACHE/loopdbg/VERSION)
#   LOOPDBG_RELEASES       the releases' base URL (default the project's
#                          GitHub releases; tests/release.rs serves a
#                          local release on loopback)
set -euo pipefail

version=${LOOPDBG_VERSION:-latest}
version=${version#v}
releases=${LOOPDBG_RELEASES:-https://github.com/loopdbg/loopdbg/releases}

if [ "$version" != latest ] && command -v loopdbg > /dev/null 2>&1; then
  have=$(loopdbg --version 2>/dev/null | awk '{print $2}')
  if [ "$have" = "$version" ]; then
    echo "loopdbg $have is already installed: $(command -v loopdbg)"
    exit 0
  fi
fi

case $version in
  latest) base=$releases/latest/download ;;
  *) base=$releases/download/v$version ;;
esac
root=${LOOPDBG_INSTALL_ROOT:-${RUNNER_TOOL_CACHE:-${RUNNER_TEMP:-/tmp}}/loopdbg/$version}
mkdir -p "$root"

# The installer fetches the archive from the same release; without it
# changing PATH or the shell's profile (the job's PATH is set below).
installer=$(mktemp)
trap 'rm -f "$installer"' EXIT
if ! curl --proto '=https,http' --tlsv1.2 -fsSL --retry 3 "$base/loopdbg-installer.sh" -o "$installer"; then
  echo "::error title=loopdbg::could not download $base/loopdbg-installer.sh (is '$version' a loopdbg release?)"
  exit 2
fi
INSTALLER_DOWNLOAD_URL=$base LOOPDBG_UNMANAGED_INSTALL=$root sh "$installer" --quiet

if [ -n "${GITHUB_PATH:-}" ]; then
  echo "$root" >> "$GITHUB_PATH"
fi
"$root/loopdbg" --version
