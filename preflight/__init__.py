"""Trainyard's offline engine: plan the stack under Pulumi's mocks, check it, and report."""
