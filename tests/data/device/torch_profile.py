"""Profiles a tiny CUDA MLP with torch.profiler (schedule wait=1, warmup=1,
active=3: 5 steps run, steps #2..#4 recorded) and exports a Chrome trace from
on_trace_ready.

usage: python3 torch_profile.py OUT.pt.trace.json
"""
import sys

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(256, 64, device="cuda")
    y = torch.randint(0, 10, (256,), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(2):  # warm up outside the profile
        step()
    torch.cuda.synchronize()

    def on_ready(p):
        torch.cuda.synchronize()
        p.export_chrome_trace(out)

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
                 on_trace_ready=on_ready, record_shapes=True) as prof:
        for _ in range(5):
            with record_function("train_step"):
                loss = step()
            prof.step()
    print("loss", loss.item())


if __name__ == "__main__":
    main()
