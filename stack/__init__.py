"""stack package."""
