# Crawl two levels from the start page, at most 3 links per page, collecting titles.
start = open_page(url="https://docs.example/start")
titles = [start.title]
for a in take(start.links, 3):
    p = open_page(url=a)
    titles += [p.title]
    for b in take(p.links, 3):
        titles += [open_page(url=b).title]
return unique(titles)
