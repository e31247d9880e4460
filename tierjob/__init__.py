"""tierjob package."""
