"""`make demo`: the whole re-drive loop on a laptop, on the real template, with no AWS account."""

import local_aws  # noqa: F401 - puts lambdas/ on sys.path, as Lambda does
