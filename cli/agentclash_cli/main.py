"""``agentclash``: argument parsing and exit codes; each command lives in its own module."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from agentclash_cli import __version__, ci, gate, packs, runs
from agentclash_cli.client import Client, CliError, Config

USAGE = 4  # run, gate, ci: 2 would read as "warn"
PACKS_USAGE = 2  # packs validate/publish: as manage.py validate_pack

EPILOG = """\
configuration: AGENTCLASH_URL (the server), AGENTCLASH_TOKEN (an API token, act_…),
AGENTCLASH_WORKSPACE (the workspace slug; or --workspace).

exit codes: packs: 0 valid/published, 1 invalid, 2 usage error.
run: 0 started (with --follow: completed), 1 the run failed or was cancelled, 4 usage error.
gate, ci run: 0 pass, 1 fail, 2 warn, 3 insufficient evidence, 4 usage error.
"""


class Parser(argparse.ArgumentParser):
    """Bad arguments exit with the command's usage code, not argparse's 2."""

    usage_exit = USAGE

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(self.usage_exit)


def _connection_options() -> argparse.ArgumentParser:
    """``--url`` / ``--workspace`` after the command too; SUPPRESS keeps a value given before it."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--url", default=argparse.SUPPRESS, help="server URL (default: $AGENTCLASH_URL)")
    options.add_argument("--workspace", "-w", default=argparse.SUPPRESS, help="workspace slug (default: $AGENTCLASH_WORKSPACE)")
    return options


def _sub(subparsers: Any, name: str, usage_exit: int = USAGE, **kwargs: Any) -> Parser:
    parser: Parser = subparsers.add_parser(name, parents=[_connection_options()], **kwargs)
    parser.usage_exit = usage_exit
    return parser


