"""The policy loader: closed schema, precise errors, packs, layering, digests."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from safeexec.errors import PolicyError
from safeexec.model.values import Enforcement, Severity
from safeexec.policy import packs
from safeexec.policy.loader import load_policy, parse_policy_text
from safeexec.policy.packs import pack_files, packs_root, shipped_packs
from safeexec.policy.schema import MatchKind

RULE = """
[[rule]]
id = "SX301"
name = "code-execution-builtin"
severity = "high"
enforcement = "deny"
message = "`{name}` runs code"
rationale = "eval runs unchecked code"
match = { kind = "call", names = ["eval"] }
"""


def _error(text: str) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        parse_policy_text(textwrap.dedent(text), file="p.toml")
    return info.value


def test_shipped_packs_load_by_name() -> None:
    assert set(shipped_packs()) >= {"default", "strict", "data-analysis"}
    for name in shipped_packs():
        policy = load_policy(name)
        assert policy.info.id == name
        assert len(policy.digest) == 64
        assert policy.rules


def test_packs_root_is_the_repository_policies_directory_in_the_editable_install() -> None:
    assert (packs_root() / "default").is_dir()
    assert [p.name for p in pack_files(packs_root() / "default")] == sorted(
        p.name for p in (packs_root() / "default").glob("*.toml") if ".test." not in p.name
    )


def test_unknown_key_names_file_line_pointer_and_a_did_you_mean_hint() -> None:
    error = _error(
        """
        [limits]
        cpu_second = 3
        """
    )
    assert error.file == "p.toml"
    assert error.line == 3
    assert error.pointer == "/limits/cpu_second"
    assert error.hint is not None and "cpu_seconds" in error.hint
    assert "p.toml:3" in str(error)


def test_unknown_top_level_section_is_refused() -> None:
    error = _error("[limit]\ncpu_seconds = 1\n")
    assert error.pointer == "/limit"
    assert error.hint is not None and "limits" in error.hint


def test_wrong_type_is_refused_with_its_pointer() -> None:
    error = _error('[limits]\nmemory_bytes = "1 GiB"\n')
    assert error.pointer == "/limits/memory_bytes"
    assert error.line == 2
    assert "integer" in error.message


def test_unknown_rule_key_points_into_the_rule_array() -> None:
    error = _error(RULE + 'sevrity = "high"\n')
    assert error.pointer == "/rule/0/sevrity"
    assert error.hint is not None and "severity" in error.hint


def test_message_placeholder_the_matcher_cannot_fill_is_refused() -> None:
    error = _error(RULE.replace("`{name}` runs code", "`{module}` runs code"))
    assert error.pointer == "/rule/0/message"
    assert "{module}" in error.message
    assert error.hint is not None and "{name}" in error.hint


def test_message_placeholder_with_attribute_walk_is_refused() -> None:
    error = _error(RULE.replace("`{name}` runs code", "`{name.__class__}`"))
    assert error.pointer == "/rule/0/message"


def test_high_severity_rule_without_rationale_is_refused() -> None:
    error = _error(RULE.replace('rationale = "eval runs unchecked code"\n', ""))
    assert error.pointer == "/rule/0/rationale"
    assert "rationale" in error.message


def test_low_severity_rule_may_omit_rationale() -> None:
    policy = parse_policy_text(
        RULE.replace('severity = "high"', 'severity = "low"').replace(
            'rationale = "eval runs unchecked code"\n', ""
        )
    )
    assert policy.rules[0].severity is Severity.LOW


def test_checks_are_named_by_registered_name_never_by_import_path() -> None:
    text = RULE.replace(
        'match = { kind = "call", names = ["eval"] }', 'check = "mypkg.checks:evil"'
    )
    error = _error(text.replace("`{name}` runs code", "bad"))
    assert error.pointer == "/rule/0/check"
    assert "import paths" in (error.hint or "")


def test_rule_needs_exactly_one_of_match_and_check() -> None:
    error = _error(RULE.replace("rationale =", 'check = "dynamic-import"\nrationale ='))
    assert "exactly one" in error.message


def test_rule_ids_and_names_have_a_shape() -> None:
    assert _error(RULE.replace('id = "SX301"', 'id = "rule-1"')).pointer == "/rule/0/id"
    assert _error(RULE.replace('"code-execution-builtin"', '"CodeExec"')).pointer == "/rule/0/name"


def test_engine_rule_ids_are_reserved() -> None:
    for reserved in ("SX900", "SX510", "SX520", "SX001", "SX704"):
        error = _error(RULE.replace('id = "SX301"', f'id = "{reserved}"'))
        assert "reserved" in error.message


def test_match_fields_are_closed_per_kind() -> None:
    error = _error(RULE.replace('names = ["eval"]', 'names = ["eval"], metric = "cpu"'))
    assert error.pointer == "/rule/0/match/metric"
    error = _error(RULE.replace('kind = "call"', 'kind = "calls"'))
    assert error.pointer == "/rule/0/match/kind"
    assert error.hint is not None and "call" in error.hint


def test_node_match_names_must_be_syntax_node_types() -> None:
    text = RULE.replace('kind = "call", names = ["eval"]', 'kind = "node", names = ["Globl"]')
    error = _error(text.replace("`{name}` runs code", "`{node}`"))
    assert error.pointer == "/rule/0/match/names/0"


def test_estimate_match_needs_a_metric_and_one_of_above_or_bound() -> None:
    base = RULE.replace("`{name}` runs code", "{metric} {value}")
    error = _error(
        base.replace('kind = "call", names = ["eval"]', 'kind = "estimate", metric = "cpu"')
    )
    assert "exactly one of 'above' or 'bound'" in error.message
    error = _error(
        base.replace(
            'kind = "call", names = ["eval"]', 'kind = "estimate", metric = "gpu", above = 1'
        )
    )
    assert error.pointer == "/rule/0/match/metric"
    policy = parse_policy_text(
        base.replace(
            'kind = "call", names = ["eval"]', 'kind = "estimate", metric = "cpu", above = 5'
        )
    )
    match = policy.rules[0].match
    assert match is not None and match.kind is MatchKind.ESTIMATE and match.above == 5.0


def test_toml_syntax_errors_carry_the_line() -> None:
    error = _error("[limits]\ncpu_seconds = = 3\n")
    assert error.line == 2
    assert "TOML" in error.message


def test_backend_default_must_be_allowed() -> None:
    error = _error('[backends]\nallowed = ["restricted"]\ndefault = "native"\n')
    assert error.pointer == "/backends/default"


def test_unknown_backend_and_layer_names_are_refused() -> None:
    assert _error('[backends]\nallowed = ["docker"]\n').pointer == "/backends/allowed/0"
    # The dsl mode has a backend now: a pack may name it (and make it the default).
    dsl = parse_policy_text('[backends]\nallowed = ["dsl"]\ndefault = "dsl"\n')
    assert dsl.backends.allowed == ("dsl",) and dsl.backends.default == "dsl"
    assert _error('[backends]\nrequire = ["selinux"]\n').pointer == "/backends/require/0"


def test_capabilities_load_into_configs() -> None:
    policy = parse_policy_text(
        '[capabilities.search]\nmax_calls = 3\nscopes = ["web"]\n'
        "[capabilities.shell]\ngrantable = false\n"
    )
    by_tool = {c.tool: c for c in policy.capabilities}
    assert by_tool["search"].max_calls == 3 and by_tool["search"].scopes == ("web",)
    assert by_tool["shell"].grantable is False
    assert (
        _error("[capabilities.search]\nmax_call = 3\n").pointer == "/capabilities/search/max_call"
    )


def _pack(directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return directory


def test_pack_files_merge_in_name_order_and_rules_merge_by_id(tmp_path: Path) -> None:
    pack = _pack(
        tmp_path / "team",
        {
            "20-late.toml": "[limits]\ncpu_seconds = 2\n" + RULE.replace('"deny"', '"warn"'),
            "10-early.toml": "[limits]\ncpu_seconds = 1\nwall_seconds = 9\n" + RULE,
            "cases.test.toml": "# not a policy file\n",
        },
    )
    policy = load_policy(pack)
    assert policy.info.id == "team"
    assert policy.limits.cpu_seconds == 2.0 and policy.limits.wall_seconds == 9.0
    assert [r.enforcement for r in policy.rules] == [Enforcement.WARN]
    assert [Path(s).name for s in policy.sources] == ["10-early.toml", "20-late.toml"]


def test_extends_layers_over_a_shipped_pack_and_extend_allow_appends(tmp_path: Path) -> None:
    pack = _pack(
        tmp_path / "mine",
        {
            "policy.toml": 'extends = "default"\n[policy]\nid = "mine"\n'
            '[imports]\nextend_allow = ["numpy.*"]\n'
        },
    )
    policy = load_policy(pack)
    base = load_policy("default")
    assert policy.info.id == "mine"
    assert policy.imports.allow == (*base.imports.allow, "numpy.*")
    assert {r.id for r in policy.rules} == {r.id for r in base.rules}
    assert policy.digest != base.digest


def test_errors_in_an_extended_pack_name_the_file(tmp_path: Path) -> None:
    _pack(tmp_path / "base", {"a.toml": "[limits]\nbogus = 1\n"})
    pack = _pack(tmp_path / "top", {"a.toml": 'extends = "../base"\n'})
    with pytest.raises(PolicyError) as info:
        load_policy(pack)
    assert info.value.file is not None and info.value.file.endswith("base/a.toml")
    assert info.value.line == 2


def test_extends_cycles_are_refused(tmp_path: Path) -> None:
    _pack(tmp_path / "a", {"p.toml": 'extends = "../b"\n'})
    _pack(tmp_path / "b", {"p.toml": 'extends = "../a"\n'})
    with pytest.raises(PolicyError, match="cycle"):
        load_policy(tmp_path / "a")


def test_unknown_pack_name_gets_a_hint() -> None:
    with pytest.raises(PolicyError) as info:
        load_policy("defualt")
    assert info.value.hint is not None and "default" in info.value.hint


def test_a_single_toml_file_is_a_policy(tmp_path: Path) -> None:
    path = tmp_path / "one.toml"
    path.write_text(RULE, encoding="utf-8")
    policy = load_policy(path)
    assert policy.info.id == "one" and [r.id for r in policy.rules] == ["SX301"]


def test_empty_directory_is_not_a_pack(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match=r"no \*\.toml"):
        load_policy(tmp_path)


def test_digest_depends_on_content_not_on_location(tmp_path: Path) -> None:
    one = _pack(tmp_path / "one", {"p.toml": '[policy]\nid = "x"\n' + RULE})
    two = _pack(tmp_path / "elsewhere" / "two", {"q.toml": '[policy]\nid = "x"\n' + RULE})
    assert load_policy(one).digest == load_policy(two).digest
    changed = _pack(
        tmp_path / "three", {"p.toml": '[policy]\nid = "x"\n' + RULE.replace("high", "critical")}
    )
    assert load_policy(changed).digest != load_policy(one).digest


def test_loading_twice_gives_equal_policies() -> None:
    assert load_policy("strict") == load_policy("strict")


def test_a_bare_name_is_always_a_shipped_pack_never_a_local_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _pack(tmp_path / "default", {"p.toml": '[policy]\nid = "impostor"\n'})
    monkeypatch.chdir(tmp_path)
    assert load_policy("default").info.id == "default"
    assert load_policy("./default").info.id == "impostor"


def test_a_rule_reusing_an_id_under_another_name_is_refused(tmp_path: Path) -> None:
    other = RULE.replace('"code-execution-builtin"', '"something-else"')
    pack = _pack(tmp_path / "p", {"a.toml": RULE, "b.toml": other})
    with pytest.raises(PolicyError) as info:
        load_policy(pack)
    assert info.value.pointer == "/rule/0/id" and "already names" in info.value.message
    assert info.value.file is not None and info.value.file.endswith("b.toml")


def test_the_rung_a_pack_requires_is_one_of_the_ladders() -> None:
    assert load_policy("strict").backends.rung == "full"
    assert load_policy("default").backends.rung == "unprivileged"
    error = _error(
        """
        [backends]
        rung = "ful"
        """
    )
    assert "did you mean 'full'" in str(error)


def test_packs_root_is_the_checkouts_policies_when_nothing_maps_the_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The package imported from a checkout (its root first on sys.path): no install maps
    # ``safeexec.policies`` to the top-level directory.
    monkeypatch.setattr(packs.importlib.util, "find_spec", lambda name: None)
    root = Path(__file__).resolve().parents[2]
    assert packs_root() == root / "policies"
