# Quote every ticker in USD.
tickers = ["ACME", "GLOBX", "INIT"]
quotes = map(tickers, lambda t: get_quote(ticker=t))
eur_usd = get_fx_rate(base="EUR", quote="USD")
usd = map(quotes, lambda q: {"ticker": q.ticker, "usd": round(q.price * (eur_usd if q.currency == "EUR" else 1.0), 2)})
return sort_by(usd, lambda r: r.usd, reverse=True)
