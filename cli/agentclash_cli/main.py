"""``agentclash``: argument parsing, exit codes and output formats; each command lives in its own module."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from agentclash_cli import __version__, apply, ci, ci_config, gate, junit, packs, runs, summary, workspace_secrets
from agentclash_cli.client import USAGE, Client, CliError, Config
from agentclash_cli.output import FORMATS, error_document, write_json

EPILOG = """\
configuration: AGENTCLASH_URL (the server), AGENTCLASH_TOKEN (an API token, act_…),
AGENTCLASH_WORKSPACE (the workspace slug; or --workspace).

exit codes: 4 is a usage or setup error for every command. Otherwise:
packs: 0 valid/published, 1 invalid.
run: 0 started (with --follow: completed), 1 the followed run failed or was cancelled.
gate, ci run: 0 pass, 1 fail, 2 warn, 3 insufficient evidence.
ci validate, secret, apply: 0 done.
"""


class Parser(argparse.ArgumentParser):
    """Bad arguments exit with the usage code (4), not argparse's 2 (which reads as "warn")."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(USAGE)


def _common_options() -> argparse.ArgumentParser:
    """``--url`` / ``--workspace`` / ``--format`` after the command too; SUPPRESS keeps a value given before it."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--url", default=argparse.SUPPRESS, help="server URL (default: $AGENTCLASH_URL)")
    options.add_argument("--workspace", "-w", default=argparse.SUPPRESS, help="workspace slug (default: $AGENTCLASH_WORKSPACE)")
    options.add_argument("--format", choices=FORMATS, default=argparse.SUPPRESS, help="text (default) or json on stdout")
    return options


def _sub(subparsers: Any, name: str, **kwargs: Any) -> Parser:
    parser: Parser = subparsers.add_parser(name, parents=[_common_options()], **kwargs)
    return parser


def _json_alias(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", dest="format", action="store_const", const="json", default=argparse.SUPPRESS, help="same as --format json"
    )


def _judge_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--judge-deployment",
        action="append",
        default=None,
        metavar="NAME|MODEL=NAME",
        help="the deployment that answers the pack's LLM judges: MODEL=NAME for one judge model (repeat per model), NAME for every other",
    )
    parser.add_argument(
        "--allow-missing-judges",
        action="store_true",
        default=None,
        help="start even if a judge model has no deployment (its judge dimensions are then unavailable)",
    )


def _packs_parser(commands: Any) -> None:
    packs_parser = _sub(commands, "packs", help="validate or publish pack bundles")
    packs_commands = packs_parser.add_subparsers(dest="packs_command", metavar="SUBCOMMAND", parser_class=Parser)
    validate = _sub(packs_commands, "validate", help="validate bundles on the server (nothing is written)")
    validate.add_argument("files", nargs="+", metavar="FILE")
    _json_alias(validate)
    publish = _sub(packs_commands, "publish", help="publish a bundle as a new immutable version")
    publish.add_argument("file", metavar="FILE")
    _json_alias(publish)


def _repeats(text: str) -> int | str:
    """``--repeats``: 1 to 50, or ``auto`` (the server checks the rest and names the field)."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer from 1 to 50, or auto (got {text!r})") from None
    if not 1 <= value <= 50:
        raise argparse.ArgumentTypeError(f"must be an integer from 1 to 50, or auto (got {value})")
    return value


def _run_parser(commands: Any) -> None:
    run = _sub(commands, "run", help="start a run of a pack with one or more deployments")
    run.add_argument("--pack", required=True, metavar="SLUG[@VERSION]", help="the pack (default version: the newest runnable)")
    run.add_argument("--deployment", action="append", required=True, metavar="NAME", help="deployment name; repeat for several lanes")
    run.add_argument("--input-set", metavar="KEY", help="input set key (needed when the version has several)")
    run.add_argument("--suite", action="append", default=[], metavar="NAME", help="add a regression suite (repeatable)")
    _judge_options(run)
    run.add_argument("--name", default="", help="run name")
    run.add_argument(
        "--repeats",
        type=_repeats,
        default=1,
        metavar="N|auto",
        help="trials of every case in every lane: 1 to 50 (default 1), or auto (adaptive rounds; needs --max-repeats and two deployments)",
    )
    run.add_argument("--max-repeats", type=int, metavar="N", help="with --repeats auto: the most trials of one case (2 to 50)")
    run.add_argument(
        "--max-regression",
        type=float,
        metavar="X",
        help="with --repeats auto: the drop the rounds' gate tolerates, above 0 and below 1 (default 0.05)",
    )
    run.add_argument(
        "--confidence",
        type=float,
        metavar="C",
        help="with --repeats auto: the confidence of the rounds' gate, 0.5 to below 1 (default 0.95)",
    )
    run.add_argument(
        "--follow", action="store_true", help="show progress until the run ends, then a per-lane table; exit 0 only if it completed"
    )
    run.add_argument("--junit", metavar="FILE", help="write the cases as JUnit XML (one test case per case × lane; implies --follow)")
    _json_alias(run)
    run.add_argument("--poll", type=float, default=1.0, help=argparse.SUPPRESS)


