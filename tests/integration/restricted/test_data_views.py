"""The data stack's views (numpy, pandas, matplotlib) in restricted mode: present only in the
confined worker's runtime, every known danger refused or confined to the workdir."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterable
from pathlib import Path

import pytest

from safeexec.gate import check
from safeexec.model.values import Verdict
from safeexec.policy.loader import load_policy
from safeexec.restricted import GuardError, RestrictedExecutor
from safeexec.restricted.allowlist import DATA_VIEWS
from safeexec.restricted.views import WorkerViews, data_views
from safeexec.restricted.views.data_views import mediate
from safeexec.restricted_proof.reachability import CrawlLimits, crawl

IMPORTS = ("numpy", "numpy.*", "pandas", "pandas.*", "matplotlib", "matplotlib.*", "io", "os")
URL = "http://127.0.0.1:9/data.csv"


@pytest.fixture
def run(tmp_path: Path):  # type: ignore[no-untyped-def]
    executor = RestrictedExecutor(imports=IMPORTS, workdir=tmp_path / "work", views=WorkerViews)
    (tmp_path / "work").mkdir()
    prelude = "import numpy as np\nimport pandas as pd\nimport matplotlib.pyplot as plt\n"

    def execute(code: str) -> object:
        return executor.execute(prelude + code, filename="<data>")

    execute.executor = executor  # type: ignore[attr-defined]
    return execute


def test_ordinary_numpy_pandas_and_plotting_run(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run(
        "a = np.arange(6).reshape(2, 3)\nassert a.sum(axis=0).tolist() == [3, 5, 7]\n"
        "df = pd.DataFrame({'k': ['x', 'y', 'x'], 'v': [1, 2, 3]})\n"
        "assert df.groupby('k')['v'].agg('sum').to_dict() == {'x': 4, 'y': 2}\n"
        "df.to_csv('t.csv', index=False)\nassert pd.read_csv('t.csv').equals(df)\n"
        "np.save('a', a)\nassert np.load('a.npy').tolist() == a.tolist()\n"
        "fig, ax = plt.subplots()\nax.plot([1, 2])\nfig.savefig('p.png')\nplt.savefig('q.svg')\n"
        "plt.close('all')\n"
    )
    work = tmp_path / "work"
    assert (work / "p.png").read_bytes().startswith(b"\x89PNG")
    assert b"<svg" in (work / "q.svg").read_bytes()
    assert (work / "a.npy").exists()


@pytest.mark.parametrize(
    "code",
    [
        "np.arange(3).ctypes",
        "np.random.default_rng(1).bit_generator.ctypes",
        "np.random.default_rng(1).bit_generator.cffi",
        "np.arange(3).tofile('x.bin')",
        "np.arange(3).dump('x.pkl')",
        "np.arange(3).dumps()",
        "np.load('a.npy', allow_pickle=True)",
        "np.save('a.npy', np.arange(2), allow_pickle=True)",
        "pd.DataFrame({'a': [1]}).to_pickle('x.pkl')",
        "pd.DataFrame({'a': [1]}).eval('a + 1')",
        "x = 1\npd.DataFrame({'a': [1]}).query('a > @x')",
        "pd.DataFrame({'a': [1]}).style",
        "pd.DataFrame({'a': [1]}).to_clipboard()",
        "pd.DataFrame({'a': [1]}).to_sql('t', 'sqlite:///x.db')",
        "pd.DataFrame({'a': [1]}).apply('to_pickle', path='x.pkl')",
        "pd.DataFrame({'a': [1]}).agg('__class__')",
        "pd.DataFrame({'a': [1]}).transform(['sum', '_constructor'])",
        "pd.DataFrame({'a': [1]}).apply('ctypeslib')",
        "pd.DataFrame({'a': [1]}).pivot_table(index='a', aggfunc={'a': 'to_csv'})",
        "pd.DataFrame({'a': [1]}).plot(backend='os')",
        "pd.DataFrame({'a': [1]}).plot.line(backend='os')",
        "pd.read_csv('" + URL + "')",
        "pd.read_json('s3://bucket/key.json')",
        "pd.read_csv('file:///etc/passwd')",
        "pd.read_csv('t.csv', storage_options={'anon': True})",
        "pd.DataFrame({'a': [1]}).to_csv('" + URL + "')",
        "pd.DataFrame.to_pickle",
        "class Mine(pd.DataFrame):\n    pass\nMine({'a': [1]}).to_pickle('x.pkl')",
        "plt.figure().canvas.print_png('x.png')",
        "plt.figure().canvas.switch_backends",
        "plt.figure().savefig('x.pdf', backend='pgf')",
        "plt.figure().text(0, 0, 'x').set_usetex(True)",
        "import matplotlib\nmatplotlib.use('TkAgg')",
        "pd.Categorical(['a']).dtype.type",
    ],
)
def test_known_dangers_are_refused(run, code: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(GuardError):
        run(code)


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("np", "ctypeslib"),
        ("np", "lib"),
        ("np", "f2py"),
        ("np", "testing"),
        ("np", "test"),
        ("np", "fromfile"),
        ("np", "memmap"),
        ("np", "core"),
        ("np.linalg", "test"),
        ("pd", "eval"),
        ("pd", "read_pickle"),
        ("pd", "read_html"),
        ("pd", "set_option"),
        ("pd", "options"),
        ("pd", "io"),
        ("pd", "api"),
        ("plt", "rcParams"),
        ("plt", "switch_backend"),
        ("plt", "style"),
        ("plt", "imread"),
        ("plt", "sys"),
        ("plt", "matplotlib"),
    ],
)
def test_the_views_leave_out_the_denylist_and_every_submodule(  # type: ignore[no-untyped-def]
    run, module: str, name: str
) -> None:
    with pytest.raises(AttributeError, match="not allowed"):
        run(f"{module}.{name}")


def test_no_view_hands_out_a_module_or_a_shared_container(run) -> None:  # type: ignore[no-untyped-def]
    run("import numpy.linalg, numpy.random, numpy.fft\n")
    views = run.executor._views  # type: ignore[attr-defined]
    assert set(DATA_VIEWS) <= set(views)
    for name in DATA_VIEWS:
        for attr, value in vars(views[name]).items():
            if attr.startswith("_"):
                continue  # the view's own label and factories
            assert not isinstance(value, types.ModuleType), (name, attr)
            assert not isinstance(value, dict | list | set), (name, attr)


def test_paths_stay_beneath_the_workdir(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    outside = tmp_path / "outside.csv"
    outside.write_text("a\n1\n")
    (tmp_path / "work" / "link.csv").symlink_to(outside)
    (tmp_path / "work" / "link.png").symlink_to(tmp_path / "written.png")
    for code in (
        f"pd.read_csv({str(outside)!r})",
        "pd.read_csv('../outside.csv')",
        "pd.read_csv('link.csv')",
        "pd.DataFrame({'a': [1]}).to_csv('../written.csv')",
        "np.save('../written', np.arange(2))",
        "plt.figure().savefig('../written.png')",
        "plt.savefig('link.png')",
    ):
        with pytest.raises(PermissionError):
            run(code)
    assert not list(tmp_path.glob("written*"))
    assert outside.read_text() == "a\n1\n"


def test_a_read_of_a_mediated_name_on_other_objects_is_the_plain_read(run) -> None:  # type: ignore[no-untyped-def]
    run("import io\nassert io.StringIO('x').read() == 'x'\n")
    executor = run.executor  # type: ignore[attr-defined]
    holder = {"plot": 1}
    assert mediate(executor.cell, holder, "get") == holder.get
    run("class Own:\n    def eval(self):\n        return 7\nassert Own().eval() == 7\n")


def test_the_data_stack_has_no_view_in_the_host_process(tmp_path: Path) -> None:
    for executor in (
        RestrictedExecutor(imports=IMPORTS, workdir=tmp_path, count_operations=True),
        RestrictedExecutor(imports=IMPORTS, workdir=tmp_path),  # not confined: the default
    ):
        for module in ("numpy", "pandas", "matplotlib.pyplot"):
            with pytest.raises(ImportError, match="only in the confined worker"):
                executor.execute(f"import {module}\n", filename="<host>")


def test_check_agrees_with_run_about_the_data_stack_in_each_restricted_mode() -> None:
    policy = load_policy("default")
    worker = check("import numpy\n", policy, backend="restricted").decision
    host = check("import numpy\n", policy, backend="restricted-inprocess").decision
    assert worker.verdict is Verdict.ALLOW
    assert host.verdict is Verdict.DENY
    assert any("confined worker" in f.message for f in host.findings), host.findings


def test_the_data_crawl_reports_a_module_a_view_would_hand_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = data_views._public

    def leaky(module: types.ModuleType, denied: Iterable[str]) -> dict[str, object]:
        return {**original(module, denied), "host_sys": sys}

    monkeypatch.setattr(data_views, "_public", leaky)
    report = crawl(("numpy",), counting=False, data_stack=True)
    assert [r.path for r in report.reached if r.kind == "module"] == ["numpy.host_sys"]


def test_the_in_process_crawl_never_has_data_views() -> None:
    limits = CrawlLimits(max_depth=1, max_call_depth=0)
    with_numpy = crawl(("numpy", "json"), counting=True, data_stack=True, limits=limits)
    without = crawl(("json",), counting=True, data_stack=True, limits=limits)
    assert with_numpy.reached == ()
    assert with_numpy.objects == without.objects
