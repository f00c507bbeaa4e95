#!/bin/sh
# Build MPICH with the ch3:sock device into PREFIX (default: .mpich-sock in the checkout):
# the CPU-fair baseline of docs/measurements/cpu-fairness.md. Its ranks wait for messages in
# poll(), asleep, where the PyPI wheel's ch4:ucx (and Debian's ch4:ofi) busy-poll: with more
# ranks than cores only this build lets a benchmark say "no side starved of CPU".
#
# The source is Debian's (`apt-get source`, through a private apt state directory: no root, the
# system's apt lists untouched); mpich.org's tarball is used instead where MPICH_TARBALL names
# a downloaded one. About 9 minutes on 2 cores. Usage: tuning/build_mpich_sock.sh [PREFIX]
set -eu
prefix=$(realpath -m "${1:-.mpich-sock}")
work=$(mktemp -d "${TMPDIR:-/tmp}/aapc-mpich-sock.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ -n "${MPICH_TARBALL:-}" ]; then
    tarball=$(realpath "$MPICH_TARBALL")
else
    . /etc/os-release
    suite=${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release: set MPICH_TARBALL}
    mkdir -p "$work/parts" "$work/lists/partial" "$work/cache/archives/partial"
    cat > "$work/parts/src.sources" <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    apt="-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=$work/parts
         -o Dir::State::Lists=$work/lists -o Dir::Cache=$work/cache -o Debug::NoLocking=1
         -o APT::Sandbox::User=$(id -un)"
    echo "mpich-sock: fetching Debian $suite's MPICH source"
    # shellcheck disable=SC2086
    apt-get -q $apt update >/dev/null
    # shellcheck disable=SC2086
    (cd "$work" && apt-get -q $apt source --download-only mpich >/dev/null)
    tarball=$(ls "$work"/mpich_*.orig.tar.*)
fi
echo "mpich-sock: unpacking $(basename "$tarball")"
mkdir "$work/src"
tar -xf "$tarball" -C "$work/src" --strip-components=1
cd "$work/src"
echo "mpich-sock: configuring (log: $prefix.log)"
mkdir -p "$(dirname "$prefix")"
failed() { echo "mpich-sock: $1 failed; the last lines of $prefix.log say why" >&2; exit 1; }
./configure --prefix="$prefix" --with-device=ch3:sock --with-pm=hydra --enable-fast=O2 \
    --disable-fortran --disable-cxx --disable-romio --disable-doc > "$prefix.log" 2>&1 ||
    failed configure
echo "mpich-sock: building with $(nproc) jobs"
make -j"$(nproc)" >> "$prefix.log" 2>&1 || failed make
make install >> "$prefix.log" 2>&1 || failed "make install"
"$prefix/bin/mpichversion" | sed -n 's/^MPICH Device: */mpich-sock: device /p'
echo "mpich-sock: done: $prefix/bin/mpicc"
