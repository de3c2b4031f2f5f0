"""The restricted runtime's views: hand-built stand-ins for stdlib modules (files, threads,
asyncio, sqlite3, archives, compression, logging, warnings, ``sys``/``os``) and the data stack.

Each view is made for one cell from what the runtime hands it; the core never imports this
package.
"""
