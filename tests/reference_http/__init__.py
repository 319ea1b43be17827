"""The HTTP differential: recorded reference answers replayed against kbroker."""
