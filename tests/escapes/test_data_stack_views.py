"""The data stack in restricted mode: file, URL, pickle and string-expression routes through
numpy, pandas and matplotlib are refused in the worker's views, and the views do not exist in
the host process at all (the in-process runtime refuses the import)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from escape_support import Canaries, Sandbox
    from restricted_support import BoxFactory

PRELUDE = "import numpy as np\nimport pandas as pd\nimport matplotlib.pyplot as plt\n"


def _attacks(canaries: Canaries) -> dict[str, str]:
    secret = str(canaries.secret_file)
    url = f"http://127.0.0.1:{canaries.tcp.port}/data.csv"
    pickle = "cbuiltins\\nopen\\n(S'" + secret + "'\\nS'w'\\ntR."
    return {
        "to_csv outside": f"pd.DataFrame({{'a': [1]}}).to_csv({secret!r})",
        "to_pickle": f"pd.DataFrame({{'a': [1]}}).to_pickle({secret!r})",
        "apply by name": f"pd.DataFrame({{'a': [1]}}).apply('to_pickle', path={secret!r})",
        "read_csv url": f"pd.read_csv({url!r})",
        "to_json url": f"pd.DataFrame({{'a': [1]}}).to_json({url!r})",
        "savefig outside": f"plt.figure().savefig({secret!r}, format='png')",
        "print_png outside": f"plt.figure().canvas.print_png({secret!r})",
        "np.save outside": f"np.save({secret!r}, np.arange(2))",
        "tofile outside": f"np.arange(2).tofile({secret!r})",
        "pickle payload": (
            f"open('p.npy', 'wb').write(b\"{pickle}\")\nnp.load('p.npy', allow_pickle=True)"
        ),
        "query with @ walk": "df = pd.DataFrame({'a': [1]})\ndf.query('@df.__class__')",
        "pd.eval": "pd.eval('1 + 1')",
        "ctypes pointer": "np.arange(4).ctypes.data",
    }


@pytest.mark.parametrize(
    "attack",
    [
        "to_csv outside",
        "to_pickle",
        "apply by name",
        "read_csv url",
        "to_json url",
        "savefig outside",
        "print_png outside",
        "np.save outside",
        "tofile outside",
        "pickle payload",
        "query with @ walk",
        "pd.eval",
        "ctypes pointer",
    ],
)
def test_data_stack_routes_are_refused_in_restricted_mode(
    restricted_box: BoxFactory, canaries: Canaries, attack: str
) -> None:
    box = restricted_box()
    outcome = box.run(PRELUDE + _attacks(canaries)[attack])
    assert outcome.status.value == "error", outcome.text
    refused = ("GuardError", "not allowed", "outside the working directory")
    assert any(f in outcome.message for f in refused), outcome.text
    canaries.assert_intact()
    box.assert_usable()


@pytest.mark.parametrize("attack", ["to_csv outside", "read_csv url", "pickle payload"])
def test_the_kernel_layers_hold_the_same_routes_natively(
    sandbox: Sandbox, canaries: Canaries, attack: str
) -> None:
    # Natively the real libraries run: the workdir, Landlock and the empty network namespace
    # are what stop them (restricted mode refuses them before they start; see above).
    sandbox.run(PRELUDE + _attacks(canaries)[attack])
    sandbox.assert_usable()
