"""``python -m cli``: the same entry point as the ``fabric-emu`` console script."""
from cli.main import main

if __name__ == "__main__":
    main()
