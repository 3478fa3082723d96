# SPDX-License-Identifier: GPL-2.0-or-later
"""The statistics every benchmark here prints, the way the kernel community
reports them (mmtests): min, mean, trimmed mean, sample standard deviation,
max over the runs of one configuration."""
import math


def stats(xs):
    """min/mean/trim/sd/max (and n) of the values that are not None; None when
    there are none. The trimmed mean drops the lowest and highest 10% (at least
    one value each side) once there are 5 values or more."""
    xs = sorted(x for x in xs if x is not None)
    n = len(xs)
    if not n:
        return None
    mean = sum(xs) / n
    cut = max(1, n // 10) if n >= 5 else 0
    trimmed = xs[cut:n - cut] if n - 2 * cut > 0 else xs
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
    return {"n": n, "min": xs[0], "mean": mean, "trim": sum(trimmed) / len(trimmed), "sd": sd, "max": xs[-1]}


KEYS = ("min", "mean", "trim", "sd", "max")


def fmt(st, prec=1, sep="  ", width=9, scale=1.0, none="n/a", single=False):
    """The five figures of stats() in one string (`none` when st is None);
    with `single`, a lone value (n == 1) is printed once instead of five
    times."""
    if not st:
        return none
    if single and st["n"] == 1:
        return f"{st['mean'] / scale:.{prec}f}"
    return sep.join(f"{st[k] / scale:>{width}.{prec}f}" for k in KEYS)
