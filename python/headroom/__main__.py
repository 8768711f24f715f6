# `python -m headroom ARGS`: runs the installed headroom binary, for environments whose PATH lacks the
# environment's bin/ (e.g. a venv's python called by absolute path).
from headroom import main

if __name__ == "__main__":
    main()
