"""`parallel.env: gateway` against a real dask-gateway-server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import kit
from kit.cluster import get_session
from tests.servers import gateway_server
from tests.workloads import Affine, Paced, expected, lines, toy_config

PASSWORD = "class-of-2026"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with gateway_server(tmp_path_factory.mktemp("gateway"), PASSWORD) as address:
        yield address


def parallel(address: str, user: str = "alice", **options: Any) -> dict[str, Any]:
    auth = {"type": "basic", "username": user, "password": PASSWORD}
    return {
        "env": "gateway",
        "address": address,
        "n_workers": 2,
        "options": {"auth": auth, **options},
    }


def clusters(address: str, user: str = "alice") -> list[str]:
    from dask_gateway import BasicAuth, Gateway

    # Not closed by hand: dask-gateway closes it when it is collected (twice is an error).
    return [
        report.name for report in Gateway(address, auth=BasicAuth(user, PASSWORD)).list_clusters()
    ]


def test_a_run_on_a_gateway_cluster_gives_the_records_and_the_cluster_goes_with_the_session(
    gateway: str, tmp_path: Path
) -> None:
    section = parallel(gateway)
    with get_session(section) as session:
        result = Affine(Paced(toy_config(tmp_path, factor=2)), parallel=section).run(range(12))
        assert result.records == expected(range(12), offset=0)
        assert session.describe()["owns_cluster"]
        assert len(clusters(gateway)) == 1
    assert clusters(gateway) == []


def test_attendees_connect_to_the_class_cluster_by_name_and_share_its_env(
    gateway: str, tmp_path: Path
) -> None:
    # The teacher's cluster, under the account the class uses on the gateway.
    with get_session(parallel(gateway)) as teacher:
        name = teacher.cluster.name
        # Both workers in before the attendees come: "once per worker" counts them.
        teacher.client.wait_for_workers(2)
        section = parallel(gateway, cluster_name=name)
        for _ in range(2):  # two attendees with one config, one after the other
            with get_session(section) as session:
                assert not session.describe()["owns_cluster"]
                job = Affine(Paced(toy_config(tmp_path, factor=3)), parallel=section)
                assert job.run(range(8)).records == expected(range(8), factor=3, offset=0)
        assert len(lines(tmp_path, "setup.log")) == 2  # once per worker, not per attendee
        assert clusters(gateway) == [name]  # still running for the class
    assert clusters(gateway) == []


def test_a_cluster_name_the_gateway_does_not_have_is_a_config_error_naming_what_there_is(
    gateway: str,
) -> None:
    with pytest.raises(kit.ConfigError, match="has no cluster 'nope' of yours running"):
        get_session(parallel(gateway, cluster_name="nope"))
