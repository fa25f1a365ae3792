"""The optimiser step shared by full-graph, mini-batch and distributed training."""

__all__ = ["backward_step"]


def backward_step(loss, opt, scaler=None):
    """Clear the gradients, back-propagate ``loss`` and step ``opt``.

    With a :class:`torch.amp.GradScaler` (fp16 autocast) the loss is scaled before the backward pass
    and the step is skipped when the scaled gradients overflow, as the scaler decides.
    """
    opt.zero_grad(set_to_none=True)
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    else:
        loss.backward()
        opt.step()
