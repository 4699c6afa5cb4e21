#!/bin/sh
# Installs what training programs and the tests need: Python with PyTorch
# and NumPy (Debian's python3-torch with OpenBLAS where apt is there, pip
# elsewhere). Safe to run again: it installs only what is missing.
set -eu

have_torch() { "$1" -c 'import torch, numpy' >/dev/null 2>&1; }

if [ "$(id -u)" -eq 0 ]; then SUDO=; else SUDO=sudo; fi

# apt_install installs the packages of "$@" that are missing. It says which
# and why before it starts, and lets apt print a line per step (each
# download, each package unpacked and set up): on a fresh machine this
# downloads a few hundred megabytes and takes minutes, which must not pass
# in silence.
apt_install() {
	missing=
	for pkg in "$@"; do
		dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
	done
	if [ -z "$missing" ]; then
		echo "install-deps: the Debian packages are installed already:" "$@"
		return 0
	fi
	echo "install-deps: installing with apt:$missing"
	echo "install-deps: (Python and PyTorch for the training programs, bubblewrap for their sandbox, Chromium for the tests that open a report or the dashboard;"
	echo "install-deps:  a few hundred MB to download and a few minutes on a fresh machine; apt says each step below)"
	echo "install-deps: apt-get update"
	$SUDO apt-get update -q
	echo "install-deps: apt-get install$missing"
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q -o Dpkg::Use-Pty=0 --no-install-recommends $missing
	echo "install-deps: installed$missing"
}

if command -v apt-get >/dev/null 2>&1; then
	apt_install python3 python3-torch python3-numpy libopenblas0-pthread bubblewrap chromium ${EXTRA_APT_PACKAGES:-}
else
	for p in python3 python; do
		if command -v "$p" >/dev/null 2>&1 && have_torch "$p"; then exit 0; fi
	done
	echo "install-deps: installing torch and numpy with pip (a large download; pip shows its progress)"
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
