from __future__ import annotations

import json
from typing import Any

from engine.providers import create_provider
from engine.types import Message, ModelRequest, ToolCall, ToolDefinition

TOOLS = [ToolDefinition("read_file", "", {}), ToolDefinition("submit", "", {})]


def scripted(script=None, *, case_key="case-a", case_inputs=None, **config):
    return create_provider(
        "scripted",
        api_key=None,
        base_url=None,
        deployment_config={"script": script or {}, **config},
        case_key=case_key,
        case_inputs=case_inputs,
    )


def conversation(assistant_turns=0, last_tool_result=None):
    messages = [Message("system", "sys"), Message("user", "go")]
    for i in range(assistant_turns):
        messages.append(Message("assistant", "", tool_calls=[ToolCall(f"c{i}", "read_file", "{}")]))
        messages.append(Message("tool", last_tool_result or f"result {i}", tool_call_id=f"c{i}"))
    return messages


def ask(provider, messages=None, tools=TOOLS, **metadata):
    return provider.complete(ModelRequest(model="demo", messages=messages or conversation(), tools=tools, metadata=metadata))


def test_it_plays_a_single_tool_call_step():
    response = ask(scripted({"default": [{"tool": "read_file", "args": {"path": "/workspace/a"}}]}))
    assert [(c.id, c.name, json.loads(c.arguments)) for c in response.tool_calls] == [("call_1_1", "read_file", {"path": "/workspace/a"})]
    assert response.finish_reason == "tool_calls" and response.provider_key == "scripted"


def test_it_plays_several_calls_in_one_turn():
    provider = scripted({"default": [{"tools": [{"tool": "read_file", "args": {"path": "a"}}, {"tool": "write_file"}]}]})
    assert [c.name for c in ask(provider).tool_calls] == ["read_file", "write_file"]


def test_it_turns_a_submit_step_into_a_submit_call():
    call = ask(scripted({"default": [{"submit": "42"}]})).tool_calls[0]
    assert (call.name, json.loads(call.arguments)) == ("submit", {"answer": "42"})


def test_it_plays_a_text_step_without_tool_calls():
    response = ask(scripted({"default": [{"text": "thinking"}]}))
    assert (response.output_text, response.tool_calls, response.finish_reason) == ("thinking", [], "stop")


def test_it_derives_the_step_from_the_conversation_so_it_is_stateless():
    provider = scripted({"default": [{"tool": "read_file"}, {"submit": "done"}]})
    assert ask(provider, conversation(1)).tool_calls[0].name == "submit"
    assert ask(provider, conversation(0)).tool_calls[0].name == "read_file"  # replay gives the same answer


def test_it_prefers_the_cases_own_script():
    script = {"default": [{"submit": "default"}], "cases": {"case-b": [{"submit": "for b"}]}}
    assert json.loads(ask(scripted(script, case_key="case-b")).tool_calls[0].arguments) == {"answer": "for b"}
    assert json.loads(ask(scripted(script, case_key="case-c")).tool_calls[0].arguments) == {"answer": "default"}


def test_it_answers_with_text_when_the_script_runs_out():
    response = ask(scripted({"default": [{"submit": "x"}]}), conversation(1))
    assert response.tool_calls == [] and response.output_text == ""


def test_it_fills_templates_recursively():
    script = {
        "default": [
            {
                "tool": "read_file",
                "args": {
                    "path": "/workspace/{{input.file}}",
                    "nested": ["{{case_key}}", {"n": "{{input.count}}"}],
                    "previous": "saw: {{last_result}}",
                    "unknown": "{{input.nope}}",
                },
            }
        ]
    }
    provider = scripted(
        script, case_inputs=[{"key": "file", "kind": "text", "value": "a.txt"}, {"key": "count", "kind": "number", "value": 3}]
    )
    args = json.loads(ask(provider, conversation(0)).tool_calls[0].arguments)
    assert args == {"path": "/workspace/a.txt", "nested": ["case-a", {"n": 3}], "previous": "saw: ", "unknown": "{{input.nope}}"}


def test_it_fills_last_result_from_the_latest_tool_message():
    provider = scripted({"default": [{"tool": "read_file"}, {"submit": "found {{last_result}}"}]})
    call = ask(provider, conversation(1, last_tool_result="the secret word")).tool_calls[0]
    assert json.loads(call.arguments) == {"answer": "found the secret word"}


def test_it_counts_usage_in_words():
    messages = [Message("system", "one two"), Message("user", "three four five")]
    response = ask(scripted({"default": [{"text": "six seven"}]}), messages)
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (5, 2, 7)