def _gate_parser(commands: Any) -> None:
    gate_parser = _sub(commands, "gate", help="compare a candidate run with a baseline run and evaluate the release gate")
    gate_parser.add_argument("--baseline", type=int, required=True, metavar="RUN", help="baseline run id")
    gate_parser.add_argument("--candidate", type=int, required=True, metavar="RUN", help="candidate run id")
    gate_parser.add_argument("--policy", metavar="FILE", help="gate policy (JSON or YAML); default policy when omitted")
    for side in ("baseline", "candidate"):
        gate_parser.add_argument(
            f"--{side}-lane",
            metavar="NAME",
            help=f"the {side} lane (runs with several lanes): its label or deployment name, its number (lane 2, #2, 2) or its id",
        )
    gate_parser.add_argument("--json-out", metavar="FILE", help="write the verdict, comparison and gate as JSON")
    gate_parser.add_argument("--junit", metavar="FILE", help="write both lanes' cases as JUnit XML (one test case per case × lane)")


def _ci_parser(commands: Any) -> None:
    ci_parser = _sub(commands, "ci", help="run the CI manifest (.agentclash/ci.yaml)")
    ci_commands = ci_parser.add_subparsers(dest="ci_command", metavar="SUBCOMMAND", parser_class=Parser)
    for name, text in (("run", "run, compare, gate; write the results; exit with the gate's code"), ("validate", "check the manifest")):
        sub = _sub(ci_commands, name, help=text)
        sub.add_argument(
            "--config", "-c", default=ci_config.DEFAULT_PATH, metavar="FILE", help=f"the manifest (default {ci_config.DEFAULT_PATH})"
        )
        if name != "run":
            continue
        sub.add_argument("--output", "-o", metavar="DIR", help="results folder (default: output in the manifest, else agentclash-results)")
        _judge_options(sub)
        sub.add_argument("--junit", metavar="FILE", help="write both lanes' cases as JUnit XML (one test case per case × lane)")
        sub.add_argument(
            "--repeats", metavar="N", help="trials of every case in each run, 1 to 50 (overrides evaluation.repeats in the manifest)"
        )
        sub.add_argument(
            "--pr-comment", action="store_true", help="post or update one sticky pull-request comment (GITHUB_TOKEN, GITHUB_REPOSITORY)"
        )
        sub.add_argument("--pr-number", type=int, metavar="N", help="the pull request (default: the GitHub event's, or GITHUB_REF)")
        sub.add_argument("--poll", type=float, default=1.0, help=argparse.SUPPRESS)


def _secret_parser(commands: Any) -> None:
    secret = _sub(commands, "secret", help="list, set or delete workspace secrets (values are write-only)")
    secret_commands = secret.add_subparsers(dest="secret_command", metavar="SUBCOMMAND", parser_class=Parser)
    _sub(secret_commands, "list", help="keys and allowed hosts (never values)")
    set_parser = _sub(secret_commands, "set", help="set a value read from standard input or a hidden prompt (admin)")
    set_parser.add_argument("key", metavar="KEY")
    set_parser.add_argument(
        "--allowed-host", action="append", default=None, metavar="HOST", help="where composed tools may send it (repeatable; omit to keep)"
    )
    delete = _sub(secret_commands, "delete", help="delete a secret (admin)")
    delete.add_argument("key", metavar="KEY")


