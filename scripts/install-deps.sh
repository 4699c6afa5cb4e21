#!/bin/sh
# Installs what training programs and the tests need: Python with PyTorch
# and NumPy (Debian's python3-torch with OpenBLAS where apt is there, pip
# elsewhere). Safe to run again: it installs only what is missing.
set -eu

have_torch() { "$1" -c 'import torch, numpy' >/dev/null 2>&1; }

if [ "$(id -u)" -eq 0 ]; then SUDO=; else SUDO=sudo; fi

apt_install() {
	missing=
	for pkg in "$@"; do
		dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
	done
	[ -z "$missing" ] && return 0
	echo "installing:$missing"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

if command -v apt-get >/dev/null 2>&1; then
	apt_install python3 python3-torch python3-numpy libopenblas0-pthread bubblewrap chromium ${EXTRA_APT_PACKAGES:-}
else
	for p in python3 python; do
		if command -v "$p" >/dev/null 2>&1 && have_torch "$p"; then exit 0; fi
	done
	echo "installing torch and numpy with pip"
	python3 -m pip install --user torch numpy
fi

for p in python3 /usr/bin/python3; do
	if command -v "$p" >/dev/null 2>&1 && have_torch "$p"; then
		echo "PyTorch: $p ($("$p" -c 'import torch; print(torch.__version__)'))"
		exit 0
	fi
done
echo "PyTorch is still not importable; see docs/quickstart.md" >&2
exit 1
