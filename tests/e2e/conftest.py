"""pytest wiring for the differential end-to-end suite (see README.md)."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402


def pytest_addoption(parser):
    group = parser.getgroup("headroom-e2e")
    group.addoption(
        "--headroom-self",
        action="store_true",
        default=False,
        help="validate the suite: run the reference ninja in both roles (same as HEADROOM_E2E_SELF=1)",
    )
    group.addoption("--headroom-bin", default=None, help="binary under test (default: $HEADROOM_BIN or build/headroom)")
    group.addoption("--ninja-ref", default=None, help="reference ninja (default: $NINJA_REF or the pip ninja)")


@pytest.fixture(scope="session")
def e2e_config(pytestconfig) -> harness.Config:
    ref = pytestconfig.getoption("--ninja-ref") or harness.reference_binary()
    sut = pytestconfig.getoption("--headroom-bin") or harness.headroom_binary()
    self_mode = pytestconfig.getoption("--headroom-self") or harness.truthy(os.environ.get("HEADROOM_E2E_SELF"))
    return harness.Config(ref=ref, sut=sut, self_mode=self_mode)


@pytest.fixture
def differential(tmp_path, e2e_config):
    """differential(fn): run scenario fn with the reference and with headroom and compare observations."""

    def run(fn):
        return harness.run_scenario(fn, tmp_path, e2e_config)

    return run


# headroom alone in a workspace (tests of what ninja does not have: nothing to compare in self mode).
@pytest.fixture
def headroom(tmp_path, e2e_config):
    if e2e_config.self_mode:
        pytest.skip("headroom-only behaviour: nothing to check in self mode")
    if not os.access(e2e_config.sut, os.X_OK):
        pytest.fail("headroom binary %r does not exist (set HEADROOM_BIN)" % e2e_config.sut)
    ws = harness.Workspace(tmp_path / "sut" / "w", "sut", e2e_config, e2e_config.sut)
    yield ws
    ws.cleanup()


def pytest_report_header(config):
    ref = config.getoption("--ninja-ref") or harness.reference_binary()
    sut = config.getoption("--headroom-bin") or harness.headroom_binary()
    self_mode = config.getoption("--headroom-self") or harness.truthy(os.environ.get("HEADROOM_E2E_SELF"))
    lines = ["headroom e2e: reference=%s" % ref]
    lines.append("headroom e2e: under test=%s" % ("<reference (self mode)>" if self_mode else sut))
    return lines


@pytest.fixture(autouse=True)
def private_history_store(tmp_path_factory, monkeypatch):
    """Each test gets its own per-user history store (HEADROOM_STORE), so no test starts warm from the figures
    another test measured for an edge of the same name, and nothing is written to the user's ~/.cache."""
    monkeypatch.setenv("HEADROOM_STORE", str(tmp_path_factory.mktemp("headroom-store")))