def build_parser() -> Parser:
    parser = Parser(
        prog="agentclash",
        description="AgentClash from scripts and CI: validate and publish packs, start runs, gate releases, manage secrets and deployments.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"agentclash {__version__}")
    parser.add_argument("--url", help="server URL (default: $AGENTCLASH_URL)")
    parser.add_argument("--workspace", "-w", help="workspace slug (default: $AGENTCLASH_WORKSPACE)")
    parser.add_argument("--format", choices=FORMATS, default="text", help="text (default) or json on stdout")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    _packs_parser(commands)
    _run_parser(commands)
    _gate_parser(commands)
    _ci_parser(commands)
    _secret_parser(commands)
    apply_parser = _sub(
        commands, "apply", help="create or update the provider accounts, runtime profiles and deployments a YAML file declares"
    )
    apply_parser.add_argument("file", metavar="FILE")
    apply_parser.add_argument("--dry-run", action="store_true", help="say what would change; change nothing")
    return parser


def _client(args: argparse.Namespace, *, workspace: str | None = None) -> Client:
    config = Config.from_env(url=args.url, workspace=args.workspace or workspace)
    config.require()
    return Client(config)


def _json(args: argparse.Namespace) -> bool:
    return bool(args.format == "json")


def _packs(args: argparse.Namespace, parser: Parser) -> int:
    if not args.packs_command:
        parser.error("packs needs a subcommand: validate or publish")
    with _client(args) as client:
        if args.packs_command == "validate":
            return packs.validate(client, args.files, as_json=_json(args))
        return packs.publish(client, args.file, as_json=_json(args))


def _run(args: argparse.Namespace) -> int:
    follow = args.follow or bool(args.junit)
    with _client(args) as client:
        run = runs.start_run(
            client,
            pack=args.pack,
            deployments=args.deployment,
            input_set=args.input_set,
            suite_names=args.suite,
            name=args.name,
            judge_choices=args.judge_deployment,
            allow_missing_judges=bool(args.allow_missing_judges),
            repeats=args.repeats,
            max_repeats=args.max_repeats,
            max_regression=args.max_regression,
            confidence=args.confidence,
        )
        if not _json(args):
            print(run["id"], flush=True)
        if follow:
            run = runs.follow(client, run["id"], interval=args.poll)
            cases = runs.case_rows(client, run["id"])
            results = runs.lane_results(client, run, cases)
            sys.stderr.write(runs.lanes_table(results))
            run["results"] = results
            if args.junit:
                junit.write(args.junit, f"agentclash run {run['id']}", junit.run_suites(run, cases))
        if _json(args):
            write_json(run)
        return 0 if not follow or run["status"] == "completed" else 1


def _gate(args: argparse.Namespace) -> int:
    with _client(args) as client:
        policy = gate.read_policy(args.policy)
        outcome = gate.evaluate(
            client,
            baseline=args.baseline,
            candidate=args.candidate,
            policy=policy,
            baseline_lane=args.baseline_lane,
            candidate_lane=args.candidate_lane,
        )
        if _json(args):
            write_json(gate.gate_result(outcome))
        else:
            gate.print_outcome(outcome)
            print("comparison page: " + client.web_url(f"comparisons/{outcome.comparison['id']}/"))
        if args.json_out:
            gate.write_json(args.json_out, gate.gate_result(outcome))
        if args.junit:
            junit.write(args.junit, f"agentclash gate {args.baseline} → {args.candidate}", junit.gate_suites(outcome))
        summary.append_step_summary(summary.markdown_summary(outcome, web_url=client.web_url))
        return outcome.exit_code


def _ci_config(args: argparse.Namespace) -> ci_config.CiConfig:
    config = ci_config.load_config(args.config)
    if getattr(args, "output", None):
        config = dataclasses.replace(config, output=args.output)
    if getattr(args, "judge_deployment", None):
        config = dataclasses.replace(config, judge_deployments=args.judge_deployment)
    if getattr(args, "allow_missing_judges", None):
        config = dataclasses.replace(config, allow_missing_judges=True)
    if getattr(args, "repeats", None) is not None:
        config = dataclasses.replace(config, repeats=ci_config.check_repeats(args.repeats, "--repeats"))
    return config


def _ci(args: argparse.Namespace, parser: Parser) -> int:
    if not args.ci_command:
        parser.error("ci needs a subcommand: run or validate")
    config = _ci_config(args)
    if args.ci_command == "validate":
        if _json(args):
            write_json({"file": args.config, "valid": True})
        else:
            print(f"{args.config}: valid")
        return 0
    with _client(args, workspace=config.workspace) as client:
        result = ci.ci_run(
            client, config, poll_interval=args.poll, junit_path=args.junit, pr_comment=args.pr_comment, pr_number=args.pr_number
        )
    if _json(args):
        write_json(result)
    return int(result["exit_code"])


def _secret(args: argparse.Namespace, parser: Parser) -> int:
    if not args.secret_command:
        parser.error("secret needs a subcommand: list, set or delete")
    with _client(args) as client:
        if args.secret_command == "list":
            return workspace_secrets.secret_list(client, as_json=_json(args))
        key = workspace_secrets.check_key(args.key)
        if args.secret_command == "delete":
            return workspace_secrets.secret_delete(client, key, as_json=_json(args))
        value = workspace_secrets.read_value(key)
        return workspace_secrets.secret_set(client, key, allowed_hosts=args.allowed_host, value=value, as_json=_json(args))


def _apply(args: argparse.Namespace) -> int:
    sections = apply.load(args.file)  # the file first: a broken one needs no server
    with _client(args) as client:
        changes = apply.Applier(client, sections, dry_run=args.dry_run).apply()
    return apply.report(changes, file=args.file, dry_run=args.dry_run, as_json=_json(args))


COMMANDS = {"run": _run, "gate": _gate, "apply": _apply}
WITH_PARSER = {"packs": _packs, "ci": _ci, "secret": _secret}


def _parse(parser: Parser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse; an unknown argument is a usage error, said without echoing it after ``secret`` (it may be a value)."""
    args, extras = parser.parse_known_args(argv)
    if extras:
        if args.command == "secret":
            parser.error(workspace_secrets.ON_ARGV if args.secret_command == "set" else "secret: unrecognized arguments (not shown)")
        parser.error(f"unrecognized arguments: {' '.join(extras)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = _parse(parser, argv)
    if not args.command:
        parser.print_help()
        return USAGE
    try:
        if args.command in WITH_PARSER:
            return WITH_PARSER[args.command](args, parser)
        return COMMANDS[args.command](args)
    except CliError as exc:
        sys.stderr.write(f"agentclash: error: {exc.message}\n")
        if _json(args):
            write_json(error_document(exc.message, exc.exit_code))
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("agentclash: interrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
