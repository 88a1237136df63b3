#!/bin/bash
# Stage 2 of the application image (line 2.3-apps): the applications the
# application lab measures (docs/apps.md), installed from Debian 12's archive
# into a copy of the bookworm base rootfs, then recipe/zfs.sh for OpenZFS 2.3
# (bookworm-backports), which configures the guest and packs the image.
#   apps.sh ROOTFS LINE OUTDIR SSH_PUBKEY
# Its own folder: the OpenZFS lines' key hashes recipe/*.sh only, so editing
# this rebuilds neither the 2.1 nor the 2.3 image.
here=$(dirname "$0")
. "$here/../common.sh"

root=$1
out=$3
pubkey=$4

# borgbackup, not restic (both are in bookworm): borg can write a repository
# without encryption (--encryption none), restic always encrypts; under the
# lab's emulated CPU the cipher would set a backup's pace, not the disks.
APPS=(postgresql-15 postgresql-client-15 mariadb-server sysbench rsync borgbackup)

trap 'chroot_umount "$root"' EXIT
chroot_mount "$root"
log "applications: ${APPS[*]}"
apt_in_chroot "$root" update >&2
apt_in_chroot "$root" install "${APPS[@]}" >&2
# A run creates its own cluster and server on the pool: nothing starts at boot
# (the packages' default instances would take CPU and memory from a measurement).
in_chroot "$root" systemctl disable postgresql.service mariadb.service >&2
in_chroot "$root" systemctl mask postgresql@15-main.service >&2
for tool in /usr/lib/postgresql/15/bin/pgbench /usr/lib/postgresql/15/bin/initdb \
            /usr/bin/sysbench /usr/sbin/mariadbd /usr/bin/rsync /usr/bin/borg; do
    [ -x "$root$tool" ] || { log "missing $tool"; exit 1; }
done
{
    for pkg in postgresql-15 mariadb-server sysbench rsync borgbackup; do
        printf '%s=%s\n' "$pkg" "$(in_chroot "$root" dpkg-query -W -f '${Version}' "$pkg")"
    done
} > "$root/etc/zfs-advisor-lab-apps.txt"
chroot_umount "$root"
trap - EXIT

bash "$here/../zfs.sh" "$root" 2.3 "$out" "$pubkey"
sed 's/^/app_/' "$root/etc/zfs-advisor-lab-apps.txt" >> "$out/versions.txt"
