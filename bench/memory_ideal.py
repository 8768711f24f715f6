#!/usr/bin/env python3
"""How close to memory_bench.py's lower bound can any job order get? A clairvoyant check of the bound's slack.

Usage: python3 bench/memory_ideal.py [--seeds 1-10] [--tries 40] [--budget-mb 1536] [--usable-mb 1426]
                                     [--memory-margin 1.05]

For each seed's graph (bench/memory_bench.py's workload), list scheduling with every job's exact memory curve
(linear ramp, plateau) and its nominal time: at each 10 ms step the ready jobs are walked in priority order and
one starts if its whole curve fits beside the running jobs' curves until it ends, under --usable-mb (default:
the box less the build guard's cap, 1/32 of it within 16-64 MiB, and the guarded reserve, max(2 %, min(256 MiB,
4 %))), at most 8 at once; CPUs are ignored (memhog sleeps through its hold). The order is one like the builder's
(jobs above half the box first, then duration grown by memory share; not BuilderEdgeWeight itself), then the
best of --tries random swaps of it. No real scheduler knows as much, so the ratios printed are
what the lower bound's slack alone costs on these graphs. --memory-margin counts every curve that much higher, as
the real build counts a job measured once (its estimate is 1.05x its peak): what the same clairvoyance achieves with
the build's own margin.
"""
import argparse
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memory_bench  # noqa: E402


def memory_at(job, ms):
    if ms < 0 or ms >= job.ramp_ms + job.hold_ms:
        return 0.0
    return job.mb * min(1.0, ms / job.ramp_ms) if job.ramp_ms else float(job.mb)


def makespan(jobs, order, usable_mb, slots=8, step_ms=10):
    """Seconds to run every job but the final link in `order`, plus the link."""
    link, work = jobs[-1], jobs[:-1]
    running, pending, now = [], list(order), 0
    while pending or running:
        running = [(job, start) for job, start in running if now < start + job.ramp_ms + job.hold_ms]
        for index in list(pending):
            if len(running) >= slots:
                break
            job = work[index]
            fits = all(sum(memory_at(other, now + ms - start) for other, start in running) + memory_at(job, ms)
                       <= usable_mb for ms in range(0, job.ramp_ms + job.hold_ms + 1, step_ms))
            if fits:
                running.append((job, now))
                pending.remove(index)
        if not pending and not running:
            break
        now += step_ms
    return now / 1000.0 + link.seconds


def best_order(jobs, budget_mb, usable_mb, tries, rng):
    count = len(jobs) - 1
    weight = lambda i: (10 if jobs[i].mb > budget_mb / 2 else 0) + jobs[i].seconds * (1 + jobs[i].mb / budget_mb)
    order = sorted(range(count), key=weight, reverse=True)
    builder = best = makespan(jobs, order, usable_mb)
    for _ in range(tries):
        trial = order[:]
        for _ in range(rng.randint(1, 6)):
            a, b = rng.randrange(count), rng.randrange(count)
            trial[a], trial[b] = trial[b], trial[a]
        wall = makespan(jobs, trial, usable_mb)
        if wall < best:
            best, order = wall, trial
    return builder, best


def usable_mb(budget_mb):
    """The box less the build guard's cap and the guarded reserve, as the admission policy computes them."""
    guard_cap = min(64, max(16, budget_mb / 32))
    reserve = max(0.02 * budget_mb, min(256, 0.04 * budget_mb))
    return int(budget_mb - guard_cap - reserve)


def clairvoyant(seed, budget_mb, usable=None, tries=40, memory_margin=1.0):
    """(builder-like order s, best order s) for one seed's graph; the random swaps are seeded by the seed."""
    jobs = memory_bench.workload(seed, budget_mb)
    for job in jobs[:-1]:
        job.mb = int(job.mb * memory_margin)
    return best_order(jobs, budget_mb, usable or usable_mb(budget_mb), tries, random.Random(seed))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", default="1-10")
    parser.add_argument("--tries", type=int, default=40)
    parser.add_argument("--budget-mb", type=int, default=1536)
    parser.add_argument("--usable-mb", type=int, default=None)
    parser.add_argument("--memory-margin", type=float, default=1.0)
    args = parser.parse_args()
    usable = args.usable_mb or usable_mb(args.budget_mb)
    first, _, last = args.seeds.partition("-")
    seeds = range(int(first), int(last or first) + 1)
    print("| seed | bound s | builder order s | best order s | builder / bound | best / bound |")
    print("|---|---|---|---|---|---|")
    for seed in seeds:
        jobs = memory_bench.workload(seed, args.budget_mb)
        bound, _ = memory_bench.lower_bound(jobs, 8, args.budget_mb, 0.0, 2)
        builder, best = clairvoyant(seed, args.budget_mb, usable, args.tries, args.memory_margin)
        print(f"| {seed} | {bound:.2f} | {builder:.2f} | {best:.2f} | {builder / bound:.2f} | {best / bound:.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
