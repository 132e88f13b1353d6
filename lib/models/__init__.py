"""Models shared by the chapters."""
