"""The record of what happened: the hash-chained log (:mod:`~safeexec.audit.log`), the blob store
for full outputs (:mod:`~safeexec.audit.blobs`), the private state directory that holds both
(:mod:`~safeexec.audit.statedir`) and a person's view of a log (:mod:`~safeexec.audit.timeline`)."""
