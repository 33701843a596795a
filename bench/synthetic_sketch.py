#!/usr/bin/env python3
"""Writes a synthetic access sketch for a struct of the fixture BTF: HOT of its top-level
members touched, WRITERS of them written from many CPUs, the rest read, on a few code paths.
Used by bench/optimize_speed.py to time `lineup optimize` on large hot sets.

    python3 bench/synthetic_sketch.py rq 24 8 > /tmp/rq.toml
"""
import json, random, subprocess, sys

def members(type_name, lineup="./target/release/lineup"):
    out = subprocess.run([lineup, "layout", "--btf", "data/vmlinux-6.18.44.btf", type_name, "--json"],
                         check=True, capture_output=True, text=True).stdout
    v = json.loads(out)
    t = v["types"][0] if isinstance(v, dict) else v[0]
    return [m for m in t["members"] if m["name"] and m["size"] <= 64 and "bit_size" not in m]

def sketch(type_name, hot, writers, seed=1):
    rnd = random.Random(seed)
    ms = members(type_name)
    rnd.shuffle(ms)
    ms = ms[:hot]
    lines = ['[sketch]', f'title = "synthetic: {hot} hot members of {type_name}, {writers} written"',
             '[machine]', 'cpus = 160', 'numa_nodes = 2', '[[type]]', f'name = "{type_name}"']
    paths = [f"path{i}" for i in range(max(2, hot // 4))]
    for i, m in enumerate(ms):
        kind = "rmw" if i < writers else "load"
        cpus = rnd.choice([1, 8, 40, 160]) if i < writers else 160
        lines += ['[[type.access]]', f'field = "{m["name"]}"', f'kind = "{kind}"',
                  f'by = "{rnd.choice(paths)}"', f'weight = {rnd.randint(1, 100)}', f'cpus = {cpus}']
    return "\n".join(lines) + "\n"

if __name__ == "__main__":
    t, hot, writers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    sys.stdout.write(sketch(t, hot, writers))
