"""Can a HeraSched critic predict what it is asked to (issue 17, why CERIT-SC does not learn)?
One long rollout of a model; for the selector, each decision's Monte Carlo return (the discounted
sum of its stream's rewards ahead, with the model's gamma); then critics fitted to those returns on
the decisions of some environments and judged on another's (held-out episodes), by explained
variance (1 - var(return - value) / var(return); 0 is the mean's, negative is worse).

    python benchmarks/herasched_critic.py benchmarks/data/herasched_cerit_ej1000/model.pt
    python benchmarks/herasched_critic.py runs/dl-s0/model.pt --steps 8192      # Deeplearn

Run from the folder holding the model's training trace (its config names the file). Rows:

- `model's critic`: the critic as trained, untouched.
- `model's critic, fitted`: it, further fitted with the update's own optimiser settings (Adam,
  its vf_lr, minibatches of 64) for --passes passes over the training decisions, raw returns.
- `... targets standardised`: the same, regressing the returns standardised by the training
  decisions' mean and sd (the value read back through them).
- `fresh critic, standardised`: a new critic of the model's shape, fitted so.
- `linear on 4 pooled numbers`: least squares on L(t) and the shown jobs' count, mean and largest
  (scaled) wait, what a critic that pools the window by its mean can see most easily.

A decision counts only where its return is known: its episode ends in the stream, or at least
--horizon decisions follow it (gamma^horizon of the tail is dropped). Last line: name=value pairs.
"""
import argparse
import copy
import time

import numpy as np
import torch

from hpcsched.agents.herasched import HeraSched
from hpcsched.agents.herasched_rollout import advantages
from hpcsched.envs.hera_observation import JOB_FEATURES


def explained(ret: np.ndarray, value: np.ndarray) -> float:
    return float(1 - np.var(ret - value) / max(np.var(ret), 1e-12))


def fit(net, obs, target, *, lr: float, passes: int, seed: int, minibatch: int = 64):
    """`net` fitted to `target` by Adam(lr) on mean squared error, `passes` shuffled passes."""
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    x, y = torch.from_numpy(obs), torch.from_numpy(target.astype(np.float32))
    for _ in range(passes):
        for idx in torch.randperm(len(y), generator=gen).split(minibatch):
            loss = ((net(x[idx]) - y[idx]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return net


def predict(net, obs) -> np.ndarray:
    with torch.no_grad():
        return net(torch.from_numpy(obs)).numpy().astype(np.float64)


def pooled(obs: np.ndarray, window: int) -> np.ndarray:
    """[1, L(t), shown jobs, their mean and largest scaled wait] per observation."""
    jobs = obs[:, :JOB_FEATURES * window].reshape(len(obs), window, JOB_FEATURES)
    present = jobs[..., 2] > 0
    count = present.sum(1)
    wait = jobs[..., 0] * present
    mean = wait.sum(1) / np.maximum(count, 1)
    return np.column_stack([np.ones(len(obs)), obs[:, JOB_FEATURES * window], count / window,
                            mean, wait.max(1)]).astype(np.float64)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", help="a HeraSched model file with its critics (model.pt, not slim)")
    p.add_argument("--steps", type=int, default=8192, help="selector steps in the rollout (8192)")
    p.add_argument("--horizon", type=int, default=300,
                   help="decisions that must follow an unfinished decision (300)")
    p.add_argument("--passes", type=int, default=30, help="fitting passes (30)")
    p.add_argument("--seed", type=int, default=12345)
    args = p.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    model = HeraSched.load(args.model)
    config = model.config
    t0 = time.perf_counter()
    gen = torch.Generator().manual_seed(args.seed)
    data, seen = model.rollout().collect(model._act_fn(gen), args.steps)
    d = data[0]
    ret = np.zeros(d.size)
    known = np.zeros(d.size, dtype=bool)
    env = np.full(d.size, -1)
    for i, (lo, hi, after) in enumerate(d.streams):
        if hi <= lo:
            continue
        sl = slice(lo, hi)
        ret[sl], _ = advantages(d.rewards[sl], np.zeros(hi - lo), d.dones[sl], 0.0, config.gamma,
                                1.0)
        done_after = np.flip(np.maximum.accumulate(np.flip(d.dones[sl])))  # an end follows
        known[sl] = done_after | (np.arange(lo, hi) < hi - args.horizon)
        env[sl] = i
    test_env = max(set(env[known]))
    train, test = known & (env != test_env), known & (env == test_env)
    print(f"rollout: {seen['selector_steps']} selector steps, {seen['episodes_ended']} episodes "
          f"ended, {time.perf_counter() - t0:.1f} s; selector decisions with a known return: "
          f"{int(train.sum())} to fit (environments but {test_env}), {int(test.sum())} held out "
          f"(environment {test_env}); gamma {config.gamma}")
    print(f"returns: train mean {ret[train].mean():.2f} sd {ret[train].std():.2f}; held out mean "
          f"{ret[test].mean():.2f} sd {ret[test].std():.2f}")
    x_train, x_test = d.obs[train], d.obs[test]
    y_train, y_test = ret[train], ret[test]
    mu, sd = y_train.mean(), max(y_train.std(), 1e-8)
    critic = model.agents[0].value
    vf_lr = config.vf_lr
    rows = []

    def row(name, fitted, test_value) -> None:
        rows.append((name, fitted, explained(y_test, test_value)))

    row("model's critic", explained(y_train, predict(critic, x_train)), predict(critic, x_test))
    tuned = fit(copy.deepcopy(critic), x_train, y_train, lr=vf_lr, passes=args.passes,
                seed=args.seed)
    row("model's critic, fitted", explained(y_train, predict(tuned, x_train)),
        predict(tuned, x_test))
    tuned = fit(copy.deepcopy(critic), x_train, (y_train - mu) / sd, lr=vf_lr,
                passes=args.passes, seed=args.seed)
    row("model's critic, fitted, targets standardised",
        explained(y_train, mu + sd * predict(tuned, x_train)),
        mu + sd * predict(tuned, x_test))
    fresh = copy.deepcopy(critic)
    for m in fresh.modules():
        if isinstance(m, torch.nn.Linear):
            m.reset_parameters()
    fresh = fit(fresh, x_train, (y_train - mu) / sd, lr=vf_lr, passes=args.passes,
                seed=args.seed)
    row("fresh critic, standardised", explained(y_train, mu + sd * predict(fresh, x_train)),
        mu + sd * predict(fresh, x_test))
    w = model.layout.window
    f_train, f_test = pooled(x_train, w), pooled(x_test, w)
    coef, *_ = np.linalg.lstsq(f_train, y_train, rcond=None)
    row("linear on 4 pooled numbers", explained(y_train, f_train @ coef), f_test @ coef)

    print(f"\n{'critic':<46} {'explained variance: fitted':>27} {'held out':>9}")
    for name, a, b in rows:
        print(f"{name:<46} {a:>27.3f} {b:>9.3f}")
    keys = ["own", "own_fitted", "own_standardised", "fresh_standardised", "linear"]
    pairs = {"train": int(train.sum()), "held_out": int(test.sum()),
             "return_sd": round(float(y_test.std()), 3)}
    pairs.update({f"{k}_held_out": round(b, 3) for k, (_, _, b) in zip(keys, rows)})
    pairs.update({f"{k}_fitted": round(a, 3) for k, (_, a, _) in zip(keys, rows)})
    print(" ".join(f"{k}={v}" for k, v in pairs.items()))


if __name__ == "__main__":
    main()
