"""`preflight diff`: plan two revisions, compare the plans, render the comparison."""
