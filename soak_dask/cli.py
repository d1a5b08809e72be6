"""The ``soak`` command line."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``soak`` command."""
    parser = argparse.ArgumentParser(prog="soak", description=__doc__)
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run SOAK on a generated pixel table (README job)")
    demo.add_argument("--out", default="soak_demo_output", help="output directory")
    demo.add_argument("--pixels", type=int, default=60_000, help="pixels to generate")
    demo.add_argument("--regions", type=int, default=3, help="regions (subsets)")
    demo.add_argument("--folds", type=int, default=10)
    demo.add_argument("--seed", type=int, default=1)
    demo.add_argument("--scheduler", default=None, help="address of a running Dask scheduler")
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            from .demo import run_demo

            run_demo(
                args.out,
                n_pixels=args.pixels,
                n_regions=args.regions,
                n_folds=args.folds,
                seed=args.seed,
                scheduler=args.scheduler,
            )
    except (ValueError, TypeError, FileNotFoundError, FileExistsError, KeyError) as err:
        if args.debug:
            raise
        print(f"soak: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
