"""Seeded sessions start ``random`` and ``numpy.random`` the same; every event names its
environment, so a replay says which step differs and what changed."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from safeexec._support.environment import distribution_changes, fingerprint
from safeexec.audit.blobs import BlobStore
from safeexec.audit.log import read_log
from safeexec.errors import ConfigurationError
from safeexec.harness import replay as replay_module
from safeexec.harness.replay import replay_log
from safeexec.policy.loader import load_policy
from safeexec.policy.schema import Policy
from safeexec.session.session import Session

DRAWS = (
    "```python\nimport random\nimport numpy as np\n"
    "print(random.random(), np.random.rand(), np.random.randint(0, 10**9))\n```\n"
)


def _draws(tmp_path: Path, name: str, seed: int | None, mode: str = "native") -> str:
    with Session(policy="default", mode=mode, state_dir=tmp_path / name, seed=seed) as session:
        outcome = session.run(DRAWS)
    assert outcome.result is not None, outcome.observation.text
    return outcome.observation.text


def test_the_same_seed_gives_the_same_random_and_numpy_draws(tmp_path: Path) -> None:
    first = _draws(tmp_path, "a", seed=11)
    assert first == _draws(tmp_path, "b", seed=11)
    assert first != _draws(tmp_path, "c", seed=12)


def test_every_event_records_the_seed_and_the_environment_fingerprint(tmp_path: Path) -> None:
    with Session(policy="default", mode="native", state_dir=tmp_path / "s", seed=3) as session:
        session.run("```python\nprint(1)\n```\n")
        session.run("```python\neval('1')\n```\n")  # denied steps too
    events = read_log(tmp_path / "s")
    assert [event.seed for event in events] == [3, 3]
    ref = events[0].environment_ref
    assert ref is not None and all(event.environment_ref == ref for event in events)
    document = json.loads(BlobStore(tmp_path / "s" / "blobs").get(ref))
    assert document["distributions"]["numpy"]
    assert set(document) == {"interpreter", "platform", "safeexec", "distributions"}


@pytest.mark.parametrize("seed", ["1", 1.5, True])
def test_a_seed_that_is_not_an_int_is_a_configuration_error(tmp_path: Path, seed: object) -> None:
    with pytest.raises(ConfigurationError, match="seed="):
        Session(policy="default", state_dir=tmp_path, seed=seed)  # type: ignore[arg-type]


def test_replay_of_a_seeded_session_reproduces_random_and_numpy(tmp_path: Path) -> None:
    with Session(policy="default", mode="native", state_dir=tmp_path / "s", seed=21) as session:
        session.run(DRAWS)
        session.run(DRAWS)  # the generators go on from where the first step left them
    report = replay_log(tmp_path / "s")
    assert [step.same for step in report.steps] == [True, True]
    assert report.environment_changes == ()


def test_after_a_package_version_changes_replay_names_it_and_the_differing_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Session(policy="default", mode="native", state_dir=tmp_path / "s", seed=21) as session:
        session.run("```python\nprint('stable')\n```\n")
        session.run(DRAWS)
    recorded = json.loads(fingerprint())
    recorded["distributions"]["numpy"] = "0.0.1"
    changed = json.dumps(recorded, sort_keys=True, separators=(",", ":")).encode()
    monkeypatch.setattr(replay_module, "fingerprint", lambda: changed)
    # The replay runs unseeded, like a session on another machine whose numpy draws otherwise.
    events = read_log(tmp_path / "s")
    monkeypatch.setattr(
        replay_module,
        "read_log",
        lambda state: tuple(dataclasses.replace(e, seed=None) for e in events),
    )
    report = replay_log(tmp_path / "s")
    current = json.loads(fingerprint())["distributions"]["numpy"]
    assert f"numpy {current} → 0.0.1" in report.environment_changes
    stable, draws = report.steps
    assert stable.same and not draws.same


def test_distribution_changes_names_added_removed_and_changed_packages() -> None:
    def doc(dists: dict[str, str]) -> bytes:
        return json.dumps(
            {"interpreter": "cpython-3.11.7", "platform": "Linux", "safeexec": "0.1.0",
             "distributions": dists}
        ).encode()  # fmt: skip

    changes = distribution_changes(
        doc({"numpy": "1.26.4", "gone": "1.0"}), doc({"numpy": "2.0.0", "new": "0.1"})
    )
    assert changes == ["gone 1.0 → (removed)", "new (not installed) → 0.1", "numpy 1.26.4 → 2.0.0"]
    assert distribution_changes(b"nope", doc({})) == [
        "the recorded environment is not a fingerprint"
    ]


RANDOM_ONLY = (
    "```python\nimport random\n"
    "print(random.random(), random.randint(0, 10**9), random.choice('abcdefgh'))\n```\n"
)


def _restricted_policy() -> Policy:
    base = load_policy("default")
    allowed = (*base.backends.allowed, "restricted-inprocess")
    return dataclasses.replace(base, backends=dataclasses.replace(base.backends, allowed=allowed))


def _random_draws(tmp_path: Path, name: str, mode: str, seed: int | None) -> tuple[str, str]:
    state = tmp_path / name
    with Session(policy=_restricted_policy(), mode=mode, state_dir=state, seed=seed) as session:
        first, second = session.run(RANDOM_ONLY), session.run(RANDOM_ONLY)
    texts = []
    for outcome in (first, second):
        assert outcome.result is not None and outcome.result.status.value == "ok", (
            outcome.observation.text
        )
        texts.append(outcome.observation.text.split("--- stdout ---\n", 1)[1])
    return texts[0], texts[1]


@pytest.mark.parametrize("mode", ["restricted", "restricted-inprocess"])
def test_a_seed_gives_restricted_code_the_same_draws_as_native_code(
    tmp_path: Path, mode: str
) -> None:
    native = _random_draws(tmp_path, "native", "native", seed=5)
    assert _random_draws(tmp_path, mode, mode, seed=5) == native
    assert native[0] != native[1]  # the generator goes on between steps, as in native mode
    assert _random_draws(tmp_path, f"{mode}-other", mode, seed=6) != native
