import torch


def train_step(model, optimizer, loss_fn, x, y) -> float:
    """One optimisation step; return the loss before the update."""
    raise NotImplementedError
