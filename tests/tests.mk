# tests/: shared test helpers are linked into every suite (see Makefile).
