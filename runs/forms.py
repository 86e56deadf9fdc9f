"""The new-run form: pack version → input set → deployments → judges and user simulator → name.

Judge pickers (one per LLM judge model the pack names) are pre-filled the way the API resolves a
model nobody chose (runs/services/resolve.py): a deployment of exactly that model, else the
workspace's default judge. They are re-filled when the pack version changes, and otherwise keep
what the person picked.

The fields are named like the run API's inputs, which are ``run_create``'s arguments
(``deployment_ids``, ``input_set_id``, ``simulator_deployment_id``, ``regression_suite_ids``…;
``pack_version_id`` for the version, which the service takes as an object), so a service's
``DomainError`` shows next to its field (``core.forms.form_add_domain_error``).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import Q

from core.forms import choice_queryset, model_choice
from engine.providers.registry import RESPONSES_PROVIDER_KEYS
from infrastructure.models import AgentDeployment, ExecutionTarget, LifecycleStatus
from packs.models import InputSet, PackVersion
from packs.selectors import pack_versions_runnable
from regression.models import RegressionSuite
from runs.models import HOSTED_PACK_MODES
from runs.services.resolve import JUDGE_SOURCE_LABELS, judge_suggestions, needs_simulator, pack_judge_models
from workspaces.models import Workspace

JUDGE_FIELD = "judge_{}"


def _manifest_cases(manifest: dict[str, Any], input_set_key: str | None) -> list[tuple[str, dict[str, Any]]]:
    return [
        (str(case.get("case_key") or ""), case)
        for input_set in manifest.get("input_sets") or []
        if isinstance(input_set, dict) and (input_set_key is None or input_set.get("key") == input_set_key)
        for case in input_set.get("cases") or []
        if isinstance(case, dict)
    ]


class RunCreateForm(forms.Form):
    pack_version_id = forms.ModelChoiceField(
        queryset=PackVersion.objects.none(), label="Pack version", empty_label="Choose a pack version…"
    )
    input_set_id = forms.ModelChoiceField(
        queryset=InputSet.objects.none(), required=False, label="Input set", empty_label="Choose an input set…"
    )
    deployment_ids = forms.ModelMultipleChoiceField(
        queryset=AgentDeployment.objects.none(),
        widget=forms.CheckboxSelectMultiple,
        label="Agents",
        help_text="Each deployment races through every case in its own lane.",
    )
    name = forms.CharField(
        max_length=200, required=False, help_text="Defaults to the pack and version, the agents and the time to the second."
    )
    judges_for = forms.CharField(required=False, widget=forms.HiddenInput())
    allow_missing_judges = forms.BooleanField(
        required=False,
        label="Start even if a judge model has no deployment",
        help_text="Its judge dimensions are then unavailable (“no judge configured”).",
    )
    race_context = forms.BooleanField(
        required=False,
        label="Peer standings (race context)",
        help_text="Between steps, each agent is told how the other lanes stand: cases finished and passed. Needs two or more agents.",
    )
    repeats = forms.CharField(
        required=False,
        max_length=8,
        initial="1",
        label="Trials per case (repeats)",
        widget=forms.TextInput(attrs={"inputmode": "numeric", "size": 6, "list": "repeats-choices"}),
        help_text="Every case runs this many times in every lane: 1 to 50, or “auto” for adaptive rounds that stop "
        "once the comparison with the first agent is decided.",
    )
    max_repeats = forms.IntegerField(
        required=False,
        min_value=2,
        max_value=50,
        label="Most trials per case (max_repeats)",
        help_text="With “auto” only: the rounds never go beyond this many trials of one case (2 to 50).",
    )
    max_regression = forms.FloatField(
        required=False,
        label="Tolerated drop (max_regression)",
        widget=forms.NumberInput(attrs={"step": "any", "placeholder": "0.05"}),
        help_text="Advanced, with “auto” only: the drop in pass rate or score the rounds' gate tolerates, "
        "above 0 and below 1 (0.05 when empty).",
    )
    confidence = forms.FloatField(
        required=False,
        label="Confidence",
        widget=forms.NumberInput(attrs={"step": "any", "placeholder": "0.95"}),
        help_text="Advanced, with “auto” only: how sure the rounds' gate must be, from 0.5 to below 1 (0.95 when empty).",
    )
    simulator_deployment_id = forms.ModelChoiceField(
        queryset=AgentDeployment.objects.none(),
        required=False,
        label="User simulator",
        empty_label="Choose the deployment that plays the user…",
        help_text="This pack's conversations have LLM user-simulator phases: this deployment writes the user's turns.",
    )

    regression_suite_ids = forms.ModelMultipleChoiceField(
        queryset=RegressionSuite.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Regression suites",
        help_text="Their active cases run too, against this version's challenges.",
    )
    regression_scope = forms.ChoiceField(
        choices=[("full", "The pack's cases plus the suites"), ("suite_only", "Only the suites' cases")],
        required=False,
        initial="full",
        label="Scope",
    )
    include_proposed = forms.BooleanField(required=False, label="Include proposed cases (not yet reviewed)")

    def __init__(self, *args: Any, workspace: Workspace, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.workspace = workspace
        active = AgentDeployment.objects.filter(workspace=workspace, status=LifecycleStatus.ACTIVE).select_related("provider_account")
        model_choice(self, "pack_version_id").queryset = pack_versions_runnable(workspace=workspace)
        model_choice(self, "deployment_ids").queryset = active.order_by("name")
        model_choice(self, "simulator_deployment_id").queryset = active.order_by("name")
        self.judge_models: list[str] = []
        self.needs_simulator = False
        self.suggestions: dict[str, tuple[AgentDeployment | None, str]] = {}
        version = self.selected_version()
        self.unfit_deployments: list[AgentDeployment] = []
        self.fit_deployments = active.order_by("name")
        self.pack_mode = ""
        if version is not None:
            # Only agents whose runtime profile runs this pack's execution mode race in it.
            self.pack_mode = (version.execution_mode or "native").strip() or "native"
            fits = Q(runtime_profile__execution_target=self.pack_mode)
            if self.pack_mode in HOSTED_PACK_MODES:  # a hosted agent takes any single-shot case (docs/hosted-agents.md)
                fits |= Q(runtime_profile__execution_target=ExecutionTarget.HOSTED_EXTERNAL)
            if self.pack_mode == ExecutionTarget.RESPONSES:  # only providers that serve the Responses API (docs/responses-mode.md)
                fits &= Q(provider_account__provider_key__in=RESPONSES_PROVIDER_KEYS)
            # Only fitting agents are offered; every active one validates, so a stale or hand-made pick
            # of an unfit one gets run_create's refusal, which says what to do, next to the field.
            self.fit_deployments = active.filter(fits).order_by("name")
            model_choice(self, "deployment_ids").widget.choices = forms.ModelMultipleChoiceField(queryset=self.fit_deployments).choices
            self.unfit_deployments = list(
                active.exclude(fits).select_related("runtime_profile").order_by("runtime_profile__execution_target", "name")
            )
            sets = InputSet.objects.filter(pack_version=version).order_by("key")
            model_choice(self, "input_set_id").queryset = sets
            only = sets.first() if sets.count() == 1 else None
            if only is not None:
                self.fields["input_set_id"].widget = forms.HiddenInput()
                self.fields["input_set_id"].initial = only.pk
                self.single_input_set = only
            model_choice(self, "regression_suite_ids").queryset = RegressionSuite.objects.filter(
                workspace=workspace, pack_id=version.pack_id, archived_at__isnull=True
            )
            manifest = version.manifest or {}
            self.judge_models = pack_judge_models(manifest)
            self.needs_simulator = needs_simulator(_manifest_cases(manifest, self._input_set_key()))
            self._add_judge_fields(version, active)

    single_input_set: InputSet | None = None

    def _input_set_key(self) -> str | None:
        chosen = self.single_input_set
        raw = self.data.get("input_set_id") if self.is_bound else None
        if chosen is None and raw:
            try:
                chosen = choice_queryset(self, "input_set_id").filter(pk=int(raw)).first()
            except (TypeError, ValueError):
                chosen = None
        return chosen.key if chosen is not None else None

    def _lane_ids(self) -> list[int]:
        raw = self.data.getlist("deployment_ids") if self.is_bound and hasattr(self.data, "getlist") else []
        return [int(v) for v in raw if str(v).isdigit()]

    def _add_judge_fields(self, version: PackVersion, active: Any) -> None:
        """One picker per judge model; (re)filled from the suggestions when the version is new to the form."""
        self.fields["judges_for"].initial = str(version.pk)
        self.suggestions = judge_suggestions(workspace=self.workspace, models=self.judge_models, exclude_ids=self._lane_ids())
        refill = not self.is_bound or str(self.data.get("judges_for") or "") != str(version.pk)
        # A bound form's data is an immutable QueryDict: refill a mutable copy.
        data: dict[str, Any] = self.data.copy() if self.is_bound and refill else {}  # type: ignore[attr-defined]
        if self.is_bound and refill:
            data["judges_for"] = str(version.pk)
            self.data = data
        for index, model in enumerate(self.judge_models):
            name = JUDGE_FIELD.format(index)
            self.fields[name] = forms.ModelChoiceField(
                queryset=active.order_by("name"), required=False, label=model, empty_label="No judge for this model"
            )
            suggested = self.suggestions[model][0]
            if refill:
                self.fields[name].initial = suggested.pk if suggested else None
                if self.is_bound:
                    data[name] = str(suggested.pk) if suggested else ""

    def judge_rows(self) -> list[dict[str, Any]]:
        """Per judge model: its picker, where the pre-fill came from, and a warning worth reading."""
        lanes = set(self._lane_ids())
        rows = []
        for index, model in enumerate(self.judge_models):
            field = self[JUDGE_FIELD.format(index)]
            value = str(field.value() or "")
            suggested, source = self.suggestions.get(model, (None, ""))
            note = f"Pre-filled: {JUDGE_SOURCE_LABELS[source]}." if suggested is not None and value == str(suggested.pk) else ""
            warning = (
                "This deployment also races in this run: it will grade its own answers." if value.isdigit() and int(value) in lanes else ""
            )
            rows.append({"model": model, "field": field, "note": note, "warning": warning})
        return rows

    def judge_choices(self) -> dict[str, int | None]:
        """``judge_deployments`` for ``run_create``: every judge model, None where no deployment was picked."""
        data = self.cleaned_data
        chosen = {model: data.get(JUDGE_FIELD.format(index)) for index, model in enumerate(self.judge_models)}
        return {model: deployment.pk if deployment else None for model, deployment in chosen.items()}

    def selected_version(self) -> PackVersion | None:
        raw = self.data.get("pack_version_id") if self.is_bound else self.initial.get("pack_version_id")
        if raw in (None, ""):
            return None
        try:
            return choice_queryset(self, "pack_version_id").filter(pk=int(raw)).first()
        except (TypeError, ValueError):
            return None

    def _trials_text(self) -> tuple[int, str]:
        """(trials per case, " × 3 trials") from the repeats typed so far; (0, " × adaptive trials…") for auto."""
        raw = str(self.data.get("repeats") or "").strip().lower() if self.is_bound else ""
        if raw == "auto":
            return 0, " × adaptive trials (rounds until decided)"
        if raw.isdigit() and 1 < int(raw) <= 50:
            return int(raw), f" × {int(raw)} trials"
        return 1, ""

    def preview(self) -> str:
        """ "2 agents × 40 cases", from whatever is chosen so far."""
        version = self.selected_version()
        if version is None:
            return ""
        raw_set = (self.data.get("input_set_id") if self.is_bound else None) or (
            self.single_input_set.pk if self.single_input_set else None
        )
        input_set = None
        if raw_set:
            try:
                input_set = choice_queryset(self, "input_set_id").filter(pk=int(raw_set)).first()
            except (TypeError, ValueError):
                input_set = None
        cases = input_set.cases.count() if input_set else None
        agents = len(self.data.getlist("deployment_ids")) if self.is_bound and hasattr(self.data, "getlist") else 0
        agent_text = f"{agents} agent{'s' if agents != 1 else ''}"
        case_text = f"{cases} case{'s' if cases != 1 else ''}" if cases is not None else "? cases (choose an input set)"
        trials = self._trials_text()
        runs = agents * cases * trials[0] if cases and agents and trials[0] else 0
        total = f" = {runs} case run{'s' if runs != 1 else ''}" if runs else ""  # "1 case runs" read wrong (issue 25)
        total = f"{trials[1]}{total}"
        suites = len(self.data.getlist("regression_suite_ids")) if self.is_bound and hasattr(self.data, "getlist") else 0
        if not suites:
            return f"{agent_text} × {case_text}{total}"
        suite_text = f"the active cases of {suites} regression suite{'s' if suites != 1 else ''}"
        if self.data.get("regression_scope") == "suite_only":
            return f"{agent_text} × {suite_text}{trials[1]} (the pack's own cases are left out)"
        return f"{agent_text} × ({case_text} + {suite_text}){trials[1]}"
