#!/bin/bash
# Stage 1 of the lab image: a Debian bookworm rootfs with kernel, headers,
# tools and the project's Python venv; shared by every OpenZFS line.
#   base.sh ROOTFS REQUIREMENTS_TXT
. "$(dirname "$0")/common.sh"

root=$1
requirements=$2

[ ! -e "$root" ] || { log "$root exists"; exit 1; }
mkdir -p "$root"
trap 'chroot_umount "$root"' EXIT

log "debootstrap $LAB_SUITE from $LAB_DEBIAN_MIRROR"
debootstrap --variant=minbase --components=main,contrib \
    --include=systemd-sysv,udev,kmod,dbus,openssh-server,iproute2,procps,ca-certificates,python3,python3-venv,fio,less,psmisc \
    "$LAB_SUITE" "$root" "$LAB_DEBIAN_MIRROR" >&2

cat > "$root/etc/apt/sources.list" <<EOF
deb $LAB_DEBIAN_MIRROR $LAB_SUITE main contrib
deb $LAB_DEBIAN_MIRROR $LAB_SUITE-updates main contrib
deb $LAB_DEBIAN_SECURITY_MIRROR $LAB_SUITE-security main contrib
deb $LAB_DEBIAN_MIRROR $LAB_SUITE-backports main contrib
EOF

chroot_mount "$root"
log "apt-get update"
apt_in_chroot "$root" update >&2
log "kernel, headers, node exporter, disk tools"
apt_in_chroot "$root" install linux-image-amd64 linux-headers-amd64 initramfs-tools \
    prometheus-node-exporter smartmontools util-linux gdisk >&2

log "python venv /opt/zfs-advisor-venv"
in_chroot "$root" python3 -m venv /opt/zfs-advisor-venv
cp "$requirements" "$root/tmp/vm-requirements.txt"
# The host's CA bundle lets pip through whatever TLS setup the host has.
cp -L /etc/ssl/certs/ca-certificates.crt "$root/tmp/host-ca.crt"
in_chroot "$root" env PIP_CERT=/tmp/host-ca.crt PIP_DISABLE_PIP_VERSION_CHECK=1 \
    ${PIP_INDEX_URL:+PIP_INDEX_URL=$PIP_INDEX_URL} \
    /opt/zfs-advisor-venv/bin/pip install --no-cache-dir -q -r /tmp/vm-requirements.txt >&2
in_chroot "$root" /opt/zfs-advisor-venv/bin/pip freeze > "$root/opt/zfs-advisor-venv/FROZEN.txt"
rm -f "$root/tmp/vm-requirements.txt" "$root/tmp/host-ca.crt"

log "base rootfs ready, kernel $(rootfs_kernel "$root")"
