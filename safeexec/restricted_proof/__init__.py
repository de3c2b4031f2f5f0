"""The restricted runtime's proof: a crawl of everything restricted code can reach, checked
against the premises the guards rely on.

Host-side only (``safeexec doctor`` and the test suite run it); it is not part of the runtime
package, so neither the worker nor an in-process cell loads it.
"""
