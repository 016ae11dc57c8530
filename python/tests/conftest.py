"""Fixtures: a real aobj-server (memory store) on 127.0.0.1, started from the build tree."""

import os
import pathlib
import signal
import subprocess
import time

import pytest

BUILD = pathlib.Path(os.environ.get("AOBJ_BUILD_DIR",
                                    pathlib.Path(__file__).resolve().parents[2] / "build"))
KEY, SECRET = "AKPYTEST", "python-test-secret"


class Server:
    """One aobj-server process; `endpoint` is its control channel."""

    def __init__(self, tmp: pathlib.Path, *extra: str) -> None:
        self.dir = tmp
        self.creds = tmp / "creds"
        self.creds.write_text(f"{KEY} {SECRET}\nAKOTHER other-secret\n")
        self.creds.chmod(0o600)
        port_file = tmp / "port"
        env = dict(os.environ, UCX_NET_DEVICES="lo", UCX_WARN_UNUSED_ENV_VARS="n")
        self.log = open(tmp / "server.log", "wb")
        self.proc = subprocess.Popen(
            [str(BUILD / "aobj-server"), "--store", "memory", "--listen", "127.0.0.1:0",
             "--port-file", str(port_file), "--credentials", str(self.creds), "--plaintext",
             "--create-bucket", "demo", "--min-part-size", "65536", "--quiet", *extra],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 20
        while not (port_file.exists() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"aobj-server did not start: {(tmp / 'server.log').read_text()}")
            time.sleep(0.02)
        self.endpoint = f"127.0.0.1:{port_file.read_text().strip()}"

    def client_kwargs(self, **kw) -> dict:
        return dict(endpoint=self.endpoint, access_key_id=KEY, secret_access_key=SECRET, **kw)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("server"))
    yield s
    s.stop()


@pytest.fixture
def own_server(tmp_path):
    """A server for one test alone (to stop, kill or freeze)."""
    s = Server(tmp_path)
    yield s
    s.stop()


@pytest.fixture
def client(server):
    import aobj
    with aobj.Client(**server.client_kwargs()) as c:
        yield c
