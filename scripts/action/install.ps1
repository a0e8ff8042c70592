# The install step of loopdbg's GitHub Action (action.yml) on Windows:
# the release's own PowerShell installer (cargo-dist's) into a folder of
# the runner's own, added to the job's PATH; install.sh's twin (same
# variables: LOOPDBG_VERSION, LOOPDBG_INSTALL_ROOT, LOOPDBG_RELEASES).
$ErrorActionPreference = 'Stop'

$version = if ($env:LOOPDBG_VERSION) { $env:LOOPDBG_VERSION } else { 'latest' }
$version = $version -replace '^v', ''
$releases = if ($env:LOOPDBG_RELEASES) { $env:LOOPDBG_RELEASES } else { 'https://github.com/loopdbg/loopdbg/releases' }

if ($version -ne 'latest' -and (Get-Command loopdbg -ErrorAction SilentlyContinue)) {
  $have = ((loopdbg --version) -split ' ')[1]
  if ($have -eq $version) {
    Write-Output "loopdbg $have is already installed"
    exit 0
  }
}

$base = if ($version -eq 'latest') { "$releases/latest/download" } else { "$releases/download/v$version" }
$root = if ($env:LOOPDBG_INSTALL_ROOT) { $env:LOOPDBG_INSTALL_ROOT } else { Join-Path $env:RUNNER_TOOL_CACHE "loopdbg\$version" }
New-Item -ItemType Directory -Force -Path $root | Out-Null

try {
  $installer = Invoke-RestMethod "$base/loopdbg-installer.ps1"
} catch {
  Write-Output "::error title=loopdbg::could not download $base/loopdbg-installer.ps1 (is '$version' a loopdbg release?)"
  exit 2
}
$env:INSTALLER_DOWNLOAD_URL = $base
$env:LOOPDBG_UNMANAGED_INSTALL = $root
Invoke-Expression $installer

if ($env:GITHUB_PATH) { Add-Content -Path $env:GITHUB_PATH -Value $root }
& (Join-Path $root 'loopdbg.exe') --version
