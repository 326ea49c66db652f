"""What every part of the server shares: status errors, the server's limits, names that
become paths, default locations, typed request fields, test pause points."""
