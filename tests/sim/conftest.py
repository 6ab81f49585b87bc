from __future__ import annotations

from typing import Any

import pytest

from knuma.sim.spec import Scenario, scenario_from_dict


def small_scenario(**overrides: Any) -> dict[str, Any]:
    """4 small nodes (2 zones x 8 CPUs), 48 Guaranteed pods in a burst: enough to overload stale NRT."""
    raw: dict[str, Any] = {
        "name": "tiny",
        "cluster": {"pools": [{"name": "n", "shape": "small", "count": 4}]},
        "workload": {
            "pods": 48,
            "arrival": {"process": "burst"},
            "templates": [
                {"name": "g2", "qos": "Guaranteed", "requests": {"cpu": "2", "memory": "2Gi"}, "weight": 2},
                {"name": "g3", "qos": "Guaranteed", "requests": {"cpu": "3", "memory": "2Gi"}, "weight": 1},
                {"name": "g5", "qos": "Guaranteed", "requests": {"cpu": "5", "memory": "2Gi"}, "weight": 1},
            ],
        },
        "nrtPeriod": 60,
    }
    raw.update(overrides)
    return raw


@pytest.fixture
def tiny() -> Scenario:
    return scenario_from_dict(small_scenario())
