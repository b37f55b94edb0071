import torch


def train_step(model, optimizer, loss_fn, x, y) -> float:
    """One optimisation step; return the loss before the update."""
    model.train()
    optimizer.zero_grad()  # gradients accumulate in .grad unless cleared
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()
