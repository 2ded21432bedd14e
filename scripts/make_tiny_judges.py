"""Build tiny random-initialised Qwen2.5-Omni thinker, Qwen3-Omni MoE thinker and Qwen2-Audio judges offline.

Usage: python scripts/make_tiny_judges.py [--out DIR] [--seed 0] [--force]
Default DIR: $AVJUDGE_CACHE or ~/.cache/avjudge; checkpoints land in DIR/tiny/.
"""

import argparse

from avjudge.judges.tiny import default_cache, make_tiny_judges


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=None, help=f"cache root (default {default_cache()})")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--force", action="store_true", help="rebuild even if present")
    args = p.parse_args()
    for family, path in make_tiny_judges(args.out, args.seed, args.force).items():
        print(f"{family}: {path}")


if __name__ == "__main__":
    main()
