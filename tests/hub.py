"""A real JupyterHub on 127.0.0.1 for a class: dummy logins, local single-user servers.

The hub runs ``configurable-http-proxy`` from the npm registry (``make test``
installs it into the venv's ``node/``), the dummy authenticator (one password
for the class) and the simple local process spawner: every attendee's server
is a process of this user, with a home folder of its own under the test's
tmp folder. The teacher's service token reaches every attendee's server's
REST API, as the tests' :class:`tests.jupyter.Jupyter` does one server's.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.jupyter import ROOT, Jupyter, config_dir
from tests.reaper import MARK
from tests.servers import free_port

VENV_BIN = Path(sys.executable).parent
#: Where ``make test`` puts the proxy (npm install --prefix .venv/node).
PROXY = Path(sys.prefix) / "node" / "node_modules" / ".bin" / "configurable-http-proxy"
PASSWORD = "class-of-2026"


def hub_problem() -> str | None:
    """Why no hub can start here, or None."""
    if shutil.which("jupyterhub", path=str(VENV_BIN)) is None:
        return "jupyterhub is not installed (pip install -e '.[dev]')"
    if not PROXY.is_file():
        return f"configurable-http-proxy is not installed at {PROXY} (make test installs it)"
    return None


@dataclass
class Attendee(Jupyter):
    """One user's single-user server on the hub, reached as that user's browser does."""

    hub: str = ""
    user: str = ""

    def url(self, name: str) -> str:
        # The browser is logged in (a cookie): no token in the page's address.
        workspace = f"t-{uuid.uuid4().hex[:8]}"
        return f"{self.base}/lab/workspaces/{workspace}/tree/{name}?reset"

    def api(self, path: str, body: dict[str, Any] | None = None, method: str = "GET") -> Any:
        request = urllib.request.Request(
            f"{self.base}/api/{path}",
            data=None if body is None else json.dumps(body).encode(),
            method=method,
            headers={"Content-Type": "application/json", "Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            text = answer.read()
        return json.loads(text) if text else None

    def log_in(self, page: Any) -> None:
        """Log in on the hub's page as a person does; wait for the server to be up."""
        page.goto(f"{self.hub}/hub/login")
        page.locator("#username_input").fill(self.user)
        page.locator("#password_input").fill(PASSWORD)
        page.locator("#login_submit").click()
        page.wait_for_url(f"{self.base}/**", timeout=180_000)


@dataclass
class Hub:
    """A running hub: its address, the teacher's token, and each attendee's home."""

    url: str
    token: str
    homes: Path

    def attendee(self, user: str) -> Attendee:
        return Attendee(
            "lab", f"{self.url}/user/{user}", self.token, self.homes / user, hub=self.url, user=user
        )


HUB_CONFIG = """
c = get_config()  # noqa: F821
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_port}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.ConfigurableHTTPProxy.pid_file = {pid_file!r}
c.JupyterHub.db_url = "sqlite:///{db}"
c.JupyterHub.cookie_secret_file = {cookie!r}
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = {password!r}
c.Authenticator.allowed_users = set({users!r})
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {homes!r} + "/{{username}}"
c.Spawner.cmd = [{singleuser!r}]
c.Spawner.args = {args!r}
c.Spawner.default_url = "/lab"
c.Spawner.environment = {environment!r}
# Each attendee's JupyterLab workspaces in their own home, as on a real hub. In the one
# config folder they share, a server listing the workspaces read another's half-written
# file and answered 500 (a PUT writes in place; seen once in a few runs under load).
c.Spawner.environment["JUPYTERLAB_WORKSPACES_DIR"] = (
    lambda spawner: {homes!r} + "/" + spawner.user.name + "/.jupyter-workspaces"
)
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 180
c.JupyterHub.services = [{{"name": "teacher", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [
    {{"name": "teacher", "scopes": ["access:servers", "read:users"], "services": ["teacher"]}}
]
"""


@contextmanager
def jupyterhub(
    tmp: Path, users: list[str], environment: Mapping[str, str], notebooks: list[Path]
) -> Iterator[Hub]:
    """Start a hub for ``users``; each home holds a copy of ``notebooks``."""
    problem = hub_problem()
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the JupyterHub test must run in CI: {problem}")
        pytest.skip(problem)
    folder = tmp / "hub"
    homes = folder / "home"
    for user in users:
        (homes / user).mkdir(parents=True)
        for path in notebooks:
            shutil.copy(path, homes / user / path.name)
    config = config_dir(folder / "jupyter-config")
    token, port = secrets.token_hex(16), free_port()
    environment = {
        "JUPYTER_CONFIG_DIR": str(config),
        # The test workloads live in this repository, as in tests.jupyter's servers.
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
        # The hub passes attendees' servers no variable it is not given: the suite's
        # mark goes with them, so that they end with it (tests/reaper.py).
        **{key: os.environ[key] for key in (MARK,) if key in os.environ},
        **environment,
    }
    (folder / "jupyterhub_config.py").write_text(
        HUB_CONFIG.format(
            port=port,
            hub_port=free_port(),
            proxy_port=free_port(),
            proxy=str(PROXY),
            pid_file=str(folder / "proxy.pid"),
            db=folder / "hub.sqlite",
            cookie=str(folder / "cookie_secret"),
            password=PASSWORD,
            users=sorted(users),
            homes=str(homes),
            singleuser=str(VENV_BIN / "jupyterhub-singleuser"),
            args=["--allow-root"] if os.getuid() == 0 else [],
            environment=environment,
            token=token,
        )
    )
    log_path = folder / "hub.log"
    url = f"http://127.0.0.1:{port}"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [str(VENV_BIN / "jupyterhub"), "-f", str(folder / "jupyterhub_config.py")],
            cwd=folder,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, PATH=environment["PATH"]),
        )
        try:
            wait_for_hub(url, proc, log_path)
            yield Hub(url, token, homes)
        finally:
            proc.terminate()  # stops the single-user servers (cleanup_servers) and the proxy
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()


def wait_for_hub(url: str, proc: subprocess.Popen[Any], log: Path) -> None:
    """Wait (up to 2 minutes) until the hub answers through its proxy."""
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"{url}/hub/api", timeout=2).close()
            return
        except (OSError, urllib.error.URLError):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"JupyterHub did not start:\n{log.read_text()[-3000:]}"
                ) from None
            time.sleep(0.3)
