"""Typed, sourced hardware configuration (pydantic). One module per GPU."""
