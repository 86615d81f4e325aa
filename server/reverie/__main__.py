"""``python -m reverie`` is the same as the ``reverie`` console script."""

from reverie.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
