#!/bin/sh
# `npm run setup:browser`: installs the browser the player tests drive
# (test/support/browser.ts): Debian's Chromium at /usr/bin/chromium, driven by
# playwright-core. Playwright's own browser download (`npx playwright install`)
# cannot reach its CDN here, so the browser comes from apt, like ffmpeg.
set -eu
if [ -x /usr/bin/chromium ]; then
  /usr/bin/chromium --version 2>/dev/null
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "setup:browser: /usr/bin/chromium is missing and installing it needs root." >&2
  echo "  Run: sudo npm run setup:browser   (or: sudo apt-get install -y chromium)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# A fresh machine may have no package lists yet: update once, then install.
apt-get install -y -qq chromium >/dev/null 2>&1 || {
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
}
/usr/bin/chromium --version 2>/dev/null
