#!/bin/sh
# deps.sh PACKAGE... -- makes sure these Debian packages are installed:
# installs the missing ones when run as root, otherwise names them and fails.
# A package of another architecture (zlib1g-dev:arm64) first enables that
# architecture in dpkg (dpkg --add-architecture) if it is not yet.
missing=
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "cpuprof needs these Debian packages:$missing" >&2
	foreign=$(for p in $missing; do case $p in *:*) echo "${p#*:}" ;; esac; done | sort -u)
	for a in $foreign; do
		echo "first enable their architecture: sudo dpkg --add-architecture $a" >&2
	done
	echo "install them with: sudo apt-get update && sudo apt-get install$missing" >&2
	exit 1
fi
echo "installing:$missing" >&2
for p in $missing; do
	case $p in
	*:*)
		a=${p#*:}
		if [ "$a" != "$(dpkg --print-architecture)" ] &&
			! dpkg --print-foreign-architectures | grep -qx "$a"; then
			echo "enabling architecture $a" >&2
			dpkg --add-architecture "$a" || exit 1
		fi ;;
	esac
done
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends $missing >&2
