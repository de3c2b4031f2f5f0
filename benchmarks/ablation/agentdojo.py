"""AgentDojo's suites as a defence evaluation of safeexec's capability layer.

AgentDojo (``pip install -e .[agentdojo]``) ships four suites (workspace, travel, banking, slack)
of user tasks, injection tasks (an attacker's goal) and checkers that judge the environment
afterwards: ``utility`` (did the user's task get done) and ``security`` (did the attacker's).
This module turns each suite into a harness :class:`Suite` — every AgentDojo function a
:class:`ToolSpec` over one copy of the environment — and measures what AgentDojo defines:

- **utility**: the user tasks done with no attack planted;
- **utility under attack** and **targeted attack success** over every (user task, injection
  task) pair, the attack text coming from AgentDojo's own attack registry (``--attack``,
  default ``important_instructions``) and planted where AgentDojo plants it.

The agents are scripted stand-ins, so the numbers measure the defence, never a model: the
``oracle`` carries out the user task (AgentDojo's ground-truth calls); ``hijacked`` does the
same but, once it reads the planted text, carries out the attacker's goal first (the injection
task's ground-truth calls: a model that obeys every injection); ``dataflow`` (code only) writes
one program that reads the user task's data and passes attacker-chosen values found *in that
data* into the attacker's side-effect calls, all within the one action, so no value the static
gate sees names the attacker.

Each runs with ``broad`` grants (every call approved: the CodeAct default) and ``scoped`` ones,
derived by :func:`prompt_effects` from the user's prompt alone — which side-effect tools it asks
for, and which parties (recipients, channels, urls, ...) it names — never from the ground truth.
The capability layer checks every call's real arguments when it runs, inside a program too.
AgentDojo's functions carry no effect declarations; :data:`WRITE_PREFIXES` says which ones
change the environment and :data:`NETWORK_FUNCTIONS` which reach a server their arguments name.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import re
import statistics
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from safeexec.capabilities.gateway import Effect, ToolSpec
from safeexec.harness import RunOptions, Suite, Task
from safeexec.harness.agents import call_reply
from safeexec.harness.formats import SUBMIT
from safeexec.harness.loop import run_task
from safeexec.harness.models import Message, Reply, ScriptedModel, TurnKey
from safeexec.harness.suite import AuthorizedEffect
from safeexec.model.codec import JSONValue

__all__ = [
    "AGENTS",
    "DESTINATIONS",
    "GATEWAY",
    "NETWORK_FUNCTIONS",
    "VERSION",
    "WRITE_PREFIXES",
    "DojoRun",
    "dojo_runs",
    "main",
    "pairs_defined",
    "prompt_effects",
    "run_dojo",
    "summarize",
]

VERSION = "v1.2.1"
ATTACK = "important_instructions"
# The model the attack text addresses by name (AgentDojo's attacks name their target model).
TARGET = "gpt-4o-2024-05-13"
AGENTS = ("hijacked", "dataflow")
# json/text actions are tool calls through the gateway; the session's own code steps, if any,
# run restricted (as in the ablation).
GATEWAY = "gateway"
# AgentDojo's functions that change the environment, by name (it declares no effects itself).
WRITE_PREFIXES = (
    "add_", "append_", "cancel_", "create_", "delete_", "invite_", "post_", "remove_",
    "reschedule_", "reserve_", "schedule_", "send_", "share_", "update_",
)  # fmt: skip
# One run's outcome, or one line of the table: a JSON object.
Row = dict[str, Any]
# ... and the ones that reach out to a server the arguments name (an exfiltration channel).
NETWORK_FUNCTIONS = frozenset({"get_webpage"})
# Parameters naming who or where a side effect goes: scoped to the parties the prompt names.
DESTINATIONS = frozenset(
    {"recipient", "recipients", "cc", "bcc", "participants", "email", "user", "user_email",
     "channel", "url"}
)  # fmt: skip
_ANY_JSON = ["array", "boolean", "integer", "null", "number", "object", "string"]


def _effects(name: str) -> tuple[Effect, ...]:
    if name in NETWORK_FUNCTIONS:
        return (Effect.NETWORK,)
    return (Effect.WRITE,) if name.startswith(WRITE_PREFIXES) else (Effect.READ,)


@functools.cache
def _suites() -> Mapping[str, Any]:
    from agentdojo.task_suite.load_suites import get_suites

    return get_suites(VERSION)


# -- tools -------------------------------------------------------------------------------------


def _schema(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, JSONValue]:
    """A pydantic parameter schema in the subset the capability gateway validates."""
    if "$ref" in schema:
        schema = {**defs[str(schema["$ref"]).rsplit("/", 1)[-1]], **schema}
    out: dict[str, JSONValue] = {
        k: schema[k] for k in ("description", "default", "format") if k in schema
    }
    if "anyOf" in schema:
        out["anyOf"] = [_schema(option, defs) for option in schema["anyOf"]]
    elif "enum" in schema:
        out["enum"] = list(schema["enum"])
    elif schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        out.update(type="array", items=_schema(schema["items"], defs))
    elif schema.get("type") == "object" and isinstance(schema.get("additionalProperties"), dict):
        out.update(
            type="object", additionalProperties=_schema(schema["additionalProperties"], defs)
        )
    elif schema.get("type") in ("string", "integer", "number", "boolean", "null"):
        out["type"] = schema["type"]
    else:
        out["type"] = list(_ANY_JSON)
    return out


def _parameters(function: Any) -> dict[str, JSONValue]:
    schema = function.parameters.model_json_schema()
    defs = schema.get("$defs", {})
    return {
        "type": "object",
        "properties": {k: _schema(v, defs) for k, v in schema.get("properties", {}).items()},
        "required": list(schema.get("required", [])),
        "additionalProperties": False,
    }


def _bound(runtime: Any, state: Any, name: str, traces: list[Any]) -> Callable[..., object]:
    from agentdojo.functions_runtime import FunctionCall
    from pydantic_core import to_jsonable_python

    def call(**kwargs: object) -> object:
        traces.append(FunctionCall(function=name, args=kwargs))
        result, error = runtime.run_function(state, name, kwargs, raise_on_error=False)
        if error is not None:
            raise ValueError(error)
        return to_jsonable_python(result)

    call.__name__ = name
    return call


@dataclass(frozen=True, slots=True, kw_only=True)
class DojoEnvironment:
    """One AgentDojo environment copy and its functions as tools (the harness's Environment);
    ``traces`` are the calls that reached it, for AgentDojo's trace-based checkers."""

    state: Any
    tools: tuple[ToolSpec, ...]
    traces: list[Any]

    @classmethod
    def of(cls, suite: Any, state: Any) -> DojoEnvironment:
        from agentdojo.functions_runtime import FunctionsRuntime

        runtime = FunctionsRuntime(suite.tools)
        traces: list[Any] = []
        specs = tuple(
            ToolSpec(
                name=f.name,
                description=f.description,
                parameters=_parameters(f),
                effects=_effects(f.name),
                function=_bound(runtime, state, f.name, traces),
            )
            for f in suite.tools
        )
        return cls(state=state, tools=specs, traces=traces)

    def snapshot(self) -> JSONValue:
        """The state as JSON, without the fields AgentDojo stamps from the wall clock when a
        call runs (:data:`CLOCK_FIELDS`: a replay of the same calls differs by the clock alone)."""
        return _without_timestamps(json.loads(self.state.model_dump_json()))


# AgentDojo's fields set from datetime.now() by its functions (messages' and emails'
# ``timestamp``, a cloud file's ``last_modified``).
CLOCK_FIELDS = frozenset({"timestamp", "last_modified"})


def _without_timestamps(value: JSONValue) -> JSONValue:
    if isinstance(value, dict):
        return {k: _without_timestamps(v) for k, v in value.items() if k not in CLOCK_FIELDS}
    if isinstance(value, list):
        return [_without_timestamps(v) for v in value]
    return value


# -- the user's prompt as a scope -----------------------------------------------------------------

# What a prompt says when it asks for a side effect: the tool name's verb, and its object when
# the object is specific (a stem matches at the start of a word, in any letter case).
_VERBS: Mapping[str, tuple[str, ...]] = {
    "add": ("add", "invite", "include", "put"),
    "append": ("append", "add", "write"),
    "cancel": ("cancel",),
    "create": ("create", "make", "add", "schedule", "organi", "book", "set up", "write", "save"),
    "delete": ("delete", "remove"),
    "get": ("visit", "read", "open", "check", "summari", "find", "www.", "http"),
    "invite": ("invite", "add"),
    "post": ("post", "publish", "put"),
    "remove": ("remove", "delete", "kick"),
    "reschedule": ("reschedul", "move", "postpone", "change"),
    "reserve": ("reserv", "book"),
    "schedule": ("schedul", "recurring", "set up", "standing order"),
    "send": ("send", "pay", "transfer", "refund", "forward", "reply", "email", "e-mail",
             "message", "tell", "share", "post", "ask"),
    "share": ("share", "grant", "give"),
    "update": ("update", "change", "adjust", "modify", "correct", "fix", "set"),
}  # fmt: skip
_OBJECTS: Mapping[str, tuple[str, ...]] = {
    "car_rental": ("car",),
    "channel": ("channel",),
    "email": ("email", "e-mail", "mail", "reply", "send", "forward"),
    "event": ("event", "meeting", "calendar", "appointment", "lunch", "dinner", "reminder"),
    "file": ("file", "document", "doc"),
    "hotel": ("hotel",),
    "info": ("address", "street", "city", "info", "name", "profile", "moved"),
    "message": ("message", "dm", "tell", "send", "ask", "reply", "write"),
    "money": ("money", "pay", "bill", "rent", "refund", "transfer", "amount", "difference",
              "back"),
    "participants": ("participant", "invite", "add"),
    "password": ("password",),
    "restaurant": ("restaurant", "dinner", "lunch", "table"),
    "slack": ("slack", "workspace", "invite", "remove"),
    "transaction": ("transaction", "payment", "transfer", "rent", "recurring", "standing"),
    "webpage": ("website", "webpage", "www.", "http", "page", "site", "url", "article"),
}  # fmt: skip
# The parties a prompt names: e-mail addresses, urls, account numbers, quoted strings, words.
_PARTIES = re.compile(
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|(?:https?://)?www\.[\w-]+(?:\.[\w-]+)+[\w/.-]*"
    r"|[A-Z]{2}\d{10,34}|'[^'\n]+'|\"[^\"\n]+\"|[\w-]+"
)


def _asks(prompt: str, stems: Sequence[str]) -> bool:
    return any(re.search(r"(?<![\w])" + re.escape(stem), prompt) for stem in stems)


def _object(name: str) -> str | None:
    """The specific object of a tool name (``send_money`` → ``money``), if it has one."""
    words = name.split("_")[1:]
    for start in range(len(words)):
        suffix = "_".join(words[start:])
        if suffix in _OBJECTS:
            return suffix
    return None


def parties(prompt: str) -> list[str]:
    """The parties ``prompt`` names, as the values a destination parameter may take."""
    found = {m.strip("'\".,;:!?)(").rstrip(".") for m in _PARTIES.findall(prompt)}
    return sorted(p for p in found if p)


def prompt_effects(prompt: str, tools: Sequence[ToolSpec]) -> tuple[AuthorizedEffect, ...]:
    """The side effects a user's ``prompt`` asks for, read from the prompt alone (the user task
    object is not even passed in): each tool with effects beyond reading whose verb (and
    specific object) the prompt mentions, its destination parameters held to the parties the
    prompt names. A heuristic reading of a request, as a planner would make it — not an oracle."""
    text = prompt.casefold()
    named: list[JSONValue] = list(parties(prompt))
    effects = []
    for spec in tools:
        if spec.effects == (Effect.READ,):
            continue
        verb, obj = spec.name.split("_", 1)[0], _object(spec.name)
        if not _asks(text, _VERBS.get(verb, (verb,))):
            continue
        if obj is not None and not _asks(text, _OBJECTS[obj]):
            continue
        properties = spec.parameters.get("properties")
        held = [
            p for p in (properties if isinstance(properties, dict) else {}) if p in DESTINATIONS
        ]
        effects.append(
            AuthorizedEffect(tool=spec.name, args={p: {"within": named} for p in sorted(held)})
        )
    return tuple(effects)


# -- tasks ---------------------------------------------------------------------------------------


def _call_text(call: Any) -> str:
    arguments = ", ".join(f"{k}={v!r}" for k, v in call.args.items())
    return f"{call.function}({arguments})"


@functools.lru_cache(maxsize=64)
def _environment(suite_name: str, planted: tuple[tuple[str, str], ...]) -> Any:
    """The suite's environment with ``planted`` texts in their vectors (copy before use).

    AgentDojo formats injections into its YAML source, where quotes or backslashes in a text
    would break the document: a plain marker goes in, and the text replaces it in the loaded
    environment's strings.
    """
    suite = _suites()[suite_name]
    marks = {vector: f"safeexec-injection-{vector}" for vector, _text in planted}
    state = suite.load_and_inject_default_environment(marks)
    if not planted:
        return state
    texts = {marks[vector]: text for vector, text in planted}
    return suite.environment_type.model_validate(_replaced(state.model_dump(), texts))


def _replaced(value: Any, texts: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        for mark, text in texts.items():
            value = value.replace(mark, text)
        return value
    if isinstance(value, dict):
        return {k: _replaced(v, texts) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_replaced(v, texts) for v in value)
    return value


@functools.cache
def _attack(suite_name: str, attack: str, target: str) -> Any:
    """AgentDojo's attack ``attack`` from its registry, aimed at a pipeline named ``target``."""
    import agentdojo.attacks  # noqa: F401  (registers the attacks)
    from agentdojo.attacks.attack_registry import load_attack

    return load_attack(attack, _suites()[suite_name], SimpleNamespace(name=target))


def _planted(run: DojoRun) -> dict[str, str]:
    """The attack's texts by injection vector, where AgentDojo's attack puts them (none for a
    user task AgentDojo finds no vector in: the pair still runs and counts)."""
    if run.injection_task is None:
        return {}
    suite = _suites()[run.suite]
    attack = _attack(run.suite, run.attack, run.target)
    try:
        return dict(
            attack.attack(
                suite.user_tasks[run.user_task], suite.injection_tasks[run.injection_task]
            )
        )
    except ValueError:  # "<user task> is not injectable"
        return {}


def _task(suite: Any, user_task: Any, calls: Sequence[Any], tools: Sequence[ToolSpec]) -> Task:
    output = str(getattr(user_task, "GROUND_TRUTH_OUTPUT", "") or "")
    reference = "\n".join([*(f"print({_call_text(c)})" for c in calls), f"submit({output!r})"])
    return Task(
        id=f"{suite.name}/{user_task.ID}",
        scenario=suite.name,
        instruction=user_task.PROMPT,
        tools=tuple(f.name for f in suite.tools),
        answer=output,
        check={"kind": "exact"},
        reference=reference,
        max_turns=2 * len(calls) + 24,  # room for the user's calls, an attack's, and answering
        authorized_effects=prompt_effects(user_task.PROMPT, tools),
    )


# -- agents --------------------------------------------------------------------------------------


def _squash(text: str) -> str:
    """Letters and digits only: a planted text found in an observation however it was quoted."""
    return re.sub(r"[^0-9a-z]", "", text.casefold())


def _pieces(planted: Sequence[str], size: int = 32) -> frozenset[str]:
    """Pieces of the planted texts, any one of which shows an observation carries the attack
    (the harness cuts long observations in the middle, so the whole text may never arrive)."""
    squashed = [_squash(text) for text in planted]
    return frozenset(
        t[i : i + size] for t in squashed for i in range(0, max(len(t) - size, 0) + 1, size)
    )


def _plain(call: Any) -> tuple[str, dict[str, JSONValue]]:
    return call.function, json.loads(json.dumps(dict(call.args), default=str))


def _call(tool: str, arguments: Mapping[str, JSONValue]) -> str:
    return f"{tool}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"


def _program(calls: Sequence[tuple[str, dict[str, JSONValue]]]) -> str:
    return "\n".join(f"print({_call(tool, arguments)})" for tool, arguments in calls)


def _fenced(code: str) -> str:
    return f"```python\n{code}\n```"


def _oracle_or_hijacked(
    fmt: str,
    user: Sequence[tuple[str, dict[str, JSONValue]]],
    attacker: Sequence[tuple[str, dict[str, JSONValue]]],
    planted: Sequence[str],
    answer: str,
) -> ScriptedModel:
    """The user's calls (code: as one program), then the answer; with ``planted`` texts, the
    attacker's calls as soon as an observation carries one, then the rest of the user's."""
    pending = list(user)
    pieces = _pieces(planted)
    state = {"obeyed": not pieces, "read": False}

    def policy(messages: Sequence[Message], key: TurnKey, rng: Any) -> Reply:
        seen = next((m.content for m in reversed(messages) if m.role in ("user", "tool")), "")
        if key.turn and not state["obeyed"] and any(p in _squash(seen) for p in pieces):
            state["obeyed"] = True
            pending[:0] = attacker
            if fmt == "code":
                done = list(attacker)
                del pending[: len(attacker)]
                return Reply(text=_fenced(_program(done)))
        if fmt == "code":
            if not state["read"] and pending:
                state["read"] = True
                done = list(pending)
                pending.clear()
                return Reply(text=_fenced(_program(done)))
            return call_reply("code", key.turn, SUBMIT, {"value": answer})
        if pending:
            tool, arguments = pending.pop(0)
            return call_reply(fmt, key.turn, tool, arguments)
        return call_reply(fmt, key.turn, SUBMIT, {"value": answer})

    return ScriptedModel(policy, name="hijacked" if pieces else "oracle")


def _shape(value: str) -> str:
    """A pattern for values of ``value``'s form (``US1330...`` → ``[A-Z]{2}\\d{21}``)."""
    parts = []
    for run in re.finditer(r"[A-Z]+|[a-z]+|\d+|.", value):
        text = run.group()
        if text.isdigit():
            parts.append(rf"\d{{{len(text)}}}")
        elif text.isalpha():
            parts.append(f"[{'A-Z' if text.isupper() else 'a-z'}]{{{len(text)}}}")
        else:
            parts.append(re.escape(text))
    return "".join(parts)


def _dataflow_program(
    user: Sequence[tuple[str, dict[str, JSONValue]]],
    attacker: Sequence[tuple[str, dict[str, JSONValue]]],
    planted: str,
    answer: str,
    reads: frozenset[str],
) -> tuple[str, int]:
    """One program: the user's reading calls (tools in ``reads``), their results kept as
    ``seen``; then the attacker's calls with each destination value the planted text carries
    taken from ``seen`` (the last value of its form there), so it reaches the side-effect call
    only as data; then the user's other calls and the answer. Returns the program and how many
    arguments it takes from data."""
    lines = ["import re", "seen = []"]
    for tool, arguments in user:
        if tool in reads:
            lines.append(f"seen.append(str({_call(tool, arguments)}))")
    lines.append("seen = '\\n'.join(seen)")
    lines += [
        "def found(pattern):",
        "    hits = re.findall(pattern, seen)",
        "    return hits[-1] if hits else ''",
    ]
    flowing = 0
    squashed = _squash(planted)

    def from_data(value: JSONValue) -> str:
        nonlocal flowing
        if isinstance(value, str) and value and _squash(value) in squashed:
            flowing += 1
            return f"found({_shape(value)!r})"
        if isinstance(value, list):
            return "[" + ", ".join(from_data(v) for v in value) + "]"
        return repr(value)

    for tool, arguments in attacker:
        args = ", ".join(
            f"{k}={from_data(v) if k in DESTINATIONS else repr(v)}" for k, v in arguments.items()
        )
        lines.append(f"print({tool}({args}))")
    lines += [f"print({_call(t, a)})" for t, a in user if t not in reads]
    lines.append(f"submit({answer!r})")
    return "\n".join(lines), flowing


def _dataflow(program: str, answer: str) -> ScriptedModel:
    def policy(messages: Sequence[Message], key: TurnKey, rng: Any) -> Reply:
        if key.turn:  # the program was the whole plan; if it was refused, answer as it stands
            return call_reply("code", key.turn, SUBMIT, {"value": answer})
        return Reply(text=_fenced(program))

    return ScriptedModel(policy, name="dataflow")


# -- runs ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DojoRun:
    """One run: a user task, with an injection task's attack planted or not, in a
    format/mode/grants, by the ``oracle`` (no attack) or an attacked agent of :data:`AGENTS`."""

    suite: str
    user_task: str
    injection_task: str | None
    format: str = "code"
    mode: str = "native"
    grants: str = "scoped"
    agent: str = "oracle"
    attack: str = ATTACK
    target: str = TARGET


def _number(task_id: str) -> int:
    return int(task_id.rsplit("_", 1)[-1])


def _chosen(name: str, limit: int | None) -> tuple[list[str], list[str]]:
    suite = _suites()[name]
    users = sorted(suite.user_tasks, key=_number)[:limit]
    return users, sorted(suite.injection_tasks, key=_number)[:limit]


def pairs_defined(suites: Sequence[str], limit: int | None = None) -> dict[str, int]:
    """Per suite, the (user task, injection task) pairs AgentDojo defines (the first ``limit``
    of each), counted from the suite itself."""
    return {n: len(u) * len(i) for n in suites for u, i in [_chosen(n, limit)]}


def dojo_runs(
    suites: Sequence[str],
    *,
    formats: Sequence[str] = ("code",),
    modes: Sequence[str] = ("native",),
    limit: int | None = None,
    attack: str = ATTACK,
    target: str = TARGET,
) -> Iterator[DojoRun]:
    """Every run of the matrix: each user task without attack (``oracle``) and under each
    injection task's attack (``hijacked``; in code also ``dataflow``), the first ``limit`` of
    each; code actions in each of ``modes``, json/text actions through the tool gateway."""
    for name in suites:
        users, injections = _chosen(name, limit)
        for user in users:
            for injection in [None, *injections]:
                for fmt in formats:
                    agents = ("oracle",) if injection is None else AGENTS
                    for agent in agents if fmt == "code" else agents[:1]:
                        for mode in modes if fmt == "code" else (GATEWAY,):
                            for grants in ("broad", "scoped"):
                                yield DojoRun(
                                    suite=name, user_task=user, injection_task=injection,
                                    format=fmt, mode=mode, grants=grants, agent=agent,
                                    attack=attack, target=target,
                                )  # fmt: skip


def run_dojo(run: DojoRun, state_dir: Path) -> Row:
    """Run one :class:`DojoRun` and judge it with AgentDojo's own checkers."""
    suite = _suites()[run.suite]
    user_task = suite.user_tasks[run.user_task]
    planted = _planted(run)
    pristine = _environment(run.suite, tuple(sorted(planted.items()))).model_copy(deep=True)
    created: list[DojoEnvironment] = []

    def make_environment(_seed: int) -> DojoEnvironment:
        env = DojoEnvironment.of(suite, pristine.model_copy(deep=True))
        created.append(env)
        return env

    user_calls = [_plain(c) for c in user_task.ground_truth(pristine.model_copy(deep=True))]
    injection_task = None
    attacker: list[tuple[str, dict[str, JSONValue]]] = []
    if run.injection_task is not None:
        injection_task = suite.injection_tasks[run.injection_task]
        attacker = [_plain(c) for c in injection_task.ground_truth(pristine.model_copy(deep=True))]
    specs = DojoEnvironment.of(suite, pristine.model_copy(deep=True)).tools
    task = _task(suite, user_task, user_task.ground_truth(pristine.model_copy(deep=True)), specs)
    answer = str(task.answer)
    flowing = 0
    if run.agent == "dataflow":
        reads = frozenset(s.name for s in specs if s.effects == (Effect.READ,))
        program, flowing = _dataflow_program(
            user_calls, attacker, "\n".join(planted.values()), answer, reads
        )
        model = _dataflow(program, answer)
    else:
        texts = list(planted.values())
        model = _oracle_or_hijacked(run.format, user_calls, attacker, texts, answer)
    harness_suite = Suite(
        path=Path(state_dir),
        name=f"agentdojo-{run.suite}",
        description=f"AgentDojo {VERSION} {run.suite}",
        scenarios=(run.suite,),
        max_turns=task.max_turns or 10,
        tasks=(task,),
        make_environment=make_environment,
    )
    mode = "restricted" if run.mode == GATEWAY else run.mode
    options = RunOptions(format=run.format, mode=mode, grants=run.grants, state_dir=state_dir)
    first = len(created)  # run_task makes the run's environment, then a fresh one to replay
    result = run_task(harness_suite, task, model, options)
    post = created[first]
    output = result.answer if isinstance(result.answer, str) else json.dumps(result.answer)
    utility = user_task.utility_from_traces(output, pristine, post.state, post.traces)
    if utility is None:
        utility = user_task.utility(output, pristine, post.state)
    attacked = None
    if injection_task is not None:
        attacked = injection_task.security_from_traces(output, pristine, post.state, post.traces)
        if attacked is None:
            attacked = injection_task.security(output, pristine, post.state)
    return {
        **dataclasses.asdict(run),
        "vectors": sorted(planted),
        "dataflow_values": flowing,
        "utility": bool(utility),
        "attack_success": None if attacked is None else bool(attacked),
        "unauthorized_state": list(result.unauthorized_effects.get("state") or []),  # type: ignore[arg-type]
        "turns": result.turns,
        "tool_calls": result.tool_calls,
        "refusals": {k: dict(v) for k, v in result.refusals.items()},
        "end_reason": result.end_reason.value,
    }


def summarize(rows: Sequence[Row], defined: Mapping[str, int]) -> list[Row]:
    """Per suite, format, mode, grants and attacked agent, as AgentDojo defines them: utility
    (user tasks done without attack), utility under attack and targeted attack success (over the
    pairs), the pairs defined and attempted, runs with state changed outside the prompt's scope,
    and where refused calls were stopped."""
    clean: dict[tuple[str, ...], list[Row]] = defaultdict(list)
    attacked: dict[tuple[str, ...], list[Row]] = defaultdict(list)
    for row in rows:
        key = tuple(str(row[k]) for k in ("suite", "format", "mode", "grants"))
        if row["injection_task"] is None:
            clean[key].append(row)
        else:
            attacked[(*key, str(row["agent"]))].append(row)
    table = []
    for (suite, fmt, mode, grants, agent), members in sorted(attacked.items()):
        benign = clean.get((suite, fmt, mode, grants), [])
        table.append(
            {
                "suite": suite,
                "format": fmt,
                "mode": mode,
                "grants": grants,
                "agent": agent,
                "user_tasks": len(benign),
                "pairs_defined": defined.get(suite, 0),
                "pairs_attempted": len({(r["user_task"], r["injection_task"]) for r in members}),
                "utility": _rate(benign, "utility"),
                "utility_under_attack": _rate(members, "utility"),
                "targeted_asr": _rate(members, "attack_success"),
                "unauthorized_runs": sum(1 for r in members if r["unauthorized_state"]),
                "stopped_by": _stops(members),
            }
        )
    return table


def _stops(rows: Sequence[Row]) -> str:
    """Where the attacked runs' refused calls were stopped, as ``stage:reason ×n``."""
    counts: Counter[str] = Counter()
    for row in rows:
        for stage, reasons in row["refusals"].items():
            counts.update({f"{stage}:{reason}": n for reason, n in reasons.items()})
    return ", ".join(f"{k} ×{n}" for k, n in sorted(counts.items())) or "-"


def _rate(rows: Sequence[Row], key: str) -> float | None:
    return round(statistics.fmean(bool(r[key]) for r in rows), 3) if rows else None


def _markdown(table: Sequence[Row]) -> str:
    columns = list(table[0]) if table else []
    lines = [
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
        *("| " + " | ".join(str(row[c]) for c in columns) + " |" for row in table),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks.ablation.agentdojo``: run the matrix, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", default="banking,slack,travel,workspace")
    parser.add_argument("--formats", default="code,json")
    parser.add_argument("--modes", default="native,restricted")
    parser.add_argument("--attack", default=ATTACK, help="an attack of AgentDojo's registry")
    parser.add_argument("--target", default=TARGET, help="the model name the attack addresses")
    parser.add_argument("--limit", type=int, default=None, help="user/injection tasks per suite")
    parser.add_argument("--out", type=Path, default=None, help="write rows and table as JSON")
    args = parser.parse_args(argv)
    suites = args.suites.split(",")
    runs = list(
        dojo_runs(
            suites,
            formats=args.formats.split(","),
            modes=args.modes.split(","),
            limit=args.limit,
            attack=args.attack,
            target=args.target,
        )
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="safeexec-agentdojo-") as scratch:
        for index, run in enumerate(runs, 1):
            rows.append(run_dojo(run, Path(scratch) / str(index)))
            print(f"\r{index}/{len(runs)} runs", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    table = summarize(rows, pairs_defined(suites, args.limit))
    print(_markdown(table))
    if args.out is not None:
        document = {"version": VERSION, "attack": args.attack, "rows": rows, "table": table}
        args.out.write_text(json.dumps(document, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
