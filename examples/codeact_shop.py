"""CodeAct with capabilities: one code action searches the shop, filters, and reserves two items.

The model's reply is Python. It runs in restricted mode, where the only way to touch the shop is
through the two tools granted below — ``search_products`` (at most 3 calls) and ``reserve`` (at
most 2 calls) — which run in the host, are checked against their schema and call limits, and are
recorded in the audit log. Run it: ``.venv/bin/python examples/codeact_shop.py``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from safeexec import Outcome, Session, tool

POLICY = Path(__file__).with_name("codeact_shop_policy")

CATALOGUE = [
    {"id": "p-100", "name": "USB-C cable 1 m", "price": 9.5, "stock": 12},
    {"id": "p-101", "name": "USB-C cable 2 m", "price": 12.0, "stock": 0},
    {"id": "p-102", "name": "USB-C cable braided", "price": 14.0, "stock": 3},
    {"id": "p-103", "name": "USB-C charger 65 W", "price": 39.0, "stock": 5},
    {"id": "p-104", "name": "HDMI cable", "price": 7.0, "stock": 30},
]
RESERVATIONS: list[dict[str, object]] = []


@tool(effects=["read"])
def search_products(query: str, max_price: float | None = None) -> list[dict[str, object]]:
    """Products whose name contains every word of ``query``, cheapest first."""
    words = query.lower().split()
    hits = [p for p in CATALOGUE if all(w in str(p["name"]).lower() for w in words)]
    if max_price is not None:
        hits = [p for p in hits if float(p["price"]) <= max_price]  # type: ignore[arg-type]
    return sorted(hits, key=lambda p: float(p["price"]))  # type: ignore[arg-type]


@tool(effects=["write", "money"], scope_parameter="product_id")
def reserve(product_id: str, quantity: int = 1) -> dict[str, object]:
    """Reserve ``quantity`` of a product; returns the reservation."""
    reservation = {"reservation": f"r-{len(RESERVATIONS) + 1}", "product_id": product_id}
    reservation["quantity"] = quantity
    RESERVATIONS.append(reservation)
    return reservation


MODEL_REPLY = """I'll find USB-C cables under 15 EUR that are in stock and reserve the two cheapest.

```python
hits = search_products("usb-c cable", max_price=15.0)
in_stock = [p for p in hits if p["stock"] > 0]
first, second = in_stock[0], in_stock[1]
for product in (first, second):
    booking = reserve(product["id"], quantity=1)
    print(booking["reservation"], product["name"], product["price"])
```
"""


def main(state_dir: Path) -> Outcome:
    """Run the model's one code action and return the outcome (the audit log is in state_dir)."""
    with Session(policy=POLICY, state_dir=state_dir) as session:
        session.grant(search_products)
        session.grant(reserve)
        return session.run(MODEL_REPLY)


if __name__ == "__main__":
    directory = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
    outcome = main(directory)
    print(outcome.observation.text)
    print(f"audit log: {directory / 'audit.jsonl'}")
    for event in outcome.event.side_effects:
        print(f"  {event.kind}: {getattr(event, 'tool', '')} {getattr(event, 'effects', '')}")
