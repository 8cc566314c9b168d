"""`make bench`: the re-driver against a faithful port of the published design, on one moto server."""

import local_aws  # noqa: F401 - puts lambdas/ on sys.path, as Lambda does
