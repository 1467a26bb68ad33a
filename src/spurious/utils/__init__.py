"""Small shared helpers: atomic file writes, hashing, randomness, parameter checks."""
