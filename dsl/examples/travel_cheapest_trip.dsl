# Cheapest round trip Lisbon-Berlin with at most one stop each way, plus a 4-night hotel.
out = filter(search_flights(origin="LIS", destination="BER", date="2026-05-02"), lambda f: f.stops <= 1)
back = filter(search_flights(origin="BER", destination="LIS", date="2026-05-06"), lambda f: f.stops <= 1)
go = min_by(out, lambda f: f.price)
ret = min_by(back, lambda f: f.price)
hotels = search_hotels(city="BER", max_nightly=150.0)
stay = max_by(hotels, lambda h: h.stars)
total = go.price + ret.price + 4 * stay.nightly
return {"out": go.id, "back": ret.id, "hotel": stay.name, "total": total}
