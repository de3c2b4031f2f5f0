"""Deterministic example tools for the DSL examples and their golden files (no I/O at all).

Shopping, travel, finance, decoding and web browsing, each returning fixed data: the same
program always gives the same plan and the same result.
"""

from __future__ import annotations

import base64
from typing import Literal, TypedDict

from safeexec.capabilities.gateway import tool


class Product(TypedDict):
    sku: str
    name: str
    price: float
    in_stock: bool
    rating: float


class Flight(TypedDict):
    id: str
    origin: str
    destination: str
    date: str
    price: float
    stops: int


class Hotel(TypedDict):
    id: str
    city: str
    name: str
    nightly: float
    stars: int


class Quote(TypedDict):
    ticker: str
    price: float
    currency: str


class Holding(TypedDict):
    ticker: str
    shares: int


class Page(TypedDict):
    url: str
    title: str
    text: str
    links: list[str]


_PRODUCTS: list[Product] = [
    {"sku": "C-100", "name": "USB-C cable 1m", "price": 9.5, "in_stock": True, "rating": 4.1},
    {"sku": "C-200", "name": "USB-C cable 2m", "price": 12.0, "in_stock": True, "rating": 4.6},
    {"sku": "C-300", "name": "USB-C cable braided", "price": 18.0, "in_stock": True, "rating": 4.8},
    {"sku": "C-400", "name": "USB-C cable 0.5m", "price": 7.0, "in_stock": False, "rating": 3.9},
    {"sku": "H-100", "name": "USB-C hub", "price": 35.0, "in_stock": True, "rating": 4.4},
]
_FLIGHTS: list[Flight] = [
    {"id": "F1", "origin": "LIS", "destination": "BER", "date": "2026-05-02", "price": 180.0, "stops": 1},
    {"id": "F2", "origin": "LIS", "destination": "BER", "date": "2026-05-02", "price": 240.0, "stops": 0},
    {"id": "F3", "origin": "LIS", "destination": "BER", "date": "2026-05-02", "price": 150.0, "stops": 2},
    {"id": "F4", "origin": "BER", "destination": "LIS", "date": "2026-05-06", "price": 170.0, "stops": 0},
    {"id": "F5", "origin": "BER", "destination": "LIS", "date": "2026-05-06", "price": 130.0, "stops": 1},
]  # fmt: skip
_HOTELS: list[Hotel] = [
    {"id": "H1", "city": "BER", "name": "Spree View", "nightly": 120.0, "stars": 4},
    {"id": "H2", "city": "BER", "name": "Mitte Rooms", "nightly": 85.0, "stars": 3},
    {"id": "H3", "city": "BER", "name": "Tiergarten Palace", "nightly": 260.0, "stars": 5},
]
_QUOTES: dict[str, Quote] = {
    "ACME": {"ticker": "ACME", "price": 101.25, "currency": "USD"},
    "GLOBX": {"ticker": "GLOBX", "price": 55.5, "currency": "EUR"},
    "INIT": {"ticker": "INIT", "price": 12.0, "currency": "USD"},
}
_FX = {("USD", "EUR"): 0.92, ("EUR", "EUR"): 1.0, ("EUR", "USD"): 1.087, ("USD", "USD"): 1.0}
_PAGES: dict[str, Page] = {
    "https://docs.example/start": {
        "url": "https://docs.example/start",
        "title": "Getting started",
        "text": "Install the tool. See the configuration page for options.",
        "links": ["https://docs.example/config", "https://docs.example/faq"],
    },
    "https://docs.example/config": {
        "url": "https://docs.example/config",
        "title": "Configuration",
        "text": "The timeout option defaults to 30 seconds. The retries option defaults to 3.",
        "links": ["https://docs.example/start"],
    },
    "https://docs.example/faq": {
        "url": "https://docs.example/faq",
        "title": "FAQ",
        "text": "Q: Where is the changelog? A: On the releases page.",
        "links": ["https://docs.example/releases"],
    },
    "https://docs.example/releases": {
        "url": "https://docs.example/releases",
        "title": "Releases",
        "text": "Version 2.4 added retries. Version 2.5 fixed the timeout option.",
        "links": [],
    },
}
_MESSAGES = {
    "m1": base64.b64encode(b"meet at the north gate at noon").decode(),
    "m2": "Wkh vhfuhw lv vdiha",  # Caesar, shift 3
    "m3": "6e6f7468696e6720746f2073656520686572652e",  # hex
}


