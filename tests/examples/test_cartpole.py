"""The CartPole example: REINFORCE solves it, the same way inline and on a local cluster."""

from __future__ import annotations

import numpy as np
import pytest

import kit
from kit.examples import cartpole
from kit.rl import TrainingLog


def test_cartpole_is_solved_inline(capsys: pytest.CaptureFixture[str]) -> None:
    assert cartpole.main(["parallel.env=inline"]) == 0
    out = capsys.readouterr().out
    assert "'solved': True" in out and "eval return" in out


def test_local_cluster_training_matches_inline_and_logs_curves(local: dict) -> None:
    cfg = kit.load_config(cartpole.CONFIG, ["parallel.env=inline"])
    inline = cartpole.train(cfg, verbose=False)
    on_cluster_cfg = kit.load_config(cartpole.CONFIG, [f"parallel.n_workers={local['n_workers']}"])
    log = TrainingLog(total=on_cluster_cfg.train.max_iters)
    seen: list = []
    log.events.subscribe(seen.append)
    on_cluster = cartpole.train(on_cluster_cfg, log=log, verbose=False)
    assert on_cluster["best_eval_return"] == inline["best_eval_return"] > 195
    assert np.array_equal(on_cluster["weights"], inline["weights"])
    names = [type(e).__name__ for e in seen]
    assert names[0] == "RunStarted" and names[-1] == "RunFinished"
    curves = {k for e in seen if type(e).__name__ == "Scalars" for k in e.values}
    assert curves == {"eval_return", "train_return"}
    # The dashboard's "took" is the training's seconds (it used to start at the first eval).
    assert seen[-1].elapsed >= on_cluster["seconds"]


def test_the_policy_acts_row_by_row() -> None:
    policy = cartpole.LinearSoftmax(np.arange(8.0).reshape(4, 2) / 10)
    obs = [np.array([0.1, -0.2, 0.3, 0.05]), np.array([-0.5, 0.1, 0.0, 0.2])]
    rngs = [np.random.default_rng(1), np.random.default_rng(2)]
    both = policy(obs, rngs)
    alone = [policy([o], [np.random.default_rng(s)])[0] for o, s in zip(obs, (1, 2), strict=True)]
    assert both == alone


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        (["paralel.env=slurm"], "did you mean 'parallel.env'"),
        (["parallel.env=slurm"], "parallel.options.cores"),
    ],
)
def test_bad_input_is_one_message_without_a_traceback(
    capsys: pytest.CaptureFixture[str], overrides: list[str], says: str
) -> None:
    assert cartpole.main(overrides) == 2
    err = capsys.readouterr().err
    assert err.startswith("cartpole: error: ") and says in err, err
    assert "Traceback" not in err
