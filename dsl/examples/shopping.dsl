# Search products, keep in-stock items under a budget, reserve the cheapest.
budget = 15.0
items = search_products(query="usb-c cable", max_results=20)
affordable = filter(items, lambda p: p.in_stock and p.price <= budget)
cheapest = min_by(affordable, lambda p: p.price)
code = reserve(sku=cheapest.sku, quantity=1)
return {"reserved": cheapest.name, "price": cheapest.price, "confirmation": code}
