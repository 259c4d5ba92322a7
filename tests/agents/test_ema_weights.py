"""hint_sd's slow teacher (agents/learners/ema_weights.py): the average follows the weights at rate 1 - ema, is swapped into
the model and back whatever happens inside, and travels in a checkpoint."""

import pytest
import torch

from agents.learners.ema_weights import EMAWeights


def test_the_average_lags_the_weights_and_is_swapped_in_and_back():
    w = torch.nn.Parameter(torch.zeros(2))
    ema = EMAWeights([w], 0.75)
    with torch.no_grad():
        w.fill_(4.0)
    ema.update()  # 0.75 x 0 + 0.25 x 4
    with ema.swapped():
        assert w.tolist() == [1.0, 1.0]
    assert w.tolist() == [4.0, 4.0]
    ema.update()  # 0.75 x 1 + 0.25 x 4
    with pytest.raises(RuntimeError), ema.swapped():
        assert w.tolist() == [1.75, 1.75]
        raise RuntimeError("inside")
    assert w.tolist() == [4.0, 4.0]  # the policy's own weights come back after a failure inside
    other = EMAWeights([torch.nn.Parameter(torch.zeros(2))], 0.5)
    other.load_state_dict(ema.state_dict())
    assert other.ema == 0.75 and other.average[0].tolist() == [1.75, 1.75]
