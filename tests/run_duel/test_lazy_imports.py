"""Start-up stays lean: each entry point imports only what its path needs (checked in fresh interpreters).

``import run_duel.cli`` / ``run_duel.api`` / ``environments`` load neither numpy, PyYAML, the Docker SDK nor
jsonschema: numpy and PyYAML come with the first game loaded from the registry, the Docker SDK only with
the Docker sandbox, jsonschema only when a duel JSON is validated. The Docker sandbox does not load the
local sandbox's module.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from run_duel_helpers import RANDOM, REPO

HEAVY = ("numpy", "yaml", "docker", "requests", "jsonschema")


def loaded_after(code: str) -> dict[str, bool]:
    """Run ``code`` in a fresh interpreter; which of ``HEAVY`` and our sandboxes are then imported."""
    probe = textwrap.dedent(code) + textwrap.dedent(
        f"""
        import json as _json, sys as _sys
        _names = {[*HEAVY, "run_duel.sandbox.local", "run_duel.sandbox.docker"]!r}
        print(_json.dumps({{n: n in _sys.modules for n in _names}}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=REPO, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_importing_the_entry_points_loads_nothing_heavy_and_a_local_duel_never_the_docker_sdk(tmp_path):
    output = tmp_path / "duel.json"
    loaded = loaded_after(
        f"""
        import sys
        import run_duel.cli, run_duel.api, environments
        early = [name for name in {HEAVY!r} if name in sys.modules]
        assert early == [], f"imported at start-up: {{early}}"
        assert run_duel.cli.main(["--env", "tic-tac-toe", "--player-1", {str(RANDOM)!r},
                                  "--player-2", {str(RANDOM)!r}, "--matches", "1", "--sandbox", "local",
                                  "--no-pin", "--output", {str(output)!r}]) == 0
        """
    )
    assert json.loads(output.read_text())["num_matches"] == 1
    assert loaded["numpy"] and loaded["yaml"] and loaded["run_duel.sandbox.local"]  # the game and sandbox
    assert not any(loaded[name] for name in ("docker", "requests", "jsonschema", "run_duel.sandbox.docker"))


def test_the_docker_sandbox_module_does_not_load_the_local_sandbox():
    loaded = loaded_after("import run_duel.sandbox.docker")
    assert loaded["docker"]  # the SDK is this sandbox's own dependency
    assert not loaded["run_duel.sandbox.local"]
    assert not loaded["numpy"] and not loaded["jsonschema"]
