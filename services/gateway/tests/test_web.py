"""The web UI (F45): the page at `/`, its assets under `/static/`, and the API still first."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from weir_gateway.app import create_app
from weir_gateway.settings import GatewaySettings
from weir_gateway.web import WEB_DIR, content_security_policy, mount_web

pytestmark = pytest.mark.unit

MODULES = sorted(WEB_DIR.glob("*.js"))


@pytest.fixture(scope="module")
def client() -> TestClient:
    """The real gateway app; without `with`, its lifespan (Kafka) never starts."""
    return TestClient(create_app(GatewaySettings()))


def test_the_page_is_served_at_the_root(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="/static/app.js">' in page.text
    assert "/static/vendor/purify.min.js" in page.text
    policy = page.headers["content-security-policy"]
    assert "script-src 'self';" in policy
    assert "connect-src 'self' ws://testserver wss://testserver;" in policy


def test_a_strange_host_adds_nothing_to_the_policy() -> None:
    assert "connect-src 'self';" in content_security_policy("x; script-src *")
    assert "connect-src 'self';" in content_security_policy(None)
    assert "ws://[::1]:8000 " in content_security_policy("[::1]:8000")


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/static/app.js", "text/javascript"),
        ("/static/chat.js", "text/javascript"),
        ("/static/app.css", "text/css"),
        ("/static/vendor/marked.esm.js", "text/javascript"),
        ("/static/vendor/purify.min.js", "text/javascript"),
        ("/static/vendor/marked.LICENSE", ""),
        ("/static/vendor/dompurify.LICENSE", ""),
    ],
)
def test_assets_are_served_with_their_types(client: TestClient, path: str, kind: str) -> None:
    found = client.get(path)
    assert found.status_code == 200
    assert found.headers["content-type"].startswith(kind)


def test_an_unknown_asset_is_404(client: TestClient) -> None:
    assert client.get("/static/x").status_code == 404
    assert client.get("/static/../app.py").status_code == 404


def test_api_routes_win_over_the_page(client: TestClient) -> None:
    assert client.get("/health").json() == {"status": "ok", "service": "gateway"}
    me = client.get("/api/knowledge/permissions").json()
    assert me == {"user_id": "local", "role": "admin", "can_manage_shared": True}
    assert client.get("/openapi.json").status_code == 200
    assert client.get("/api/nothing").status_code == 404


def test_create_app_routes_the_page() -> None:
    app = create_app(GatewaySettings())
    paths = {getattr(route, "path", None) for route in app.routes}
    assert {"/", "/static", "/ws/chat"} <= paths


def test_mount_web_on_a_bare_app() -> None:
    app = FastAPI()
    mount_web(app)
    bare = TestClient(app)
    assert bare.get("/").status_code == 200
    assert bare.get("/static/app.css").status_code == 200


def test_every_module_parses() -> None:
    """`node --check` on each ES module of the page (Node.js is part of the toolchain)."""
    node = shutil.which("node")
    assert node is not None, "node is required to check the web UI's scripts"
    assert MODULES, "no scripts found"
    for module in MODULES:
        checked = subprocess.run(
            [node, "--check", "--input-type=module"],
            input=module.read_text(),
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert checked.returncode == 0, f"{module.name}: {checked.stderr}"


def test_the_page_sets_no_raw_html() -> None:
    """Only markdown.js writes HTML, and only what DOMPurify returned."""
    for module in MODULES:
        text = module.read_text()
        if module.name == "markdown.js":
            assert "el.innerHTML = purify.sanitize(" in text
            assert text.count("innerHTML") == 1
        else:
            assert "innerHTML" not in text, module.name
            assert "insertAdjacentHTML" not in text, module.name


def test_every_element_a_module_asks_for_is_on_the_page() -> None:
    """`$("id")` throws when the page lacks the id: catch a renamed element before a user."""
    page = (WEB_DIR / "index.html").read_text()
    found_ids = re.findall(r'\bid="([\w-]+)"', page)
    ids = set(found_ids)
    assert len(ids) == len(found_ids), "an id is on the page twice"
    for module in MODULES:
        for found in re.findall(r'\$\("([\w-]+)"\)', module.read_text()):
            assert found in ids, f"{module.name} asks for #{found}"


def test_the_page_weighs_at_most_300_kb() -> None:
    """Everything a browser loads at `/`: the page, its styles and scripts (vendor too)."""
    loaded = [
        WEB_DIR / "index.html",
        *WEB_DIR.glob("*.css"),
        *MODULES,
        *WEB_DIR.glob("vendor/*.js"),
    ]
    assert sum(path.stat().st_size for path in loaded) <= 300 * 1024
