"""The daemon's fast decision path: a profile's plugins evaluated for every node at once, in numpy."""
