# Value a portfolio in EUR: quote every holding, convert, sum.
holdings = get_holdings(account="acct-1")
usd_eur = get_fx_rate(base="USD", quote="EUR")
total = 0.0
lines = []
for h in take(holdings, 8):
    q = get_quote(ticker=h.ticker)
    rate = usd_eur if q.currency == "USD" else 1.0
    value = h.shares * q.price * rate
    total += value
    lines += [f"{h.ticker}: {value:.2f} EUR"]
return {"lines": lines, "total_eur": round(total, 2)}
