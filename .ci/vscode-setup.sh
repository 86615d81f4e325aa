#!/usr/bin/env bash
# Installs what the real-editor tests need (Debian chromium + ripgrep + neovim, code-server 4.100.3
# from npm, the Python Playwright driver) and builds the extension's .vsix.
#
# Idempotent: on a warm machine every install step is a cheap check, and only `npm run package`
# (lint, type-check, bundle, vendor the server from its hashed lock, vsce) runs again, and
# vendoring is skipped when the server sources and the lock did not change. Each workaround needed
# offline (ripgrep from Debian instead of GitHub, no npx prompt, native builds as root) is
# explained where it is applied.
#
# Environment:
#   REVERIE_EDITORS_CACHE  where code-server lives (default: .ci-cache/editors in the repo)
#   PYTHON                 the interpreter that gets Playwright and vendors the server
#                          (default: python3, i.e. the active virtualenv in .ci/run)
set -euo pipefail
# an absolute interpreter path, resolved before leaving the caller's directory
PYTHON=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')
cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE=${REVERIE_EDITORS_CACHE:-$ROOT/.ci-cache/editors}
CODE_SERVER_VERSION=4.100.3
PLAYWRIGHT_VERSION=1.65.2
RIPGREP_PKG_VERSION=1.15.11   # the @vscode/ripgrep version code-server 4.100.3 depends on
RIPGREP_ASSET=ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz
SECONDS=0
log() { printf '== vscode-setup [%3ss] %s\n' "$SECONDS" "$*"; }

mkdir -p "$CACHE/tmp"

# --- 1. Debian packages ------------------------------------------------------------------------
APT_PACKAGES=(chromium ripgrep libkrb5-dev neovim g++ make curl)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  log "apt: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
else
  log "apt: all present"
fi

# --- 2. code-server from npm -------------------------------------------------------------------
installed_version() {
  node -e "process.stdout.write(require('$CACHE/node_modules/code-server/package.json').version)" 2>/dev/null || true
}
if [ "$(installed_version)" != "$CODE_SERVER_VERSION" ] || [ ! -x "$CACHE/node_modules/.bin/code-server" ]; then
  log "npm: installing code-server@$CODE_SERVER_VERSION into $CACHE"
  # @vscode/ripgrep downloads rg from GitHub in its postinstall; it checks this cache first.
  rg_cache="$CACHE/tmp/vscode-ripgrep-cache-$RIPGREP_PKG_VERSION"
  if [ ! -s "$rg_cache/$RIPGREP_ASSET" ]; then
    mkdir -p "$rg_cache" "$CACHE/tmp/rg"
    cp "$(command -v rg)" "$CACHE/tmp/rg/rg"
    tar czf "$rg_cache/$RIPGREP_ASSET" -C "$CACHE/tmp/rg" rg
  fi
  [ -f "$CACHE/package.json" ] || echo '{"private": true}' > "$CACHE/package.json"
  (
    cd "$CACHE"
    # npx inside node-pty's postinstall must not prompt; native modules build against /usr headers;
    # code-server's postinstall insists on unsafe-perm when run as root.
    export TMPDIR="$CACHE/tmp" npm_config_yes=true npm_config_nodedir=/usr
    npm install --no-fund --no-audit --loglevel=error --unsafe-perm "code-server@$CODE_SERVER_VERSION" 2>&1 \
      | grep -v -e 'Unknown cli config' -e 'allowScripts' || true
  )
  [ "$(installed_version)" = "$CODE_SERVER_VERSION" ] || { echo "code-server install failed" >&2; exit 1; }
else
  log "npm: code-server@$CODE_SERVER_VERSION present"
fi

# --- 3. Playwright (Python driver; drives /usr/bin/chromium, downloads no browser) ---------------
if "$PYTHON" -c "import importlib.metadata as m, sys; sys.exit(m.version('playwright') != '$PLAYWRIGHT_VERSION')" 2>/dev/null; then
  log "pip: playwright $PLAYWRIGHT_VERSION present"
else
  log "pip: installing playwright $PLAYWRIGHT_VERSION"
  "$PYTHON" -m pip install -q --disable-pip-version-check "playwright==$PLAYWRIGHT_VERSION"
fi

# --- 4. The extension: npm ci (when the lock changed) + npm run package --------------------------
cd "$ROOT/vscode-client"
stamp=node_modules/.reverie-npm-ci.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  log "npm ci (vscode-client)"
  npm ci --no-fund --no-audit --loglevel=error
  echo "$want" > "$stamp"
else
  log "npm ci: lock unchanged, node_modules kept"
fi
log "npm run package"
REVERIE_BUNDLE_PYTHON="$PYTHON" npm run --silent package | grep -v -e '^[ ├│└]' -e '^$' -e 'vsce ls --tree'
log "done: $(ls "$ROOT"/vscode-client/reverie-*.vsix)"