@tool
def search_products(query: str, max_results: int = 10) -> list[Product]:
    """Products whose name contains every word of ``query``."""
    words = query.lower().split()
    found = [p for p in _PRODUCTS if all(w in p["name"].lower() for w in words)]
    return found[:max_results]


@tool(effects=["money"])
def reserve(sku: str, quantity: int = 1) -> str:
    """Reserve ``quantity`` of product ``sku``; returns a confirmation code."""
    return f"RES-{sku}-{quantity}"


@tool
def search_flights(origin: str, destination: str, date: str) -> list[Flight]:
    """Flights on ``date`` from ``origin`` to ``destination``."""
    return [
        f
        for f in _FLIGHTS
        if (f["origin"], f["destination"], f["date"]) == (origin, destination, date)
    ]


@tool
def search_hotels(city: str, max_nightly: float = 1000.0) -> list[Hotel]:
    """Hotels in ``city`` at most ``max_nightly`` a night."""
    return [h for h in _HOTELS if h["city"] == city and h["nightly"] <= max_nightly]


@tool(effects=["money"])
def book(item_id: str, kind: Literal["flight", "hotel"], nights: int = 0) -> str:
    """Book a flight or a hotel (``nights`` for hotels); returns a booking reference."""
    return f"BK-{kind[0].upper()}-{item_id}-{nights}"


@tool
def get_quote(ticker: str) -> Quote:
    """The latest price of ``ticker``."""
    return _QUOTES[ticker]


@tool
def get_fx_rate(base: str, quote: str) -> float:
    """How many ``quote`` one ``base`` buys."""
    return _FX[(base, quote)]


@tool
def get_holdings(account: str) -> list[Holding]:
    """The holdings of ``account``."""
    return [
        {"ticker": "ACME", "shares": 10},
        {"ticker": "GLOBX", "shares": 40},
        {"ticker": "INIT", "shares": 100},
    ]


@tool(effects=["money"])
def transfer(account: str, to: str, amount: float) -> str:
    """Move ``amount`` from ``account`` to ``to``."""
    return f"TX-{account}-{to}-{amount:.2f}"


@tool
def fetch_message(message_id: str) -> str:
    """The (encoded) text of message ``message_id``."""
    return _MESSAGES[message_id]


@tool
def decode_base64(text: str) -> str:
    """``text`` decoded from base64 as UTF-8."""
    return base64.b64decode(text).decode("utf-8")


@tool
def decode_hex(text: str) -> str:
    """``text`` decoded from hexadecimal as UTF-8."""
    return bytes.fromhex(text).decode("utf-8")


@tool
def open_page(url: str) -> Page:
    """The page at ``url`` (from a fixed site)."""
    if url not in _PAGES:
        raise ValueError(f"no page at {url}")
    return _PAGES[url]


@tool
def search_web(query: str) -> list[str]:
    """URLs of pages whose text mentions ``query``."""
    q = query.lower()
    return [u for u, p in _PAGES.items() if q in p["text"].lower() or q in p["title"].lower()]


@tool(effects=["write"])
def save_note(title: str, body: str) -> str:
    """Save a note; returns its id."""
    return f"note-{len(title)}-{len(body)}"


TOOLS = (
    search_products, reserve, search_flights, search_hotels, book, get_quote, get_fx_rate,
    get_holdings, transfer, fetch_message, decode_base64, decode_hex, open_page, search_web,
    save_note,
)  # fmt: skip
