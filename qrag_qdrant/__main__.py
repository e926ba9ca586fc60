"""``python -m qrag_qdrant``: the ``qrag-qdrant`` command, for where its script is not on the PATH."""

from .cli.app import main

if __name__ == "__main__":
    main()