def test_it_answers_tool_less_requests_from_the_script():
    provider = scripted({"default": [{"submit": "final"}]})
    assert ask(provider, tools=[]).output_text == "final"


def test_it_answers_judge_calls_from_judge_responses():
    provider = scripted({"default": [{"submit": "agent answer"}]}, judge_responses=['{"score": 0.9}', "second"])
    assert ask(provider, tools=[], purpose="judge").output_text == '{"score": 0.9}'
    assert ask(provider, tools=[]).output_text == "agent answer"
    assert ask(scripted({}, judge_responses="always this"), tools=[]).output_text == "always this"


def test_it_reports_no_delta_since_it_is_not_streamed():
    deltas: list[dict[str, Any]] = []
    scripted({"default": [{"submit": "x"}]}).complete(
        ModelRequest(model="demo", messages=conversation(), tools=TOOLS, on_delta=deltas.append)
    )
    assert deltas == []


def test_it_reports_the_first_delta_when_configured_to_stream():
    deltas: list[dict[str, Any]] = []
    scripted({"default": [{"submit": "x"}]}, stream=True).complete(
        ModelRequest(model="demo", messages=conversation(), tools=TOOLS, on_delta=deltas.append)
    )
    assert len(deltas) == 1 and deltas[0]["tool_call_fragment"]["name_fragment"] == "submit"


def test_it_counts_input_words_of_a_growing_conversation_like_a_fresh_count():
    provider = scripted({"default": [{"tool": "read_file", "args": {"path": "a b"}}] * 3})
    messages = conversation()
    for _ in range(3):
        response = provider.complete(ModelRequest(model="demo", messages=list(messages), tools=TOOLS))
        fresh = scripted({"default": [{"tool": "read_file", "args": {"path": "a b"}}] * 3})
        assert (
            response.usage.input_tokens
            == fresh.complete(ModelRequest(model="demo", messages=list(messages), tools=TOOLS)).usage.input_tokens
        )
        messages.append(Message("assistant", "", tool_calls=list(response.tool_calls)))
        messages.append(Message("tool", "one two three", tool_call_id=response.tool_calls[0].id))
    messages[1].content = "now a much longer first user message"  # a changed message is counted again
    fresh = scripted({"default": [{"tool": "read_file", "args": {"path": "a b"}}] * 3})
    expected = fresh.complete(ModelRequest(model="demo", messages=list(messages), tools=TOOLS)).usage.input_tokens
    assert provider.complete(ModelRequest(model="demo", messages=list(messages), tools=TOOLS)).usage.input_tokens == expected


# -- content-dependent replies (judges, user simulators) ----------------------------------------


def ask_text(provider, text, **metadata):
    return provider.complete(ModelRequest(model="judge", messages=[Message("user", text)], tools=[], metadata=metadata)).output_text


REPLIES = [
    {"about": "Rubric: is it polite?", "when": "thank you", "unless": "idiot", "reply": {"score": 5}},
    {"about": "Rubric: is it polite?", "reply": {"score": 1}},
    {"purpose": "user_simulator", "when": ["timeline", "refund"], "reply": "Great, thanks."},
    {"purpose": "user_simulator", "reply": "Still waiting."},
]


def test_replies_answer_by_what_the_request_contains_first_match_wins():
    provider = scripted(replies=REPLIES)
    assert json.loads(ask_text(provider, "Rubric: is it polite?\nContext: thank you so much", purpose="judge")) == {"score": 5}
    assert json.loads(ask_text(provider, "Rubric: is it polite?\nContext: thank you, idiot", purpose="judge")) == {"score": 1}
    assert ask_text(provider, "assistant: your refund timeline is 3 days", purpose="user_simulator") == "Great, thanks."
    assert ask_text(provider, "assistant: please hold", purpose="user_simulator") == "Still waiting."


def test_the_about_marker_is_removed_before_when_is_checked_and_whitespace_is_collapsed():
    provider = scripted(replies=[{"about": "Rubric: say thank   you", "when": "thank you", "reply": "yes"}, {"reply": "no"}])
    assert ask_text(provider, "Rubric: say thank\n you\ncontext: nothing") == "no"
    assert ask_text(provider, "Rubric: say thank you\ncontext: thank\tyou") == "yes"


def test_replies_fall_back_to_judge_responses_and_never_answer_tool_requests():
    provider = scripted(
        {"default": [{"submit": "agent answer"}]}, replies=[{"purpose": "judge", "when": "never", "reply": "x"}], judge_responses="fallback"
    )
    assert ask_text(provider, "anything", purpose="judge") == "fallback"
    assert ask(provider).tool_calls[0].name == "submit"
