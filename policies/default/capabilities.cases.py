# Capability rules (SX6xx): tools are called by plain name.

# case: a tool that can never be granted
run_shell(command="id")  # expect: SX601

# case: granted tools within their limits
page = fetch_url(url="https://example.org")  # ok: SX601, SX602, SX603
print(len(page))

# case: calls beyond max_calls in a constant loop
for i in range(25):
    fetch_url(url="https://example.org")  # expect: SX602

# case: calls in a loop of unknown length count as unbounded
import json
urls = json.loads("[]")
for url in urls:
    fetch_url(url=url)  # expect: SX602

# case: a tool that needs approval
send_email(to="a@example.org", body="hi")  # expect: SX603

# case: a local function with an unrelated name is fine
def send(to):
    return to
send("a@example.org")  # ok: SX603

# case: a loop over a constant slice is bounded by the slice
hits = fetch_url(url="https://example.org/search")
for page in hits[:10]:
    fetch_url(url=page)  # ok: SX602
for page in hits[-5:]:
    fetch_url(url=page)  # ok: SX602

# case: loops the estimator can count bound the tool's calls too (one trip counter)
for key in {"a": 1, "b": 2}:
    fetch_url(url=key)  # ok: SX602
for number, page in enumerate(zip(["x", "y", "z"], range(2 * 50))):
    fetch_url(url=page)  # ok: SX602

# case: a slice without a constant end bounds nothing (reported at the tool's first call)
hits = fetch_url(url="https://example.org/search")  # expect: SX602
for page in hits[1:]:
    fetch_url(url=page)
