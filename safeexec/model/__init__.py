"""The values that flow between the stages (:mod:`~safeexec.model.values`), their stable JSON
forms (:mod:`~safeexec.model.codec`) and the equality, hash and repr they share
(:mod:`~safeexec.model.fieldwise`).
"""