def build_parser() -> Parser:
    parser = Parser(
        prog="agentclash",
        description="AgentClash from scripts and CI: validate and publish packs, start runs, gate releases.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"agentclash {__version__}")
    parser.add_argument("--url", help="server URL (default: $AGENTCLASH_URL)")
    parser.add_argument("--workspace", "-w", help="workspace slug (default: $AGENTCLASH_WORKSPACE)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    packs_parser = _sub(commands, "packs", PACKS_USAGE, help="validate or publish pack bundles")
    packs_commands = packs_parser.add_subparsers(dest="packs_command", metavar="SUBCOMMAND", parser_class=Parser)
    validate = _sub(packs_commands, "validate", PACKS_USAGE, help="validate bundles on the server (nothing is written)")
    validate.add_argument("files", nargs="+", metavar="FILE")
    validate.add_argument("--json", action="store_true", help='one {"file", "valid", "errors", "warnings"} JSON object per file per line')
    publish = _sub(packs_commands, "publish", PACKS_USAGE, help="publish a bundle as a new immutable version")
    publish.add_argument("file", metavar="FILE")
    publish.add_argument("--json", action="store_true", help="print the server's answer as JSON")

    run = _sub(commands, "run", help="start a run of a pack with one or more deployments")
    run.add_argument("--pack", required=True, metavar="SLUG[@VERSION]", help="the pack (default version: the newest runnable)")
    run.add_argument("--deployment", action="append", required=True, metavar="NAME", help="deployment name; repeat for several lanes")
    run.add_argument("--input-set", metavar="KEY", help="input set key (needed when the version has several)")
    run.add_argument("--suite", action="append", default=[], metavar="NAME", help="add a regression suite (repeatable)")
    run.add_argument("--name", default="", help="run name")
    run.add_argument("--follow", action="store_true", help="show progress until the run ends; exit 0 only if it completed")
    run.add_argument("--json", action="store_true", help="print the run as JSON instead of its id")
    run.add_argument("--poll", type=float, default=1.0, help=argparse.SUPPRESS)

    gate_parser = _sub(commands, "gate", help="compare a candidate run with a baseline run and evaluate the release gate")
    gate_parser.add_argument("--baseline", type=int, required=True, metavar="RUN", help="baseline run id")
    gate_parser.add_argument("--candidate", type=int, required=True, metavar="RUN", help="candidate run id")
    gate_parser.add_argument("--policy", metavar="FILE", help="gate policy (JSON or YAML); default policy when omitted")
    gate_parser.add_argument("--baseline-lane", type=int, metavar="LANE", help="baseline lane id (runs with several lanes)")
    gate_parser.add_argument("--candidate-lane", type=int, metavar="LANE", help="candidate lane id (runs with several lanes)")
    gate_parser.add_argument("--json-out", metavar="FILE", help="write the verdict, comparison and gate as JSON")

    ci_parser = _sub(commands, "ci", help="run the CI manifest (.agentclash/ci.yaml)")
    ci_commands = ci_parser.add_subparsers(dest="ci_command", metavar="SUBCOMMAND", parser_class=Parser)
    for name, text in (("run", "run, compare, gate; write the results; exit with the gate's code"), ("validate", "check the manifest")):
        sub = _sub(ci_commands, name, help=text)
        sub.add_argument("--config", "-c", default=ci.DEFAULT_PATH, metavar="FILE", help=f"the manifest (default {ci.DEFAULT_PATH})")
        if name == "run":
            sub.add_argument(
                "--output", "-o", metavar="DIR", help="results folder (default: output in the manifest, else agentclash-results)"
            )
            sub.add_argument("--poll", type=float, default=1.0, help=argparse.SUPPRESS)
    return parser


def _client(args: argparse.Namespace, *, workspace: str | None = None) -> Client:
    config = Config.from_env(url=args.url, workspace=args.workspace or workspace)
    config.require()
    return Client(config)


def _packs(args: argparse.Namespace, parser: Parser) -> int:
    if not args.packs_command:
        parser.error("packs needs a subcommand: validate or publish")
    with _client(args) as client:
        if args.packs_command == "validate":
            return packs.validate(client, args.files, as_json=args.json)
        return packs.publish(client, args.file, as_json=args.json)


def _run(args: argparse.Namespace) -> int:
    with _client(args) as client:
        run = runs.start_run(
            client, pack=args.pack, deployments=args.deployment, input_set=args.input_set, suite_names=args.suite, name=args.name
        )
        if not args.json:
            print(run["id"], flush=True)
        if args.follow:
            run = runs.follow(client, run["id"], interval=args.poll)
        if args.json:
            print(json.dumps(run, indent=2, sort_keys=True), flush=True)
        return 0 if not args.follow or run["status"] == "completed" else 1


def _gate(args: argparse.Namespace) -> int:
    with _client(args) as client:
        return gate.run_gate(
            client,
            baseline=args.baseline,
            candidate=args.candidate,
            policy_file=args.policy,
            baseline_lane=args.baseline_lane,
            candidate_lane=args.candidate_lane,
            json_out=args.json_out,
        )


def _ci(args: argparse.Namespace, parser: Parser) -> int:
    if not args.ci_command:
        parser.error("ci needs a subcommand: run or validate")
    config = ci.load_config(args.config)
    if args.ci_command == "validate":
        print(f"{args.config}: valid")
        return 0
    if args.output:
        config = dataclasses.replace(config, output=args.output)
    with _client(args, workspace=config.workspace) as client:
        return ci.ci_run(client, config, poll_interval=args.poll)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return USAGE
    usage_exit = PACKS_USAGE if args.command == "packs" else USAGE
    try:
        if args.command == "packs":
            return _packs(args, parser)
        if args.command == "run":
            return _run(args)
        if args.command == "gate":
            return _gate(args)
        return _ci(args, parser)
    except CliError as exc:
        sys.stderr.write(f"agentclash: error: {exc.message}\n")
        return exc.exit_code if exc.exit_code != USAGE else usage_exit
    except KeyboardInterrupt:
        sys.stderr.write("agentclash: interrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
