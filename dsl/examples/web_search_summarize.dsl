# Search the site for "retries" and summarise each hit in one line.
urls = take(search_web(query="retries"), 3)
pages = map(urls, lambda u: open_page(url=u))
return join(map(pages, lambda p: f"{p.title}: {len(split(p.text, ' '))} words"), "\n")
