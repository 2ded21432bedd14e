#!/usr/bin/env bash
# The Debian packages avjudge's demo and tests use, one place for `make demo`, `make test` and `.ci/run`.
#
#   bash scripts/system_packages.sh demo|test
#
# Each package the purpose needs and the machine lacks is installed with apt-get when this user may (root, or sudo
# without a password); where it may not, one line says what is missing, what goes without it and the command that
# would install it. It never fails the caller: the demo and the tests run without these, smaller (the tests that
# need one are skipped and counted by reason at the end of the run). Installed packages cost nothing: nothing is
# looked up when none is missing. SYSTEM_PACKAGES=skip only reports.
set -uo pipefail

purpose="${1:-}"
case "$purpose" in
  demo) wanted=(espeak-ng) ;;
  test) wanted=(ffmpeg espeak-ng chromium) ;;
  *) echo "usage: bash scripts/system_packages.sh demo|test" >&2; exit 2 ;;
esac

# what each package brings, per purpose (shown when it cannot be installed)
costs() {
  case "$purpose:$1" in
    demo:espeak-ng) echo "the demo makes its world without speech" ;;
    test:ffmpeg) echo "the tests that check clips against the ffmpeg and ffprobe binaries are skipped" ;;
    test:espeak-ng) echo "the speech tests (Whisper, DNSMOS on speech, an extra voice) are skipped" ;;
    test:chromium) echo "the tests that render the HTML reports in a browser are skipped" ;;
  esac
}

present() {
  case "$1" in
    ffmpeg) command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null ;;
    chromium) command -v chromium >/dev/null || command -v chromium-browser >/dev/null ;;
    *) command -v "$1" >/dev/null ;;
  esac
}

missing=()
for package in "${wanted[@]}"; do
  present "$package" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

as_root=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then as_root=(sudo -n); else as_root=(none); fi
fi
if [ "${SYSTEM_PACKAGES:-}" != skip ] && [ "${as_root[*]:-}" != none ] && command -v apt-get >/dev/null; then
  echo "installing ${missing[*]} (apt-get; SYSTEM_PACKAGES=skip to leave them out)"
  if "${as_root[@]}" apt-get update -qq >/dev/null \
    && "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; then
    exit 0
  fi
  echo "apt-get could not install ${missing[*]}"
fi
for package in "${missing[@]}"; do
  present "$package" && continue
  echo "missing $package: $(costs "$package"); to install it: sudo apt-get install -y $package"
done
exit 0
