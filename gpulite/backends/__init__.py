"""Backends and the kernel registry."""
