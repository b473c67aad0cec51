"""Command line: ``python -m run_duel --env GAME --player-1 A --player-2 B [options]``.

Prints the duel JSON (compact; ``--indent`` for 2-space indentation) to stdout or ``--output FILE``;
progress goes to stderr (a bar on a terminal, one line per match otherwise). Bad arguments: one line on
stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import json
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import orjson

from environments import UnknownGameError, all_slugs, get_info
from run_duel import agent_formats
from run_duel.agent_data import DEFAULT_DATA_MB, MB, DataError, load_host_folder, store_in_host_folder
from run_duel.api import SANDBOXES, get_sandbox, play_duel
from run_duel.referee import limits_for
from run_duel.sandbox.base import AGENT_ENTRY_FILES, LaunchSpec, Limits, SandboxError, has_agent_entry


class UsageError(Exception):
    """A bad command-line argument; the message is shown as is."""


def _extract_zip(path: Path) -> Path:
    target = Path(tempfile.mkdtemp(prefix="arena-cli-agent-"))
    target.chmod(0o755)  # a root referee's agents run as an unprivileged user (sandbox/local.py)
    atexit.register(shutil.rmtree, target, True)
    try:
        with zipfile.ZipFile(path) as archive:
            for member in archive.namelist():
                dest = (target / member).resolve()
                if not dest.is_relative_to(target.resolve()):
                    raise UsageError(f"{path}: unsafe path {member!r} in the zip")
            archive.extractall(target)
    except zipfile.BadZipFile as exc:
        raise UsageError(f"{path} is not a valid zip file: {exc}") from exc
    found = sorted((p for name in AGENT_ENTRY_FILES for p in target.rglob(name)), key=lambda p: len(p.parts))
    if not found:
        raise UsageError(f"{path}: the zip holds no player.py (or Kaggle-style main.py)")
    return found[0].parent


#: Builds a folder or zip into an image for the Docker sandbox (``builder.cli_images.resolve_docker_agent``,
#: passed by ``python -m builder.cli_images``: the referee sits below the builder and never imports it).
ImageForPath = Callable[[str], str]


def resolve_agent(ref: str, sandbox_name: str, image_for_path: ImageForPath | None = None) -> str:
    """Turn a command-line agent reference into ``LaunchSpec.agent`` for ``sandbox_name``.

    ``local``: a folder holding ``player.py`` (or a Kaggle ``main.py``) or a zip of one. ``docker``: an
    image name, or (with ``image_for_path``) a folder/zip that it builds into an image first.
    """
    path = Path(ref)
    if sandbox_name == "docker":
        if not path.exists():
            return ref  # an image name
        if image_for_path is None:
            raise UsageError(
                f"{ref}: with --sandbox docker give an image name; to build folders and zips into images "
                "first, run `python -m builder.cli_images` with the same arguments"
            )
        try:
            return str(image_for_path(str(path)))
        except Exception as exc:  # the builder's errors vary; the CLI reports them in one line
            raise SandboxError(f"could not build an image from {ref}: {exc}") from exc
    if path.is_file() and zipfile.is_zipfile(path):
        return str(_extract_zip(path))
    if not path.is_dir():
        raise UsageError(f"{ref}: no such folder (expected a folder holding player.py, or a zip)")
    if not has_agent_entry(path):
        raise UsageError(f"{ref}: no player.py (or Kaggle-style main.py) in this folder")
    return str(path.resolve())


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _parser(prog: str = "python -m run_duel") -> argparse.ArgumentParser:
    parser = _Parser(prog=prog, description="Play a duel between two agents and print the duel JSON.")
    parser.add_argument("--env", required=True, help=f"game slug ({', '.join(all_slugs())})")
    parser.add_argument("--player-1", required=True, help="agent folder/zip (local) or image name (docker)")
    parser.add_argument("--player-2", required=True, help="agent folder/zip (local) or image name (docker)")
    parser.add_argument(
        "--matches", type=int, help="number of matches (default: the game's matches_per_duel)"
    )
    parser.add_argument("--sandbox", default="local", help=f"one of: {', '.join(SANDBOXES)} (default local)")
    parser.add_argument("--no-bwrap", action="store_true", help="local sandbox: do not use bubblewrap")
    parser.add_argument("--output", help="write the JSON to this file instead of stdout")
    parser.add_argument(
        "--seed",
        type=int,
        help="seed the agents' random/numpy RNGs (player 2 gets seed + 1) and, in games of chance, the deal",
    )
    parser.add_argument("--no-states", action="store_true", help="leave the per-move states out of the JSON")
    parser.add_argument("--indent", action="store_true", help="indent the JSON (default: compact)")
    for n in (1, 2):
        parser.add_argument(
            f"--data-{n}",
            metavar="DIR",
            help=f"player {n}'s persistent data folder ($ARENA_DATA_DIR): filled from DIR, and DIR's content "
            "replaced by what the agent left there when it played to the end",
        )
    parser.add_argument(
        "--data-mb",
        type=int,
        help=f"size of the data folders in MB (default: the game's data_mb, else {DEFAULT_DATA_MB})",
    )
    for n in (1, 2):
        parser.add_argument(
            f"--format-{n}",
            choices=agent_formats.CHOICES,
            default="auto",
            help=f"player {n}'s agent format (default auto: rl-arena when environment.yml sits next to "
            "player.py in one of rl-arena's games, else native)",
        )
    parser.add_argument(
        "--no-pin",
        action="store_true",
        help="do not pin the duel to one free core (default: pinned unless $DUEL_CPU_PINNING=off)",
    )
    return parser


class _Progress:
    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.tty = stream.isatty()

    def __call__(self, done: int, total: int) -> None:
        if self.tty:
            width = 30
            filled = width * done // total
            self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} matches")
            if done == total:
                self.stream.write("\n")
        else:
            self.stream.write(f"match {done}/{total} done\n")
        self.stream.flush()


def _check(
    args: argparse.Namespace, image_for_path: ImageForPath | None = None
) -> tuple[LaunchSpec, LaunchSpec]:
    try:
        get_info(args.env)
    except UnknownGameError as exc:
        raise UsageError(str(exc)) from exc
    if args.sandbox not in SANDBOXES:
        raise UsageError(f"unknown sandbox {args.sandbox!r}; choose one of: {', '.join(SANDBOXES)}")
    if args.matches is not None and args.matches < 1:
        raise UsageError(f"--matches must be a positive integer, got {args.matches}")
    if args.data_mb is not None and args.data_mb < 1:
        raise UsageError(f"--data-mb must be a positive integer, got {args.data_mb}")
    data_mb = 0
    if args.data_1 or args.data_2:
        data_mb = args.data_mb or get_info(args.env).data_mb or DEFAULT_DATA_MB
    specs = []
    for n, ref in ((1, args.player_1), (2, args.player_2)):
        env = {} if args.seed is None else {"ARENA_SEED": str(args.seed + n - 1)}
        folder = getattr(args, f"data_{n}")
        data = None
        if folder:
            if not Path(folder).is_dir():
                raise UsageError(f"--data-{n} {folder}: no such folder")
            try:
                data = load_host_folder(folder, data_mb * MB)
            except DataError as exc:
                raise UsageError(f"--data-{n}: {exc}") from exc
        try:
            agent_format, _ = agent_formats.resolve(
                getattr(args, f"format_{n}"), args.env, agent_formats.root_files(ref)
            )
        except ValueError as exc:
            raise UsageError(f"--format-{n}: {exc}") from exc
        specs.append(
            LaunchSpec(
                agent=resolve_agent(ref, args.sandbox, image_for_path),
                agent_format=agent_format,
                env=env,
                labels={"seat": str(n)},
                limits=Limits(data_mb=data_mb),
                data=data,
            )
        )
    return specs[0], specs[1]


def _store_data(args: argparse.Namespace, specs: tuple[LaunchSpec, LaunchSpec]) -> None:
    """Write what each agent left in its data folder back to its ``--data-N`` folder."""
    for n, spec in ((1, specs[0]), (2, specs[1])):
        folder = getattr(args, f"data_{n}")
        if spec.data is None or not folder:
            continue
        if spec.data.saved is None:
            print(f"run_duel: --data-{n} {folder} unchanged: {spec.data.problem}", file=sys.stderr)
            continue
        store_in_host_folder(spec.data.saved, folder, spec.limits.data_mb * MB)
        if spec.data.problem:
            print(f"run_duel: --data-{n}: {spec.data.problem}", file=sys.stderr)


def main(
    argv: list[str] | None = None,
    *,
    image_for_path: ImageForPath | None = None,
    prog: str = "python -m run_duel",
) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 the duel could not run, 2 bad arguments).
    ``image_for_path`` lets ``--sandbox docker`` take folders and zips (``builder.cli_images``)."""
    try:
        args = _parser(prog).parse_args(argv)
        spec_1, spec_2 = _check(args, image_for_path)
        options = {"use_bwrap": False} if args.sandbox == "local" and args.no_bwrap else {}
        sandbox = get_sandbox(args.sandbox, **options)
    except UsageError as exc:
        print(f"run_duel: error: {exc}", file=sys.stderr)
        return 2
    except SandboxError as exc:
        print(f"run_duel: error: {exc}", file=sys.stderr)
        return 1
    limits = None
    if args.data_mb is not None:  # the size asked for, over the game's own data_mb
        limits = dataclasses.replace(limits_for(get_info(args.env), spec_1.limits), data_mb=args.data_mb)
    try:
        duel = play_duel(
            args.env,
            sandbox,
            spec_1,
            spec_2,
            matches=args.matches,
            limits=limits,
            on_progress=_Progress(sys.stderr),
            record_states=not args.no_states,
            pin_cpus=False if args.no_pin else None,
            seed=args.seed,
        )
    except KeyboardInterrupt:
        print("run_duel: interrupted", file=sys.stderr)
        return 130
    finally:
        sandbox.close()
    _store_data(args, (spec_1, spec_2))
    data = encode_duel(duel, indent=args.indent)
    if args.output:
        Path(args.output).write_bytes(data)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    return 0


def encode_duel(duel: dict[str, Any], *, indent: bool = False) -> bytes:
    """The duel JSON as UTF-8 bytes ending in a newline: compact (orjson, about 10x faster than the
    standard library's indented output on a duel with states), or indented by 2 with ``indent``."""
    option = orjson.OPT_APPEND_NEWLINE | orjson.OPT_NON_STR_KEYS
    if indent:
        option |= orjson.OPT_INDENT_2
    try:
        return orjson.dumps(duel, option=option)
    except TypeError:  # something orjson does not take (e.g. an integer beyond 64 bits)
        return (json.dumps(duel, indent=2 if indent else None) + "\n").encode()
