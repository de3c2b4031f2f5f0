# Browse from the start page and report the documented default of the timeout option.
start = open_page(url="https://docs.example/start")
found = "unknown"
for link in take(start.links, 5):
    page = open_page(url=link)
    if "timeout" in lower(page.text):
        sentences = split(page.text, ". ")
        found = first(filter(sentences, lambda s: "timeout" in s))
return {"answer": found}
