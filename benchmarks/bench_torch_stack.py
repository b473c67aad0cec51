"""What a torch agent costs: its first and second build on the shared torch stack, in time and in disk added
on the host and in the registry.

    .venv/bin/python benchmarks/bench_torch_stack.py [--rebuild-stack]

1. The stack image (``scripts/build_stack_image.sh torch``): the time of the script (0.5 s when up to date;
   ``--rebuild-stack`` forces a full rebuild, about three minutes) and what the stack adds over the base.
2. Two agents with the same conda ``environment.yml`` (pytorch, numpy; ``tests/docker/torch_agent``), new
   content at every run (never a cached image), built one after the other and pushed to a private registry
   started for the run (empty: the first push carries the stack's layers, as on a fresh deployment; the
   second shows what every later torch agent costs). For each: build time (``build_submission``), push
   time, the image's size, what it adds over the stack (the owner's figure, by size arithmetic), the bytes
   of its layers this host did not hold before (the stack's and the earlier agent's are shared: layer
   digests compared, sizes from the image history), the bytes added to the registry's storage (what a
   worker that already holds the stack's layers pulls is the second agent's figure), and how many layers
   the push uploaded or found already there.

The machine is shared: the load average is printed before and after. The agents' images are removed at the
end (the stack stays).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "docker"))

from registry_support import PrivateRegistry  # noqa: E402

from builder import build_submission  # noqa: E402
from builder.stacks import installed_stacks  # noqa: E402
from run_duel.registry import RegistryConfig  # noqa: E402
from run_duel.sandbox.docker_client import get_client  # noqa: E402

AGENT = REPO / "tests" / "docker" / "torch_agent"
MB = 1e6


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _layer_sizes(ref: str) -> dict[str, int]:
    """diff id -> bytes of each layer of image ``ref`` (history entries that made a layer, oldest first)."""
    api = get_client().api
    layers = get_client().images.get(ref).attrs["RootFS"]["Layers"]

    def made_a_layer(entry: dict) -> bool:
        command = entry.get("CreatedBy") or ""
        return "#(nop)" not in command or " COPY " in command or " ADD " in command

    sizes = [int(e.get("Size") or 0) for e in reversed(api.history(ref)) if made_a_layer(e)]
    if len(sizes) != len(layers):
        raise SystemExit(f"cannot match the history of {ref} to its {len(layers)} layers")
    return dict(zip(layers, sizes, strict=True))


def _push(ref: str, registry) -> tuple[float, int, int]:
    """Push ``ref`` to ``registry``; (seconds, layers uploaded, layers the registry already had)."""
    api = get_client().api
    remote, tag = registry.repository("rl-arena-agent"), ref.rsplit(":", 1)[1]
    api.tag(ref, remote, tag)
    started = time.monotonic()
    statuses: dict[str, str] = {}
    for item in api.push(remote, tag=tag, stream=True, decode=True):
        if item.get("error"):
            raise SystemExit(f"the push failed: {item['error']}")
        if item.get("id") and item.get("status") in ("Pushed", "Layer already exists"):
            statuses[item["id"]] = item["status"]
    seconds = time.monotonic() - started
    api.remove_image(f"{remote}:{tag}")
    uploaded = sum(1 for s in statuses.values() if s == "Pushed")
    return seconds, uploaded, len(statuses) - uploaded


def _zip(folder: Path, dest: Path) -> Path:
    subprocess.run(["zip", "-qr", str(dest), "."], cwd=folder, check=True)
    return dest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rebuild-stack", action="store_true", help="rebuild the stack image (minutes)")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")

    command = ["bash", str(REPO / "scripts" / "build_stack_image.sh"), "torch"]
    started = time.monotonic()
    subprocess.run([*command, *(["--force"] if args.rebuild_stack else [])], check=True)
    stack_s = time.monotonic() - started
    client = get_client()
    stack = next(s for s in installed_stacks(client) if s.spec.name == "torch")
    base = client.images.get(os.environ.get("AGENT_BASE_IMAGE", "rl-arena-agent-base:1"))
    stack_own = stack.size_bytes - int(base.attrs["Size"])
    print(
        f"stack {stack.image} ({stack.describe()}): scripts/build_stack_image.sh {stack_s:.1f} s "
        f"({'rebuilt' if args.rebuild_stack else 'as found'}), {stack.size_bytes / MB:.0f} MB, "
        f"{stack_own / MB:.0f} MB over the base"
    )

    work = Path(tempfile.mkdtemp(prefix="bench-torch-"))
    registry = PrivateRegistry(work / "registry").start()
    config = RegistryConfig.parse(registry.address)
    built = []
    try:
        header = ("agent", "build s", "push s", "image MB", "own MB", "host +MB", "registry +MB", "layers")
        print("{:<7} {:>8} {:>7} {:>9} {:>7} {:>9} {:>13} {}".format(*header))
        known = set(_layer_sizes(stack.image))  # the layers this host already holds for torch agents
        for name in ("first", "second"):
            folder = work / name
            shutil.copytree(AGENT, folder)
            with (folder / "player.py").open("a") as handle:
                handle.write(f"\n# {name} {uuid.uuid4().hex}\n")
            archive = _zip(folder, work / f"{name}.zip")
            registry_before = _du(registry.storage)
            result = build_submission(archive, backend="docker", work_dir=work, registry=None)
            if not result.ok:
                raise SystemExit(f"the {name} build failed: {result.error}\n{result.log[-2000:]}")
            built.append(result)
            layers = _layer_sizes(result.agent_ref)
            host_added = sum(size for layer, size in layers.items() if layer not in known)
            known.update(layers)
            push_s, uploaded, present = _push(result.agent_ref, config)
            registry_added = _du(registry.storage) - registry_before
            print(
                f"{name:<7} {result.duration_s:>8.1f} {push_s:>7.1f} {result.image_size_bytes / MB:>9.0f} "
                f"{result.added_bytes / MB:>7.0f} {host_added / MB:>9.1f} {registry_added / MB:>13.1f} "
                f"{uploaded:>4} up, {present} there"
            )
        print("notes of the first build:\n  " + "\n  ".join(built[0].package_notes))
    finally:
        registry.stop()
        for result in built:
            image = client.images.get(result.agent_ref)
            for tag in image.tags:
                client.images.remove(tag)
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
