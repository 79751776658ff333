"""The compile cache, kept as the Neuron tools keep theirs (see `store` for the layout)."""

from __future__ import annotations

from nxcc.driver.cache.key import CacheKey, make_key
from nxcc.driver.cache.store import CacheEntry, CompileCache, cache_root

__all__ = ["CacheEntry", "CacheKey", "CompileCache", "cache_root", "make_key"]
