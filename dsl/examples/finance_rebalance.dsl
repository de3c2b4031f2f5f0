# Find the largest position and move a tenth of its value, if it is over half the portfolio.
holdings = get_holdings(account="acct-1")
positions = map(take(holdings, 8), lambda h: {"ticker": h.ticker, "value": h.shares * get_quote(ticker=h.ticker).price})
total = sum(positions, lambda v: v.value)
largest = max_by(positions, lambda v: v.value)
share = largest.value / total
result = "no change"
if share > 0.5:
    result = transfer(account="acct-1", to="acct-savings", amount=round(largest.value / 10, 2))
return {"largest": largest.ticker, "share": round(share, 3), "action": result}
