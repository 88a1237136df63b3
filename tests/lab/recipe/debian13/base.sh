#!/bin/bash
# Stage 1 of the Debian 13 line's image: a Debian trixie rootfs with its own
# kernel, headers and Python (3.13), and what the Debian package depends on
# (python3-venv, fio; zfsutils-linux comes with stage 2). No project venv: the
# package brings its own. The lab VM has no network, so apt installs the
# package from its file with everything it needs already here.
#   base.sh ROOTFS
. "$(dirname "$0")/../common.sh"
LAB_SUITE=trixie

root=$1

[ ! -e "$root" ] || { log "$root exists"; exit 1; }
mkdir -p "$root"
trap 'chroot_umount "$root"' EXIT

log "debootstrap $LAB_SUITE from $LAB_DEBIAN_MIRROR"
debootstrap --variant=minbase --components=main,contrib \
    --include=systemd-sysv,udev,kmod,dbus,openssh-server,iproute2,procps,ca-certificates,python3,python3-venv,fio,less,psmisc \
    "$LAB_SUITE" "$root" "$LAB_DEBIAN_MIRROR" >&2

cat > "$root/etc/apt/sources.list" <<EOS
deb $LAB_DEBIAN_MIRROR $LAB_SUITE main contrib
deb $LAB_DEBIAN_MIRROR $LAB_SUITE-updates main contrib
deb $LAB_DEBIAN_SECURITY_MIRROR $LAB_SUITE-security main contrib
EOS

chroot_mount "$root"
log "apt-get update"
apt_in_chroot "$root" update >&2
log "kernel and headers"
apt_in_chroot "$root" install linux-image-amd64 linux-headers-amd64 initramfs-tools >&2

log "base rootfs ready, kernel $(rootfs_kernel "$root"), $(in_chroot "$root" python3 --version)"
