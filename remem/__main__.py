"""``python -m remem``: the same as the ``remem`` command."""

from remem.cli import main

if __name__ == "__main__":
    main()
