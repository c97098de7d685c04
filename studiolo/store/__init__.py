"""Storage: the one place that speaks SQL. `Store` runs functions in transactions."""

from studiolo.store.engine import Store, Tx

__all__ = ["Store", "Tx"]
