"""Cutting a model built from the primitives into the programs of pipeline stages."""
