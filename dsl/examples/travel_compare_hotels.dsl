# A table of Berlin hotels by price band, formatted for a human.
hotels = sort_by(take(search_hotels(city="BER"), 20), lambda h: h.nightly)
bands = group(hotels, lambda h: "budget" if h.nightly < 100 else "mid" if h.nightly < 200 else "luxury")
for band in keys(bands):
    names = join(map(bands[band], lambda h: f"{h.name} ({h.stars}*, {h.nightly:.0f})"), ", ")
    print(f"{band}: {names}")
return len(hotels)
