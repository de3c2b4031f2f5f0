"""safeexec as an authenticated, multi-tenant HTTP service (the ``service`` extra).

``app.create_app(ServiceConfig(...), TokenStore(...))`` is the ASGI app; ``safeexec serve`` runs
it under uvicorn. Each module has one job: ``auth`` (bearer tokens, hashed), ``quotas`` (per-token
limits), ``sessions`` (ownership and idle bookkeeping), ``runs`` (blocking calls off the event
loop, client disconnects), ``body_limit`` (413s), ``access_log`` (one line per request),
``runtime`` (the operations), ``schemas`` (the wire shapes), ``app`` (the routes). ``client`` is
the other end, ``httpx`` only: this package imports nothing on its own, so the client loads no
server.
"""
