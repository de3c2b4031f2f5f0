# Book the cheapest direct flight and the cheapest 3-star-or-better hotel; two bookings at most.
direct = where(search_flights(origin="LIS", destination="BER", date="2026-05-02"), lambda f: f.stops == 0)
hotel = min_by(where(search_hotels(city="BER"), lambda h: h.stars >= 3), lambda h: h.nightly)
refs = []
if len(direct) > 0:
    refs += [book(item_id=first(direct).id, kind="flight")]
refs += [book(item_id=hotel.id, kind="hotel", nights=4)]
return refs
