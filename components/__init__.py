"""Trainyard's infrastructure components (one concern per module)."""
