"""What the LM tests measure a LoRA step by: each completion's mean log-probability per token, no grad."""

import torch

from agents.objectives.batch import step_mean


def mean_logprob(grpo, pairs, chunk: int = 8) -> torch.Tensor:
    """[n] mean log-probability per completion token of (prompt ids, completion ids) ``pairs`` under ``grpo``'s model."""
    with torch.no_grad():
        return torch.cat([step_mean(*grpo.token_logprobs(pairs[i:i + chunk])) for i in range(0, len(pairs), chunk)])
