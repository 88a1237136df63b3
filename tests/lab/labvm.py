"""Boot a lab VM (Debian + OpenZFS under qemu TCG) with a named disk layout.

    with LabVM(zfs="2.3", layout="ssd-mirror2x2") as vm:
        rc, out, err = vm.exec(["zpool", "status", "-p"])
        vm.exec("fio ... &")                 # a string runs through the guest's shell

    with LabVM(zfs="2.3", layouts=["hdd-raidz1x4", "ssd-mirror2x2"]) as vm:
        vm.use_layout("hdd-raidz1x4")        # one boot, the disks of every layout
        vm.use_layout("ssd-mirror2x2")       # destroys the previous pool first

Each VM gets a private temp dir holding its root overlay (qcow2 over the
cached image), sparse raw data disks and the console log.  The working copy
of the repository is shared read-only at /project (9p); a writable host dir
may be shared at /out.  ssh goes through a port forward on 127.0.0.1 with the
image's own key.  qemu is always killed at exit, also on errors.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import labimage
import lablayouts as layouts_mod
import labqmp

BOOT_TIMEOUT = float(os.environ.get("ZFS_ADVISOR_LAB_BOOT_TIMEOUT", "420"))
# Units that only cost boot time here (ten seconds and more under emulation):
# no pool exists at boot (pools are created after it), so nothing is imported,
# and waiting for udev to settle the whole device tree guards nothing.  The
# zfs module is loaded by /etc/modules-load.d/zfs-lab.conf instead of
# zfs-load-module.service.  Layout setup runs `udevadm settle` itself.
BOOT_MASKED_UNITS = ("systemd-udev-settle.service", "zfs-load-module.service",
                     "zfs-import-cache.service", "zfs-import-scan.service")
KERNEL_CMDLINE = " ".join(["root=/dev/vda", "rw", "console=ttyS0", "quiet",
                           "systemd.show_status=false"]
                          + [f"systemd.mask={u}" for u in BOOT_MASKED_UNITS])
_LIVE: set[LabVM] = set()


@atexit.register
def _kill_leftovers() -> None:
    for vm in list(_LIVE):
        vm.kill()


class LabError(RuntimeError):
    pass


@dataclass(frozen=True)
class Result:
    rc: int
    stdout: str
    stderr: str

    def __iter__(self):  # rc, out, err = vm.exec(...)
        return iter((self.rc, self.stdout, self.stderr))

    def check(self, what: str = "") -> Result:
        if self.rc != 0:
            raise LabError(f"{what or 'command'} failed with rc={self.rc}\n"
                           f"stdout:\n{self.stdout}\nstderr:\n{self.stderr}")
        return self


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabVM:
    def __init__(self, zfs: str = "2.3", layout: str | None = None, *,
                 layouts: Sequence[str] = (),
                 create_pool: bool = True, out_dir: Path | str | None = None,
                 memory_mib: int = 4096, cpus: int = 2, project: Path | str | None = None,
                 verbose: bool = False):
        """`layout`: its disks are attached and its pool created at boot.  `layouts`: the
        disks of all of them are attached (serials prefixed L<i>), no pool is created;
        use_layout() creates one pool at a time: one boot for many layouts."""
        if layout and layouts:
            raise ValueError("give layout or layouts, not both")
        self.image = labimage.require_image(zfs)
        self.layout = layouts_mod.get(layout) if layout and layout != "none" else None
        self.attached = ([self.layout] if self.layout else
                         [layouts_mod.get(n).with_serial_prefix(f"L{i}") for i, n in enumerate(layouts)])
        self.create_pool = create_pool
        self.out_dir = Path(out_dir).resolve() if out_dir else None
        self.memory_mib = memory_mib
        self.cpus = cpus
        self.project = Path(project or labimage.REPO_ROOT).resolve()
        self.verbose = verbose
        self.tmp: Path | None = None
        self.proc: subprocess.Popen | None = None
        self._qemu_log = None
        self.port = 0
        self.timings: dict[str, float] = {}

    # -- lifecycle ---------------------------------------------------------

    def __enter__(self) -> LabVM:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _log(self, msg: str) -> None:
        if self.verbose:
            print(f"[labvm] {msg}", flush=True)

    def qemu_argv(self) -> list[str]:
        assert self.tmp is not None
        argv = [
            "qemu-system-x86_64", "-nodefaults", "-no-user-config", "-display", "none",
            "-accel", "tcg,thread=multi", "-cpu", "max", "-smp", str(self.cpus),
            "-m", str(self.memory_mib),
            "-kernel", str(self.image.kernel_file), "-initrd", str(self.image.initrd),
            "-append", KERNEL_CMDLINE,
            "-serial", f"file:{self.tmp / 'console.log'}",
            "-qmp", f"unix:{self.qmp_socket},server=on,wait=off",  # labqmp.py: throttles changed at run time
            "-drive", f"file={self.tmp / 'root.qcow2'},if=none,id=root,format=qcow2,cache=unsafe",
            "-device", "virtio-blk-pci,drive=root",
            "-netdev", f"user,id=n0,hostfwd=tcp:127.0.0.1:{self.port}-:22",
            "-device", "virtio-net-pci,netdev=n0",
            "-device", "virtio-rng-pci",
            "-device", "virtio-scsi-pci,id=scsi0",
            "-virtfs", f"local,path={self.project},mount_tag=project,security_model=none,readonly=on",
        ]
        if self.out_dir:
            argv += ["-virtfs", f"local,path={self.out_dir},mount_tag=out,security_model=none"]
        for i, disk in enumerate(self.disks()):
            argv += disk.qemu_args(self.tmp / f"{disk.serial}.raw", i)
        return argv

    def disks(self) -> list[layouts_mod.Disk]:
        return [d for layout in self.attached for d in layout.disks]

    @property
    def qmp_socket(self) -> Path:
        assert self.tmp is not None
        return self.tmp / "qmp.sock"

    def set_throttles(self, disks: Sequence[layouts_mod.Disk]) -> None:
        """Give the attached disks, in their order, the IOPS and MB/s throttles of `disks` (the same
        disks with other limits), while the VM runs; read back from qemu, LabError if not taken."""
        wanted = {f"d{i}": (d.iops or 0, d.bps or 0) for i, d in enumerate(disks)}
        with labqmp.QMP(self.qmp_socket) as qmp:
            for drive, (iops, bps) in wanted.items():
                qmp.set_throttle(drive, iops, bps)
            held = qmp.throttles()
        if any(held.get(drive) != limits for drive, limits in wanted.items()):
            raise LabError(f"qemu holds the throttles {held}, not {wanted}")

    def start(self) -> None:
        t0 = time.monotonic()
        self.tmp = Path(tempfile.mkdtemp(prefix="zfs-lab-"))
        subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2",
                        "-b", str(self.image.root), str(self.tmp / "root.qcow2")], check=True)
        for disk in self.disks():
            with open(self.tmp / f"{disk.serial}.raw", "wb") as f:
                f.truncate(disk.size)
        if self.out_dir:
            self.out_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        argv = self.qemu_argv()
        self._log(shlex.join(argv))
        self._qemu_log = open(self.tmp / "qemu.log", "wb")  # noqa: SIM115 - the VM's log, open while it runs, closed by kill()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._qemu_log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        _LIVE.add(self)
        self._wait_ssh(t0)
        self.timings["boot_to_ssh"] = time.monotonic() - t0
        self._log(f"ssh up after {self.timings['boot_to_ssh']:.1f} s")
        mounts = ["mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 project /project"]
        if self.out_dir:
            mounts.append("mount -t 9p -o trans=virtio,version=9p2000.L,rw,msize=262144 out /out")
        self.exec(" && ".join(mounts)).check("mounting 9p shares")
        if self.layout and self.create_pool:
            self._create(self.layout)

    def _create(self, layout: layouts_mod.Layout) -> None:
        t1 = time.monotonic()
        self.exec(layout.setup_script(), timeout=900).check(f"creating layout {layout.name}")
        self.timings[f"create_layout {layout.name}"] = time.monotonic() - t1
        self._log(f"layout {layout.name} created in {time.monotonic() - t1:.1f} s")

    def use_layout(self, name: str) -> layouts_mod.Layout:
        """Make `name` (one of `layouts`) the VM's pool: destroy the current pool, create this one."""
        if self.layout is not None and self.layout.name == name:
            return self.layout
        layout = next((l for l in self.attached if l.name == name), None)
        if layout is None:
            raise LabError(f"layout {name} is not attached to this VM: {[l.name for l in self.attached]}")
        # also after a failed creation, which may have left a pool behind
        self.exec("! zpool list -H tank >/dev/null 2>&1 || zpool destroy -f tank", timeout=300).check(
            f"destroying the pool of {self.layout.name if self.layout else 'a failed layout'}")
        self.layout = None
        self._create(layout)
        self.layout = layout
        return layout

    def _ssh_base(self) -> list[str]:
        assert self.tmp is not None
        return ["ssh", "-i", str(self.image.ssh_key), "-p", str(self.port),
                "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                "-o", "LogLevel=ERROR", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
                "-o", "ConnectTimeout=5", "-o", "ServerAliveInterval=10",
                "-o", "ControlMaster=auto", "-o", f"ControlPath={self.tmp / 'ssh.sock'}",
                "-o", "ControlPersist=300", "root@127.0.0.1"]

    def _wait_ssh(self, t0: float) -> None:
        while True:
            if self.proc.poll() is not None:
                raise LabError(f"qemu exited with {self.proc.returncode}\n{self.diagnostics()}")
            if time.monotonic() - t0 > BOOT_TIMEOUT:
                raise LabError(f"no ssh after {BOOT_TIMEOUT:.0f} s\n{self.diagnostics()}")
            try:
                r = subprocess.run(self._ssh_base() + ["true"], capture_output=True, timeout=15,
                                   stdin=subprocess.DEVNULL)
                if r.returncode == 0:
                    return
            except subprocess.TimeoutExpired:
                pass
            time.sleep(1)

    def diagnostics(self) -> str:
        if not self.tmp:
            return ""
        parts = []
        for name in ("qemu.log", "console.log"):
            p = self.tmp / name
            if p.exists():
                text = p.read_text(errors="replace").splitlines()[-40:]
                parts.append(f"--- {name} (tail) ---\n" + "\n".join(text))
        return "\n".join(parts)

    def stop(self, timeout: float = 30) -> None:
        """Power off cleanly (poweroff, then wait), kill if needed, remove temp files."""
        if self.proc and self.proc.poll() is None:
            t0 = time.monotonic()
            try:
                subprocess.run(self._ssh_base() + ["systemctl poweroff --no-block"],
                               capture_output=True, timeout=15, stdin=subprocess.DEVNULL)
                self.proc.wait(timeout=timeout)
            except (subprocess.TimeoutExpired, OSError):
                pass
            self.timings["shutdown"] = time.monotonic() - t0
        self.kill()

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):  # the VM's group is gone already
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if self._qemu_log:
            self._qemu_log.close()
            self._qemu_log = None
        if self.tmp and self.tmp.exists():
            subprocess.run(self._ssh_base()[:-1] + ["-O", "exit", "root@127.0.0.1"],
                           capture_output=True, stdin=subprocess.DEVNULL)
            if os.environ.get("ZFS_ADVISOR_LAB_KEEP"):
                print(f"[labvm] kept {self.tmp}")
            else:
                shutil.rmtree(self.tmp, ignore_errors=True)
        self.tmp = None
        _LIVE.discard(self)

    # -- use ---------------------------------------------------------------

    def exec(self, cmd: str | Sequence[str], *, timeout: float | None = 600,
             input: str | None = None, check: bool = False) -> Result:
        """Run a command in the guest as root; a string goes through the shell.
        Returns Result(rc, stdout, stderr) (it unpacks as a tuple)."""
        script = cmd if isinstance(cmd, str) else shlex.join(cmd)
        # The script travels on stdin unless stdin is needed for input: no quoting limits.
        if input is None:
            argv, stdin = self._ssh_base() + ["bash -s"], script
        else:
            argv, stdin = self._ssh_base() + [script], input
        r = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout,
                           errors="replace")
        result = Result(r.returncode, r.stdout, r.stderr)
        return result.check(script[:200]) if check else result

    def stream(self, cmd: str | Sequence[str], *, tty: bool = False) -> int:
        """Run a command with the guest's stdout/stderr passed straight through."""
        script = cmd if isinstance(cmd, str) else shlex.join(cmd)
        argv = self._ssh_base()
        if tty:
            argv = argv[:-1] + ["-t", argv[-1]]
        return subprocess.run(argv + ([script] if script else [])).returncode

    def copy_out(self, remote: str, local: Path | str) -> Path:
        """Copy a guest file or directory tree into the local directory."""
        local = Path(local)
        local.mkdir(parents=True, exist_ok=True)
        parent, name = os.path.split(remote.rstrip("/"))
        ssh = subprocess.Popen(self._ssh_base() + [shlex.join(["tar", "-C", parent or "/", "-cf", "-", name])],
                               stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        tar = subprocess.run(["tar", "-C", str(local), "-xf", "-"], stdin=ssh.stdout)
        ssh.stdout.close()
        if ssh.wait() != 0 or tar.returncode != 0:
            raise LabError(f"copying {remote} out of the VM failed")
        return local / name

    def copy_in(self, local: Path | str, remote_dir: str) -> str:
        """Copy a local file or directory tree into a guest directory (created); its guest path."""
        local = Path(local)
        tar = subprocess.Popen(["tar", "-C", str(local.parent), "-cf", "-", local.name], stdout=subprocess.PIPE)
        ssh = subprocess.run(self._ssh_base() + [f"mkdir -p {shlex.quote(remote_dir)} && "
                                                 f"tar -C {shlex.quote(remote_dir)} -xf -"], stdin=tar.stdout)
        tar.stdout.close()
        if tar.wait() != 0 or ssh.returncode != 0:
            raise LabError(f"copying {local} into the VM failed")
        return f"{remote_dir.rstrip('/')}/{local.name}"

    def write_file(self, remote: str, text: str, mode: str = "0644") -> None:
        self.exec(f"install -D -m {mode} /dev/stdin {shlex.quote(remote)}", input=text, check=True)
