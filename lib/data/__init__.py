"""Data generators shared by the chapters."""
