"""argparse value types shared by the `mockgpu` subcommands: a bad value is a usage error naming the option and what it takes."""
import argparse

__all__ = ["positive_int", "nonnegative_int", "positive_float", "nonnegative_float"]

def _num(conv, ok, what:str):
  def parse(s:str):
    try: v = conv(s)
    except ValueError: raise argparse.ArgumentTypeError(f"{s!r} is not {what}") from None
    if not ok(v): raise argparse.ArgumentTypeError(f"{s!r} is not {what}")
    return v
  return parse

positive_int = _num(int, lambda v: v > 0, "a positive integer")
nonnegative_int = _num(int, lambda v: v >= 0, "an integer >= 0")
positive_float = _num(float, lambda v: v > 0, "a positive number")
nonnegative_float = _num(float, lambda v: v >= 0, "a number >= 0")
