#!/usr/bin/env bash
# The lab tier: real OpenZFS 2.1 and 2.3 in qemu VMs, and the Debian package on the Debian 13
# line (tests/lab, docs/lab.md).
# Installs what the host needs, builds or reuses the cached images, runs the
# lab tests, and prints how long each stage took.
#
#   .ci/lab.sh                      # every line (2.1, 2.3, debian13), every layout
#   ZFS_ADVISOR_LAB_ZFS=2.3 ZFS_ADVISOR_LAB_LAYOUTS=ssd-mirror2x2 .ci/lab.sh
#   .ci/lab.sh --images-only        # host packages and images, no tests (tests/run starts this
#                                   # beside the unit tiers)
set -euo pipefail
cd "$(dirname "$0")/.."
images_only=0
case "${1:-}" in
    --images-only) images_only=1 ;;
    "") ;;
    *) echo "usage: .ci/lab.sh [--images-only]" >&2; exit 2 ;;
esac

stage_start=$(date +%s)
all_start=$stage_start
stage() {  # stage NAME: closes the previous stage's clock
    local now; now=$(date +%s)
    echo "::lab:: $1 took $(( now - stage_start )) s"
    stage_start=$now
}

export DEBIAN_FRONTEND=noninteractive
need=()
for pair in qemu-system-x86_64:qemu-system-x86 qemu-img:qemu-utils debootstrap:debootstrap \
            mkfs.ext4:e2fsprogs ssh:openssh-client python3:python3; do
    command -v "${pair%%:*}" >/dev/null || need+=("${pair#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q --no-install-recommends "${need[@]}"
fi
stage "host packages"

lines=${ZFS_ADVISOR_LAB_ZFS:-2.1,2.3,debian13}
for line in ${lines//,/ }; do
    tests/lab/build-image --zfs "$line"
    stage "image $line"
done

if [ "$images_only" = 1 ]; then
    echo "::lab:: images ready in $(( $(date +%s) - all_start )) s"
    exit 0
fi

python3 -c 'import pytest' 2>/dev/null || python3 -m pip install -q "pytest>=8,<10" "pytest-asyncio>=0.23,<2"
export ZFS_ADVISOR_LAB=1
set +e
python3 -m pytest -m lab tests/lab -p no:cacheprovider -v --durations=40
rc=$?
set -e
stage "lab tests"
echo "::lab:: total $(( $(date +%s) - all_start )) s, pytest rc=$rc"
exit $rc
