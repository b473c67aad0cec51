"""``rl-arena``: test agents locally with the arena's own referee, submit them, follow them, fetch results.

Local (no server, no account)::

    rl-arena check --env connect-four ./my_agent              # the smoke test the arena runs
    rl-arena duel --env connect-four ./my_agent random        # one duel; bundled: random, minimax
    rl-arena tournament --env connect-four ./a ./b minimax    # round robin + TrueSkill table

With an arena (``--server URL`` or ``$RL_ARENA_SERVER``; the token comes from ``login``)::

    rl-arena login
    rl-arena submit connect-four my-bot ./my_agent --public
    rl-arena status [REVISION]
    rl-arena download COMPETITOR --out results/

Exit status: 0 success, 1 failure (explained in one line on stderr), 2 bad arguments.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from rl_arena_client import __version__
from rl_arena_client.agents import (
    bundled_names,
    resolve,
    syntax_error,
)
from rl_arena_client.api import (
    DEFAULT_SERVER,
    Client,
    CliError,
    load_config,
    save_config,
)
from rl_arena_client.submission import upload_agent

#: Revision states in the order a healthy submission goes through them.
PROGRESS_STATES = ["UPLOADED", "BUILDING", "BUILT", "TESTING", "ELIGIBLE"]
FAILED_STATES = {"BUILD_FAILED", "TEST_FAILED", "REJECTED"}


def progress_bar(state: str, width: int = 30) -> str:
    """A one-line bar for a revision state, e.g. ``[##########----------] BUILDING``."""
    if state in FAILED_STATES:
        return f"[{'!' * width}] {state}"
    step = PROGRESS_STATES.index(state) if state in PROGRESS_STATES else 0
    filled = round(width * step / (len(PROGRESS_STATES) - 1))
    return f"[{'#' * filled}{'-' * (width - filled)}] {state}"


def _client(args: argparse.Namespace, need_token: bool = True) -> Client:
    cfg = load_config()
    server = args.server or cfg.get("server") or DEFAULT_SERVER
    token = cfg.get("token")
    if need_token and not token:
        raise CliError("not logged in: run `rl-arena login` first (or set RL_ARENA_TOKEN)")
    return Client(server, token)


# --- with a server -------------------------------------------------------------------------------------


def cmd_login(args: argparse.Namespace, out: TextIO) -> int:
    """Exchange e-mail and password for an API token and save it."""
    client = _client(args, need_token=False)
    email = args.email or input("E-mail: ")
    password = os.environ.get("RL_ARENA_PASSWORD") or getpass.getpass("Password: ")
    data = client.request("POST", "/api/auth/token/", json_body={"email": email, "password": password})
    path = save_config({"server": client.server, "token": data["token"]})
    print(f"Logged in to {client.server} as {email}; token saved in {path}", file=out)
    return 0


def wait_for_revision(client: Client, revision_id: int, out: TextIO, poll: float, timeout: float) -> dict:
    """Poll a revision until it is eligible or failed, drawing a progress bar; returns its last JSON."""
    deadline = time.monotonic() + timeout
    last_line = ""
    tty = out.isatty()
    while True:
        rev = client.request("GET", f"/api/revisions/{revision_id}/")
        line = progress_bar(rev["state"])
        if line != last_line:
            print(("\r" if tty else "") + line, end="" if tty else "\n", file=out, flush=True)
            last_line = line
        if rev["state"] == "ELIGIBLE" or rev["state"] in FAILED_STATES:
            if tty:
                print(file=out)
            return rev
        if time.monotonic() > deadline:
            if tty:
                print(file=out)
            raise CliError(f"gave up waiting after {timeout:.0f}s; revision {revision_id} is {rev['state']}")
        time.sleep(poll)


def cmd_submit(args: argparse.Namespace, out: TextIO) -> int:
    """Check and zip an agent folder (or take a zip as it is), upload it as a new revision, follow it until
    ranked or failed."""
    client = _client(args)
    rev = upload_agent(
        client,
        args.game,
        args.name,
        Path(args.folder).expanduser(),
        public=args.public,
        wipe_data=args.wipe_data,
        agent_format=args.format,
    )
    print(
        f"Uploaded {rev['zip_bytes']} bytes: {args.name} revision {rev.get('version')} (id {rev['id']})",
        file=out,
    )
    if args.no_wait:
        return 0
    final = wait_for_revision(client, rev["id"], out, args.poll, args.timeout)
    if final["state"] == "ELIGIBLE":
        print(f"Ranked: {final.get('url') or ''}".rstrip(), file=out)
        return 0
    print(f"Failed: {final.get('failure') or final['state']}", file=out)
    if final.get("url"):
        print(f"Logs: {final['url']}", file=out)
    return 1


def cmd_status(args: argparse.Namespace, out: TextIO) -> int:
    """One revision, or all my competitors: whether each plays (or is paused), its latest revision."""
    client = _client(args)
    if args.revision:
        rev = client.request("GET", f"/api/revisions/{args.revision}/")
        print(f"revision {rev['id']} (v{rev.get('version')}): {progress_bar(rev['state'])}", file=out)
        if rev.get("failure"):
            print(f"  {rev['failure']}", file=out)
        return 0
    rows = list(client.pages("/api/competitors/?mine=1"))
    if not rows:
        print("You have no competitors yet: `rl-arena submit GAME NAME ./folder`", file=out)
        return 0
    print(f"{'GAME':<14} {'COMPETITOR':<24} {'PLAYING':<9} {'LATEST UPLOAD':<17} SKILL", file=out)
    for comp in rows:
        latest = comp.get("latest_revision") or {}
        rating = comp.get("rating") or {}
        score = rating.get("conservative")
        score_text = f"{score:.2f}" if isinstance(score, int | float) else "-"
        if comp.get("status") == "PAUSED":
            playing = "PAUSED"
        elif comp.get("current_version"):
            playing = f"v{comp['current_version']}"
        else:
            playing = "-"
        upload = f"v{latest.get('version', '-')} {latest.get('state', '-')}"
        print(
            f"{comp['environment']:<14} {comp['name']:<24} {playing:<9} {upload:<17} {score_text}", file=out
        )
        if comp.get("status") == "PAUSED":
            reason = comp.get("pause_reason") or "paused"
            print(f"{'':<14} paused, it plays no duels: {reason.splitlines()[0]}", file=out)
    return 0


def cmd_download(args: argparse.Namespace, out: TextIO) -> int:
    """Fetch a competitor's duels and replays (and, for its owner, its logs) into a folder."""
    from rl_arena_client.download import download

    cfg = load_config()
    client = Client(args.server or cfg.get("server") or DEFAULT_SERVER, cfg.get("token"))
    folder = Path(args.out)
    summary = download(client, args.competitor, folder, limit=args.limit, log=sys.stderr)
    data = "" if summary.data_bytes is None else f"; its data folder (data.tar, {summary.data_bytes} bytes)"
    print(
        f"{summary.duels} duels ({summary.matches} matches) fetched, {summary.skipped} already there; "
        f"logs of {summary.revision_logs} revisions{data}; in {folder}",
        file=out,
    )
    return 0


# --- local ---------------------------------------------------------------------------------------------


def _agents(refs: list[str], game: str, formats: list[str] | None = None) -> list[Any]:
    """Local agents for ``refs``, each in the format asked for (``auto``: detected from its files,
    ``run_duel.agent_formats``)."""
    from rl_arena_client.local import Agent
    from run_duel.api import agent_formats

    agents: list[Agent] = []
    seen: dict[str, int] = {}
    for i, ref in enumerate(refs):
        folder, name = resolve(ref)
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            name = f"{name}-{seen[name]}"
        choice = formats[i] if formats else "auto"
        try:
            agent_format, _ = agent_formats.resolve(choice, game, agent_formats.root_files(folder))
        except ValueError as exc:
            raise CliError(f"{ref}: {exc}") from None
        agents.append(Agent(folder, name, agent_format))
    return agents


def _result_line(duel: dict, names: tuple[str, str]) -> str:
    who = {"PLAYER_1": names[0], "PLAYER_2": names[1]}
    p1, p2 = duel["player_1_score"], duel["player_2_score"]
    text = f"{names[0]} {p1:g} : {p2:g} {names[1]}"
    text += (
        f"  (wins {duel['player_1_wins']}/{duel['player_2_wins']}, draws {duel['draws']}, "
        f"errors {duel['player_1_errors']}/{duel['player_2_errors']}"
    )
    text += f", ours {duel['other_errors']})" if duel["other_errors"] else ")"
    if duel["result"] == "ERROR":
        text += f"\nno result: {duel['error_msg']}"
    for seat in ("PLAYER_1", "PLAYER_2"):
        erred = [m for m in duel["matches"] if m["result"] == f"{seat}_ERROR"]
        if erred:
            first = erred[0]
            text += f"\n{who[seat]} erred in {len(erred)} match(es); first: {first['error_kind']}: "
            text += _named(first["error_msg"].strip(), names)
    return text


def _named(message: str, names: tuple[str, str]) -> str:
    """The referee's ``PLAYER_1`` / ``PLAYER_2`` replaced by the agents' names."""
    return message.replace("PLAYER_1", f"{names[0]} (player 1)").replace("PLAYER_2", f"{names[1]} (player 2)")


def _match_line(i: int, match: dict, names: tuple[str, str]) -> str:
    first = names[0] if match["first_player"] == "PLAYER_1" else names[1]
    result = match["result"]
    text = {
        "PLAYER_1_WIN": f"{names[0]} won",
        "PLAYER_2_WIN": f"{names[1]} won",
        "DRAW": "draw",
        "PLAYER_1_ERROR": f"{names[0]} erred ({match.get('error_kind')})",
        "PLAYER_2_ERROR": f"{names[1]} erred ({match.get('error_kind')})",
    }.get(result, "error on our side")
    return f"  match {i:>2}: {first} moved first, {match.get('num_moves', 0)} moves: {text}"


def cmd_duel(args: argparse.Namespace, out: TextIO) -> int:
    """One duel between two local agents, refereed exactly as in the arena."""
    from rl_arena_client import local

    local.check_game(args.env)
    a, b = _agents([args.agent_1, args.agent_2], args.env, [args.format_1, args.format_2])
    sandbox = local.open_sandbox(args.no_bwrap)
    try:
        duel = local.play(
            args.env,
            a,
            b,
            sandbox=sandbox,
            matches=args.matches,
            seed=args.seed,
            progress=local.Progress(sys.stderr, f"{a.name} vs {b.name}"),
            data_folders=(args.data_1, args.data_2),
            notes=lambda note: print(f"data folder {note}", file=sys.stderr),
        )
    finally:
        sandbox.close()
    if args.output:
        Path(args.output).write_text(json.dumps(duel, indent=2) + "\n", encoding="utf-8")
    if args.json:
        out.write(json.dumps(duel, indent=2) + "\n")
        return 0
    isolation = str(duel.get("isolation") or "").split(":")[0].split("(")[0].strip()
    print(f"{args.env}: {a.name} vs {b.name}, {duel['num_matches']} matches ({isolation})", file=out)
    for i, m in enumerate(duel["matches"]):
        print(_match_line(i, m, (a.name, b.name)), file=out)
    print(_result_line(duel, (a.name, b.name)), file=out)
    if args.output:
        print(f"duel JSON (states, actions, logs) written to {args.output}", file=out)
    return 0


def cmd_tournament(args: argparse.Namespace, out: TextIO) -> int:
    """A local round robin with the ladder's TrueSkill rules; prints the table."""
    from rl_arena_client import local

    local.check_game(args.env)
    if len(args.agents) < 2:
        raise CliError("a tournament needs at least two agents")
    agents = _agents(args.agents, args.env)
    sandbox = local.open_sandbox(args.no_bwrap)
    try:
        table, duels = local.tournament(
            args.env, agents, sandbox=sandbox, matches=args.matches, seed=args.seed, log=sys.stderr
        )
    finally:
        sandbox.close()
    width = max(len(r.name) for r in table)
    print(f"{args.env}: {len(agents)} agents, {len(duels)} duels (round robin)", file=out)
    print(
        f"{'#':>2}  {'agent':<{width}}  {'mu-3sigma':>9} {'mu':>6} {'sigma':>6}  {'points':>6}  "
        "W/D/L/E (matches)",
        file=out,
    )
    for r in table:
        print(
            f"{r.rank:>2}  {r.name:<{width}}  {r.skill:>9.2f} {r.mu:>6.2f} {r.sigma:>6.2f}  {r.points:>6}  "
            f"{r.wins}/{r.draws}/{r.losses}/{r.errors}",
            file=out,
        )
    for a, b, duel in duels:
        if duel["player_1_errors"] or duel["player_2_errors"] or duel["result"] == "ERROR":
            print(_result_line(duel, (a.name, b.name)), file=out)
    if args.output:
        data = {
            "environment": args.env,
            "table": [{**r.__dict__, "skill": r.skill} for r in table],
            "duels": [{"player_1": a.name, "player_2": b.name, **d} for a, b, d in duels],
        }
        Path(args.output).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return 0


def cmd_check(args: argparse.Namespace, out: TextIO) -> int:
    """The arena's checks before an agent plays: its Python compiles, then the smoke test (self-play)."""
    from rl_arena_client import local

    local.check_game(args.env)
    (agent,) = _agents([args.agent], args.env, [args.format])
    error = syntax_error(agent.folder)
    if error:
        print(f"FAILED: Python cannot compile the agent:\n{error}", file=out)
        return 1
    sandbox = local.open_sandbox(args.no_bwrap)
    try:
        ok, reason = local.check(args.env, agent, sandbox=sandbox, matches=args.matches)
    finally:
        sandbox.close()
    print(("passed: " if ok else "FAILED: ") + reason, file=out)
    return 0 if ok else 1


def cmd_games(args: argparse.Namespace, out: TextIO) -> int:
    """The games this client knows, with the arena's limits."""
    from environments import all_slugs, get_info

    for slug in all_slugs():
        info = get_info(slug)
        if info.extra.get("synthetic"):
            continue
        print(
            f"{slug:<14} {info.name:<14} {info.matches_per_duel} matches a duel, "
            f"{info.move_time_limit:g} s a move (+ a {info.time_bank_s:g} s bank a match), "
            f"{info.init_time_limit:g} s to start, "
            f"{info.memory_limit_mb} MB",
            file=out,
        )
    return 0


# --- parser --------------------------------------------------------------------------------------------


def _local_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--env", required=True, help="game slug, e.g. connect-four (see `rl-arena games`)")
    p.add_argument("--matches", type=int, help="matches per duel (default: the game's, as in the arena)")
    p.add_argument("--no-bwrap", action="store_true", help="do not run agents inside bubblewrap")


def _format_option(p: argparse.ArgumentParser, flag: str, what: str) -> None:
    p.add_argument(
        flag,
        choices=("auto", "native", "kaggle", "rl-arena"),
        default="auto",
        help=f"{what}: auto (default: rl-arena when environment.yml sits next to player.py in tic-tac-toe, "
        "connect-four or quarto, else native), native, kaggle, or rl-arena (a Player written for the "
        "original rl-arena)",
    )


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for ``rl-arena``."""
    parser = argparse.ArgumentParser(
        prog="rl-arena",
        description="RL Arena client: test agents locally with the arena's referee, submit them, "
        "fetch results.",
        epilog=f"Bundled opponents for local play: {', '.join(bundled_names())}.",
    )
    parser.add_argument("--version", action="version", version=f"rl-arena {__version__}")
    parser.add_argument("--server", help=f"arena URL (default: saved, $RL_ARENA_SERVER or {DEFAULT_SERVER})")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check", help="the arena's checks: syntax, then the smoke test (self-play)")
    p.add_argument("agent", help="agent folder (player.py or Kaggle main.py) or zip")
    _local_options(p)
    _format_option(p, "--format", "the agent's format")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("duel", help="one local duel between two agents")
    p.add_argument("agent_1", help="agent folder or zip, or a bundled opponent (random, minimax)")
    p.add_argument("agent_2", help="agent folder or zip, or a bundled opponent (random, minimax)")
    _local_options(p)
    p.add_argument("--seed", type=int, help="seed the agents' random/numpy RNGs (player 2 gets seed + 1)")
    p.add_argument("--output", help="write the duel JSON (states, actions, logs) to this file")
    p.add_argument("--json", action="store_true", help="print the duel JSON instead of a summary")
    for n in (1, 2):
        _format_option(p, f"--format-{n}", f"agent {n}'s format")
    for n in (1, 2):
        p.add_argument(
            f"--data-{n}",
            metavar="DIR",
            help=f"agent {n}'s persistent data folder ($ARENA_DATA_DIR), kept in DIR between your duels",
        )
    p.set_defaults(func=cmd_duel)

    p = sub.add_parser("tournament", help="a local round robin with a TrueSkill table")
    p.add_argument("agents", nargs="+", metavar="AGENT", help="agent folders or zips, or bundled opponents")
    _local_options(p)
    p.add_argument("--seed", type=int, help="seed the agents' RNGs")
    p.add_argument("--output", help="write the table and every duel JSON to this file")
    p.set_defaults(func=cmd_tournament)

    p = sub.add_parser("games", help="the games and their limits")
    p.set_defaults(func=cmd_games)

    p = sub.add_parser("login", help="log in to an arena and save an API token")
    p.add_argument("--email")
    p.set_defaults(func=cmd_login)

    p = sub.add_parser("submit", help="check and zip a folder, upload it as a new revision, follow it")
    p.add_argument("game", help="game slug, e.g. connect-four")
    p.add_argument("name", help="competitor name (created on first upload)")
    p.add_argument("folder", help="agent folder (player.py, Kaggle main.py, main.cpp, main.js) or its zip")
    p.add_argument("--public", action="store_true", help="publish the source (default: private)")
    _format_option(p, "--format", "the agent's format, as the upload page's Agent format")
    p.add_argument(
        "--wipe-data",
        action="store_true",
        help="start this revision with an empty data folder ($ARENA_DATA_DIR) when it starts playing",
    )
    p.add_argument("--no-wait", action="store_true", help="do not follow the build and smoke test")
    p.add_argument("--poll", type=float, default=2.0, help="seconds between status checks")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds to wait at most")
    p.set_defaults(func=cmd_submit)

    p = sub.add_parser("status", help="your competitors (playing, paused), or one revision")
    p.add_argument("revision", nargs="?", type=int, help="revision id")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("download", help="a competitor's duels and replays (and your logs) into a folder")
    p.add_argument("competitor", help="competitor id, or the name of one of yours")
    p.add_argument("--out", default="rl-arena-download", help="output folder (default: rl-arena-download)")
    p.add_argument("--limit", type=_positive, help="at most this many duels, newest first")
    p.set_defaults(func=cmd_download)
    return parser


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    """Entry point of the ``rl-arena`` console script."""
    out = out or sys.stdout
    args = build_parser().parse_args(argv)
    try:
        return args.func(args, out)
    except CliError as exc:
        print(f"rl-arena: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
