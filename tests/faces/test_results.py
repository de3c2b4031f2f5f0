"""The face-neutral view of a step carries what the code raised as a value."""

from __future__ import annotations

from pathlib import Path

from safeexec.backends.fake import FakeBackend, FakeReply
from safeexec.faces.results import render
from safeexec.model.values import ExecError, ExecStatus, Limits
from safeexec.policy.schema import BackendsConfig, Policy, PolicyInfo
from safeexec.session.session import Session

POLICY = Policy(
    info=PolicyInfo(id="unit"),
    backends=BackendsConfig(allowed=("fake",), default="fake"),
    limits=Limits(cpu_seconds=2.0, wall_seconds=4.0),
    digest="9" * 64,
)
ERROR = ExecError(name="KeyError", value="'k'", traceback="Traceback ...\nKeyError: 'k'\n")


def test_a_rendered_error_step_carries_the_error_value(tmp_path: Path) -> None:
    replies = iter(
        [
            FakeReply(status=ExecStatus.ERROR, exit_code=1, stderr="KeyError: 'k'\n", error=ERROR),
            FakeReply(stdout="fine\n"),
        ]
    )
    backend = FakeBackend(lambda request: next(replies))
    with Session(policy=POLICY, backends={"fake": backend}, state_dir=tmp_path) as session:
        failed = render(session.run("```python\n{}['k']\n```\n"), session.blobs)
        fine = render(session.run("```python\nprint(1)\n```\n"), session.blobs)
    assert failed.is_error and failed.error == ERROR
    assert not fine.is_error and fine.error is None
