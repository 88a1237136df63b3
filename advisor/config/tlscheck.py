"""Whether a server context can complete a TLS handshake at all: an in-memory handshake with a
client that accepts whatever the server offers.

OpenSSL's security level can refuse versions a context was told to allow: Debian 12's OpenSSL 3
(security level 2, `/etc/ssl/openssl.cnf`) negotiates no TLS below 1.2, so `min_version: TLS10`
with `max_version: TLS11` starts a server that fails every handshake. Checked once at start-up
and on reload, it is refused with a reason instead (advisor/config/webconfig.py).
"""
from __future__ import annotations

import ssl
import warnings

# The client of the check takes any version, cipher and key size: a failure is the server's.
_ANY_CIPHER = "ALL:@SECLEVEL=0"
_HANDSHAKE_ROUNDS = 8  # TLS 1.2 needs 2 round trips, 1.3 one: a loop that does not finish is a failure


def set_versions(ctx: ssl.SSLContext, minimum: ssl.TLSVersion, maximum: ssl.TLSVersion) -> None:
    """ctx's version range. Python deprecates TLSv1 and TLSv1_1 (a DeprecationWarning on setting
    them); the toolkit's format still names them, and handshake_failure() says whether they work."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        ctx.minimum_version, ctx.maximum_version = minimum, maximum


def handshake_failure(server: ssl.SSLContext) -> str | None:
    """None when a client offering every version from server.minimum_version to
    server.maximum_version can complete a handshake with `server`; else OpenSSL's reason."""
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.check_hostname, client.verify_mode = False, ssl.CERT_NONE
    set_versions(client, server.minimum_version, server.maximum_version)
    client.set_ciphers(_ANY_CIPHER)
    pipes = [ssl.MemoryBIO() for _ in range(4)]  # each end reads one and writes one
    ends = (client.wrap_bio(pipes[0], pipes[1]), server.wrap_bio(pipes[2], pipes[3], server_side=True))
    done = [False, False]
    for _ in range(_HANDSHAKE_ROUNDS):
        for i, end in enumerate(ends):
            if done[i]:
                continue
            try:
                end.do_handshake()
                done[i] = True
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                pass
            except ssl.SSLError as exc:
                return exc.reason or str(exc)
        pipes[2].write(pipes[1].read())  # what the client sent, to the server
        pipes[0].write(pipes[3].read())  # and back
        if all(done):
            return None
    return "the handshake did not complete"
