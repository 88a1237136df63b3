# Shared helpers for the lab image recipe (sourced, never run directly).
# Every file in tests/lab/recipe/ is part of the image cache key: editing one rebuilds.

set -euo pipefail

# The one place the Debian package mirror is named.  Security and backports
# suites are derived from it.
LAB_DEBIAN_MIRROR="${LAB_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
LAB_DEBIAN_SECURITY_MIRROR="${LAB_DEBIAN_SECURITY_MIRROR:-${LAB_DEBIAN_MIRROR%/debian}/debian-security}"
LAB_SUITE=bookworm

export DEBIAN_FRONTEND=noninteractive
export LC_ALL=C.UTF-8

log() { printf '[recipe %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# Mount the pseudo file systems a chroot needs; unmount them again with
# chroot_umount (also called from an EXIT trap by the caller).
chroot_mount() {
    local root=$1
    mount -t proc proc "$root/proc"
    mount -t sysfs sysfs "$root/sys"
    mount --bind /dev "$root/dev"
    mount -t devpts devpts "$root/dev/pts" -o gid=5,mode=620,ptmxmode=000
    # Services must never start inside the chroot.
    printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
    chmod 755 "$root/usr/sbin/policy-rc.d"
    cp -L /etc/resolv.conf "$root/etc/resolv.conf"
}

chroot_umount() {
    local root=$1 m
    for m in dev/pts dev sys proc; do
        if mountpoint -q "$root/$m"; then umount -l "$root/$m" || true; fi
    done
    rm -f "$root/usr/sbin/policy-rc.d"
}

in_chroot() {
    local root=$1; shift
    chroot "$root" /usr/bin/env -i \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 \
        "$@"
}

apt_in_chroot() {
    local root=$1; shift
    in_chroot "$root" apt-get -y -q -o Dpkg::Options::=--force-confdef \
        -o Dpkg::Options::=--force-confold --no-install-recommends "$@"
}

# The kernel version installed in the rootfs (exactly one is expected).
rootfs_kernel() {
    local root=$1 k
    k=$(ls "$root/lib/modules" | sort -V | tail -n1)
    [ -n "$k" ] || { log "no kernel in $root/lib/modules"; return 1; }
    echo "$k"
}
