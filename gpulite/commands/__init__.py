"""Larger ``gpulite`` CLI commands, one module each, imported by :mod:`gpulite.cli` only when used."""
