"""Reliability campaigns of hygraph (see the modules of this package)."""
