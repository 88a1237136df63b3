"""Throwaway certificates for the TLS tests, made with the openssl command line at test time.

    certs = make_certs(tmp_path)   # certs.ca, certs.server_cert, certs.server_key,
                                   # certs.client_ca, certs.client_cert, certs.client_key

The server certificate is for 127.0.0.1 and localhost (subjectAltName), signed by a CA of
its own; the client certificate is signed by a second CA, so a test can tell "verified by the
client CA" from "any certificate". Nothing is reused between runs.
"""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    client_ca: Path
    client_cert: Path
    client_key: Path
    stranger_cert: Path  # a client certificate the client CA did not sign
    stranger_key: Path


def _openssl(*args: str | Path) -> None:
    binary = shutil.which("openssl")
    if binary is None:
        raise FileNotFoundError("openssl not found: install Debian's `openssl` package")
    subprocess.run([binary, *map(str, args)], check=True, capture_output=True, timeout=60)


def _ca(directory: Path, name: str) -> tuple[Path, Path]:
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", key, "-out", cert, "-days", "2", "-subj", f"/CN=zfs-advisor test {name}",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    return cert, key


def _leaf(directory: Path, name: str, ca: tuple[Path, Path], extensions: str) -> tuple[Path, Path]:
    cert, key, csr, ext = (directory / f"{name}.{s}" for s in ("crt", "key", "csr", "ext"))
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", key, "-out", csr, "-subj", f"/CN={name}")
    ext.write_text(extensions)
    _openssl("x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial", "-out", cert,
             "-days", "2", "-extfile", ext)
    return cert, key


def make_certs(directory: Path) -> Certs:
    directory.mkdir(parents=True, exist_ok=True)
    ca = _ca(directory, "server-ca")
    client_ca = _ca(directory, "client-ca")
    stranger_ca = _ca(directory, "stranger-ca")
    server = _leaf(directory, "server", ca, "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                   "extendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n")
    client_ext = "extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n"
    client = _leaf(directory, "client", client_ca, client_ext)
    stranger = _leaf(directory, "stranger", stranger_ca, client_ext)
    return Certs(ca=ca[0], server_cert=server[0], server_key=server[1], client_ca=client_ca[0],
                 client_cert=client[0], client_key=client[1], stranger_cert=stranger[0], stranger_key=stranger[1])


def bcrypt_hash(password: str, rounds: int = 4) -> str:
    """A bcrypt hash as htpasswd -B writes it ($2y$); cost 4, the minimum, keeps tests fast."""
    import bcrypt

    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds)).decode().replace("$2b$", "$2y$", 1)
