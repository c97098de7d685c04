"""Storage: the one place that speaks SQL. `Store` runs functions in transactions."""

from studiolo.store.engine import Store, Tx
from studiolo.store.group import volatile

__all__ = ["Store", "Tx", "volatile"]
