"""`make bench`: the re-driver against a faithful port of the published design, on one moto server."""
