# `python -m headroom ARGS`: runs the packaged binary, for environments whose PATH lacks the
# venv's bin directory (e.g. a venv's python called by absolute path).
from headroom import headroom

if __name__ == "__main__":
    headroom()
