#!/bin/bash
# Stage 2 of the Debian 13 line's image: trixie's own OpenZFS (zfs-dkms 2.3 from
# contrib) built by DKMS for trixie's kernel, the guest's system configuration
# (that of recipe/zfs.sh, less what only the bookworm lines have), then packing.
#   zfs.sh ROOTFS LINE OUTDIR SSH_PUBKEY      (LINE: debian13)
. "$(dirname "$0")/../common.sh"
LAB_SUITE=trixie

root=$1
line=$2
out=$3
pubkey=$4
want=2.3  # the OpenZFS line trixie ships

[ "$line" = debian13 ] || { log "unknown line $line (debian13)"; exit 2; }
trap 'chroot_umount "$root"' EXIT
chroot_mount "$root"
kver=$(rootfs_kernel "$root")

log "zfs-dkms + zfsutils-linux from $LAB_SUITE, kernel $kver"
apt_in_chroot "$root" install zfs-dkms zfsutils-linux >&2

zfs_pkg=$(in_chroot "$root" dpkg-query -W -f '${Version}' zfs-dkms)
zfs_ver=${zfs_pkg#*:}; zfs_ver=${zfs_ver%%-*}
case "$zfs_ver" in "$want".*) ;; *) log "got ZFS $zfs_ver, wanted $want.x"; exit 1 ;; esac

# DKMS usually builds for the rootfs's kernel on its own; make sure it did.
if ! ls "$root/lib/modules/$kver/updates/dkms/"zfs.ko* >/dev/null 2>&1; then
    log "DKMS did not build for $kver yet: building"
    in_chroot "$root" dkms install "zfs/$zfs_ver" -k "$kver" >&2
fi
ls "$root/lib/modules/$kver/updates/dkms/"zfs.ko* >/dev/null
log "zfs module for $kver: $(ls "$root/lib/modules/$kver/updates/dkms/" | tr '\n' ' ')"

log "guest configuration"
echo zfslab > "$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 zfslab\n' > "$root/etc/hosts"
printf '/dev/vda / ext4 rw,noatime,errors=remount-ro 0 1\n' > "$root/etc/fstab"
printf 'nameserver 10.0.2.3\n' > "$root/etc/resolv.conf"
mkdir -p "$root/etc/systemd/network" "$root/project"
cat > "$root/etc/systemd/network/10-lab.network" <<'EOS'
[Match]
Name=en* eth*
[Network]
DHCP=ipv4
EOS
printf 'zfs\n9p\n9pnet_virtio\n' > "$root/etc/modules-load.d/zfs-lab.conf"
printf 'virtio_pci\nvirtio_blk\nvirtio_scsi\next4\n' >> "$root/etc/initramfs-tools/modules"
in_chroot "$root" systemctl enable systemd-networkd ssh >&2
# Nothing that slows boot or wakes up during a test.
in_chroot "$root" systemctl mask systemd-networkd-wait-online.service \
    apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer \
    e2scrub_reap.service fstrim.timer systemd-timesyncd.service \
    zfs-scrub-monthly@.timer zfs-scrub-weekly@.timer zfs-trim-monthly@.timer \
    zfs-trim-weekly@.timer >&2 || true
mkdir -p "$root/root/.ssh"; chmod 700 "$root/root/.ssh"
cp "$pubkey" "$root/root/.ssh/authorized_keys"; chmod 600 "$root/root/.ssh/authorized_keys"
cat > "$root/etc/ssh/sshd_config.d/lab.conf" <<'EOS'
PermitRootLogin prohibit-password
PasswordAuthentication no
UseDNS no
EOS
in_chroot "$root" passwd -d root >&2
in_chroot "$root" update-initramfs -u -k "$kver" >&2

in_chroot "$root" apt-get clean
rm -rf "$root/var/lib/apt/lists/"* "$root/var/cache/apt/"*.bin
chroot_umount "$root"
trap - EXIT

log "packing root disk"
mkdir -p "$out"
cp "$root/boot/vmlinuz-$kver" "$out/vmlinuz"
cp "$root/boot/initrd.img-$kver" "$out/initrd.img"
used_mib=$(du -sm "$root" | cut -f1)
size_mib=$(( used_mib + 2048 ))
mkfs.ext4 -q -F -L labroot -d "$root" "$out/root.img" "${size_mib}M" >&2
qemu-img convert -O qcow2 "$out/root.img" "$out/root.qcow2"
rm -f "$out/root.img"

{
    printf 'kernel=%s\n' "$kver"
    printf 'zfs_version=%s\n' "$zfs_ver"
    printf 'zfs_package=%s\n' "$zfs_pkg"
    printf 'zfs_line=%s\n' "$line"
    printf 'python=%s\n' "$(chroot "$root" python3 -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')"
} > "$out/versions.txt"
log "image ready in $out (kernel $kver, ZFS $zfs_ver)"
