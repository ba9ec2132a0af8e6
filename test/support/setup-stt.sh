#!/bin/sh
# `npm run setup:stt`: installs the offline speech-to-text engine (media/stt)
# and the two speech synthesisers the transcript tests and bench:transcripts
# make their corpus with. All from Debian: pocketsphinx + its en-us model
# (BSD, ~38 MB), espeak-ng, flite. Nothing is downloaded at run time.
set -eu
PKGS="pocketsphinx pocketsphinx-en-us espeak-ng flite"
if command -v pocketsphinx_continuous >/dev/null 2>&1 && [ -d /usr/share/pocketsphinx/model/en-us/en-us ] \
  && command -v espeak-ng >/dev/null 2>&1 && command -v flite >/dev/null 2>&1; then
  echo "setup:stt: pocketsphinx, its en-us model, espeak-ng and flite are installed."
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "setup:stt: speech-to-text packages are missing and installing them needs root." >&2
  echo "  Run: sudo npm run setup:stt   (or: sudo apt-get install -y $PKGS)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# A fresh machine may have no package lists yet: update once, then install.
# shellcheck disable=SC2086
apt-get install -y -qq $PKGS >/dev/null 2>&1 || {
  apt-get update -qq
  apt-get install -y -qq $PKGS >/dev/null
}
echo "setup:stt: installed $PKGS."
