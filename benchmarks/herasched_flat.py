"""A HeraSched model whose selector scores every job and Forward alike (issue 17): the baseline
that says what a trained selector adds.

    python benchmarks/herasched_flat.py MODEL OUT

Writes OUT: MODEL with the last layer of its selector's job scorer and of its Forward scorer set
to zero (the default network's ``score.out`` and ``forward_score.2``), so that every logit is 0.
Read greedily, the first maximum among the allowed actions is taken, and Forward is the last
action: at every decision the selector starts the first job of its window that fits now (the
oldest of the head slots, then the tail's), with no reservation for any job, and waits only
when none fits. Its allocator is MODEL's, so read it with ``@allocator=NAME`` to pair that rule
with a heuristic allocator (``herasched:OUT@allocator=best-fit``).
"""
import argparse

import torch

from hpcsched.modelfile import read_model, write_model

#: the selector's last layers, whose weights and biases are zeroed
LAST = ("score.out.", "forward_score.2.")


def flatten(src, dst) -> None:
    ck = read_model(src, recipe="herasched")
    if ck["config"].get("net", "default") != "default":
        raise SystemExit(f"{src}: a {ck['config']['net']}-network model; this flattens the "
                         f"default network's selector")
    selector = ck["weights"]["selector_policy"]
    zeroed = [k for k in selector if k.startswith(LAST)]
    if len(zeroed) != 4:
        raise SystemExit(f"{src}: expected the 4 tensors of {', '.join(LAST)}, found {zeroed}")
    for k in zeroed:
        selector[k] = torch.zeros_like(selector[k])
    write_model(dst, ck)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("out")
    a = ap.parse_args(argv)
    flatten(a.model, a.out)
    print(f"wrote {a.out}: {a.model} with a flat selector")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
