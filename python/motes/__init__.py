"""motes: parallel I/O, indexing and exploration of particle simulation data."""
