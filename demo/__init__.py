"""`make demo`: the whole re-drive loop on a laptop, on the real template, with no AWS account."""
