# Reserve the two best-rated in-stock cables (at most two reservations).
items = search_products(query="cable")
in_stock = where(items, lambda p: p.in_stock)
best = take(sort_by(in_stock, lambda p: p.rating, reverse=True), 2)
codes = []
for p in best:
    codes += [reserve(sku=p.sku)]
return {"skus": map(best, lambda p: p.sku), "codes": codes}
